// The dual of paged_copy.mlir: a contiguous [sequence, token, head, feature] tensor
// written into the pages a page table names, Y[I[b, t floordiv 64], h, t mod 64, d] =
// X[b, t, h, d] (a KV-cache update). The store through the paged tile is a scatter of
// pages: streamed page by page, each page's part of X loaded transposed into the
// page's order and scattered to the page the table names (dataflow.scatter).
module {
  func.func @paged_write(%x_ptr: index, %idx_ptr: index, %y_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %x = ktdp.construct_memory_view %x_ptr, sizes: [2, 1024, 8, 128], strides: [1048576, 1024, 128, 1] {
      coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1023 >= 0, d2 >= 0, -d2 + 7 >= 0, d3 >= 0, -d3 + 127 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<2x1024x8x128xf16>
    %idx = ktdp.construct_memory_view %idx_ptr, sizes: [2, 16], strides: [16, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 15 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<2x16xi32>
    %y = ktdp.construct_memory_view %y_ptr, sizes: [40, 8, 64, 128], strides: [65536, 8192, 128, 1] {
      coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 39 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 63 >= 0, d3 >= 0, -d3 + 127 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<40x8x64x128xf16>
    %src = ktdp.construct_access_tile %x[%c0, %c0, %c0, %c0] {
      access_tile_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1023 >= 0, d2 >= 0, -d2 + 7 >= 0, d3 >= 0, -d3 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
    } : memref<2x1024x8x128xf16> -> !ktdp.access_tile<2x8x1024x128xindex>
    %dst = ktdp.construct_indirect_access_tile intermediate_variables(%b, %h, %t, %d)
        %y[ind(%idx[%b, %t floordiv 64]), (%h), (%t mod 64), (%d)] {
      variables_space_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1023 >= 0, d3 >= 0, -d3 + 127 >= 0)>,
      variables_space_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
    } : memref<40x8x64x128xf16>, memref<2x16xi32> -> !ktdp.access_tile<2x8x1024x128xindex>
    %tile = ktdp.load %src : !ktdp.access_tile<2x8x1024x128xindex> -> tensor<2x8x1024x128xf16>
    ktdp.store %tile, %dst : tensor<2x8x1024x128xf16>, !ktdp.access_tile<2x8x1024x128xindex>
    return
  }
}
