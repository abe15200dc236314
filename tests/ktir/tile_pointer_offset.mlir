// Pointer plus a per-tile offset (our own kernel, written from the KTIR spec): each of 4
// tiles views its own 2x64 block of x at %x_ptr + %tile * 128 and of out at
// %out_ptr + 128 * %tile (operands either way round), and stores x + 1 there.
module {
  func.func @add_one_rows(%x_ptr: index, %out_ptr: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c128 = arith.constant 128 : index
    %one = arith.constant 1.0 : f16
    %tile = ktdp.get_compute_tile_id : index
    %offset = arith.muli %tile, %c128 : index
    %x_at = arith.addi %x_ptr, %offset : index
    %out_offset = arith.muli %c128, %tile : index
    %out_at = arith.addi %out_offset, %out_ptr : index
    %x_view = ktdp.construct_memory_view %x_at, sizes: [2, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<2x64xf16>
    %out_view = ktdp.construct_memory_view %out_at, sizes: [2, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<2x64xf16>
    %x_acc = ktdp.construct_access_tile %x_view[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<2x64xf16> -> !ktdp.access_tile<2x64xindex>
    %x = ktdp.load %x_acc : !ktdp.access_tile<2x64xindex> -> tensor<2x64xf16>
    %ones = tensor.splat %one : tensor<2x64xf16>
    %y = arith.addf %x, %ones : tensor<2x64xf16>
    %out_acc = ktdp.construct_access_tile %out_view[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<2x64xf16> -> !ktdp.access_tile<2x64xindex>
    ktdp.store %y, %out_acc : tensor<2x64xf16>, !ktdp.access_tile<2x64xindex>
    return
  }
}
