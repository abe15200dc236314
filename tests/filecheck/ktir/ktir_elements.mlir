// An element gather (every subscript of the indirect tile an index view read at the
// variables; spyre_ir/lowering/ktir_elements.py): the whole table loaded and
// flattened, each index view loaded whole (not one index per stick, as a row gather's),
// the flat position rows * 64 + cols in i32 tile ops, one LX spyre.gather.

// RUN: spyre-opt %s -p convert-ktir-to-dataflow | filecheck %s

// CHECK-LABEL: dataflow.kernel @k
// CHECK: dataflow.compute "spyre.full" on "pe"() -> (%[[STRIDE:.*]]) {attrs = {value = 64 : i64}} : () -> !dataflow.lx<1xi32>
// CHECK: dataflow.load %{{.*}} into %[[TABLE:.*]] : !dataflow.ddr<8x64xf16, {{.*}}>, !dataflow.lx<8x64xf16>
// CHECK-NEXT: dataflow.compute "spyre.reshape" on "ls"(%[[TABLE]]) -> (%[[FLAT:.*]]) : (!dataflow.lx<8x64xf16>) -> !dataflow.lx<512xf16>
// CHECK-NEXT: dataflow.load %{{.*}} into %[[COLS:.*]] : !dataflow.ddr<2x64xi32, {{.*}}>, !dataflow.lx<2x64xi32>
// CHECK-NEXT: dataflow.load %{{.*}} into %[[ROWS:.*]] : !dataflow.ddr<2x64xi32, {{.*}}>, !dataflow.lx<2x64xi32>
// CHECK-NEXT: dataflow.compute "spyre.mul" on "pe"(%[[ROWS]], %[[STRIDE]]) -> (%[[SCALED:.*]]) : (!dataflow.lx<2x64xi32>, !dataflow.lx<1xi32>) -> !dataflow.lx<2x64xi32>
// CHECK-NEXT: dataflow.compute "spyre.add" on "pe"(%[[COLS]], %[[SCALED]]) -> (%[[AT:.*]]) : (!dataflow.lx<2x64xi32>, !dataflow.lx<2x64xi32>) -> !dataflow.lx<2x64xi32>
// CHECK-NEXT: dataflow.compute "spyre.gather" on "ls"(%[[FLAT]], %[[AT]]) -> (%[[PICKED:.*]]) : (!dataflow.lx<512xf16>, !dataflow.lx<2x64xi32>) -> !dataflow.lx<2x64xf16>
// CHECK-NEXT: dataflow.store %[[PICKED]] into
func.func @k(%x: index, %r: index, %c: index, %y: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %t = ktdp.construct_memory_view %x, sizes: [8, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<8x64xf16>
  %rows = ktdp.construct_memory_view %r, sizes: [2, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x64xi32>
  %cols = ktdp.construct_memory_view %c, sizes: [2, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x64xi32>
  %out = ktdp.construct_memory_view %y, sizes: [2, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x64xf16>
  %g = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %t[ind(%rows[%m, %k]), ind(%cols[%m, %k])] {variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x64xf16>, memref<2x64xi32>, memref<2x64xi32> -> !ktdp.access_tile<2x64xindex>
  %v = ktdp.load %g : !ktdp.access_tile<2x64xindex> -> tensor<2x64xf16>
  %d = ktdp.construct_access_tile %out[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<2x64xf16> -> !ktdp.access_tile<2x64xindex>
  ktdp.store %v, %d : tensor<2x64xf16>, !ktdp.access_tile<2x64xindex>
  return
}
