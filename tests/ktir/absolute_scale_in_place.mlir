// Views at absolute addresses built inside a loop, and a buffer updated in place (our
// own kernel, after the specification's add-with-control-flow example): x *= 2 row by
// row, over 4 tiles of 8 rows of a 32x64 tensor at address 512. The view at 512 is
// loaded and stored, so its buffer %mem512 is an input and a result.
#row = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @scale_rows() attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %two = arith.constant 2.0 : f16
    %t = ktdp.get_compute_tile_id : index
    %first = arith.muli %t, %c8 : index
    scf.for %i = %c0 to %c8 step %c1 {
      %at = arith.constant 512 : index
      %x = ktdp.construct_memory_view %at, sizes: [32, 64], strides: [64, 1] {
        coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>
      } : memref<32x64xf16>
      %r = arith.addi %first, %i : index
      %tile = ktdp.construct_access_tile %x[%r, %c0] {
        access_tile_set = #row, access_tile_order = #id
      } : memref<32x64xf16> -> !ktdp.access_tile<1x64xindex>
      %v = ktdp.load %tile : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
      %s = tensor.splat %two : tensor<1x64xf16>
      %y = arith.mulf %v, %s : tensor<1x64xf16>
      ktdp.store %y, %tile : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
