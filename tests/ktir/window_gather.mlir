// A windowed gather: a table of 12 blocks (16 slots x 4 heads x 64 features, f16) and
// a 1x4 table of block ids (i32). Tile (a, b) of a 2x4 grid gathers blocks ids[0, 2a],
// ids[0, 2a + 1], and of each only slots off .. off + 7 of head b (whole 64-feature rows):
// an indirect access tile whose dims after the indirect one are partial.
module {
  func.func @window_gather(%blocks_ptr: index, %ids_ptr: index, %out_ptr: index, %off: index) attributes {grid = [2, 4]} {
    %a = ktdp.get_compute_tile_id {dim = 0} : index
    %b = ktdp.get_compute_tile_id {dim = 1} : index
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %first = arith.muli %a, %c2 : index
    %blocks = ktdp.construct_memory_view %blocks_ptr, sizes: [12, 16, 4, 64], strides: [4096, 256, 64, 1] {
      coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 11 >= 0, d1 >= 0, -d1 + 15 >= 0, d2 >= 0, -d2 + 3 >= 0, d3 >= 0, -d3 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<12x16x4x64xf16>
    %ids = ktdp.construct_memory_view %ids_ptr, sizes: [1, 4], strides: [4, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 3 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<1x4xi32>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [4, 8, 4, 64], strides: [2048, 256, 64, 1] {
      coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 3 >= 0, d3 >= 0, -d3 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<4x8x4x64xf16>
    %src = ktdp.construct_indirect_access_tile intermediate_variables(%p, %s, %h, %f)
        %blocks[ind(%ids[%c0, %first + %p]), (%off + %s), (%b + %h), (%f)] {
      variables_space_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 >= 0, d3 >= 0, -d3 + 63 >= 0)>,
      variables_space_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
    } : memref<12x16x4x64xf16>, memref<1x4xi32> -> !ktdp.access_tile<2x8x1x64xindex>
    %part = ktdp.load %src : !ktdp.access_tile<2x8x1x64xindex> -> tensor<2x8x1x64xf16>
    %dst = ktdp.construct_access_tile %out[%first, %c0, %b, %c0] {
      access_tile_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 >= 0, d3 >= 0, -d3 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
    } : memref<4x8x4x64xf16> -> !ktdp.access_tile<2x8x1x64xindex>
    ktdp.store %part, %dst : tensor<2x8x1x64xf16>, !ktdp.access_tile<2x8x1x64xindex>
    return
  }
}
