// convert-units-to-recipe refuses what it cannot plan, with a located error: an L2 module
// (kernels not yet lowered to units), a module without the entry, a module planned twice.

// RUN: spyre-opt %s -p convert-units-to-recipe --split-input-file --verify-diagnostics | filecheck %s
// RUN: spyre-opt %s -p convert-units-to-recipe --split-input-file --verify-diagnostics 2>&1 | %no-traceback

func.func @main(%x: tensor<64x64xf16>) -> tensor<64x64xf16> {
  // CHECK: units_to_recipe_invalid.mlir:[[# @LINE + 2]]:3: error: convert-units-to-recipe: dataflow.kernel is L2; lower to units first
  // expected-error @+1 {{dataflow.kernel is L2; lower to units first}}
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<64x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x64xf16>, %out: !dataflow.ddr<64x64xf16>):
    dataflow.end
  }
  func.return %r : tensor<64x64xf16>
}

// -----

// CHECK: units_to_recipe_invalid.mlir:[[# @LINE + 2]]:1: error: convert-units-to-recipe: no func.func @main to plan
// expected-error @+1 {{no func.func @main to plan}}
builtin.module {
  func.func @other(%x: tensor<4xf16>) -> tensor<4xf16> {
    func.return %x : tensor<4xf16>
  }
}

// -----

func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  func.return %x : tensor<4x64xf16>
}
// CHECK: units_to_recipe_invalid.mlir:[[# @LINE + 2]]:1: error: convert-units-to-recipe: the module already holds a recipe.plan
// expected-error @+1 {{the module already holds a recipe.plan}}
recipe.plan @main_recipe for @main hash "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
  recipe.slot @in0 "input" 0 : tensor<4x64xf16> size 512
  recipe.slot @out0 "output" 0 : tensor<4x64xf16> size 512
  recipe.patch_addresses [@in0, @out0]
  recipe.transfer "h2d" @in0 pad 0.0
  recipe.restickify @in0
  recipe.compute @main
  recipe.transfer "d2h" @out0
  recipe.restickify @out0
}
