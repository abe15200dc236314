// Column sums of a 4x128 f16 matrix on a 2x4 grid: tile (i, j) holds row j's i-th
// 64-wide half, and the tiles of one half - linear ids {i, i+2, i+4, i+6}, a strided
// group - sum their rows with an inter-tile reduce; the j = 0 tile stores the half.
#half = affine_set<(i)[g] : ((i - g) mod 2 == 0, i - g >= 0, -i + g + 6 >= 0)>
#row = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#ident = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @strided_sum(%x_ptr: index, %out_ptr: index) attributes {grid = [2, 4]} {
    %i, %j = ktdp.get_compute_tile_id : index, index
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %col = arith.muli %i, %c64 : index
    %x = ktdp.construct_memory_view %x_ptr, sizes: [4, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<4x128xf16>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [1, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<1x128xf16>
    %t = ktdp.construct_access_tile %x[%j, %col] {access_tile_set = #row, access_tile_order = #ident} : memref<4x128xf16> -> !ktdp.access_tile<1x64xindex>
    %v = ktdp.load %t : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #half
        -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g >= 0, -g + 1 >= 0)>> {
      ^bb0(%g: index):
        ktdp.yield_partial %v : tensor<1x64xf16>
    }
    %zero = arith.constant 0.0 : f16
    %id = tensor.splat %zero : tensor<1x64xf16>
    %sum = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #half, identity(%id : tensor<1x64xf16>)
        : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g >= 0, -g + 1 >= 0)>> -> tensor<1x64xf16> {
      ^bb0(%a: tensor<1x64xf16>, %b: tensor<1x64xf16>):
        %s = arith.addf %a, %b : tensor<1x64xf16>
        ktdp.yield_reduced %s : tensor<1x64xf16>
    }
    %first = arith.cmpi eq, %j, %c0 : index
    scf.if %first {
      %o = ktdp.construct_access_tile %out[%c0, %col] {access_tile_set = #row, access_tile_order = #ident} : memref<1x128xf16> -> !ktdp.access_tile<1x64xindex>
      ktdp.store %sum, %o : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
