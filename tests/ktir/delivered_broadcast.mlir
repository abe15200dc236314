// A kernel that stores nothing (docs/ktir.md, "Kernels that store nothing";
// spyre_ir/lowering/ktir_observe.py): our own, in the style of the specification's
// inter-tile examples. Every tile holds a 16x64 slab of its own memory (`ct_local` at
// element 0) and takes its maximum over the rows; tile 2 alone produces that row and
// every tile of the group consumes it (a broadcast). Nothing is stored: spyre-run
// stores each tile's consumed row to %delivered0 for the check, so
//   delivered0[t] = max over rows r of slab_2[r], for every tile t.
#tiles = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#owner = affine_set<(i)[g] : (i - 4 * g - 2 == 0)>
#one_group = affine_set<(g) : (g == 0)>
#slab = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @delivered_broadcast() attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %at = arith.constant 0 : index
    %low = arith.constant -6.0e4 : f16
    %own = ktdp.construct_memory_view %at, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = #slab, memory_space = #ktdp.memory_space<ct_local>
    } : memref<16x64xf16>
    %own_tile = ktdp.construct_access_tile %own[%c0, %c0] {
      access_tile_set = #slab, access_tile_order = #id
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %x = ktdp.load %own_tile : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %init = tensor.empty() : tensor<64xf16>
    %lows = linalg.fill ins(%low : f16) outs(%init : tensor<64xf16>) -> tensor<64xf16>
    %top = linalg.reduce { arith.maximumf } ins(%x : tensor<16x64xf16>)
             outs(%lows : tensor<64xf16>) dimensions = [0]
    %row = tensor.expand_shape %top [[0, 1]] output_shape [1, 64]
             : tensor<64xf16> into tensor<1x64xf16>
    %future = ktdp.inter_tile_produce producer_tiles_per_group = #owner
        -> !ktdp.tile_future<(tensor<1x64xf16>), groups = #one_group> {
      ^bb0(%gid: index):
        ktdp.yield_partial %row : tensor<1x64xf16>
    }
    %value = ktdp.inter_tile_consume(%future) consumer_tiles_per_group = #tiles
        : !ktdp.tile_future<(tensor<1x64xf16>), groups = #one_group> -> tensor<1x64xf16>
    return
  }
}
