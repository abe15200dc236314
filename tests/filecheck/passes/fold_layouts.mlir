// RUN: spyre-opt %s -p spyre-stickify,spyre-fold-layouts,spyre-fuse | filecheck %s
// RUN: spyre-opt %s -p 'spyre-stickify,spyre-fold-layouts{fold-layouts=false},spyre-fuse' | filecheck %s --check-prefix=OFF

// A projection split into heads of 128, scaled per position, merged back, projected
// again and returned as [1, s, h]: Llama's head split and merge around attention.
// Folded, the first matmul stores head by head, the scale stores position by position
// and the last matmul row by row, so the head split, the merge and the output's
// [s, h] -> [1, s, h] are views: three kernels, the transposes between them. Off, the
// scale's kernel moves the heads both ways and the output's restickify is a kernel.

// CHECK-LABEL: func.func @heads
// CHECK:         dataflow.group @matmul_0
// CHECK:           dataflow.yield {{.*}} device = [2, 64, 2, 64], map = [1, 0, 1, 1]
// CHECK-NEXT:    }
// CHECK-NEXT:    spyre.reshape
// CHECK-NEXT:    spyre.transpose {{.*}} perm = [0, 2, 1, 3]
// CHECK-NEXT:    dataflow.group @rows_1
// CHECK-NOT:       spyre.transpose
// CHECK:           spyre.mul
// CHECK-NEXT:      dataflow.yield {{.*}} device = [64, 2, 2, 1, 64], map = [2, 1, 3, 0, 3]
// CHECK-NEXT:    }
// CHECK-NEXT:    spyre.transpose {{.*}} perm = [0, 2, 1, 3]
// CHECK-NEXT:    spyre.reshape
// CHECK-NEXT:    dataflow.group @matmul_2
// CHECK:           dataflow.yield {{.*}} device = [64, 4, 64], map = [0, 1, 1]
// CHECK-NEXT:    }
// CHECK-NEXT:    spyre.reshape
// CHECK-NOT:     dataflow.group
// CHECK:         func.return

// OFF-LABEL:   func.func @heads
// OFF:         dataflow.group @matmul_0
// OFF:         dataflow.group @rows_1
// OFF:           spyre.restickify
// OFF-NEXT:      spyre.transpose
// OFF-NEXT:      spyre.mul
// OFF-NEXT:      spyre.transpose
// OFF:         dataflow.group @matmul_2
// OFF:         dataflow.group @rows_3
// OFF-NEXT:    ^
// OFF-NEXT:      spyre.restickify
func.func @heads(%x: tensor<64x256xf16>, %w: tensor<256x256xf16>, %c: tensor<64x128xf16>) -> tensor<1x64x256xf16> {
  %q = spyre.matmul %x, %w : tensor<64x256xf16>, tensor<256x256xf16> -> tensor<64x256xf16>
  %qr = spyre.reshape %q : tensor<64x256xf16> -> tensor<1x64x2x128xf16>
  %qt = spyre.transpose %qr perm = [0, 2, 1, 3] : tensor<1x64x2x128xf16> -> tensor<1x2x64x128xf16>
  %qc = spyre.mul %qt, %c : tensor<1x2x64x128xf16>, tensor<64x128xf16> -> tensor<1x2x64x128xf16>
  %back = spyre.transpose %qc perm = [0, 2, 1, 3] : tensor<1x2x64x128xf16> -> tensor<1x64x2x128xf16>
  %flat = spyre.reshape %back : tensor<1x64x2x128xf16> -> tensor<64x256xf16>
  %o = spyre.matmul %flat, %w : tensor<64x256xf16>, tensor<256x256xf16> -> tensor<64x256xf16>
  %o3 = spyre.reshape %o : tensor<64x256xf16> -> tensor<1x64x256xf16>
  func.return %o3 : tensor<1x64x256xf16>
}

// A function argument keeps the layout its caller gives: its head split stays a kernel.
// CHECK-LABEL: func.func @argument
// CHECK:         dataflow.group @rows_3
// CHECK:           spyre.transpose
func.func @argument(%q: tensor<1x64x2x128xf16>) -> tensor<1x2x64x128xf16> {
  %t = spyre.transpose %q perm = [0, 2, 1, 3] : tensor<1x64x2x128xf16> -> tensor<1x2x64x128xf16>
  func.return %t : tensor<1x2x64x128xf16>
}
