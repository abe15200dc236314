// Row sums per group over 8 tiles in 2 groups of 4: tile t reads row t of a 8x64 f16
// input by pointer arithmetic (%x_ptr + t * 64), `ktdp.inter_tile_reduce` adds the rows
// of each group (an all-reduce within the group, to a 64 result without the partials'
// unit dim, as ktir-cpu writes it), and the first tile of each group (t % 4 == 0)
// stores its group's sum at %out_ptr + (t / 4) * 64: row g of the 2x64 output.
#row = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#order = affine_map<(d0, d1) -> (d0, d1)>
#members = affine_set<(i)[g] : (i - 4*g >= 0, -i + 4*g + 3 >= 0)>
#groups = affine_set<(g) : (g >= 0, -g + 1 >= 0)>
module {
  func.func @group_ring_sums(%x_ptr: index, %out_ptr: index) attributes {grid = [8]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %width = arith.constant 64 : index
    %tile = ktdp.get_compute_tile_id : index
    %x_off = arith.muli %tile, %width : index
    %x_at = arith.addi %x_ptr, %x_off : index
    %x = ktdp.construct_memory_view %x_at, sizes: [1, 64], strides: [64, 1] {
      coordinate_set = #row, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<1x64xf16>
    %xt = ktdp.construct_access_tile %x[%c0, %c0] {
      access_tile_set = #row, access_tile_order = #order
    } : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
    %mine = ktdp.load %xt : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #members, groups = #groups
        : tensor<1x64xf16> -> !ktdp.tile_future<tensor<1x64xf16>> {
    ^bb0(%gid: index):
      ktdp.yield_partial %mine : tensor<1x64xf16>
    }
    %zero = arith.constant dense<0.0> : tensor<1x64xf16>
    %sum = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #members, groups = #groups,
        identity(%zero : tensor<1x64xf16>)
        : !ktdp.tile_future<tensor<1x64xf16>> -> tensor<64xf16> {
    ^bb0(%l: tensor<1x64xf16>, %r: tensor<1x64xf16>):
      %s = arith.addf %l, %r : tensor<1x64xf16>
      ktdp.yield_reduced %s : tensor<1x64xf16>
    }
    %lane = arith.remui %tile, %c4 : index
    %first = arith.cmpi eq, %lane, %c0 : index
    scf.if %first {
      %group = arith.divui %tile, %c4 : index
      %out_off = arith.muli %group, %width : index
      %out_at = arith.addi %out_ptr, %out_off : index
      %out = ktdp.construct_memory_view %out_at, sizes: [1, 64], strides: [64, 1] {
        coordinate_set = #row, memory_space = #ktdp.spyre_memory_space<HBM>
      } : memref<1x64xf16>
      %ot = ktdp.construct_access_tile %out[%c0, %c0] {
        access_tile_set = #row, access_tile_order = #order
      } : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
      %row_sum = tensor.expand_shape %sum [[0, 1]] output_shape [1, 64] : tensor<64xf16> into tensor<1x64xf16>
      ktdp.store %row_sum, %ot : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
