

#A0_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 47 >= 0)>
#A1_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 - 64 >= 0, -d1 + 127 >= 0)>
#tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @k(%a0_ptr: index, %a1_ptr: index, %b_ptr: index) attributes {grid = [1]} {
  %c0 = arith.constant 0xFFFFFFFFFFFFFFFFFF : index
  %a0 = ktdp.construct_memory_view %a0_ptr, sizes: [32, 48], strides: [48, 1] {coordinate_set = #A0_set, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<32x48xf16>
  %a1 = ktdp.construct_memory_view %a1_ptr, sizes: [32, 64], strides: [64, 1] {coordinate_set = #A1_set, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<32x64xf16>
  %a = ktdp.construct_distributed_memory_view (%a0, %a1 : memref<32x48xf16>, memref<32x64xf16>) : memref<32x128xf16>
  %b = ktdp.construct_memory_view %b_ptr, sizes: [32, 128], strides: [128, 1] {coordinate_set = #tile, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<32x128xf16>
  // Columns 48..63 are in no partition.
  // expected-error @+1 {{coordinates [(0, 31), (0, 127)] that no partition holds}}
  %at = ktdp.construct_access_tile %a[%c0, %c0] {access_tile_set = #tile, access_tile_order = #id} : memref<32x128xf16> -> !ktdp.access_tile<32x128xindex>
  %bt = ktdp.construct_access_tile %b[%c0, %c0] {access_tile_set = #tile, access_tile_order = #id} : memref<32x128xf16> -> !ktdp.access_tile<32x128xindex>
  %x = ktdp.load %at : !ktdp.access_tile<32x128xindex> -> tensor<32x128xf16>
  ktdp.store %x, %bt : tensor<32x128xf16>, !ktdp.access_tile<32x128xindex>
  return
}
