// Malformed input ends as located `FILE:LINE:COL: error:` lines and exit status 1, never
// as a Python traceback: parse errors (unknown op, bad type, bad attribute, undefined
// value, broken custom syntax), verifier errors, and bad pass pipelines.

// RUN: not spyre-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: not spyre-opt %s --split-input-file 2>&1 | %no-traceback
// Without splitting, parsing stops at the first error.
// RUN: not spyre-opt %s 2>&1 | filecheck %s --check-prefix=WHOLE
// RUN: not spyre-opt %s -p not-a-pass 2>&1 | filecheck %s --check-prefix=PIPELINE
// RUN: not spyre-opt %s -p not-a-pass 2>&1 | %no-traceback

// PIPELINE: spyre-opt: error: Unrecognized passes: ['not-a-pass']

// A malformed pipeline spec (an option without a value).
// RUN: not spyre-opt %s -p 'spyre-tile{lx-bytes=' 2>&1 | filecheck %s --check-prefix=SPEC
// RUN: not spyre-opt %s -p 'spyre-tile{lx-bytes=' 2>&1 | %no-traceback
// SPEC: spyre-opt: error: bad pass pipeline: Error parsing pass pipeline specification

// WHOLE: malformed.mlir:[[# @LINE + 4]]:{{[0-9]+}}: error: Operation spyre.frobnicate is not registered
// WHOLE-NOT: error:
func.func @unknown_op(%a: tensor<4xf32>) {
  // CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: Operation spyre.frobnicate is not registered
  %0 = spyre.frobnicate %a : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @unknown_generic_op(%a: tensor<4xf32>) {
  // CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: Operation spyre.nope is not registered
  %0 = "spyre.nope"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @bad_type(%a: tensor<4xf32>) {
  // CHECK: malformed.mlir:[[# @LINE + 1]]:49: error: Expected shape type.
  %0 = spyre.exp %a : tensor<4xf32> -> tensor<4xfloat>
  func.return
}

// -----

func.func @shape_mismatch(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // CHECK: malformed.mlir:[[# @LINE + 1]]:3: error: 'spyre.add': shapes [4] and [5] do not broadcast (dim -1)
  %0 = spyre.add %a, %b : tensor<4xf32>, tensor<5xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: #spyre.stick: device, map and strides need one equal length >= 2, have 1, 1, 1
func.func @bad_stick(%a: tensor<4x64xf16, #spyre.stick<dim = 1, device = [64], map = [1], strides = [1], pad = 0>>) {
  func.return
}

// -----

func.func @operand_type_differs(%a: tensor<4xf32>) {
  // CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: operand is used with type tensor<4xf16>, but has been previously used or defined with type tensor<4xf32>
  %0 = spyre.exp %a : tensor<4xf16> -> tensor<4xf16>
  func.return
}

// -----

func.func @missing_result_type(%a: tensor<4xf32>) {
  %0 = spyre.exp %a : tensor<4xf32>
  // CHECK: malformed.mlir:[[# @LINE + 1]]:3: error: Expected '->'
  func.return
}

// -----

func.func @bad_dims(%a: tensor<4xf32>) {
  // CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: Expected integer literal
  %0 = spyre.sum %a dims = [x] : tensor<4xf32> -> tensor<f32>
  func.return
}

// -----

// xDSL reports an undefined value at the end of the chunk, not at its use.
func.func @undefined_value(%a: tensor<4xf32>) {
  %0 = spyre.exp %nope : tensor<4xf32> -> tensor<4xf32>
  func.return
}
// CHECK: malformed.mlir:{{[0-9]+}}:{{[0-9]+}}: error: values used but not defined: [%nope]
// CHECK-NOT: Traceback
