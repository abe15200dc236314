// A tile loaded once per outer iteration and read in an inner loop: each of 2 tiles
// scales 4 groups of 8 rows, group h by the weight row h (loaded in the outer loop).
module {
  func.func @outer_weight_inner_rows(%x_ptr: index, %w_ptr: index, %y_ptr: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %t = ktdp.get_compute_tile_id : index
    %x_view = ktdp.construct_memory_view %x_ptr, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
    %w_view = ktdp.construct_memory_view %w_ptr, sizes: [8, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>} : memref<8x64xf16>
    %y_view = ktdp.construct_memory_view %y_ptr, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
    %base = arith.muli %t, %c4 : index
    scf.for %h = %c0 to %c4 step %c1 {
      %hb = arith.addi %base, %h : index
      %w_acc = ktdp.construct_access_tile %w_view[%hb, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x64xf16> -> !ktdp.access_tile<1x64xindex>
      %w = ktdp.load %w_acc : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
      scf.for %r = %c0 to %c8 step %c1 {
        %r8 = arith.muli %hb, %c8 : index
        %row = arith.addi %r8, %r : index
        %x_acc = ktdp.construct_access_tile %x_view[%row, %c0] {
          access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
          access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
        %x = ktdp.load %x_acc : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
        %y = arith.mulf %x, %w : tensor<1x64xf16>
        %y_acc = ktdp.construct_access_tile %y_view[%row, %c0] {
          access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
          access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
        ktdp.store %y, %y_acc : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
      }
    }
    return
  }
}
