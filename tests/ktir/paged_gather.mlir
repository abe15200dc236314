// A paged gather: a KV cache of 16 pages (64 tokens x 128 features, f16) and a block
// table of 8 page ids (i32); tile t copies page table[t] into row t of the output
// through `ktdp.construct_indirect_access_tile`.
module {
  func.func @paged_gather(%pages_ptr: index, %table_ptr: index, %out_ptr: index) attributes {grid = [8]} {
    %t = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %pages = ktdp.construct_memory_view %pages_ptr, sizes: [16, 64, 128], strides: [8192, 128, 1] {
      coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0, d2 >= 0, -d2 + 127 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16x64x128xf16>
    %table = ktdp.construct_memory_view %table_ptr, sizes: [8], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<8xi32>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [8, 64, 128], strides: [8192, 128, 1] {
      coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0, d2 >= 0, -d2 + 127 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<8x64x128xf16>
    %src = ktdp.construct_indirect_access_tile intermediate_variables(%p, %s, %d)
        %pages[ind(%table[%t + %p]), (%s), (%d)] {
      variables_space_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0, d2 >= 0, -d2 + 127 >= 0)>,
      variables_space_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
    } : memref<16x64x128xf16>, memref<8xi32> -> !ktdp.access_tile<1x64x128xindex>
    %page = ktdp.load %src : !ktdp.access_tile<1x64x128xindex> -> tensor<1x64x128xf16>
    %dst = ktdp.construct_access_tile %out[%t, %c0, %c0] {
      access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0, d2 >= 0, -d2 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
    } : memref<8x64x128xf16> -> !ktdp.access_tile<1x64x128xindex>
    ktdp.store %page, %dst : tensor<1x64x128xf16>, !ktdp.access_tile<1x64x128xindex>
    return
  }
}
