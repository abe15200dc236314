// A store to part of an output view (our own kernel, written from the KTIR spec): each of
// 4 tiles doubles row 2*t of x into row 2*t of out; the odd rows of out are not stored,
// so they keep what the memory held before the kernel ran.
module {
  func.func @double_even_rows(%x_ptr: index, %out_ptr: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %tile = ktdp.get_compute_tile_id : index
    %row = arith.muli %tile, %c2 : index
    %x_view = ktdp.construct_memory_view %x_ptr, sizes: [8, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<8x64xf16>
    %out_view = ktdp.construct_memory_view %out_ptr, sizes: [8, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<8x64xf16>
    %x_acc = ktdp.construct_access_tile %x_view[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<8x64xf16> -> !ktdp.access_tile<1x64xindex>
    %x = ktdp.load %x_acc : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    %doubled = arith.addf %x, %x : tensor<1x64xf16>
    %out_acc = ktdp.construct_access_tile %out_view[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<8x64xf16> -> !ktdp.access_tile<1x64xindex>
    ktdp.store %doubled, %out_acc : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    return
  }
}
