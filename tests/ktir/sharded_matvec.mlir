// y = x @ W for x 1x128 and W 128x64 (f16) on 2 tiles: W's two 64-row halves are
// partitions of one distributed view (the second at an element offset from %w_ptr),
// each tile multiplies its half, an inter-tile reduce sums the two partials (its
// combiner a linalg.add into a tensor.empty) and tile 0 alone stores the result.
#half = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#upper = affine_set<(d0, d1) : (d0 - 64 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#ident = affine_map<(d0, d1) -> (d0, d1)>
#pair = affine_set<(i)[g] : (i - 2*g >= 0, -i + 2*g + 1 >= 0)>
module {
  func.func @sharded_matvec(%x_ptr: index, %w_ptr: index, %y_ptr: index) attributes {grid = [2]} {
    %pid = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c4096 = arith.constant 4096 : index
    %k = arith.muli %pid, %c64 : index
    %x = ktdp.construct_memory_view %x_ptr, sizes: [1, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<1x128xf16>
    %w_hi_ptr = arith.addi %w_ptr, %c4096 : index
    %w_lo = ktdp.construct_memory_view %w_ptr, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #half, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<64x64xf16>
    %w_hi = ktdp.construct_memory_view %w_hi_ptr, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #upper, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<64x64xf16>
    %w = ktdp.construct_distributed_memory_view (%w_lo, %w_hi : memref<64x64xf16>, memref<64x64xf16>) : memref<128x64xf16>
    %y = ktdp.construct_memory_view %y_ptr, sizes: [1, 64], strides: [64, 1] {
      coordinate_set = #row, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<1x64xf16>
    %tx = ktdp.construct_access_tile %x[%c0, %k] {access_tile_set = #row, access_tile_order = #ident} : memref<1x128xf16> -> !ktdp.access_tile<1x64xindex>
    %tw = ktdp.construct_access_tile %w[%k, %c0] {access_tile_set = #half, access_tile_order = #ident} : memref<128x64xf16> -> !ktdp.access_tile<64x64xindex>
    %xs = ktdp.load %tx : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    %ws = ktdp.load %tw : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
    %empty = tensor.empty() : tensor<1x64xf16>
    %part = linalg.matmul ins(%xs, %ws : tensor<1x64xf16>, tensor<64x64xf16>) outs(%empty : tensor<1x64xf16>) -> tensor<1x64xf16>
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #pair
        : tensor<1x64xf16> -> !ktdp.tile_future<tensor<1x64xf16>, groups = affine_set<(g) : (g == 0)>> {
      ^bb0(%g: index):
        ktdp.yield_partial %part : tensor<1x64xf16>
    }
    %zero = arith.constant 0.0 : f16
    %id = linalg.fill ins(%zero : f16) outs(%empty : tensor<1x64xf16>) -> tensor<1x64xf16>
    %sum = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #pair, identity(%id : tensor<1x64xf16>)
        : !ktdp.tile_future<tensor<1x64xf16>, groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16> {
      ^bb0(%l: tensor<1x64xf16>, %r: tensor<1x64xf16>):
        %e = tensor.empty() : tensor<1x64xf16>
        %s = linalg.add ins(%l, %r : tensor<1x64xf16>, tensor<1x64xf16>) outs(%e : tensor<1x64xf16>) -> tensor<1x64xf16>
        ktdp.yield_reduced %s : tensor<1x64xf16>
    }
    %first = arith.cmpi eq, %pid, %c0 : index
    scf.if %first {
      %ty = ktdp.construct_access_tile %y[%c0, %c0] {access_tile_set = #row, access_tile_order = #ident} : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
      ktdp.store %sum, %ty : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
