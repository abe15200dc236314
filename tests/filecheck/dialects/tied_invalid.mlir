// One chunk per rule of the `tied` verifier (DeviceProgramBase.verify_tied in
// spyre_ir/dialects/dataflow.py): a result tied to an input is that input's buffer,
// written in place. The `expected-error` annotations are checked strictly by spyre-opt;
// the CHECK lines pin the full printed diagnostic, location included.

// RUN: spyre-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: spyre-opt %s --split-input-file --verify-diagnostics 2>&1 | %no-traceback

// One entry per result.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  // CHECK: tied_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k: tied names 2 results, the program has 1
  // expected-error @+1 {{tied names 2 results, the program has 1}}
  %r = dataflow.kernel @k cores(1) (%x) {tied = array<i64: 0, -1>} : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// The tied input exists.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  // CHECK: tied_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k: result 0 is tied to input 1, which does not exist
  // expected-error @+1 {{result 0 is tied to input 1, which does not exist}}
  %r = dataflow.kernel @k cores(1) (%x) {tied = array<i64: 1>} : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// A tied result has its input's type exactly (shape, element type, layout).
func.func @f(%x: tensor<8x64xf16>) -> tensor<4x64xf16> {
  // CHECK: tied_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k: result 0 (tensor<4x64xf16>) is tied to input 0 of another type (tensor<8x64xf16>)
  // expected-error @+1 {{result 0 (tensor<4x64xf16>) is tied to input 0 of another type (tensor<8x64xf16>)}}
  %r = dataflow.kernel @k cores(1) (%x) {tied = array<i64: 0>} : (tensor<8x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<8x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// An input is one buffer: it cannot be two results.
func.func @f(%x: tensor<4x64xf16>) -> (tensor<4x64xf16>, tensor<4x64xf16>) {
  // CHECK: tied_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k: input 0 is tied to two results
  // expected-error @+1 {{input 0 is tied to two results}}
  %r:2 = dataflow.kernel @k cores(1) (%x) {tied = array<i64: 0, 0>} : (tensor<4x64xf16>) -> (tensor<4x64xf16>, tensor<4x64xf16>) {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %a: !dataflow.ddr<4x64xf16>, %b: !dataflow.ddr<4x64xf16>):
    dataflow.end
  }
  func.return %r#0, %r#1 : tensor<4x64xf16>, tensor<4x64xf16>
}

// -----

// A buffer written in place is not also read through a second argument of the program.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  // CHECK: tied_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k: input 0, tied to result 0, is passed more than once
  // expected-error @+1 {{input 0, tied to result 0, is passed more than once}}
  %r = dataflow.kernel @k cores(1) (%x, %x) {tied = array<i64: 0>} : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %in2: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// The input's old value is gone once the program has run: nothing may read it afterwards.
func.func @f(%x: tensor<4x64xf16>) -> (tensor<4x64xf16>, tensor<4x64xf16>) {
  // CHECK: tied_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k: input 0 is written in place (tied to result 0), but func.return reads its old value afterwards
  // expected-error @+1 {{input 0 is written in place (tied to result 0), but func.return reads its old value afterwards}}
  %r = dataflow.kernel @k cores(1) (%x) {tied = array<i64: 0>} : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    dataflow.end
  }
  func.return %r, %x : tensor<4x64xf16>, tensor<4x64xf16>
}

// -----

// One in-place writer per buffer.
func.func @f(%x: tensor<4x64xf16>) -> (tensor<4x64xf16>, tensor<4x64xf16>) {
  // CHECK: tied_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k: input 0 is also written in place by @k2
  // expected-error @+1 {{input 0 is also written in place by @k2}}
  %r = dataflow.kernel @k cores(1) (%x) {tied = array<i64: 0>} : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    dataflow.end
  }
  // CHECK: tied_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k2: input 0 is also written in place by @k
  // expected-error @+1 {{input 0 is also written in place by @k}}
  %s = dataflow.kernel @k2 cores(1) (%x) {tied = array<i64: 0>} : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    dataflow.end
  }
  func.return %r, %s : tensor<4x64xf16>, tensor<4x64xf16>
}

// -----

// An in-place scatter (spyre-lower-scatter) stores into a function argument's buffer.
func.func @f(%x: tensor<16x64xf16>, %pos: tensor<1xi64>, %v: tensor<1x64xf16>) -> tensor<16x64xf16> {
  %e = spyre.exp %x : tensor<16x64xf16> -> tensor<16x64xf16>
  // CHECK: tied_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.scatter': in place into a function argument only
  // expected-error @+1 {{in place into a function argument only}}
  %w = spyre.scatter %e[%pos], %v dim = 0 {in_place} : tensor<16x64xf16>, tensor<1xi64>, tensor<1x64xf16> -> tensor<16x64xf16>
  func.return %w : tensor<16x64xf16>
}

// -----

// ... that nothing else reads: its old value is overwritten.
func.func @f(%x: tensor<16x64xf16>, %pos: tensor<1xi64>, %v: tensor<1x64xf16>) -> (tensor<16x64xf16>, tensor<16x64xf16>) {
  // CHECK: tied_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.scatter': in place into an argument that spyre.exp also reads
  // expected-error @+1 {{in place into an argument that spyre.exp also reads}}
  %w = spyre.scatter %x[%pos], %v dim = 0 {in_place} : tensor<16x64xf16>, tensor<1xi64>, tensor<1x64xf16> -> tensor<16x64xf16>
  %e = spyre.exp %x : tensor<16x64xf16> -> tensor<16x64xf16>
  func.return %w, %e : tensor<16x64xf16>, tensor<16x64xf16>
}
