// RUN: spyre-opt %s -p spyre-fuse | filecheck %s
// RUN: spyre-opt %s -p 'spyre-fuse{trim-epilogues=false}' | filecheck %s --check-prefix=KEPT

// An output projection with its residual add, then an RMSNorm of the sum. The f32
// square of the sum only leaves the matmul's group (the mean is a row reduction the
// group cannot take), while the sum leaves it too: kept, the group would write the sum
// and its square (f32, twice the bytes) and the norm's group read both. The closing
// group gives the cast and the square back, and the norm's group computes them from the
// sum.

// CHECK-LABEL: func.func @o_proj_then_norm
// CHECK:         dataflow.group @matmul_0(%a, %w, %x) {dataflow.kind = "matmul"
// CHECK:           spyre.matmul
// CHECK-NEXT:      spyre.add
// CHECK-NEXT:      dataflow.yield
// CHECK:         dataflow.group @rows_1
// CHECK:           spyre.cast
// CHECK:           spyre.pow
// CHECK:           spyre.mean
// KEPT-LABEL:  func.func @o_proj_then_norm
// KEPT:          dataflow.group @matmul_0(%a, %w, %x) {dataflow.kind = "matmul"
// KEPT:            spyre.matmul
// KEPT-NEXT:       spyre.add
// KEPT-NEXT:       spyre.cast
// KEPT-NEXT:       spyre.pow
// KEPT-NEXT:       dataflow.yield
// KEPT:          dataflow.group @rows_1

// KEPT:            spyre.mean
func.func @o_proj_then_norm(%a: tensor<64x128xf16>, %w: tensor<128x256xf16>, %x: tensor<64x256xf16>) -> (tensor<64x256xf16>, tensor<64x256xf32>) {
  %p = spyre.matmul %a, %w : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %s = spyre.add %x, %p : tensor<64x256xf16>, tensor<64x256xf16> -> tensor<64x256xf16>
  %f = spyre.cast %s : tensor<64x256xf16> -> tensor<64x256xf32>
  %two = spyre.full {value = 2.0 : f64} : tensor<f32>
  %q = spyre.pow %f, %two : tensor<64x256xf32>, tensor<f32> -> tensor<64x256xf32>
  %m = spyre.mean %q dims = [-1] keepdim : tensor<64x256xf32> -> tensor<64x1xf32>
  %eps = spyre.full {value = 1.0e-05 : f64} : tensor<f32>
  %v = spyre.add %m, %eps : tensor<64x1xf32>, tensor<f32> -> tensor<64x1xf32>
  %r = spyre.rsqrt %v : tensor<64x1xf32> -> tensor<64x1xf32>
  %n = spyre.mul %f, %r : tensor<64x256xf32>, tensor<64x1xf32> -> tensor<64x256xf32>
  func.return %s, %n : tensor<64x256xf16>, tensor<64x256xf32>
}
