// RUN: spyre-opt %s -p spyre-fuse-rotary,spyre-stickify,spyre-fold-layouts,spyre-fuse | filecheck %s
// RUN: spyre-opt %s -p 'spyre-fuse-rotary{fuse-rotary=false},spyre-stickify,spyre-fold-layouts,spyre-fuse' | filecheck %s --check-prefix=OFF

// Llama's rotary embedding on a projection's heads (q * cos + rotate_half(q) * sin after
// the head split). spyre-fuse-rotary moves it before the transpose, onto the matmul's
// [s, H, D] head view (cos and sin viewed as [s, 1, D]); spyre-fuse takes it into the
// matmul's group as the epilogue, and the head split transpose after it is a view (the
// matmul stores head by head): one kernel. Off, the rotary ops run after the transpose in
// a rows kernel of their own.

// CHECK-LABEL: func.func @rotary
// CHECK:         dataflow.group @matmul_0
// CHECK:           spyre.matmul
// CHECK-NEXT:      spyre.reshape {{.*}} -> tensor<64x2x128xf16
// CHECK-NEXT:      spyre.mul {{.*}} tensor<64x2x128xf16{{.*}}, tensor<64x1x128xf16
// CHECK-NEXT:      spyre.slice {{.*}} starts = [0, 0, 64] stops = [64, 2, 128]
// CHECK-NEXT:      spyre.neg
// CHECK-NEXT:      spyre.slice {{.*}} starts = [0, 0, 0] stops = [64, 2, 64]
// CHECK-NEXT:      spyre.concat {{.*}} dim = 2
// CHECK-NEXT:      spyre.mul
// CHECK-NEXT:      spyre.add
// CHECK-NEXT:      dataflow.yield {{.*}} tensor<64x2x128xf16, #spyre.stick<dim = 2, device = [2, 64, 2, 64], map = [1, 0, 2, 2]
// CHECK-NEXT:    }
// CHECK-NEXT:    spyre.reshape
// CHECK-NEXT:    spyre.transpose {{.*}} perm = [0, 2, 1, 3]
// CHECK-NOT:     dataflow.group
// CHECK:         func.return

// OFF-LABEL:   func.func @rotary
// OFF:         dataflow.group @matmul_0
// OFF:           spyre.matmul
// OFF-NEXT:      dataflow.yield
// OFF:         spyre.transpose {{.*}} perm = [0, 2, 1, 3]
// OFF-NEXT:    dataflow.group @rows_1
// OFF:           spyre.slice
// OFF:           spyre.concat {{.*}} dim = 3
// OFF:           spyre.add
func.func @rotary(%x: tensor<64x256xf16>, %w: tensor<256x256xf16>, %cos: tensor<64x128xf16>, %sin: tensor<64x128xf16>) -> tensor<1x2x64x128xf16> {
  %q = spyre.matmul %x, %w : tensor<64x256xf16>, tensor<256x256xf16> -> tensor<64x256xf16>
  %qr = spyre.reshape %q : tensor<64x256xf16> -> tensor<1x64x2x128xf16>
  %qt = spyre.transpose %qr perm = [0, 2, 1, 3] : tensor<1x64x2x128xf16> -> tensor<1x2x64x128xf16>
  %a = spyre.mul %qt, %cos : tensor<1x2x64x128xf16>, tensor<64x128xf16> -> tensor<1x2x64x128xf16>
  %hi = spyre.slice %qt starts = [0, 0, 0, 64] stops = [1, 2, 64, 128] steps = [1, 1, 1, 1] : tensor<1x2x64x128xf16> -> tensor<1x2x64x64xf16>
  %n = spyre.neg %hi : tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf16>
  %lo = spyre.slice %qt starts = [0, 0, 0, 0] stops = [1, 2, 64, 64] steps = [1, 1, 1, 1] : tensor<1x2x64x128xf16> -> tensor<1x2x64x64xf16>
  %c = spyre.concat %n, %lo dim = 3 : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x2x64x128xf16>
  %b = spyre.mul %c, %sin : tensor<1x2x64x128xf16>, tensor<64x128xf16> -> tensor<1x2x64x128xf16>
  %r = spyre.add %a, %b : tensor<1x2x64x128xf16>, tensor<1x2x64x128xf16> -> tensor<1x2x64x128xf16>
  func.return %r : tensor<1x2x64x128xf16>
}

// Heads of half a stick (D = 32) have no head view of whole sticks: left as they are.
// CHECK-LABEL: func.func @narrow_heads
// CHECK:         dataflow.group @rows_
// CHECK:           spyre.transpose {{.*}} perm = [0, 2, 1, 3]
// CHECK:           spyre.concat {{.*}} dim = 3
func.func @narrow_heads(%x: tensor<64x64xf16>, %w: tensor<64x64xf16>, %sin: tensor<64x32xf16>) -> tensor<1x2x64x32xf16> {
  %q = spyre.matmul %x, %w : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf16>
  %qr = spyre.reshape %q : tensor<64x64xf16> -> tensor<1x64x2x32xf16>
  %qt = spyre.transpose %qr perm = [0, 2, 1, 3] : tensor<1x64x2x32xf16> -> tensor<1x2x64x32xf16>
  %hi = spyre.slice %qt starts = [0, 0, 0, 16] stops = [1, 2, 64, 32] steps = [1, 1, 1, 1] : tensor<1x2x64x32xf16> -> tensor<1x2x64x16xf16>
  %lo = spyre.slice %qt starts = [0, 0, 0, 0] stops = [1, 2, 64, 16] steps = [1, 1, 1, 1] : tensor<1x2x64x32xf16> -> tensor<1x2x64x16xf16>
  %c = spyre.concat %hi, %lo dim = 3 : tensor<1x2x64x16xf16>, tensor<1x2x64x16xf16> -> tensor<1x2x64x32xf16>
  %b = spyre.mul %c, %sin : tensor<1x2x64x32xf16>, tensor<64x32xf16> -> tensor<1x2x64x32xf16>
  func.return %b : tensor<1x2x64x32xf16>
}
