// RUN: spyre-opt %s -p spyre-lower-scatter --split-input-file --verify-diagnostics | filecheck %s
// RUN: spyre-opt %s -p spyre-lower-scatter --split-input-file --verify-diagnostics 2>&1 | %no-traceback

// The PE arrays multiply floats: a scatter into an integer tensor is a located error.
func.func @ints(%cache: tensor<16x4xi64>, %pos: tensor<2xi64>, %v: tensor<2x4xi64>) -> tensor<16x4xi64> {
  // CHECK: spyre_lower_scatter_invalid.mlir:[[# @LINE + 2]]:3: error: spyre-lower-scatter: a scatter into a i64 tensor has no card lowering (floats only)
  // expected-error @+1 {{a scatter into a i64 tensor has no card lowering (floats only)}}
  %r = spyre.scatter %cache[%pos], %v dim = 0 : tensor<16x4xi64>, tensor<2xi64>, tensor<2x4xi64> -> tensor<16x4xi64>
  func.return %r : tensor<16x4xi64>
}
