// A tensor.extract_slice with SSA (dynamic) offsets is a located error naming them.

// RUN: spyre-opt %s -p convert-ktir-to-dataflow --verify-diagnostics
// RUN: spyre-opt %s -p convert-ktir-to-dataflow --verify-diagnostics 2>&1 | %no-traceback

func.func @k(%x: index, %y: index) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %id = ktdp.get_compute_tile_id : index
  %v = ktdp.construct_memory_view %x, sizes: [2, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x64xf16>
  %t = ktdp.construct_access_tile %v[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<2x64xf16> -> !ktdp.access_tile<2x64xindex>
  %a = ktdp.load %t : !ktdp.access_tile<2x64xindex> -> tensor<2x64xf16>
  // expected-error @+1 {{'tensor.extract_slice' with dynamic offsets is not supported}}
  %s = tensor.extract_slice %a[%id, 0] [1, 64] [1, 1] : tensor<2x64xf16> to tensor<1x64xf16>
  %w = ktdp.construct_memory_view %y, sizes: [1, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<1x64xf16>
  %u = ktdp.construct_access_tile %w[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
  ktdp.store %s, %u : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
  return
}
