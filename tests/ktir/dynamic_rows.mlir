// A view sized by scalar arguments: x and y are [%n x 64] f16 (n from an i32 scalar,
// the row stride from an index one), the coordinate set bounded by a symbol; each of
// 2 tiles scales its 8 rows by 3. Compiled for the scalars given (n = 16, width = 64).
#rows = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>
module {
  func.func @dynamic_rows(%x_ptr: index, %y_ptr: index, %n: i32, %width: index)
      attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %three = arith.constant 3.0 : f16
    %t = ktdp.get_compute_tile_id : index
    %row0 = arith.muli %t, %c8 : index
    %rows = arith.index_cast %n : i32 to index
    %x_view = ktdp.construct_memory_view %x_ptr, sizes: [%rows, 64], strides: [%width, %c1] {
      coordinate_set = #rows, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<?x64xf16>
    %y_view = ktdp.construct_memory_view %y_ptr, sizes: [%rows, 64], strides: [%width, %c1] {
      coordinate_set = #rows, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<?x64xf16>
    %x_acc = ktdp.construct_access_tile %x_view[%row0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<?x64xf16> -> !ktdp.access_tile<8x64xindex>
    %x = ktdp.load %x_acc : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
    %s = tensor.splat %three : tensor<8x64xf16>
    %y = arith.mulf %x, %s : tensor<8x64xf16>
    %y_acc = ktdp.construct_access_tile %y_view[%row0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<?x64xf16> -> !ktdp.access_tile<8x64xindex>
    ktdp.store %y, %y_acc : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
    return
  }
}
