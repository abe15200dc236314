

// An indirect tile whose dim after the indirect one is a window (slots 2..5 of 8):
// whole rows gathered, the window's sticks picked by an LX gather at iota positions.
// CHECK-LABEL: func.func @rows
// CHECK: dataflow.gather %{{.*}}[%{{.*}}] into %[[ROWS:.*]] : {{.*}}, !dataflow.lx<1xi32>, !dataflow.lx<1x8x64xf16>
// CHECK: dataflow.compute "spyre.reshape" on "ls"(%[[ROWS]]) -> (%[[FLAT:.*]]) : (!dataflow.lx<1x8x64xf16>) -> !dataflow.lx<8x64xf16>
// CHECK: dataflow.compute "spyre.iota" on "pe"() -> (%[[P0:.*]]) offsets[{{.*}}] {attrs = {dim = 0 : i64, start = 0 : i64, step = 8 : i64}}
// CHECK: dataflow.compute "spyre.iota" on "pe"() -> (%[[P1:.*]]) offsets[%{{.*}}, %[[AT:.*]]] {attrs = {dim = 1 : i64, start = 0 : i64, step = 1 : i64}}
// CHECK: dataflow.compute "spyre.add" on "pe"(%[[P0]], %[[P1]]) -> (%[[POS:.*]]) :
// CHECK: dataflow.compute "spyre.gather" on "ls"(%[[FLAT]], %[[POS]]) -> (%[[PICKED:.*]]) : (!dataflow.lx<8x64xf16>, !dataflow.lx<1x4xi32>) -> !dataflow.lx<1x4x64xf16>
// CHECK: dataflow.store %[[PICKED]] into
func.func @rows(%t_ptr: index, %i_ptr: index, %o_ptr: index) attributes {grid = f16} {
  %c = ktdp.get_compute_tile_id : index
  %c0 = arith.constant 0 : index
  %t = ktdp.construct_memory_view %t_ptr, sizes: [6, 8, 64], strides: [512, 64, 1] {coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 5 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<6x8x64xf16>
  %i = ktdp.construct_memory_view %i_ptr, sizes: [2], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 1 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2xi32>
  %o = ktdp.construct_memory_view %o_ptr, sizes: [2, 4, 64], strides: [256, 64, 1] {coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x4x64xf16>
  %g = ktdp.construct_indirect_access_tile intermediate_variables(%p, %s, %f) %t[ind(%i[%c + %p]), (%s + 2), (%f)] {variables_space_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>} : memref<6x8x64xf16>, memref<2xi32> -> !ktdp.access_tile<1x4x64xindex>
  %x = ktdp.load %g : !ktdp.access_tile<1x4x64xindex> -> tensor<1x4x64xf16>
  %a = ktdp.construct_access_tile %o[%c, %c0, %c0] {access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>} : memref<2x4x64xf16> -> !ktdp.access_tile<1x4x64xindex>
  ktdp.store %x, %a : tensor<1x4x64xf16>, !ktdp.access_tile<1x4x64xindex>
  return
}

