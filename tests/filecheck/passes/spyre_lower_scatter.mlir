// RUN: spyre-opt %s -p spyre-lower-scatter --split-input-file | filecheck %s
// RUN: spyre-opt %s -p spyre-to-dataflow --split-input-file 2>&1 | %no-traceback

// StaticCache's KV write of a 3-token prefill at runtime positions: the positions meet an
// iota in a one-hot 3 x 16 matrix; the keys move by a one-hot matmul and a select keeps
// the cache where nothing was written.
// CHECK-LABEL: func.func @prefill
// CHECK:         spyre.eq %{{.*}}, %{{.*}} : tensor<3x1xi64>, tensor<1x16xi64> -> tensor<3x16xi1>
// CHECK:         spyre.sum %{{.*}} dims = [0] : tensor<3x16xf16> -> tensor<16xf16>
// CHECK:         spyre.matmul %{{.*}}, %{{.*}} : tensor<16x3xf16>, tensor<2x3x32xf16> -> tensor<2x16x32xf16>
// CHECK:         spyre.select %{{.*}}, %{{.*}}, %cache : tensor<1x1x16x1xi1>, tensor<1x2x16x32xf16>, tensor<1x2x16x32xf16> -> tensor<1x2x16x32xf16>
// CHECK-NOT:     spyre.scatter
func.func @prefill(%cache: tensor<1x2x16x32xf16>, %pos: tensor<3xi64>, %k: tensor<1x2x3x32xf16>) -> tensor<1x2x16x32xf16> {
  %r = spyre.scatter %cache[%pos], %k dim = 2 : tensor<1x2x16x32xf16>, tensor<3xi64>, tensor<1x2x3x32xf16> -> tensor<1x2x16x32xf16>
  func.return %r : tensor<1x2x16x32xf16>
}

// -----

// A decode step writes one position: the key is broadcast, no matmul.
// CHECK-LABEL: func.func @decode
// CHECK-NOT:     spyre.matmul
// CHECK:         spyre.broadcast_to %k : tensor<1x2x1x32xf16> -> tensor<1x2x16x32xf16>
// CHECK:         spyre.select
func.func @decode(%cache: tensor<1x2x16x32xf16>, %pos: tensor<1xi32>, %k: tensor<1x2x1x32xf16>) -> tensor<1x2x16x32xf16> {
  %r = spyre.scatter %cache[%pos], %k dim = 2 : tensor<1x2x16x32xf16>, tensor<1xi32>, tensor<1x2x1x32xf16> -> tensor<1x2x16x32xf16>
  func.return %r : tensor<1x2x16x32xf16>
}
