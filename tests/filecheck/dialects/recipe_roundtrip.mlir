// Every op of the recipe dialect (spyre_ir/dialects/recipe.py) in custom form, printed
// back as written; the generic form; and stability: the printed output, custom or
// generic, parses back to the same custom form. The entry here is a plain function: the
// plan only cares about its signature (a compiled artifact holds core.programs in it).

// RUN: spyre-opt %s | filecheck %s
// RUN: spyre-opt %s | spyre-opt | filecheck %s
// RUN: spyre-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: spyre-opt %s --print-op-generic | spyre-opt | filecheck %s
// RUN: spyre-opt %s 2>&1 | %no-traceback

// A stick-layout input (100 of 128 elements used per row: 28 padded), an input without
// a layout (the default one: 16 i64 per 128-byte stick), a scalar (held as [1]) and two outputs.
func.func @main(%x: tensor<64x100xf16, #spyre.stick<dim = 1, device = [2, 64, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>>, %ids: tensor<8xi64>, %s: tensor<f32>) -> (tensor<64x100xf16, #spyre.stick<dim = 1, device = [2, 64, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>>, tensor<8xi64>) {
  func.return %x, %ids : tensor<64x100xf16, #spyre.stick<dim = 1, device = [2, 64, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>>, tensor<8xi64>
}

// CHECK:      recipe.plan @main_recipe for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
// CHECK-NEXT:   recipe.slot @in0 "input" 0 : tensor<64x100xf16, #spyre.stick<dim = 1, device = [2, 64, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>> size 16384
// CHECK-NEXT:   recipe.slot @in1 "input" 1 : tensor<8xi64> size 128
// CHECK-NEXT:   recipe.slot @in2 "input" 2 : tensor<f32> size 128
// CHECK-NEXT:   recipe.slot @out0 "output" 0 : tensor<64x100xf16, #spyre.stick<dim = 1, device = [2, 64, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>> size 16384
// CHECK-NEXT:   recipe.slot @out1 "output" 1 : tensor<8xi64> size 128
// CHECK-NEXT:   recipe.patch_addresses [@in0, @in1, @in2, @out0, @out1]
// CHECK-NEXT:   recipe.transfer "h2d" @in0 pad 0.000000e+00
// CHECK-NEXT:   recipe.restickify @in0
// CHECK-NEXT:   recipe.transfer "h2d" @in1
// CHECK-NEXT:   recipe.restickify @in1
// CHECK-NEXT:   recipe.restickify @in2
// CHECK-NEXT:   recipe.transfer "h2d" @in2 pad -1.000000e+00
// CHECK-NEXT:   recipe.compute @main
// CHECK-NEXT:   recipe.transfer "d2h" @out0
// CHECK-NEXT:   recipe.restickify @out0
// CHECK-NEXT:   recipe.restickify @out1
// CHECK-NEXT:   recipe.transfer "d2h" @out1
// CHECK-NEXT: }

// GENERIC: "recipe.plan"() <{sym_name = "main_recipe", entry = @main, hash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}> ({
// GENERIC:   "recipe.slot"() <{sym_name = "in0", role = "input", index = 0 : i64, slot_type = tensor<64x100xf16, #spyre.stick<dim = 1, device = [2, 64, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>>, size = 16384 : i64}> : () -> ()
// GENERIC:   "recipe.patch_addresses"() <{slots = [@in0, @in1, @in2, @out0, @out1]}> : () -> ()
// GENERIC:   "recipe.transfer"() <{direction = "h2d", slot = @in0, pad = 0.000000e+00 : f64}> : () -> ()
// GENERIC:   "recipe.restickify"() <{slot = @in0}> : () -> ()
// GENERIC:   "recipe.compute"() <{callee = @main}> : () -> ()
recipe.plan @main_recipe for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<64x100xf16, #spyre.stick<dim = 1, device = [2, 64, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>> size 16384
  recipe.slot @in1 "input" 1 : tensor<8xi64> size 128
  recipe.slot @in2 "input" 2 : tensor<f32> size 128
  recipe.slot @out0 "output" 0 : tensor<64x100xf16, #spyre.stick<dim = 1, device = [2, 64, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>> size 16384
  recipe.slot @out1 "output" 1 : tensor<8xi64> size 128
  recipe.patch_addresses [@in0, @in1, @in2, @out0, @out1]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.transfer "h2d" @in1
  recipe.restickify @in1
  recipe.restickify @in2
  recipe.transfer "h2d" @in2 pad -1.0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
  recipe.restickify @out1
  recipe.transfer "d2h" @out1
}
