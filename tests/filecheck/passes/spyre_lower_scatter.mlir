// The one-hot form (in-place stores off: each dest here is an argument nothing else
// reads, which spyre_lower_scatter_in_place.mlir stores in place).
// RUN: spyre-opt %s -p 'spyre-lower-scatter{in-place=false}' --split-input-file | filecheck %s
// RUN: spyre-opt %s -p 'spyre-lower-scatter{in-place=false}' --split-input-file | spyre-opt -p spyre-to-dataflow --split-input-file 2>&1 | %no-traceback

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

// -----

// index_add (and index_put with accumulate): the one-hot matmul's sum is added to the
// destination, no select; a repeated position adds both of its rows.
// CHECK-LABEL: func.func @index_add
// CHECK:         spyre.matmul %{{.*}}, %{{.*}} : tensor<16x3xf16>, tensor<1x3x4xf16> -> tensor<1x16x4xf16>
// CHECK:         spyre.add %x, %{{.*}} : tensor<16x4xf16>, tensor<16x4xf16> -> tensor<16x4xf16>
// CHECK-NOT:     spyre.select %{{.*}}, %{{.*}}, %x
// CHECK-NOT:     spyre.scatter_add
func.func @index_add(%x: tensor<16x4xf16>, %pos: tensor<3xi64>, %v: tensor<3x4xf16>) -> tensor<16x4xf16> {
  %r = spyre.scatter_add %x[%pos], %v dim = 0 : tensor<16x4xf16>, tensor<3xi64>, tensor<3x4xf16> -> tensor<16x4xf16>
  func.return %r : tensor<16x4xf16>
}

// -----

// Integers do not go through the PE array: the sources are selected by the one-hot
// matrix (positions last) and summed over them, a row reduction; the hit counts mark
// the written positions.
// CHECK-LABEL: func.func @ints
// CHECK-NOT:     spyre.matmul
// CHECK:         spyre.sum %{{.*}} dims = [1] : tensor<16x2xi64> -> tensor<16xi64>
// CHECK:         spyre.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x16x1x2xi1>, tensor<1x1x4x2xi64>, tensor<i64> -> tensor<1x16x4x2xi64>
// CHECK:         spyre.sum %{{.*}} dims = [3] : tensor<1x16x4x2xi64> -> tensor<1x16x4xi64>
// CHECK:         spyre.select %{{.*}}, %{{.*}}, %cache : tensor<16x1xi1>, tensor<16x4xi64>, tensor<16x4xi64> -> tensor<16x4xi64>
func.func @ints(%cache: tensor<16x4xi64>, %pos: tensor<2xi64>, %v: tensor<2x4xi64>) -> tensor<16x4xi64> {
  %r = spyre.scatter %cache[%pos], %v dim = 0 : tensor<16x4xi64>, tensor<2xi64>, tensor<2x4xi64> -> tensor<16x4xi64>
  func.return %r : tensor<16x4xi64>
}

// -----

// Booleans are summed as i64, then compared with 0 (a scatter_add of masks is an or).
// CHECK-LABEL: func.func @bools
// CHECK:         spyre.cast %v : tensor<3xi1> -> tensor<3xi64>
// CHECK:         spyre.ne %{{.*}}, %{{.*}} : tensor<1x8x1xi64>, tensor<i64> -> tensor<1x8x1xi1>
// CHECK:         spyre.logical_or %m, %{{.*}} : tensor<8xi1>, tensor<8xi1> -> tensor<8xi1>
func.func @bools(%m: tensor<8xi1>, %pos: tensor<3xi64>, %v: tensor<3xi1>) -> tensor<8xi1> {
  %r = spyre.scatter_add %m[%pos], %v dim = 0 : tensor<8xi1>, tensor<3xi64>, tensor<3xi1> -> tensor<8xi1>
  func.return %r : tensor<8xi1>
}
