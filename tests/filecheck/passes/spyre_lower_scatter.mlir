// RUN: spyre-opt %s -p spyre-lower-scatter --split-input-file | filecheck %s
// RUN: spyre-opt %s -p spyre-to-dataflow --split-input-file 2>&1 | %no-traceback

// StaticCache's KV write of a 3-token prefill at runtime positions: the positions meet an
// iota in a one-hot 3 x 16 matrix; its product with ones marks the written positions, the
// keys move by a one-hot matmul and a select keeps the cache where nothing was written.
// CHECK-LABEL: func.func @prefill
// CHECK:         spyre.eq %{{.*}}, %{{.*}} : tensor<3x1xi64>, tensor<1x16xi64> -> tensor<3x16xi1>
// CHECK:         spyre.transpose %{{.*}} perm = [1, 0] : tensor<3x16xf16> -> tensor<16x3xf16>
// CHECK:         spyre.matmul %{{.*}}, %{{.*}} : tensor<16x3xf16>, tensor<3x1xf16> -> tensor<16x1xf16>
// CHECK:         spyre.matmul %{{.*}}, %{{.*}} : tensor<16x3xf16>, tensor<2x3x32xf16> -> tensor<2x16x32xf16>
// CHECK:         spyre.select %{{.*}}, %{{.*}}, %cache : tensor<1x1x16x1xi1>, tensor<1x2x16x32xf16>, tensor<1x2x16x32xf16> -> tensor<1x2x16x32xf16>
// CHECK-NOT:     spyre.scatter
func.func @prefill(%cache: tensor<1x2x16x32xf16>, %pos: tensor<3xi64>, %k: tensor<1x2x3x32xf16>) -> tensor<1x2x16x32xf16> {
  %r = spyre.scatter %cache[%pos], %k dim = 2 : tensor<1x2x16x32xf16>, tensor<3xi64>, tensor<1x2x3x32xf16> -> tensor<1x2x16x32xf16>
  func.return %r : tensor<1x2x16x32xf16>
}

// -----

// A decode step writes one position: the key is broadcast, no matmul, and the one-hot
// row itself says where (no sum).
// CHECK-LABEL: func.func @decode
// CHECK-NOT:     spyre.matmul
// CHECK-NOT:     spyre.sum
// CHECK:         spyre.broadcast_to %k : tensor<1x2x1x32xf16> -> tensor<1x2x16x32xf16>
// CHECK:         spyre.select
func.func @decode(%cache: tensor<1x2x16x32xf16>, %pos: tensor<1xi32>, %k: tensor<1x2x1x32xf16>) -> tensor<1x2x16x32xf16> {
  %r = spyre.scatter %cache[%pos], %k dim = 2 : tensor<1x2x16x32xf16>, tensor<1xi32>, tensor<1x2x1x32xf16> -> tensor<1x2x16x32xf16>
  func.return %r : tensor<1x2x16x32xf16>
}

// -----

// A 2048-token prefill into a cache of 2052 positions: the written positions come from a
// one-hot matmul with ones, tiled over the 2048 positions, not from a sum over the one-hot
// matrix's dim 0 (one row of all 2048 x 2052 hits, too big for LX), so the lowering
// compiles (the second RUN line takes it to dataflow).
// CHECK-LABEL: func.func @long_prefill
// CHECK:         spyre.matmul %{{.*}}, %{{.*}} : tensor<2052x2048xf16>, tensor<2048x1xf16> -> tensor<2052x1xf16>
func.func @long_prefill(%cache: tensor<1x2x2052x64xf16>, %pos: tensor<2048xi64>, %k: tensor<1x2x2048x64xf16>) -> tensor<1x2x2052x64xf16> {
  %r = spyre.scatter %cache[%pos], %k dim = 2 : tensor<1x2x2052x64xf16>, tensor<2048xi64>, tensor<1x2x2048x64xf16> -> tensor<1x2x2052x64xf16>
  func.return %r : tensor<1x2x2052x64xf16>
}
