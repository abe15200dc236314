// An element gather (spyre_ir/lowering/ktir_elements.py): every subscript of the
// indirect access tile reads an index view at the variables, so
//   out[m, k] = table[rows[m, k], cols[m, k]]
// for a 32x64 f16 table and 16x64 i32 index views, then doubled before the store.
#table_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @element_gather(%table_ptr: index, %rows_ptr: index, %cols_ptr: index,
                            %out_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %table = ktdp.construct_memory_view %table_ptr, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = #table_set, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<32x64xf16>
    %rows = ktdp.construct_memory_view %rows_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = #tile_set, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16x64xi32>
    %cols = ktdp.construct_memory_view %cols_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = #tile_set, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16x64xi32>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = #tile_set, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16x64xf16>
    %src = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k)
        %table[ind(%rows[%m, %k]), ind(%cols[%m, %k])] {
      variables_space_set = #tile_set, variables_space_order = #id
    } : memref<32x64xf16>, memref<16x64xi32>, memref<16x64xi32> -> !ktdp.access_tile<16x64xindex>
    %x = ktdp.load %src : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %e = tensor.empty() : tensor<16x64xf16>
    %y = linalg.add ins(%x, %x : tensor<16x64xf16>, tensor<16x64xf16>)
           outs(%e : tensor<16x64xf16>) -> tensor<16x64xf16>
    %dst = ktdp.construct_access_tile %out[%c0, %c0] {
      access_tile_set = #tile_set, access_tile_order = #id
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    ktdp.store %y, %dst : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
    return
  }
}
