// A clamp from below at -1.0, the bound written as the bits of an i32 constant read as
// f32 (`arith.bitcast`, as kernels write -inf): 4 tiles of 128 elements.
module {
  func.func @clamp_bits(%x_ptr: index, %y_ptr: index) attributes {grid = [4]} {
    %c128 = arith.constant 128 : index
    %t = ktdp.get_compute_tile_id : index
    %start = arith.muli %t, %c128 : index
    %bits = arith.constant 0xBF800000 : i32
    %floor = arith.bitcast %bits : i32 to f32
    %x_view = ktdp.construct_memory_view %x_ptr, sizes: [512], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 511 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<512xf16>
    %y_view = ktdp.construct_memory_view %y_ptr, sizes: [512], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 511 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<512xf16>
    %x_acc = ktdp.construct_access_tile %x_view[%start] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 127 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>
    } : memref<512xf16> -> !ktdp.access_tile<128xindex>
    %x = ktdp.load %x_acc : !ktdp.access_tile<128xindex> -> tensor<128xf16>
    %x32 = arith.extf %x : tensor<128xf16> to tensor<128xf32>
    %lo = tensor.splat %floor : tensor<128xf32>
    %y32 = arith.maximumf %x32, %lo : tensor<128xf32>
    %y = arith.truncf %y32 : tensor<128xf32> to tensor<128xf16>
    %y_acc = ktdp.construct_access_tile %y_view[%start] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 127 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>
    } : memref<512xf16> -> !ktdp.access_tile<128xindex>
    ktdp.store %y, %y_acc : tensor<128xf16>, !ktdp.access_tile<128xindex>
    return
  }
}
