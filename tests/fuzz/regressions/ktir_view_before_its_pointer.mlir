func.func @k(%x_ptr: index, %out_ptr: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant -32 : index
  %o = arith.addi %out_ptr, %c64 : index
  %x_view = ktdp.construct_memory_view %x_ptr, sizes: [4, 32], strides: [32, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 31 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<4x32xf16>
  %out_view = ktdp.construct_memory_view %o, sizes: [4, 32], strides: [32, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 31 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<4x32xf16>
  %x_acc = ktdp.construct_access_tile %x_view[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 31 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<4x32xf16> -> !ktdp.access_tile<4x32xindex>
  %x = ktdp.load %x_acc : !ktdp.access_tile<4x32xindex> -> tensor<4x32xf16>
  %out_acc = ktdp.construct_access_tile %out_view[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 31 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<4x32xf16> -> !ktdp.access_tile<4x32xindex>
  ktdp.store %x, %out_acc : tensor<4x32xf16>, !ktdp.access_tile<4x32xindex>
  return
}
