// A vector add over a grid of 8 tiles, 256 elements each (our own kernel, written
// from the KTIR spec in the style of Triton-Spyre's output).
module {
  func.func @add_kernel(%x_ptr: index, %y_ptr: index, %out_ptr: index) attributes {grid = [8]} {
    %c256 = arith.constant 256 : index
    %tile = ktdp.get_compute_tile_id : index
    %start = arith.muli %tile, %c256 : index
    %x_view = ktdp.construct_memory_view %x_ptr, sizes: [2048], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 2047 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<2048xf16>
    %y_view = ktdp.construct_memory_view %y_ptr, sizes: [2048], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 2047 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<2048xf16>
    %out_view = ktdp.construct_memory_view %out_ptr, sizes: [2048], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 2047 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<2048xf16>
    %x_acc = ktdp.construct_access_tile %x_view[%start] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>
    } : memref<2048xf16> -> !ktdp.access_tile<256xindex>
    %y_acc = ktdp.construct_access_tile %y_view[%start] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>
    } : memref<2048xf16> -> !ktdp.access_tile<256xindex>
    %x = ktdp.load %x_acc : !ktdp.access_tile<256xindex> -> tensor<256xf16>
    %y = ktdp.load %y_acc : !ktdp.access_tile<256xindex> -> tensor<256xf16>
    %sum = arith.addf %x, %y : tensor<256xf16>
    %out_acc = ktdp.construct_access_tile %out_view[%start] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>
    } : memref<2048xf16> -> !ktdp.access_tile<256xindex>
    ktdp.store %sum, %out_acc : tensor<256xf16>, !ktdp.access_tile<256xindex>
    return
  }
}
