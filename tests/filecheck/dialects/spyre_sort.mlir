// The sorting ops of issue 19: spyre.sort (the first k values along dim, in order) and
// spyre.argsort (their positions, i64); their verifier rules, and the long-row topk of
// spyre-decompose-long-rows (two rounds: chunks of the row, then their candidates).

// RUN: spyre-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: spyre-opt %s --split-input-file --verify-diagnostics 2>&1 | %no-traceback

// k is at most the dim's size.
func.func @f(%a: tensor<4x8xf16>) {
  // CHECK: spyre_sort.mlir:[[# @LINE + 2]]:3: error: 'spyre.sort': k = 9 is out of range for a dim of 8
  // expected-error @+1 {{k = 9 is out of range for a dim of 8}}
  %0 = spyre.sort %a dim = 1 k = 9 : tensor<4x8xf16> -> tensor<4x9xf16>
  func.return
}

// -----

// The result keeps k along dim.
func.func @f(%a: tensor<4x8xf16>) {
  // CHECK: spyre_sort.mlir:[[# @LINE + 2]]:3: error: 'spyre.argsort': result shape [4, 8] should be [4, 2]
  // expected-error @+1 {{result shape [4, 8] should be [4, 2]}}
  %0 = spyre.argsort %a dim = -1 k = 2 descending : tensor<4x8xf16> -> tensor<4x8xi64>
  func.return
}

// -----

// argsort gives i64 positions.
func.func @f(%a: tensor<4x8xf16>) {
  // CHECK: spyre_sort.mlir:[[# @LINE + 2]]:3: error: 'spyre.argsort': result element type i32 should be i64
  // expected-error @+1 {{result element type i32 should be i64}}
  %0 = spyre.argsort %a dim = 0 : tensor<4x8xf16> -> tensor<4x8xi32>
  func.return
}

// -----

// A dim in range; a tensor of rank 1 or more.
func.func @f(%a: tensor<4x8xf16>, %s: tensor<f16>) {
  // CHECK: spyre_sort.mlir:[[# @LINE + 2]]:3: error: 'spyre.sort': dim 2 is out of range for rank 2
  // expected-error @+1 {{dim 2 is out of range for rank 2}}
  %0 = spyre.sort %a dim = 2 : tensor<4x8xf16> -> tensor<4x8xf16>
  func.return
}
