// convert-units-to-recipe marks an input slot `written` when a program of the entry has
// its result tied to that argument (a KV cache's row-store kernel,
// spyre_ir/passes/row_store_kernel.py): a launch hands the cache's block to the compute,
// which stores the new rows into it, instead of giving the compute a copy. The other
// inputs are not written. The artifact reads back and prints the same.

// RUN: spyre-opt %s -p spyre-compile | filecheck %s
// RUN: spyre-opt %s -p spyre-compile > %t.mlir
// RUN: spyre-opt %t.mlir | diff %t.mlir -

// CHECK:       core.program @store_rows_0 cores(1) (%cache, %pos, %x) {{{.*}}tied = array<i64: 0>
// CHECK:       recipe.plan @main_recipe for @main
// CHECK-NEXT:    recipe.slot @in0 "input" 0 : tensor<1x2x16x64xf16, {{.*}}> size 4096 written
// CHECK-NEXT:    recipe.slot @in1 "input" 1 : tensor<1xi64, {{.*}}> size 128{{$}}
// CHECK-NEXT:    recipe.slot @in2 "input" 2 : tensor<1x2x1x64xf16, {{.*}}> size 256{{$}}
// CHECK-NEXT:    recipe.slot @in3 "input" 3 : tensor<1x2x1x64xf16, {{.*}}> size 256{{$}}
// CHECK-NEXT:    recipe.slot @out0 "output" 0 : tensor<1x2x1x16xf16, {{.*}}> size {{[0-9]+}}{{$}}
func.func @main(%cache: tensor<1x2x16x64xf16>, %pos: tensor<1xi64>, %x: tensor<1x2x1x64xf16>, %q: tensor<1x2x1x64xf16>) -> tensor<1x2x1x16xf16> {
  %w = spyre.scatter %cache[%pos], %x dim = 2 : tensor<1x2x16x64xf16>, tensor<1xi64>, tensor<1x2x1x64xf16> -> tensor<1x2x16x64xf16>
  %t = spyre.transpose %w perm = [0, 1, 3, 2] : tensor<1x2x16x64xf16> -> tensor<1x2x64x16xf16>
  %s = spyre.matmul %q, %t : tensor<1x2x1x64xf16>, tensor<1x2x64x16xf16> -> tensor<1x2x1x16xf16>
  func.return %s : tensor<1x2x1x16xf16>
}
