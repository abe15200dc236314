// A work plan is verified: a hand-written plan that lacks a key, has one of the wrong
// type or out of range, or a key no plan has, is a verifier error (it used to pass the
// verifier and end in a KeyError in spyre-tile).

// RUN: spyre-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: spyre-opt %s --split-input-file --verify-diagnostics 2>&1 | %no-traceback
// RUN: not spyre-opt %s --split-input-file -p spyre-tile 2>&1 | %no-traceback

func.func @main(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.group' @g: a 'rows' plan needs 'row_dims'
  // expected-error @+1 {{a 'rows' plan needs 'row_dims'}}
  %0 = dataflow.group @g (%a) {plan = {kind = "rows", cores = 4}, dataflow.kind = "rows", dataflow.row_dims = 1 : i64} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>):
    %1 = spyre.exp %x : tensor<64x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

func.func @main(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.group' @g: plan cores = 4000 is out of range [1, 32]
  // expected-error @+1 {{plan cores = 4000 is out of range [1, 32]}}
  %0 = dataflow.group @g (%a) {plan = {kind = "rows", row_dims = 1, cores = 4000}, dataflow.kind = "rows", dataflow.row_dims = 1 : i64} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>):
    %1 = spyre.exp %x : tensor<64x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

func.func @main(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.group' @g: plan kind must be one of 'rows', 'gather', 'copy', 'matmul', 'ktir', 'attention', got "tiles"
  // expected-error @+1 {{plan kind must be one of}}
  %0 = dataflow.group @g (%a) {plan = {kind = "tiles", row_dims = 1, cores = 4}, dataflow.kind = "rows", dataflow.row_dims = 1 : i64} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>):
    %1 = spyre.exp %x : tensor<64x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

func.func @main(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.group' @g: a 'rows' plan has no key 'core' (keys: kind, row_dims, cores)
  // expected-error @+1 {{a 'rows' plan has no key 'core'}}
  %0 = dataflow.group @g (%a) {plan = {kind = "rows", row_dims = 1, core = 4}, dataflow.kind = "rows", dataflow.row_dims = 1 : i64} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>):
    %1 = spyre.exp %x : tensor<64x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

func.func @main(%a: tensor<64x128xf16>, %b: tensor<128x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.group' @g: plan split must be [m, n, k] of positive integers, got [2 : i64, 0 : i64]
  // expected-error @+1 {{plan split must be [m, n, k] of positive integers}}
  %0 = dataflow.group @g (%a, %b) {plan = {kind = "matmul", cores = 2, split = [2, 0]}, dataflow.kind = "matmul", dataflow.row_dims = 0 : i64} : (tensor<64x128xf16>, tensor<128x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>, %y: tensor<128x128xf16>):
    %1 = spyre.matmul %x, %y : tensor<64x128xf16>, tensor<128x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}
