// RUN: spyre-opt %s -p spyre-fuse --split-input-file | filecheck %s
// RUN: spyre-opt %s -p 'spyre-fuse{fuse-matmul-pairs=false}' --split-input-file | filecheck %s --check-prefix=NOPAIRS
// RUN: spyre-opt %s -p 'spyre-to-dataflow' --split-input-file | filecheck %s --check-prefix=KERNELS
// RUN: spyre-opt %s -p 'spyre-to-dataflow{fuse-matmul-pairs=false}' --split-input-file | filecheck %s --check-prefix=UNPAIRED

// SwiGLU: a second matmul reading the first's A with a B of the same shape joins the
// first's group, so gate and up run in one kernel whose epilogue writes silu(g) * u;
// neither g, silu(g) nor u leaves LX. Switched off, the up projection and the mul run
// in a kernel of their own, reading silu(g) back from LPDDR5.

// CHECK-LABEL: func.func @swiglu
// CHECK:         dataflow.group @matmul_0(%wg, %a, %wu) {dataflow.kind = "matmul"
// CHECK:           spyre.transpose
// CHECK-NEXT:      spyre.matmul
// CHECK-NEXT:      spyre.neg
// CHECK-NEXT:      spyre.exp
// CHECK-NEXT:      spyre.add
// CHECK-NEXT:      spyre.div
// CHECK-NEXT:      spyre.transpose
// CHECK-NEXT:      spyre.matmul
// CHECK-NEXT:      spyre.mul
// CHECK-NEXT:      dataflow.yield
// CHECK-NOT:     dataflow.group
// NOPAIRS-LABEL: func.func @swiglu
// NOPAIRS:         dataflow.group @matmul_0(%wg, %a) {dataflow.kind = "matmul"
// NOPAIRS:           spyre.div
// NOPAIRS-NEXT:      dataflow.yield
// NOPAIRS:         dataflow.group @matmul_1(%wu, %a, %{{.*}}) {dataflow.kind = "matmul"
// NOPAIRS:           spyre.matmul
// NOPAIRS-NEXT:      spyre.mul
// KERNELS-LABEL: func.func @swiglu
// KERNELS:       dataflow.kernel @matmul_0 cores({{[0-9]+}}) (%wg, %a, %wu)
// KERNELS:         dataflow.compute "spyre.matmul"
// KERNELS:         dataflow.compute "spyre.div"
// KERNELS:         dataflow.compute "spyre.mul"
// KERNELS-NOT:   dataflow.kernel
// KERNELS:       func.return
// UNPAIRED-LABEL: func.func @swiglu
// UNPAIRED-COUNT-2: dataflow.kernel
func.func @swiglu(%a: tensor<64x128xf16>, %wg: tensor<256x128xf16>, %wu: tensor<256x128xf16>) -> tensor<64x256xf16> {
  %tg = spyre.transpose %wg perm = [1, 0] : tensor<256x128xf16> -> tensor<128x256xf16>
  %g = spyre.matmul %a, %tg : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %n = spyre.neg %g : tensor<64x256xf16> -> tensor<64x256xf16>
  %e = spyre.exp %n : tensor<64x256xf16> -> tensor<64x256xf16>
  %one = spyre.full {value = 1.0 : f64} : tensor<f16>
  %d = spyre.add %e, %one : tensor<64x256xf16>, tensor<f16> -> tensor<64x256xf16>
  %s = spyre.div %g, %d : tensor<64x256xf16>, tensor<64x256xf16> -> tensor<64x256xf16>
  %tu = spyre.transpose %wu perm = [1, 0] : tensor<256x128xf16> -> tensor<128x256xf16>
  %u = spyre.matmul %a, %tu : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %r = spyre.mul %s, %u : tensor<64x256xf16>, tensor<64x256xf16> -> tensor<64x256xf16>
  func.return %r : tensor<64x256xf16>
}

// -----

// Two matmuls sharing A whose results both leave the kernel (K and V projections): one
// group yielding both.

// CHECK-LABEL: func.func @two_outputs
// CHECK:         dataflow.group @matmul_0(%a, %b, %c) {dataflow.kind = "matmul"
// CHECK:           spyre.matmul
// CHECK-NEXT:      spyre.matmul
// CHECK-NEXT:      dataflow.yield %{{.*}}, %{{.*}} :
// NOPAIRS-LABEL: func.func @two_outputs
// NOPAIRS-COUNT-2: dataflow.group
// KERNELS-LABEL: func.func @two_outputs
// KERNELS-COUNT-1: dataflow.kernel
// KERNELS-NOT:   dataflow.kernel
// KERNELS:       func.return
func.func @two_outputs(%a: tensor<64x128xf16>, %b: tensor<128x256xf16>, %c: tensor<128x256xf16>) -> (tensor<64x256xf16>, tensor<64x256xf16>) {
  %p = spyre.matmul %a, %b : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %q = spyre.matmul %a, %c : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  func.return %p, %q : tensor<64x256xf16>, tensor<64x256xf16>
}

// -----

// No pair: a B of another shape, a different A, and a B computed after the first
// matmul (the group stands where the first matmul stood).

// CHECK-LABEL: func.func @no_pairs
// CHECK:         dataflow.group @matmul_0(%a, %b)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      spyre.matmul
// CHECK-NEXT:      dataflow.yield
// CHECK:         dataflow.group @matmul_1(%a, %c)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      spyre.matmul
// CHECK-NEXT:      dataflow.yield
// CHECK:         dataflow.group @matmul_2(%x, %b)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      spyre.matmul
// CHECK-NEXT:      dataflow.yield
// CHECK:         dataflow.group @rows_3(%b)
// CHECK:         dataflow.group @matmul_4(%x, %{{.*}})
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      spyre.matmul
// CHECK-NEXT:      dataflow.yield
func.func @no_pairs(%a: tensor<64x128xf16>, %x: tensor<64x128xf16>, %b: tensor<128x256xf16>, %c: tensor<128x128xf16>) -> (tensor<64x256xf16>, tensor<64x128xf16>, tensor<64x256xf16>, tensor<64x256xf16>) {
  %p = spyre.matmul %a, %b : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %q = spyre.matmul %a, %c : tensor<64x128xf16>, tensor<128x128xf16> -> tensor<64x128xf16>
  %r = spyre.matmul %x, %b : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %later = spyre.exp %b : tensor<128x256xf16> -> tensor<128x256xf16>
  %s = spyre.matmul %x, %later : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  func.return %p, %q, %r, %s : tensor<64x256xf16>, tensor<64x128xf16>, tensor<64x256xf16>, tensor<64x256xf16>
}
