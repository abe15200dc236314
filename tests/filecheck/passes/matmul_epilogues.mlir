// RUN: spyre-opt %s -p spyre-fuse --split-input-file | filecheck %s
// RUN: spyre-opt %s -p 'spyre-fuse{fuse-bias=false}' --split-input-file | filecheck %s --check-prefix=NOBIAS
// RUN: spyre-opt %s -p 'spyre-fuse{fuse-residual=false}' --split-input-file | filecheck %s --check-prefix=NORESIDUAL
// RUN: spyre-opt %s -p 'spyre-fuse{fuse-scale=false}' --split-input-file | filecheck %s --check-prefix=NOSCALE
// RUN: spyre-opt %s -p 'spyre-fuse{fuse-activation=false}' --split-input-file | filecheck %s --check-prefix=NOACT
// RUN: spyre-opt %s -p 'spyre-fuse{fuse-cast=false}' --split-input-file | filecheck %s --check-prefix=NOCAST
// RUN: spyre-opt %s -p 'spyre-to-dataflow' --split-input-file | filecheck %s --check-prefix=KERNELS
// RUN: spyre-opt %s -p 'spyre-to-dataflow{fuse-bias=false fuse-residual=false fuse-scale=false fuse-activation=false fuse-cast=false}' --split-input-file | filecheck %s --check-prefix=UNFUSED

// Each kind of matmul epilogue joins the matmul's group, unless its switch is off:
// then the matmul's group ends before it and the op runs in a rows group.

// CHECK-LABEL: func.func @bias
// CHECK:         dataflow.group @matmul_0(%a, %b, %c) {dataflow.kind = "matmul"
// CHECK:           spyre.matmul
// CHECK-NEXT:      spyre.add
// CHECK-NEXT:      dataflow.yield
// NOBIAS-LABEL: func.func @bias
// NOBIAS:         dataflow.group @matmul_0(%a, %b) {dataflow.kind = "matmul"
// NOBIAS:         dataflow.group @rows_1({{.*}}, %c) {dataflow.kind = "rows"
// NOBIAS-NEXT:    ^bb0
// NOBIAS-NEXT:      spyre.add
// KERNELS-LABEL: func.func @bias
// KERNELS-COUNT-1: dataflow.kernel
// KERNELS-NOT:   dataflow.kernel
// UNFUSED-LABEL: func.func @bias
// UNFUSED-COUNT-2: dataflow.kernel
func.func @bias(%a: tensor<64x128xf16>, %b: tensor<128x256xf16>, %c: tensor<256xf16>) -> tensor<64x256xf16> {
  %p = spyre.matmul %a, %b : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %r = spyre.add %p, %c : tensor<64x256xf16>, tensor<256xf16> -> tensor<64x256xf16>
  func.return %r : tensor<64x256xf16>
}

// -----

// CHECK-LABEL: func.func @residual
// CHECK:         dataflow.group @matmul_0(%a, %b, %x) {dataflow.kind = "matmul"
// CHECK:           spyre.matmul
// CHECK-NEXT:      spyre.add
// CHECK-NEXT:      dataflow.yield
// NORESIDUAL-LABEL: func.func @residual
// NORESIDUAL:       dataflow.group @matmul_0(%a, %b) {dataflow.kind = "matmul"
// NORESIDUAL:       dataflow.group @rows_1
// NORESIDUAL:         spyre.add
// KERNELS-LABEL: func.func @residual
// KERNELS-COUNT-1: dataflow.kernel
// KERNELS-NOT:   dataflow.kernel
// KERNELS:       func.return
// UNFUSED-LABEL: func.func @residual
// UNFUSED-COUNT-2: dataflow.kernel
func.func @residual(%a: tensor<64x128xf16>, %b: tensor<128x256xf16>, %x: tensor<64x256xf16>) -> tensor<64x256xf16> {
  %p = spyre.matmul %a, %b : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %r = spyre.add %x, %p : tensor<64x256xf16>, tensor<64x256xf16> -> tensor<64x256xf16>
  func.return %r : tensor<64x256xf16>
}

// -----

// CHECK-LABEL: func.func @scale
// CHECK:         dataflow.group @matmul_0(%a, %b) {dataflow.kind = "matmul"
// CHECK:           spyre.matmul
// CHECK-NEXT:      spyre.mul
// CHECK-NEXT:      dataflow.yield
// NOSCALE-LABEL: func.func @scale
// NOSCALE:         dataflow.group @matmul_0
// NOSCALE-NOT:       spyre.mul
// NOSCALE:         dataflow.group @rows_1
// NOSCALE:           spyre.mul
func.func @scale(%a: tensor<64x128xf16>, %b: tensor<128x256xf16>) -> tensor<64x256xf16> {
  %p = spyre.matmul %a, %b : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %s = spyre.full {value = 0.125 : f64} : tensor<f16>
  %r = spyre.mul %p, %s : tensor<64x256xf16>, tensor<f16> -> tensor<64x256xf16>
  func.return %r : tensor<64x256xf16>
}

// -----

// silu as torch decomposes it (x / (1 + exp(-x))) and gelu: activations.
// CHECK-LABEL: func.func @activation
// CHECK:         dataflow.group @matmul_0(%a, %b) {dataflow.kind = "matmul"
// CHECK:           spyre.matmul
// CHECK-NEXT:      spyre.neg
// CHECK-NEXT:      spyre.exp
// CHECK-NEXT:      spyre.add
// CHECK-NEXT:      spyre.div
// CHECK-NEXT:      spyre.gelu
// CHECK-NEXT:      dataflow.yield
// NOACT-LABEL: func.func @activation
// NOACT:         dataflow.group @matmul_0
// NOACT-NOT:       spyre.neg
// NOACT:         dataflow.group @rows_1
// NOACT:           spyre.neg
func.func @activation(%a: tensor<64x128xf16>, %b: tensor<128x256xf16>) -> tensor<64x256xf16> {
  %p = spyre.matmul %a, %b : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %n = spyre.neg %p : tensor<64x256xf16> -> tensor<64x256xf16>
  %e = spyre.exp %n : tensor<64x256xf16> -> tensor<64x256xf16>
  %one = spyre.full {value = 1.0 : f64} : tensor<f16>
  %d = spyre.add %e, %one : tensor<64x256xf16>, tensor<f16> -> tensor<64x256xf16>
  %s = spyre.div %p, %d : tensor<64x256xf16>, tensor<64x256xf16> -> tensor<64x256xf16>
  %g = spyre.gelu %s : tensor<64x256xf16> -> tensor<64x256xf16>
  func.return %g : tensor<64x256xf16>
}

// -----

// CHECK-LABEL: func.func @cast
// CHECK:         dataflow.group @matmul_0(%a, %b) {dataflow.kind = "matmul"
// CHECK:           spyre.matmul
// CHECK-NEXT:      spyre.cast
// CHECK-NEXT:      dataflow.yield
// NOCAST-LABEL: func.func @cast
// NOCAST:         dataflow.group @matmul_0
// NOCAST-NOT:       spyre.cast
// NOCAST:         dataflow.group @rows_1
// NOCAST:           spyre.cast
func.func @cast(%a: tensor<64x128xf16>, %b: tensor<128x256xf16>) -> tensor<64x256xf32> {
  %p = spyre.matmul %a, %b : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %r = spyre.cast %p : tensor<64x256xf16> -> tensor<64x256xf32>
  func.return %r : tensor<64x256xf32>
}

// -----

// An op wider than the matmul (its [m, 1] result broadcast against [m, n]) is no
// epilogue: the group ends before it, with the sigmoid on the matmul's own tiles.
// CHECK-LABEL: func.func @broadcast_wider
// CHECK:         dataflow.group @matmul_0(%a, %w) {dataflow.kind = "matmul"
// CHECK:           spyre.matmul
// CHECK-NEXT:      spyre.sigmoid
// CHECK-NEXT:      dataflow.yield
// CHECK:         dataflow.group @rows_1({{.*}}, %v) {dataflow.kind = "rows"
// CHECK:           spyre.mul
// KERNELS-LABEL: func.func @broadcast_wider
// KERNELS-COUNT-2: dataflow.kernel
func.func @broadcast_wider(%a: tensor<8x64xf16>, %w: tensor<64x1xf16>, %v: tensor<8x64xf16>) -> tensor<8x64xf16> {
  %g = spyre.matmul %a, %w : tensor<8x64xf16>, tensor<64x1xf16> -> tensor<8x1xf16>
  %s = spyre.sigmoid %g : tensor<8x1xf16> -> tensor<8x1xf16>
  %r = spyre.mul %s, %v : tensor<8x1xf16>, tensor<8x64xf16> -> tensor<8x64xf16>
  func.return %r : tensor<8x64xf16>
}
