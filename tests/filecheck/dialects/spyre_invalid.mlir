// One chunk per verifier rule of the spyre dialect (spyre_ir/dialects/spyre*.py and the
// ShapeError paths of spyre_ir/shape_rules.py). The `expected-error` annotations are
// checked strictly by spyre-opt (a missing or an unexpected error exits 1); the CHECK
// lines pin the full printed diagnostic, location included.

// RUN: spyre-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: spyre-opt %s --split-input-file --verify-diagnostics 2>&1 | %no-traceback

// Binary ops broadcast as torch does.
func.func @f(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.add': shapes [4] and [5] do not broadcast (dim -1)
  // expected-error @+1 {{do not broadcast}}
  %0 = spyre.add %a, %b : tensor<4xf32>, tensor<5xf32> -> tensor<5xf32>
  func.return
}

// -----

// The result shape is the broadcast shape.
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.mul': result shape [4, 4] should be [4]
  // expected-error @+1 {{result shape [4, 4] should be [4]}}
  %0 = spyre.mul %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4x4xf32>
  func.return
}

// -----

// Both operands have one element type.
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.sub': rhs element type f16 should be f32
  // expected-error @+1 {{rhs element type f16 should be f32}}
  %0 = spyre.sub %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  func.return
}

// -----

// The result has the operands' element type.
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.div': result element type f16 should be f32
  // expected-error @+1 {{result element type f16 should be f32}}
  %0 = spyre.div %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf16>
  func.return
}

// -----

// pow is float-only.
func.func @f(%a: tensor<4xi32>, %b: tensor<4xi32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.pow' needs float operands, got i32
  // expected-error @+1 {{needs float operands}}
  %0 = spyre.pow %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// Logical binary ops take i1.
func.func @f(%a: tensor<4xf16>, %b: tensor<4xf16>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.logical_and' needs i1 operands, got f16
  // expected-error @+1 {{needs i1 operands}}
  %0 = spyre.logical_and %a, %b : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  func.return
}

// -----

// Bitwise ops and shifts take integers.
func.func @f(%a: tensor<4xf16>, %b: tensor<4xf16>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.shift_left' needs integer operands, got f16
  // expected-error @+1 {{needs integer operands}}
  %0 = spyre.shift_left %a, %b : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  func.return
}

// -----

// bitwise_not takes integers (i1 has logical_not).
func.func @f(%p: tensor<4xi1>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.bitwise_not' needs an integer operand, got i1
  // expected-error @+1 {{needs an integer operand}}
  %0 = spyre.bitwise_not %p : tensor<4xi1> -> tensor<4xi1>
  func.return
}

// -----

// round is float-only.
func.func @f(%i: tensor<4xi32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.round' needs a float operand, got i32
  // expected-error @+1 {{needs a float operand}}
  %0 = spyre.round %i : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// Comparisons produce i1.
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.eq': result element type f32 should be i1
  // expected-error @+1 {{result element type f32 should be i1}}
  %0 = spyre.eq %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// select's condition is i1.
func.func @f(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.select': condition element type f32 should be i1
  // expected-error @+1 {{condition element type f32 should be i1}}
  %0 = spyre.select %c, %a, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// select's branches have one element type.
func.func @f(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.select': false value element type f16 should be f32
  // expected-error @+1 {{false value element type f16 should be f32}}
  %0 = spyre.select %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  func.return
}

// -----

// select's result has the branches' element type.
func.func @f(%c: tensor<4xi1>, %a: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.select': result element type i1 should be f32
  // expected-error @+1 {{result element type i1 should be f32}}
  %0 = spyre.select %c, %a, %a : tensor<4xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  func.return
}

// -----

// select broadcasts all three operands.
func.func @f(%c: tensor<3xi1>, %a: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.select': shapes [3] and [4] and [4] do not broadcast (dim -1)
  // expected-error @+1 {{do not broadcast}}
  %0 = spyre.select %c, %a, %a : tensor<3xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// exp is float-only.
func.func @f(%a: tensor<4xi32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.exp' needs a float operand, got i32
  // expected-error @+1 {{needs a float operand, got i32}}
  %0 = spyre.exp %a : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// logical_not takes i1.
func.func @f(%a: tensor<4xf16>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.logical_not' needs an i1 operand, got f16
  // expected-error @+1 {{needs an i1 operand, got f16}}
  %0 = spyre.logical_not %a : tensor<4xf16> -> tensor<4xf16>
  func.return
}

// -----

// A unary op keeps the element type.
func.func @f(%a: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.neg': result element type f16 should be f32
  // expected-error @+1 {{result element type f16 should be f32}}
  %0 = spyre.neg %a : tensor<4xf32> -> tensor<4xf16>
  func.return
}

// -----

// A unary op keeps the shape.
func.func @f(%a: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.relu': result shape [2, 2] should be [4]
  // expected-error @+1 {{result shape [2, 2] should be [4]}}
  %0 = spyre.relu %a : tensor<4xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// gelu's approximate is "none" or "tanh".
func.func @f(%a: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.gelu': approximate must be "none" or "tanh", got "fast"
  // expected-error @+1 {{approximate must be}}
  %0 = spyre.gelu %a {approximate = "fast"} : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// clamp needs a bound.
func.func @f(%a: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.clamp' needs a min or a max bound
  // expected-error @+1 {{needs a min or a max bound}}
  %0 = spyre.clamp %a : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// clamp's min is at most its max.
func.func @f(%a: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.clamp': min is greater than max
  // expected-error @+1 {{min is greater than max}}
  %0 = spyre.clamp %a {min = 2.0 : f64, max = 1.0 : f64} : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// cast keeps the shape.
func.func @f(%a: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.cast': result shape [8] should be [4]
  // expected-error @+1 {{result shape [8] should be [4]}}
  %0 = spyre.cast %a : tensor<4xf32> -> tensor<8xf16>
  func.return
}

// -----

// matmul operands have one element type.
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xf16>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.matmul': rhs element type f16 should be f32
  // expected-error @+1 {{rhs element type f16 should be f32}}
  %0 = spyre.matmul %a, %b : tensor<4x8xf32>, tensor<8x2xf16> -> tensor<4x2xf32>
  func.return
}

// -----

// matmul's inner sizes agree.
func.func @f(%a: tensor<4x8xf32>, %b: tensor<7x2xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.matmul': matmul inner sizes differ: [4, 8] @ [7, 2] (8 != 7)
  // expected-error @+1 {{matmul inner sizes differ}}
  %0 = spyre.matmul %a, %b : tensor<4x8xf32>, tensor<7x2xf32> -> tensor<4x2xf32>
  func.return
}

// -----

// matmul operands have rank >= 1.
func.func @f(%a: tensor<f32>, %b: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.matmul': matmul operands must have rank >= 1
  // expected-error @+1 {{rank >= 1}}
  %0 = spyre.matmul %a, %b : tensor<f32>, tensor<4xf32> -> tensor<f32>
  func.return
}

// -----

// matmul batch dims broadcast.
func.func @f(%a: tensor<3x4x8xf32>, %b: tensor<2x8x2xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.matmul': shapes [3] and [2] do not broadcast (dim -1)
  // expected-error @+1 {{do not broadcast}}
  %0 = spyre.matmul %a, %b : tensor<3x4x8xf32>, tensor<2x8x2xf32> -> tensor<3x4x2xf32>
  func.return
}

// -----

// matmul's result shape follows torch (1-D rhs is squeezed).
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.matmul': result shape [4, 1] should be [4]
  // expected-error @+1 {{result shape [4, 1] should be [4]}}
  %0 = spyre.matmul %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x1xf32>
  func.return
}

// -----

// mean is float-only.
func.func @f(%a: tensor<4x8xi32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.mean' needs a float operand, got i32
  // expected-error @+1 {{needs a float operand, got i32}}
  %0 = spyre.mean %a dims = [1] : tensor<4x8xi32> -> tensor<4xi32>
  func.return
}

// -----

// var is float-only.
func.func @f(%a: tensor<4x8xi32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.var' needs a float operand, got i32
  // expected-error @+1 {{needs a float operand, got i32}}
  %0 = spyre.var %a dims = [1] : tensor<4x8xi32> -> tensor<4xi32>
  func.return
}

// -----

// A reduction names at least one dim.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.sum' needs at least one dim
  // expected-error @+1 {{needs at least one dim}}
  %0 = spyre.sum %a dims = [] : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

// Reduction dims are in range.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.sum': dim 2 is out of range for rank 2
  // expected-error @+1 {{dim 2 is out of range for rank 2}}
  %0 = spyre.sum %a dims = [2] : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

// Reduction dims are listed once (-1 is 1 here).
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.reduce_max': dims [1, -1] name a dimension twice
  // expected-error @+1 {{name a dimension twice}}
  %0 = spyre.reduce_max %a dims = [1, -1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

// argmax produces i64 indices.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.argmax': result element type f32 should be i64
  // expected-error @+1 {{result element type f32 should be i64}}
  %0 = spyre.argmax %a dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

// keepdim keeps reduced dims as size 1.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.sum': result shape [4] should be [4, 1]
  // expected-error @+1 {{result shape [4] should be [4, 1]}}
  %0 = spyre.sum %a dims = [1] keepdim : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

// cumsum takes numbers, not i1.
func.func @f(%a: tensor<4xi1>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.cumsum' needs a numeric operand; cast i1 first
  // expected-error @+1 {{needs a numeric operand}}
  %0 = spyre.cumsum %a dim = 0 : tensor<4xi1> -> tensor<4xi1>
  func.return
}

// -----

// cumsum's dim is in range.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.cumsum': dim 2 is out of range for rank 2
  // expected-error @+1 {{dim 2 is out of range for rank 2}}
  %0 = spyre.cumsum %a dim = 2 : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

// reshape keeps the element count.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.reshape': cannot reshape [4, 8] (32 elements) to [4, 4] (16 elements)
  // expected-error @+1 {{cannot reshape [4, 8] (32 elements) to [4, 4] (16 elements)}}
  %0 = spyre.reshape %a : tensor<4x8xf32> -> tensor<4x4xf32>
  func.return
}

// -----

// reshape keeps the element type.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.reshape': result element type f16 should be f32
  // expected-error @+1 {{result element type f16 should be f32}}
  %0 = spyre.reshape %a : tensor<4x8xf32> -> tensor<32xf16>
  func.return
}

// -----

// transpose takes a permutation.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.transpose': [0, 0] is not a permutation of 2 dims
  // expected-error @+1 {{[0, 0] is not a permutation of 2 dims}}
  %0 = spyre.transpose %a perm = [0, 0] : tensor<4x8xf32> -> tensor<4x4xf32>
  func.return
}

// -----

// transpose's perm has one entry per dim.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.transpose': [1, 0, 2] is not a permutation of 2 dims
  // expected-error @+1 {{[1, 0, 2] is not a permutation of 2 dims}}
  %0 = spyre.transpose %a perm = [1, 0, 2] : tensor<4x8xf32> -> tensor<8x4xf32>
  func.return
}

// -----

// broadcast_to stretches only size-1 dims.
func.func @f(%a: tensor<4x3xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.broadcast_to': [4, 3] cannot broadcast to [4, 5]
  // expected-error @+1 {{[4, 3] cannot broadcast to [4, 5]}}
  %0 = spyre.broadcast_to %a : tensor<4x3xf32> -> tensor<4x5xf32>
  func.return
}

// -----

// broadcast_to never drops dims.
func.func @f(%a: tensor<2x4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.broadcast_to': [2, 4] cannot broadcast to [4]
  // expected-error @+1 {{[2, 4] cannot broadcast to [4]}}
  %0 = spyre.broadcast_to %a : tensor<2x4xf32> -> tensor<4xf32>
  func.return
}

// -----

// slice steps are positive.
func.func @f(%a: tensor<8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.slice': slice step must be positive, got 0
  // expected-error @+1 {{slice step must be positive, got 0}}
  %0 = spyre.slice %a starts = [0] stops = [8] steps = [0] : tensor<8xf32> -> tensor<8xf32>
  func.return
}

// -----

// slice bounds stay inside the dim.
func.func @f(%a: tensor<8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.slice': slice [2:9] is outside a dim of size 8
  // expected-error @+1 {{slice [2:9] is outside a dim of size 8}}
  %0 = spyre.slice %a starts = [2] stops = [9] steps = [1] : tensor<8xf32> -> tensor<7xf32>
  func.return
}

// -----

// slice has one start, stop and step per dim.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.slice': slice needs one start, stop and step per dim
  // expected-error @+1 {{one start, stop and step per dim}}
  %0 = spyre.slice %a starts = [0] stops = [2] steps = [1] : tensor<4x8xf32> -> tensor<2x8xf32>
  func.return
}

// -----

// slice's result shape is ceil((stop - start) / step) per dim.
func.func @f(%a: tensor<8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.slice': result shape [3] should be [4]
  // expected-error @+1 {{result shape [3] should be [4]}}
  %0 = spyre.slice %a starts = [1] stops = [8] steps = [2] : tensor<8xf32> -> tensor<3xf32>
  func.return
}

// -----

// concat inputs agree outside the concat dim.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.concat': concat inputs {{\[\[}}2, 3], [3, 3{{\]\]}} differ outside dim 1
  // expected-error @+1 {{differ outside dim 1}}
  %0 = spyre.concat %a, %b dim = 1 : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x6xf32>
  func.return
}

// -----

// concat inputs have one element type.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.concat': input element type f16 should be f32
  // expected-error @+1 {{input element type f16 should be f32}}
  %0 = spyre.concat %a, %b dim = 0 : tensor<2x3xf32>, tensor<2x3xf16> -> tensor<4x3xf32>
  func.return
}

// -----

// concat's dim is in range.
func.func @f(%a: tensor<2x3xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.concat': dim 2 is out of range for rank 2
  // expected-error @+1 {{dim 2 is out of range for rank 2}}
  %0 = spyre.concat %a, %a dim = 2 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  func.return
}

// -----

// concat needs an input.
func.func @f() {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.concat' needs at least one input
  // expected-error @+1 {{needs at least one input}}
  %0 = "spyre.concat"() <{dim = 0 : i64}> : () -> tensor<4xf32>
  func.return
}

// -----

// pad may not make a negative size.
func.func @f(%a: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.pad': padding [-3]/[-2] makes a negative size
  // expected-error @+1 {{makes a negative size}}
  %0 = spyre.pad %a low = [-3] high = [-2] value = 0.0 : tensor<4xf32> -> tensor<0xf32>
  func.return
}

// -----

// pad has one low and one high amount per dim.
func.func @f(%a: tensor<4x4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.pad': pad needs one low and one high amount per dim
  // expected-error @+1 {{one low and one high amount per dim}}
  %0 = spyre.pad %a low = [1] high = [1] value = 0.0 : tensor<4x4xf32> -> tensor<6x4xf32>
  func.return
}

// -----

// gather's indices are i32 or i64.
func.func @f(%t: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.gather': indices must be i32 or i64, got f32
  // expected-error @+1 {{indices must be i32 or i64, got f32}}
  %0 = spyre.gather %t[%i] : tensor<10x4xf32>, tensor<3xf32> -> tensor<3x4xf32>
  func.return
}

// -----

// gather's table has rank >= 1.
func.func @f(%t: tensor<f32>, %i: tensor<3xi64>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.gather': gather needs a table of rank >= 1
  // expected-error @+1 {{needs a table of rank >= 1}}
  %0 = spyre.gather %t[%i] : tensor<f32>, tensor<3xi64> -> tensor<3xf32>
  func.return
}

// -----

// gather's result is indices' shape then the table's row shape.
func.func @f(%t: tensor<10x4xf32>, %i: tensor<3xi32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.gather': result shape [3, 10] should be [3, 4]
  // expected-error @+1 {{result shape [3, 10] should be [3, 4]}}
  %0 = spyre.gather %t[%i] : tensor<10x4xf32>, tensor<3xi32> -> tensor<3x10xf32>
  func.return
}

// -----

// A constant's value has the result type.
func.func @f() {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.constant': value type tensor<4xf32> differs from result type tensor<2xf32>
  // expected-error @+1 {{value type tensor<4xf32> differs from result type tensor<2xf32>}}
  %0 = "spyre.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<2xf32>
  func.return
}

// -----

// iota's dim is in range.
func.func @f() {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.iota': dim 1 is out of range for rank 1
  // expected-error @+1 {{dim 1 is out of range for rank 1}}
  %0 = spyre.iota {dim = 1 : i64, start = 0 : i64, step = 1 : i64} : tensor<8xi64>
  func.return
}

// -----

// softmax is float-only.
func.func @f(%a: tensor<4x8xi32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.softmax' needs a float operand
  // expected-error @+1 {{needs a float operand}}
  %0 = spyre.softmax %a dim = 1 : tensor<4x8xi32> -> tensor<4x8xi32>
  func.return
}

// -----

// softmax's dim is in range.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.softmax': dim -3 is out of range for rank 2
  // expected-error @+1 {{dim -3 is out of range for rank 2}}
  %0 = spyre.softmax %a dim = -3 : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

// softmax keeps the element type.
func.func @f(%a: tensor<4x8xf16>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.softmax': result element type f32 should be f16
  // expected-error @+1 {{result element type f32 should be f16}}
  %0 = spyre.softmax %a dim = 1 : tensor<4x8xf16> -> tensor<4x8xf32>
  func.return
}

// -----

// layer_norm is float-only.
func.func @f(%a: tensor<4x8xi32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.layer_norm' needs a float operand
  // expected-error @+1 {{needs a float operand}}
  %0 = spyre.layer_norm %a {eps = 1.0e-05 : f64} : tensor<4x8xi32> -> tensor<4x8xi32>
  func.return
}

// -----

// layer_norm's weight is shaped like the normalised dims.
func.func @f(%a: tensor<4x8xf32>, %w: tensor<4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.layer_norm': weight shape [4] should be [8]
  // expected-error @+1 {{weight shape [4] should be [8]}}
  %0 = spyre.layer_norm %a weight(%w : tensor<4xf32>) {eps = 1.0e-05 : f64} : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

// layer_norm's bias is shaped like the normalised dims (two here).
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.layer_norm': bias shape [8] should be [4, 8]
  // expected-error @+1 {{bias shape [8] should be [4, 8]}}
  %0 = spyre.layer_norm %a bias(%b : tensor<8xf32>) {eps = 1.0e-05 : f64, normalized_ndim = 2 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

// layer_norm's weight has the input's element type.
func.func @f(%a: tensor<4x8xf16>, %w: tensor<8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.layer_norm': weight element type f32 should be f16
  // expected-error @+1 {{weight element type f32 should be f16}}
  %0 = spyre.layer_norm %a weight(%w : tensor<8xf32>) {eps = 1.0e-05 : f64} : tensor<4x8xf16> -> tensor<4x8xf16>
  func.return
}

// -----

// layer_norm normalises between 1 and rank dims.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.layer_norm': cannot normalise 3 dims of [4, 8]
  // expected-error @+1 {{cannot normalise 3 dims of [4, 8]}}
  %0 = spyre.layer_norm %a {eps = 1.0e-05 : f64, normalized_ndim = 3 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

// layer_norm normalises at least one dim.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.layer_norm': cannot normalise 0 dims of [4, 8]
  // expected-error @+1 {{cannot normalise 0 dims of [4, 8]}}
  %0 = spyre.layer_norm %a {eps = 1.0e-05 : f64, normalized_ndim = 0 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

// rms_norm's weight is shaped like the last dim.
func.func @f(%a: tensor<4x8xf32>, %w: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.rms_norm': weight shape [4, 8] should be [8]
  // expected-error @+1 {{weight shape [4, 8] should be [8]}}
  %0 = spyre.rms_norm %a weight(%w : tensor<4x8xf32>) {eps = 1.0e-06 : f64} : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

// rms_norm is float-only.
func.func @f(%a: tensor<4x8xi64>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.rms_norm' needs a float operand
  // expected-error @+1 {{needs a float operand}}
  %0 = spyre.rms_norm %a {eps = 1.0e-06 : f64} : tensor<4x8xi64> -> tensor<4x8xi64>
  func.return
}

// -----

// Element types are f16, bf16, f32, i1, i32 or i64.
func.func @f(%a: tensor<4xf64>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.neg': element type f64 is not one of f16, bf16, f32, i1, i32, i64
  // expected-error @+1 {{element type f64 is not one of f16, bf16, f32, i1, i32, i64}}
  %0 = spyre.neg %a : tensor<4xf64> -> tensor<4xf64>
  func.return
}

// -----

// i8 is no spyre element type either.
func.func @f(%a: tensor<4xi8>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.abs': element type i8 is not one of f16, bf16, f32, i1, i32, i64
  // expected-error @+1 {{element type i8 is not one of}}
  %0 = spyre.abs %a : tensor<4xi8> -> tensor<4xi8>
  func.return
}

// -----

// Shapes are static.
func.func @f(%a: tensor<?x4xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.relu' needs static shapes, got tensor<?x4xf32>
  // expected-error @+1 {{needs static shapes, got tensor<?x4xf32>}}
  %0 = spyre.relu %a : tensor<?x4xf32> -> tensor<?x4xf32>
  func.return
}

// -----

// Operands are tensors (checked by the op definition).
func.func @f(%a: f32) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: operand 'input' at position 0 does not verify: f32 should be of base attribute tensor
  // expected-error @+1 {{f32 should be of base attribute tensor}}
  %0 = "spyre.neg"(%a) : (f32) -> f32
  func.return
}

// -----

// A stick layout fits its tensor: pad follows from the device sizes.
func.func @f(%a: tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 41>>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.relu': stick layout does not fit f16 tensor of shape [5, 100, 150]: pad = 41, but the device sizes pad the stick dim by 42
  // expected-error @+1 {{stick layout does not fit}}
  %0 = spyre.relu %a : tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 41>> -> tensor<5x100x150xf16>
  func.return
}

// -----

// restickify keeps the shape: it changes only the layout.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.restickify': result shape [8, 4] should be [4, 8]
  // expected-error @+1 {{result shape [8, 4] should be [4, 8]}}
  %0 = spyre.restickify %a : tensor<4x8xf32> -> tensor<8x4xf32, #spyre.stick<dim = 1, device = [1, 8, 32], map = [1, 0, 1], strides = [32, 4, 1], pad = 28>>
  func.return
}

// -----

// restickify keeps the element type.
func.func @f(%a: tensor<4x8xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.restickify': result element type f16 should be f32
  // expected-error @+1 {{result element type f16 should be f32}}
  %0 = spyre.restickify %a : tensor<4x8xf32> -> tensor<4x8xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 8, 1], pad = 56>>
  func.return
}

// -----

// restickify's result carries a stick layout.
func.func @f(%a: tensor<4x8xf32, #spyre.stick<dim = 1, device = [1, 4, 32], map = [1, 0, 1], strides = [32, 8, 1], pad = 24>>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.restickify': result type tensor<4x8xf32> carries no #spyre.stick layout
  // expected-error @+1 {{carries no #spyre.stick layout}}
  %0 = spyre.restickify %a : tensor<4x8xf32, #spyre.stick<dim = 1, device = [1, 4, 32], map = [1, 0, 1], strides = [32, 8, 1], pad = 24>> -> tensor<4x8xf32>
  func.return
}

// -----

// Every broken op of a chunk is reported, not only the first.
func.func @f(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.add': shapes [4] and [5] do not broadcast (dim -1)
  // expected-error @+1 {{do not broadcast}}
  %0 = spyre.add %a, %b : tensor<4xf32>, tensor<5xf32> -> tensor<5xf32>
  // CHECK-NEXT: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.exp': result shape [5] should be [4]
  // expected-error @+1 {{result shape [5] should be [4]}}
  %1 = spyre.exp %a : tensor<4xf32> -> tensor<5xf32>
  %2 = spyre.exp %a : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// A full's value must fit its element type.
func.func @full_fraction_in_int() {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.full': 1.5 is not an integer value for i32
  // expected-error @+1 {{is not an integer value}}
  %0 = spyre.full {value = 1.5 : f64} : tensor<4xi32>
  func.return
}

// -----

func.func @full_non_boolean() {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.full': 7 is not a boolean value
  // expected-error @+1 {{is not a boolean value}}
  %0 = spyre.full {value = 7 : i64} : tensor<4xi1>
  func.return
}

// -----

// Only signless integers are tensor elements.
func.func @signed_int(%a: tensor<4xsi32>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.neg': element type si32 is not one of
  // expected-error @+1 {{element type si32 is not one of}}
  %0 = spyre.neg %a : tensor<4xsi32> -> tensor<4xsi32>
  func.return
}

// -----

func.func @iota_zero_step() {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.iota': step must not be zero
  // expected-error @+1 {{step must not be zero}}
  %0 = spyre.iota {dim = 0 : i64, start = 0 : i64, step = 0 : i64} : tensor<4xi64>
  func.return
}

// -----

func.func @scatter_source_shape(%c: tensor<1x2x16x32xf16>, %p: tensor<3xi64>, %k: tensor<1x2x4x32xf16>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.scatter': source should be [1, 2, 3, 32] (dest with dim 2 of the index length), got [1, 2, 4, 32]
  // expected-error @+1 {{source should be [1, 2, 3, 32]}}
  %0 = spyre.scatter %c[%p], %k dim = 2 : tensor<1x2x16x32xf16>, tensor<3xi64>, tensor<1x2x4x32xf16> -> tensor<1x2x16x32xf16>
  func.return
}

// -----

func.func @scatter_2d_indices(%c: tensor<16x32xf16>, %p: tensor<3x1xi64>, %k: tensor<3x32xf16>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.scatter': indices must be 1-D
  // expected-error @+1 {{indices must be 1-D}}
  %0 = spyre.scatter %c[%p], %k dim = 0 : tensor<16x32xf16>, tensor<3x1xi64>, tensor<3x32xf16> -> tensor<16x32xf16>
  func.return
}

// -----

func.func @scatter_add_source_shape(%c: tensor<16x32xf16>, %p: tensor<3xi64>, %k: tensor<3x31xf16>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.scatter_add': source should be [3, 32] (dest with dim 0 of the index length), got [3, 31]
  // expected-error @+1 {{source should be [3, 32]}}
  %0 = spyre.scatter_add %c[%p], %k dim = 0 : tensor<16x32xf16>, tensor<3xi64>, tensor<3x31xf16> -> tensor<16x32xf16>
  func.return
}

// -----

func.func @scatter_add_float_indices(%c: tensor<16xi64>, %p: tensor<3xf16>, %k: tensor<3xi64>) {
  // CHECK: spyre_invalid.mlir:[[# @LINE + 2]]:3: error: 'spyre.scatter_add': indices must be i32 or i64, got f16
  // expected-error @+1 {{indices must be i32 or i64, got f16}}
  %0 = spyre.scatter_add %c[%p], %k dim = 0 : tensor<16xi64>, tensor<3xf16>, tensor<3xi64> -> tensor<16xi64>
  func.return
}
