// A kernel whose LX reuse raced (the race check's first find): the tile loaded first
// and gathered by the ring shares its bytes with the iota tile after it, which has no
// operands to wait for, so the PE could write it while LS still sent the part. A token
// from LS orders the iota after the ring (convert-dataflow-to-units, reuse_tokens).
func.func @positions(%x_ptr: index, %y_ptr: index) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %t = ktdp.get_compute_tile_id : index
  %zero = arith.constant 0.0 : f16
  %xv = ktdp.construct_memory_view %x_ptr, sizes: [8, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<8x64xf16>
  %yv = ktdp.construct_memory_view %y_ptr, sizes: [16, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<16x64xf16>
  %xa = ktdp.construct_access_tile %xv[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x64xf16> -> !ktdp.access_tile<8x64xindex>
  %x = ktdp.load %xa : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
  %e = tensor.empty() : tensor<8x64xf16>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x64xf16>) outs(%e : tensor<8x64xf16>) {
  ^bb0(%v : f16, %o : f16):
    %c = linalg.index 1 : index
    %keep = arith.cmpi ule, %c, %t : index
    %w = arith.select %keep, %v, %zero : f16
    linalg.yield %w : f16
  } -> tensor<8x64xf16>
  %c8 = arith.constant 8 : index
  %row = arith.muli %t, %c8 : index
  %ya = ktdp.construct_access_tile %yv[%row, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<16x64xf16> -> !ktdp.access_tile<8x64xindex>
  ktdp.store %y, %ya : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
  return
}

