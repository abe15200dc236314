// Views at absolute addresses (docs/ktir.md, "Views at absolute addresses"): our own
// kernel, in the style of the specification's examples, which build memory views from
// integer constants instead of pointer arguments. Its address space has two buffers:
// the views at 0 and 2048 overlap (rows 32..63 of the first are rows 0..31 of the
// second), so they alias one 96x64 buffer %mem0; the output view at 8192 is %mem8192.
// out[r] = buf[r] + buf[r + 32], over 4 tiles of 16 rows. The output view's sizes are
// SSA constants, folded to static ones.
#rows16 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @shifted_sum() attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %low_at = arith.constant 0 : index
    %high_at = arith.constant 2048 : index
    %out_at = arith.constant 8192 : index
    %t = ktdp.get_compute_tile_id : index
    %row = arith.muli %t, %c16 : index
    %low = ktdp.construct_memory_view %low_at, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<64x64xf16>
    %high = ktdp.construct_memory_view %high_at, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<64x64xf16>
    %out = ktdp.construct_memory_view %out_at, sizes: [%c64, %c64], strides: [%c64, 1] {
      coordinate_set = #all, memory_space = #ktdp.memory_space<global>
    } : memref<64x64xf16>
    %low_tile = ktdp.construct_access_tile %low[%row, %c0] {
      access_tile_set = #rows16, access_tile_order = #id
    } : memref<64x64xf16> -> !ktdp.access_tile<16x64xindex>
    %high_tile = ktdp.construct_access_tile %high[%row, %c0] {
      access_tile_set = #rows16, access_tile_order = #id
    } : memref<64x64xf16> -> !ktdp.access_tile<16x64xindex>
    %a = ktdp.load %low_tile : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %b = ktdp.load %high_tile : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %sum = arith.addf %a, %b : tensor<16x64xf16>
    %out_tile = ktdp.construct_access_tile %out[%row, %c0] {
      access_tile_set = #rows16, access_tile_order = #id
    } : memref<64x64xf16> -> !ktdp.access_tile<16x64xindex>
    ktdp.store %sum, %out_tile : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
    return
  }
}
