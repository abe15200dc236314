

func.func @k(%x: index) attributes {grid = [4]} {
  %tile = ktdp.get_compute_tile_id : index
  %c0 = arith.constant 0 : index
  %v = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  %t = ktdp.construct_access_tile %v[%tile, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0xFFFFFFFFFFFFFFFFFF, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
  %l = ktdp.load %t : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %l : tensor<1x64xf16>
  }
  // expected-error @+1 {{consumer_tiles_per_group must be blocks of consecutive tiles covering the grid}}
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)>,
      producer_dependency_per_consumer = affine_set<(p)[c] : (p == 0)>
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16>
  return
}

