// Rank-changing whole slices: each of 2 tiles loads its [1, 8, 64] block of a
// [2, 8, 64] tensor, drops the unit dim with tensor.extract_slice, doubles it and puts
// it back with tensor.insert_slice into a [1, 8, 64] tensor to store.
module {
  func.func @squeeze_slices(%x_ptr: index, %y_ptr: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %t = ktdp.get_compute_tile_id : index
    %x_view = ktdp.construct_memory_view %x_ptr, sizes: [2, 8, 64], strides: [512, 64, 1]
        {memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x8x64xf16>
    %y_view = ktdp.construct_memory_view %y_ptr, sizes: [2, 8, 64], strides: [512, 64, 1]
        {memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x8x64xf16>
    %x_acc = ktdp.construct_access_tile %x_view[%t, %c0, %c0] {
      access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
    } : memref<2x8x64xf16> -> !ktdp.access_tile<1x8x64xindex>
    %x3 = ktdp.load %x_acc : !ktdp.access_tile<1x8x64xindex> -> tensor<1x8x64xf16>
    %x = tensor.extract_slice %x3[0, 0, 0] [1, 8, 64] [1, 1, 1] : tensor<1x8x64xf16> to tensor<8x64xf16>
    %y = arith.addf %x, %x : tensor<8x64xf16>
    %e = tensor.empty() : tensor<1x8x64xf16>
    %y3 = tensor.insert_slice %y into %e[0, 0, 0] [1, 8, 64] [1, 1, 1] : tensor<8x64xf16> into tensor<1x8x64xf16>
    %y_acc = ktdp.construct_access_tile %y_view[%t, %c0, %c0] {
      access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
    } : memref<2x8x64xf16> -> !ktdp.access_tile<1x8x64xindex>
    ktdp.store %y3, %y_acc : tensor<1x8x64xf16>, !ktdp.access_tile<1x8x64xindex>
    return
  }
}
