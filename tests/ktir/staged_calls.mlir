// Two grid-wide stages sequenced by func.call, handing a tile over in each core's LX:
// @stage_exp loads its 8x64 rows and stores exp(x) to LX at byte 65536; @stage_inc
// reads it back and stores exp(x) + 1. 2 tiles; tile t's rows start at 8t.
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @stage_exp(%x_ptr: index, %lx: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %t = ktdp.get_compute_tile_id : index
    %row0 = arith.muli %t, %c8 : index
    %xv = ktdp.construct_memory_view %x_ptr, sizes: [16, 64], strides: [64, 1]
        {memory_space = #ktdp.spyre_memory_space<HBM>} : memref<16x64xf16>
    %xa = ktdp.construct_access_tile %xv[%row0, %c0] {access_tile_set = #rows, access_tile_order = #id}
        : memref<16x64xf16> -> !ktdp.access_tile<8x64xindex>
    %x = ktdp.load %xa : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
    %e = math.exp %x : tensor<8x64xf16>
    %lv = ktdp.construct_memory_view %lx, sizes: [8, 64], strides: [64, 1]
        {memory_space = #ktdp.spyre_memory_space<LX>} : memref<8x64xf16>
    %la = ktdp.construct_access_tile %lv[%c0, %c0] {access_tile_set = #rows, access_tile_order = #id}
        : memref<8x64xf16> -> !ktdp.access_tile<8x64xindex>
    ktdp.store %e, %la : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
    return
  }
  func.func @stage_inc(%lx: index, %y_ptr: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %one = arith.constant 1.0 : f16
    %t = ktdp.get_compute_tile_id : index
    %row0 = arith.muli %t, %c8 : index
    %lv = ktdp.construct_memory_view %lx, sizes: [8, 64], strides: [64, 1]
        {memory_space = #ktdp.spyre_memory_space<LX>} : memref<8x64xf16>
    %la = ktdp.construct_access_tile %lv[%c0, %c0] {access_tile_set = #rows, access_tile_order = #id}
        : memref<8x64xf16> -> !ktdp.access_tile<8x64xindex>
    %e = ktdp.load %la : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
    %s = tensor.splat %one : tensor<8x64xf16>
    %y = arith.addf %e, %s : tensor<8x64xf16>
    %yv = ktdp.construct_memory_view %y_ptr, sizes: [16, 64], strides: [64, 1]
        {memory_space = #ktdp.spyre_memory_space<HBM>} : memref<16x64xf16>
    %ya = ktdp.construct_access_tile %yv[%row0, %c0] {access_tile_set = #rows, access_tile_order = #id}
        : memref<16x64xf16> -> !ktdp.access_tile<8x64xindex>
    ktdp.store %y, %ya : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
    return
  }
  func.func @staged(%x_ptr: index, %y_ptr: index) attributes {grid = [2]} {
    %lx = arith.constant 65536 : index
    func.call @stage_exp(%x_ptr, %lx) : (index, index) -> ()
    func.call @stage_inc(%lx, %y_ptr) : (index, index) -> ()
    return
  }
}
