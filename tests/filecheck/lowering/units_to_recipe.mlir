// convert-units-to-recipe (spyre_ir/lowering/units_to_recipe.py) on the L3 module that
// spyre-to-units makes, and the spyre-compile pipeline (L1 -> L4) in one go: both give
// the same artifact, whose plan has one slot per argument and result, typed as the
// entry's signature (the stick layouts the compiler chose: x's 100-element rows padded
// to two 64-element sticks, 28 elements of padding), sized as their stick images.

// RUN: spyre-opt %s -p spyre-to-units | spyre-opt -p convert-units-to-recipe | filecheck %s
// RUN: spyre-opt %s -p spyre-compile | filecheck %s
// The artifact reads back and verifies, and printing it again changes nothing.
// RUN: spyre-opt %s -p spyre-compile > %t.mlir
// RUN: spyre-opt %t.mlir | diff %t.mlir -

// CHECK:       func.func @main(%x: tensor<64x100xf16, #spyre.stick<dim = 1, device = [2, 64, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>>, %w: tensor<100x32xf16, [[W:#spyre.stick<.*>]]>) -> tensor<64x32xf16, [[Y:#spyre.stick<.*>]]> {
// CHECK:         core.program @matmul
// CHECK:         func.return
// CHECK:       recipe.plan @main_recipe for @main hash "{{[0-9a-f]+}}" {
// CHECK-NEXT:    recipe.slot @in0 "input" 0 : tensor<64x100xf16, #spyre.stick<dim = 1, device = [2, 64, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>> size 16384
// CHECK-NEXT:    recipe.slot @in1 "input" 1 : tensor<100x32xf16, [[W]]> size 12800
// CHECK-NEXT:    recipe.slot @out0 "output" 0 : tensor<64x32xf16, [[Y]]> size 8192
// CHECK-NEXT:    recipe.patch_addresses [@in0, @in1, @out0]
// CHECK-NEXT:    recipe.transfer "h2d" @in0 pad 0.000000e+00
// CHECK-NEXT:    recipe.restickify @in0
// CHECK-NEXT:    recipe.transfer "h2d" @in1 pad 0.000000e+00
// CHECK-NEXT:    recipe.restickify @in1
// CHECK-NEXT:    recipe.compute @main
// CHECK-NEXT:    recipe.transfer "d2h" @out0
// CHECK-NEXT:    recipe.restickify @out0
// CHECK-NEXT:  }
func.func @main(%x: tensor<64x100xf16>, %w: tensor<100x32xf16>) -> tensor<64x32xf16> {
  %y = spyre.matmul %x, %w : tensor<64x100xf16>, tensor<100x32xf16> -> tensor<64x32xf16>
  %z = spyre.exp %y : tensor<64x32xf16> -> tensor<64x32xf16>
  func.return %z : tensor<64x32xf16>
}
