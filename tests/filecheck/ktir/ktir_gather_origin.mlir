// A row gather through views at a pointer plus an offset (convert-ktir-to-dataflow):
// the index load starts at the index view's origin (entry 4 of its pointer's 8) and
// the gathered row indices add the table view's first origin coordinate (row 2), so
// the gather reads rows of the pointer's tensor (tests/ktir/offset_gather.mlir runs it).

// RUN: spyre-opt %s -p convert-ktir-to-dataflow | filecheck %s

// CHECK:      arith.constant 128 : index
// CHECK:      %[[FOUR:.*]] = arith.constant 4 : index
// CHECK:      dataflow.alloc_lx : !dataflow.lx<1x1xi32>
// CHECK:      %[[AT:.*]] = arith.addi %{{.*}}, %[[FOUR]] : index
// CHECK-NEXT: dataflow.load %{{.*}}[%[[AT]], %{{.*}}] into %{{.*}} : !dataflow.ddr<8x1xi32
// CHECK:      dataflow.compute "spyre.full" on "pe"() -> (%[[TWO:.*]]) {attrs = {value = 2 : i64}}
// CHECK-NEXT: dataflow.compute "spyre.add" on "pe"(%{{.*}}, %[[TWO]]) -> (%[[ROWS:.*]]) :
// CHECK-NEXT: dataflow.gather %{{.*}}[%[[ROWS]]] into %{{.*}} : !dataflow.ddr<8x64xf16

module {
  func.func @offset_gather(%rows_ptr: index, %idx_ptr: index, %out_ptr: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c128 = arith.constant 128 : index
    %t = ktdp.get_compute_tile_id : index
    %rows_at = arith.addi %rows_ptr, %c128 : index
    %idx_at = arith.addi %idx_ptr, %c4 : index
    %rows_whole = ktdp.construct_memory_view %rows_ptr, sizes: [8, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<8x64xf16>
    %idx_whole = ktdp.construct_memory_view %idx_ptr, sizes: [8], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<8xi32>
    %rows = ktdp.construct_memory_view %rows_at, sizes: [4, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<4x64xf16>
    %idx = ktdp.construct_memory_view %idx_at, sizes: [4], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<4xi32>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [4, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<4x64xf16>
    %src = ktdp.construct_indirect_access_tile intermediate_variables(%p, %d)
        %rows[ind(%idx[%t + %p]), (%d)] {
      variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      variables_space_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<4x64xf16>, memref<4xi32> -> !ktdp.access_tile<1x64xindex>
    %row = ktdp.load %src : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    %dst = ktdp.construct_access_tile %out[%t, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<4x64xf16> -> !ktdp.access_tile<1x64xindex>
    ktdp.store %row, %dst : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    return
  }
}
