// A work plan is a typed attribute (spyre_ir/dialects/dataflow_plan.py), verified: a
// hand-written plan that lacks a field, has one of the wrong type or out of range, a
// field no plan has, an unknown kind, or the old dictionary form, is a located error
// (a dictionary plan used to pass the verifier and end in a KeyError in spyre-tile).

// RUN: spyre-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: spyre-opt %s --split-input-file --verify-diagnostics 2>&1 | %no-traceback
// RUN: not spyre-opt %s --split-input-file -p spyre-tile 2>&1 | %no-traceback
// RUN: not spyre-opt %s --split-input-file -p spyre-tile 2>&1 | filecheck %s --check-prefix=TILE

func.func @main(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:58: error: #dataflow.rows_plan: a 'rows' plan needs 'row_dims'
  // expected-error @+1 {{a 'rows' plan needs 'row_dims'}}
  %0 = dataflow.group @g (%a) {plan = #dataflow.rows_plan<cores = 4>, dataflow.kind = "rows", dataflow.row_dims = 1 : i64} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
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
  %0 = dataflow.group @g (%a) {plan = #dataflow.rows_plan<row_dims = 1, cores = 4000>, dataflow.kind = "rows", dataflow.row_dims = 1 : i64} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>):
    %1 = spyre.exp %x : tensor<64x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

// The card's cores bound the plan of a kernel too, on a smaller card.
builtin.module attributes {spyre.card = {cores = 8 : i64}} {
  func.func @main(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
    // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.kernel' @g: plan cores = 16 is out of range [1, 8]
    // expected-error @+1 {{plan cores = 16 is out of range [1, 8]}}
    %0 = dataflow.kernel @g cores(4) (%a) {plan = #dataflow.rows_plan<row_dims = 1, cores = 16>} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
    ^bb0(%i: index, %x: !dataflow.ddr<64x128xf16>, %y: !dataflow.ddr<64x128xf16>):
      dataflow.end
    }
    func.return %0 : tensor<64x128xf16>
  }
}

// -----

func.func @main(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:59: error: 'dataflow.tiles_plan' is not registered
  // expected-error @+1 {{'dataflow.tiles_plan' is not registered}}
  %0 = dataflow.group @g (%a) {plan = #dataflow.tiles_plan<row_dims = 1, cores = 4>, dataflow.kind = "rows", dataflow.row_dims = 1 : i64} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>):
    %1 = spyre.exp %x : tensor<64x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

func.func @main(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:58: error: #dataflow.rows_plan has no field 'core' (fields: row_dims, cores)
  // expected-error @+1 {{row_dims, cores)}}
  %0 = dataflow.group @g (%a) {plan = #dataflow.rows_plan<row_dims = 1, core = 4>, dataflow.kind = "rows", dataflow.row_dims = 1 : i64} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>):
    %1 = spyre.exp %x : tensor<64x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

func.func @main(%a: tensor<64x128xf16>, %b: tensor<128x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:64: error: #dataflow.matmul_plan: plan split = [2, 0, 1] must hold integers >= 1
  // expected-error @+1 {{plan split = [2, 0, 1] must hold integers >= 1}}
  %0 = dataflow.group @g (%a, %b) {plan = #dataflow.matmul_plan<cores = 2, split = [2, 0, 1]>, dataflow.kind = "matmul", dataflow.row_dims = 0 : i64} : (tensor<64x128xf16>, tensor<128x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>, %y: tensor<128x128xf16>):
    %1 = spyre.matmul %x, %y : tensor<64x128xf16>, tensor<128x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

func.func @main(%a: tensor<64x128xf16>, %b: tensor<128x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:64: error: #dataflow.matmul_plan: plan split must be [m, n, k], got [2, 1]
  // expected-error @+1 {{plan split must be [m, n, k], got [2, 1]}}
  %0 = dataflow.group @g (%a, %b) {plan = #dataflow.matmul_plan<cores = 2, split = [2, 1]>, dataflow.kind = "matmul", dataflow.row_dims = 0 : i64} : (tensor<64x128xf16>, tensor<128x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>, %y: tensor<128x128xf16>):
    %1 = spyre.matmul %x, %y : tensor<64x128xf16>, tensor<128x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

func.func @main(%a: tensor<64x128xf16>, %b: tensor<128x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:64: error: #dataflow.matmul_plan: plan split must be a list of integers
  // expected-error @+1 {{plan split must be a list of integers}}
  %0 = dataflow.group @g (%a, %b) {plan = #dataflow.matmul_plan<cores = 2, split = 2>, dataflow.kind = "matmul", dataflow.row_dims = 0 : i64} : (tensor<64x128xf16>, tensor<128x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>, %y: tensor<128x128xf16>):
    %1 = spyre.matmul %x, %y : tensor<64x128xf16>, tensor<128x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

func.func @main(%a: tensor<64x128xf16>, %b: tensor<128x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.group' @g: plan split [4, 4, 4] needs 64 cores; the card has 32
  // expected-error @+1 {{plan split [4, 4, 4] needs 64 cores; the card has 32}}
  %0 = dataflow.group @g (%a, %b) {plan = #dataflow.matmul_plan<cores = 32, split = [4, 4, 4]>, dataflow.kind = "matmul", dataflow.row_dims = 0 : i64} : (tensor<64x128xf16>, tensor<128x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>, %y: tensor<128x128xf16>):
    %1 = spyre.matmul %x, %y : tensor<64x128xf16>, tensor<128x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

// A batch split: its groups times the split are the plan's cores, each at least one.
func.func @main(%a: tensor<4x64x128xf16>, %b: tensor<4x128x128xf16>) -> tensor<4x64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:64: error: #dataflow.matmul_plan: plan split_b = 8 x split [2, 1, 1] is 16 cores, not cores = 32
  // expected-error @+1 {{plan split_b = 8 x split [2, 1, 1] is 16 cores, not cores = 32}}
  %0 = dataflow.group @g (%a, %b) {plan = #dataflow.matmul_plan<cores = 32, split = [2, 1, 1], split_b = 8>, dataflow.kind = "matmul", dataflow.row_dims = 1 : i64} : (tensor<4x64x128xf16>, tensor<4x128x128xf16>) -> tensor<4x64x128xf16> {
  ^bb0(%x: tensor<4x64x128xf16>, %y: tensor<4x128x128xf16>):
    %1 = spyre.matmul %x, %y : tensor<4x64x128xf16>, tensor<4x128x128xf16> -> tensor<4x64x128xf16>
    dataflow.yield %1 : tensor<4x64x128xf16>
  }
  func.return %0 : tensor<4x64x128xf16>
}

// -----

func.func @main(%a: tensor<4x64x128xf16>, %b: tensor<4x128x128xf16>) -> tensor<4x64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:64: error: #dataflow.matmul_plan: plan split_b = 0 must be >= 1
  // expected-error @+1 {{plan split_b = 0 must be >= 1}}
  %0 = dataflow.group @g (%a, %b) {plan = #dataflow.matmul_plan<cores = 2, split = [2, 1, 1], split_b = 0>, dataflow.kind = "matmul", dataflow.row_dims = 1 : i64} : (tensor<4x64x128xf16>, tensor<4x128x128xf16>) -> tensor<4x64x128xf16> {
  ^bb0(%x: tensor<4x64x128xf16>, %y: tensor<4x128x128xf16>):
    %1 = spyre.matmul %x, %y : tensor<4x64x128xf16>, tensor<4x128x128xf16> -> tensor<4x64x128xf16>
    dataflow.yield %1 : tensor<4x64x128xf16>
  }
  func.return %0 : tensor<4x64x128xf16>
}

// -----

func.func @main(%a: tensor<4x64x128xf16>, %b: tensor<4x128x128xf16>) -> tensor<4x64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.group' @g: plan split_b = 16 x split [2, 1, 2] needs 64 cores; the card has 32
  // expected-error @+1 {{plan split_b = 16 x split [2, 1, 2] needs 64 cores; the card has 32}}
  %0 = dataflow.group @g (%a, %b) {plan = #dataflow.matmul_plan<cores = 64, split = [2, 1, 2], split_b = 16>, dataflow.kind = "matmul", dataflow.row_dims = 1 : i64} : (tensor<4x64x128xf16>, tensor<4x128x128xf16>) -> tensor<4x64x128xf16> {
  ^bb0(%x: tensor<4x64x128xf16>, %y: tensor<4x128x128xf16>):
    %1 = spyre.matmul %x, %y : tensor<4x64x128xf16>, tensor<4x128x128xf16> -> tensor<4x64x128xf16>
    dataflow.yield %1 : tensor<4x64x128xf16>
  }
  func.return %0 : tensor<4x64x128xf16>
}

// -----

// A well-formed batch split that does not divide this matmul's batch (3): spyre-tile's
// located error.
func.func @main(%a: tensor<3x64x128xf16>, %b: tensor<3x128x128xf16>) -> tensor<3x64x128xf16> {
  // TILE: plan_invalid.mlir:[[# @LINE + 1]]:3: error: group @g: plan split_b = 2 does not divide the matmul's batch 3
  %0 = dataflow.group @g (%a, %b) {plan = #dataflow.matmul_plan<cores = 2, split = [1, 1, 1], split_b = 2>, dataflow.kind = "matmul", dataflow.row_dims = 1 : i64} : (tensor<3x64x128xf16>, tensor<3x128x128xf16>) -> tensor<3x64x128xf16> {
  ^bb0(%x: tensor<3x64x128xf16>, %y: tensor<3x128x128xf16>):
    %1 = spyre.matmul %x, %y : tensor<3x64x128xf16>, tensor<3x128x128xf16> -> tensor<3x64x128xf16>
    dataflow.yield %1 : tensor<3x64x128xf16>
  }
  func.return %0 : tensor<3x64x128xf16>
}

// -----

func.func @main(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.group' @g: plan row_dims = 3 exceeds the result rank 2
  // expected-error @+1 {{plan row_dims = 3 exceeds the result rank 2}}
  %0 = dataflow.group @g (%a) {plan = #dataflow.rows_plan<row_dims = 3, cores = 4>, dataflow.kind = "rows", dataflow.row_dims = 1 : i64} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>):
    %1 = spyre.exp %x : tensor<64x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

// The dictionary form of before is no plan.
func.func @main(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
  // CHECK: plan_invalid.mlir:[[# @LINE + 2]]:3: error: {kind = "rows", row_dims = 1 : i64, cores = 4 : i64} should be of attribute subclassing `WorkPlanAttr`
  // expected-error @+1 {{should be of attribute subclassing `WorkPlanAttr`}}
  %0 = dataflow.group @g (%a) {plan = {kind = "rows", row_dims = 1, cores = 4}, dataflow.kind = "rows", dataflow.row_dims = 1 : i64} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>):
    %1 = spyre.exp %x : tensor<64x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

// A KTIR grid on a group: spyre-tile has no kernel for it (a located error, no traceback).
func.func @main(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
  // TILE: plan_invalid.mlir:[[# @LINE + 1]]:3: error: group @g: spyre-tile has no kernel for a 'ktir' plan
  %0 = dataflow.group @g (%a) {plan = #dataflow.ktir_plan<grid = [4]>, dataflow.kind = "rows", dataflow.row_dims = 1 : i64} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x128xf16>):
    %1 = spyre.exp %x : tensor<64x128xf16> -> tensor<64x128xf16>
    dataflow.yield %1 : tensor<64x128xf16>
  }
  func.return %0 : tensor<64x128xf16>
}
