// Row scaling with a per-group scale broadcast between tiles: 8 tiles in 2 groups of
// 4; tile 4g of group g loads scale row g and `ktdp.inter_tile_consume` hands it to
// the group's 4 tiles; each tile scales its 16 rows of X (128x64 f16).
module {
  func.func @group_scale(%x_ptr: index, %scale_ptr: index, %out_ptr: index) attributes {grid = [8]} {
    %tile = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %row = arith.muli %tile, %c16 : index
    %x = ktdp.construct_memory_view %x_ptr, sizes: [128, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<128x64xf16>
    %scale = ktdp.construct_memory_view %scale_ptr, sizes: [2, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<2x64xf16>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [128, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<128x64xf16>
    %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i - 4 * g == 0)>
        -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g >= 0, -g + 1 >= 0)>> {
    ^bb0(%gid: index):
      %st = ktdp.construct_access_tile %scale[%gid, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<2x64xf16> -> !ktdp.access_tile<1x64xindex>
      %s = ktdp.load %st : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
      ktdp.yield_partial %s : tensor<1x64xf16>
    }
    %s = ktdp.inter_tile_consume(%f)
        consumer_tiles_per_group = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
        : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g >= 0, -g + 1 >= 0)>> -> tensor<1x64xf16>
    %xt = ktdp.construct_access_tile %x[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<128x64xf16> -> !ktdp.access_tile<16x64xindex>
    %rows = ktdp.load %xt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %s1 = tensor.collapse_shape %s [[0, 1]] : tensor<1x64xf16> into tensor<64xf16>
    %sb = linalg.broadcast ins(%s1 : tensor<64xf16>) outs(%rows : tensor<16x64xf16>) dimensions = [0]
    %y = arith.mulf %rows, %sb : tensor<16x64xf16>
    %ot = ktdp.construct_access_tile %out[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<128x64xf16> -> !ktdp.access_tile<16x64xindex>
    ktdp.store %y, %ot : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
    return
  }
}
