// Column sums over 8 tiles as cross_tile_sum.mlir, but the reduction's result drops the
// partials' unit dim (1x64 partials reduced to a 64 result, as ktir-cpu's
// examples/ktir/ring_reduce.mlir writes it): accepted with a warning naming the spec's
// rule, the result being the partial reshaped; it is expanded again to be stored.
module {
  func.func @column_sums_unit_dims(%x_ptr: index, %out_ptr: index) attributes {grid = [8]} {
    %tile = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    %row = arith.muli %tile, %c32 : index
    %x = ktdp.construct_memory_view %x_ptr, sizes: [256, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<256x64xf16>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [8, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<8x64xf16>
    %t = ktdp.construct_access_tile %x[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<256x64xf16> -> !ktdp.access_tile<32x64xindex>
    %slab = ktdp.load %t : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
    %zero = arith.constant 0.0 : f16
    %init = tensor.splat %zero : tensor<64xf16>
    %local = linalg.reduce { arith.addf } ins(%slab : tensor<32x64xf16>) outs(%init : tensor<64xf16>) dimensions = [0]
    %partial = tensor.expand_shape %local [[0, 1]] output_shape [1, 64] : tensor<64xf16> into tensor<1x64xf16>
    %identity = arith.constant dense<0.0> : tensor<1x64xf16>
    %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 7 >= 0)>
        -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
    ^bb0(%gid: index):
      ktdp.yield_partial %partial : tensor<1x64xf16>
    }
    %total = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 7 >= 0)>,
        identity(%identity : tensor<1x64xf16>)
        : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<64xf16> {
    ^bb0(%lhs: tensor<1x64xf16>, %rhs: tensor<1x64xf16>):
      %s = arith.addf %lhs, %rhs : tensor<1x64xf16>
      ktdp.yield_reduced %s : tensor<1x64xf16>
    }
    %o = ktdp.construct_access_tile %out[%tile, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<8x64xf16> -> !ktdp.access_tile<1x64xindex>
    %row_total = tensor.expand_shape %total [[0, 1]] output_shape [1, 64] : tensor<64xf16> into tensor<1x64xf16>
    ktdp.store %row_total, %o : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    return
  }
}
