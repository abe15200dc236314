// Views of a tile's own memory at absolute addresses (docs/ktir.md, "Views at
// absolute addresses"; spyre_ir/lowering/ktir_local.py): our own kernel, in the style
// of the specification's inter-tile examples, whose input is each tile's own local
// memory. Every tile holds a 32x64 slab at element 0 of its `ct_local` memory and a
// 1x64 bias at element 4096 of its LX (no core: the tile's own). Each tile sums its
// slab over the rows, the four partials are all-reduced over the ring, and tile t
// stores that total plus its own bias to row t of %out:
//   out[t] = sum over tiles u and rows r of slab_u[r] + bias_t.
#tiles = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#one_group = affine_set<(g) : (g == 0)>
#slab = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#out_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @local_slab_sum(%out_ptr: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %slab_at = arith.constant 0 : index
    %bias_at = arith.constant 4096 : index
    %zero = arith.constant 0.0 : f16
    %t = ktdp.get_compute_tile_id : index
    %own = ktdp.construct_memory_view %slab_at, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = #slab, memory_space = #ktdp.memory_space<ct_local>
    } : memref<32x64xf16>
    %bias = ktdp.construct_memory_view %bias_at, sizes: [1, 64], strides: [64, 1] {
      coordinate_set = #row, memory_space = #ktdp.spyre_memory_space<LX>
    } : memref<1x64xf16>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [4, 64], strides: [64, 1] {
      coordinate_set = #out_set, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<4x64xf16>
    %own_tile = ktdp.construct_access_tile %own[%c0, %c0] {
      access_tile_set = #slab, access_tile_order = #id
    } : memref<32x64xf16> -> !ktdp.access_tile<32x64xindex>
    %bias_tile = ktdp.construct_access_tile %bias[%c0, %c0] {
      access_tile_set = #row, access_tile_order = #id
    } : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
    %x = ktdp.load %own_tile : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
    %b = ktdp.load %bias_tile : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    %init = tensor.empty() : tensor<64xf16>
    %zeros = linalg.fill ins(%zero : f16) outs(%init : tensor<64xf16>) -> tensor<64xf16>
    %sum = linalg.reduce { arith.addf } ins(%x : tensor<32x64xf16>)
             outs(%zeros : tensor<64xf16>) dimensions = [0]
    %partial = tensor.expand_shape %sum [[0, 1]] output_shape [1, 64]
                 : tensor<64xf16> into tensor<1x64xf16>
    %id_init = tensor.empty() : tensor<1x64xf16>
    %identity = linalg.fill ins(%zero : f16) outs(%id_init : tensor<1x64xf16>) -> tensor<1x64xf16>
    %future = ktdp.inter_tile_produce producer_tiles_per_group = #tiles
        -> !ktdp.tile_future<(tensor<1x64xf16>), groups = #one_group> {
      ^bb0(%gid: index):
        ktdp.yield_partial %partial : tensor<1x64xf16>
    }
    %total = ktdp.inter_tile_reduce(%future) consumer_tiles_per_group = #tiles,
        identity(%identity : tensor<1x64xf16>)
        : !ktdp.tile_future<(tensor<1x64xf16>), groups = #one_group> -> tensor<1x64xf16> {
      ^bb0(%l: tensor<1x64xf16>, %r: tensor<1x64xf16>):
        %e = tensor.empty() : tensor<1x64xf16>
        %s = linalg.add ins(%l, %r : tensor<1x64xf16>, tensor<1x64xf16>)
               outs(%e : tensor<1x64xf16>) -> tensor<1x64xf16>
        ktdp.yield_reduced %s : tensor<1x64xf16>
    }
    %e2 = tensor.empty() : tensor<1x64xf16>
    %y = linalg.add ins(%total, %b : tensor<1x64xf16>, tensor<1x64xf16>)
           outs(%e2 : tensor<1x64xf16>) -> tensor<1x64xf16>
    %out_tile = ktdp.construct_access_tile %out[%t, %c0] {
      access_tile_set = #row, access_tile_order = #id
    } : memref<4x64xf16> -> !ktdp.access_tile<1x64xindex>
    ktdp.store %y, %out_tile : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    return
  }
}
