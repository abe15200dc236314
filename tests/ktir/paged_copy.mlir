// A paged KV-cache copy: a cache of 40 pages (8 heads x 64 tokens x 128 features, f16)
// and a page table of 2 sequences x 16 pages (i32). The kernel copies each sequence's
// 1024 tokens out of its pages into a contiguous [sequence, token, head, feature]
// tensor: Y[b, t, h, d] = X[I[b, t floordiv 64], h, t mod 64, d]. The tile (4 MiB) is
// larger than a core's LX, and the store through a permuted tile puts the head dim
// after the token dim.
module {
  func.func @paged_copy(%x_ptr: index, %idx_ptr: index, %y_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %x = ktdp.construct_memory_view %x_ptr, sizes: [40, 8, 64, 128], strides: [65536, 8192, 128, 1] {
      coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 39 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 63 >= 0, d3 >= 0, -d3 + 127 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<40x8x64x128xf16>
    %idx = ktdp.construct_memory_view %idx_ptr, sizes: [2, 16], strides: [16, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 15 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<2x16xi32>
    %y = ktdp.construct_memory_view %y_ptr, sizes: [2, 1024, 8, 128], strides: [1048576, 1024, 128, 1] {
      coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1023 >= 0, d2 >= 0, -d2 + 7 >= 0, d3 >= 0, -d3 + 127 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<2x1024x8x128xf16>
    %src = ktdp.construct_indirect_access_tile intermediate_variables(%b, %h, %t, %d)
        %x[ind(%idx[%b, %t floordiv 64]), (%h), (%t mod 64), (%d)] {
      variables_space_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1023 >= 0, d3 >= 0, -d3 + 127 >= 0)>,
      variables_space_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
    } : memref<40x8x64x128xf16>, memref<2x16xi32> -> !ktdp.access_tile<2x8x1024x128xindex>
    %dst = ktdp.construct_access_tile %y[%c0, %c0, %c0, %c0] {
      access_tile_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1023 >= 0, d2 >= 0, -d2 + 7 >= 0, d3 >= 0, -d3 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
    } : memref<2x1024x8x128xf16> -> !ktdp.access_tile<2x8x1024x128xindex>
    %tile = ktdp.load %src : !ktdp.access_tile<2x8x1024x128xindex> -> tensor<2x8x1024x128xf16>
    ktdp.store %tile, %dst : tensor<2x8x1024x128xf16>, !ktdp.access_tile<2x8x1024x128xindex>
    return
  }
}
