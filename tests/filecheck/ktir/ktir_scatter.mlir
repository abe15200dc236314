// Stores through indirect tiles (scatters; spyre_ir/lowering/ktir_scatter.py), written
// straight to LPDDR5 with dataflow.scatter, at L2 and at L3 (ls.scatter on the LS unit).

// RUN: spyre-opt %s --split-input-file -p convert-ktir-to-dataflow | filecheck %s
// RUN: spyre-opt %s --split-input-file -p ktir-to-units | filecheck %s --check-prefix=UNITS

// An element scatter into a view two rows into its pointer's tensor (at %y + 128): the
// flat position (rows + 2) * 64 + cols in the tensor, in i32 tile ops, then one
// element per index (dims = 2), masked: each writes its own element of a stick.
// CHECK-LABEL: dataflow.kernel @elements
// CHECK-DAG: dataflow.compute "spyre.full" on "pe"() -> (%[[TWO:.*]]) {attrs = {value = 2 : i64}} : () -> !dataflow.lx<1xi32>
// CHECK-DAG: dataflow.compute "spyre.full" on "pe"() -> (%[[STRIDE:.*]]) {attrs = {value = 64 : i64}} : () -> !dataflow.lx<1xi32>
// CHECK: dataflow.load %{{.*}} into %[[V:.*]] : !dataflow.ddr<2x64xf16, {{.*}}>, !dataflow.lx<2x64xf16>
// CHECK: dataflow.load %{{.*}} into %[[COLS:.*]] : !dataflow.ddr<2x64xi32, {{.*}}>, !dataflow.lx<2x64xi32>
// CHECK-NEXT: dataflow.load %{{.*}} into %[[ROWS:.*]] : !dataflow.ddr<2x64xi32, {{.*}}>, !dataflow.lx<2x64xi32>
// CHECK-NEXT: dataflow.compute "spyre.add" on "pe"(%[[ROWS]], %[[TWO]]) -> (%[[R2:.*]]) : (!dataflow.lx<2x64xi32>, !dataflow.lx<1xi32>) -> !dataflow.lx<2x64xi32>
// CHECK-NEXT: dataflow.compute "spyre.mul" on "pe"(%[[R2]], %[[STRIDE]]) -> (%[[SCALED:.*]]) : (!dataflow.lx<2x64xi32>, !dataflow.lx<1xi32>) -> !dataflow.lx<2x64xi32>
// CHECK-NEXT: dataflow.compute "spyre.add" on "pe"(%[[COLS]], %[[SCALED]]) -> (%[[AT:.*]]) : (!dataflow.lx<2x64xi32>, !dataflow.lx<2x64xi32>) -> !dataflow.lx<2x64xi32>
// CHECK-NEXT: dataflow.scatter %[[V]] into %{{.*}}[%[[AT]]] {dims = 2 : i64, masked} : !dataflow.lx<2x64xf16>, !dataflow.lx<2x64xi32>, !dataflow.ddr<10x64xf16, {{.*}}>
// UNITS-LABEL: @elements
// UNITS: ls.scatter %{{.*}} into %{{.*}}[%{{.*}}] {dims = 2 : i64, masked} : !dataflow.lx<2x64xf16>, !dataflow.lx<2x64xi32>, !dataflow.ddr<10x64xf16, {{.*}}>
func.func @elements(%x: index, %r: index, %c: index, %y: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %y2 = arith.addi %y, %c128 : index
  %src = ktdp.construct_memory_view %x, sizes: [2, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x64xf16>
  %rows = ktdp.construct_memory_view %r, sizes: [2, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x64xi32>
  %cols = ktdp.construct_memory_view %c, sizes: [2, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x64xi32>
  %t = ktdp.construct_memory_view %y2, sizes: [8, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<8x64xf16>
  %s = ktdp.construct_access_tile %src[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<2x64xf16> -> !ktdp.access_tile<2x64xindex>
  %v = ktdp.load %s : !ktdp.access_tile<2x64xindex> -> tensor<2x64xf16>
  %g = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %t[ind(%rows[%m, %k]), ind(%cols[%m, %k])] {variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x64xf16>, memref<2x64xi32>, memref<2x64xi32> -> !ktdp.access_tile<2x64xindex>
  ktdp.store %v, %g : tensor<2x64xf16>, !ktdp.access_tile<2x64xindex>
  return
}

// -----

// A row scatter over 4 tiles: tile t's indices idx[2t], idx[2t + 1] loaded one per
// stick (the index pointer gets a trailing unit dim, as a row gather's), reshaped to
// positions, and the tile's two rows of 64 written to the table rows they name.
// CHECK-LABEL: dataflow.kernel @rows
// CHECK: dataflow.load %{{.*}} into %[[V:.*]] : !dataflow.ddr<8x64xf16, {{.*}}>, !dataflow.lx<2x64xf16>
// CHECK: dataflow.load %{{.*}} into %[[I:.*]] : !dataflow.ddr<8x1xi32, {{.*}}>, !dataflow.lx<2x1xi32>
// CHECK-NEXT: dataflow.compute "spyre.reshape" on "ls"(%[[I]]) -> (%[[IDX:.*]]) : (!dataflow.lx<2x1xi32>) -> !dataflow.lx<2xi32>
// CHECK-NEXT: dataflow.scatter %[[V]] into %{{.*}}[%[[IDX]]] : !dataflow.lx<2x64xf16>, !dataflow.lx<2xi32>, !dataflow.ddr<32x64xf16, {{.*}}>
// UNITS-LABEL: @rows
// UNITS: ls.scatter %{{.*}} into %{{.*}}[%{{.*}}] : !dataflow.lx<2x64xf16>, !dataflow.lx<2xi32>, !dataflow.ddr<32x64xf16, {{.*}}>
func.func @rows(%x: index, %i: index, %y: index) attributes {grid = [4]} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %tile = ktdp.get_compute_tile_id : index
  %first = arith.muli %tile, %c2 : index
  %src = ktdp.construct_memory_view %x, sizes: [8, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<8x64xf16>
  %idx = ktdp.construct_memory_view %i, sizes: [8], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<8xi32>
  %t = ktdp.construct_memory_view %y, sizes: [32, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<32x64xf16>
  %s = ktdp.construct_access_tile %src[%first, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x64xf16> -> !ktdp.access_tile<2x64xindex>
  %v = ktdp.load %s : !ktdp.access_tile<2x64xindex> -> tensor<2x64xf16>
  %g = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %t[ind(%idx[%first + %m]), (%k)] {variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<32x64xf16>, memref<8xi32> -> !ktdp.access_tile<2x64xindex>
  ktdp.store %v, %g : tensor<2x64xf16>, !ktdp.access_tile<2x64xindex>
  return
}
