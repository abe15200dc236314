// Values a type cannot hold, sizes past 64 bits and malformed attributes are located
// errors at parse or verify time, never a traceback (issue 18's inputs, one per chunk).

// RUN: spyre-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: spyre-opt %s --split-input-file --verify-diagnostics 2>&1 | %no-traceback

// A float constant past f16's range (it used to end in an OverflowError).
func.func @main() -> tensor<4x64xf16> {
  // CHECK: values_invalid.mlir:[[# @LINE + 2]]:3: error: a value out of range for its type: float too large to pack with e format
  // expected-error @+1 {{a value out of range for its type}}
  %c = arith.constant 1.0e+38 : f16
  %0 = spyre.full %c : f16 -> tensor<4x64xf16>
  func.return %0 : tensor<4x64xf16>
}

// -----

// An array element past 64 bits (a struct.error).
func.func @main(%a: tensor<4x64xf16>) -> tensor<4xf16> {
  // CHECK: values_invalid.mlir:[[# @LINE + 2]]:3: error: a value out of range for its type
  // expected-error @+1 {{a value out of range for its type}}
  %0 = spyre.sum %a dims = [99999999999999999999] : tensor<4x64xf16> -> tensor<4xf16>
  func.return %0 : tensor<4xf16>
}

// -----

// An integer attribute past 64 bits.
func.func @main(%a: tensor<4x64xf16>) -> tensor<4x64xf16> {
  // CHECK: values_invalid.mlir:[[# @LINE + 2]]:3: error: Integer value 99999999999999999999 is out of range for type i64
  // expected-error @+1 {{is out of range for type i64}}
  %0 = spyre.softmax %a dim = 99999999999999999999 : tensor<4x64xf16> -> tensor<4x64xf16>
  func.return %0 : tensor<4x64xf16>
}

// -----

// A tensor dimension past 64 bits.
// CHECK: values_invalid.mlir:[[# @LINE + 2]]:1: error: 'func.func': dimension 99999999999999999999 of tensor<99999999999999999999x64xf16> does not fit in a signed 64-bit size
// expected-error @+1 {{does not fit in a signed 64-bit size}}
func.func @main(%a: tensor<99999999999999999999x64xf16>) {
  func.return
}

// -----

// A tensor of more than 2**63 bytes.
// CHECK: values_invalid.mlir:[[# @LINE + 2]]:1: error: 'func.func': tensor<9223372036854775807x64xf16> holds 590295810358705651648 elements: more than 2**63 bytes
// expected-error @+1 {{more than 2**63 bytes}}
func.func @main(%a: tensor<9223372036854775807x64xf16>) {
  func.return
}

// -----

// A property of the wrong type in custom syntax: located at the op, not at 0:0.
func.func @main(%b: tensor<4x64xf16>) -> tensor<4x64xf16> {
  // CHECK: values_invalid.mlir:[[# @LINE + 2]]:3: error: 0 : i64 should be of base attribute float
  // expected-error @+1 {{should be of base attribute float}}
  %0 = spyre.rms_norm %b {eps = 0} : tensor<4x64xf16> -> tensor<4x64xf16>
  func.return %0 : tensor<4x64xf16>
}

// -----

// A buffer offset that is not an integer: the buffer's error, and no crash in the
// verifier of the kernel around it (it used to raise AttributeError).
func.func @main(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
  %0 = dataflow.kernel @k cores(1) (%a) {lx_capacity = 2097152 : i64} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x128xf16>, %out: !dataflow.ddr<64x128xf16>):
    // CHECK: values_invalid.mlir:[[# @LINE + 2]]:5: error: "x" should be of base attribute integer
    // expected-error @+1 {{should be of base attribute integer}}
    %buf = dataflow.alloc_lx {offset = "x"} : !dataflow.lx<64x128xf16>
    dataflow.end
  }
  func.return %0 : tensor<64x128xf16>
}

// -----

// A kernel on more cores than the card has.
func.func @main(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {
  // CHECK: values_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k: runs on 1000 cores; the card has 32
  // expected-error @+1 {{runs on 1000 cores; the card has 32}}
  %0 = dataflow.kernel @k cores(1000) (%a) {lx_capacity = 2097152 : i64} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x128xf16>, %out: !dataflow.ddr<64x128xf16>):
    dataflow.end
  }
  func.return %0 : tensor<64x128xf16>
}
