// A view at a pointer plus an offset the tile id alone does not give, or not a
// multiple of the view's leading stride, is a located error naming the construct.

// RUN: spyre-opt %s -p convert-ktir-to-dataflow --split-input-file --verify-diagnostics
// RUN: spyre-opt %s -p convert-ktir-to-dataflow --split-input-file --verify-diagnostics 2>&1 | %no-traceback

func.func @k(%x: index, %n: index) attributes {grid = [2]} {
  %tile = ktdp.get_compute_tile_id : index
  %off = arith.muli %tile, %n : index
  %at = arith.addi %x, %off : index
  // expected-error @+1 {{a view at %x plus a per-tile offset: the offset is not a function of the tile id and constants}}
  %v = ktdp.construct_memory_view %at, sizes: [1, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<1x64xf16>
  return
}

// -----

func.func @k(%x: index) attributes {grid = [2]} {
  %c32 = arith.constant 32 : index
  %tile = ktdp.get_compute_tile_id : index
  %off = arith.muli %tile, %c32 : index
  %at = arith.addi %x, %off : index
  // expected-error @+1 {{a view at %x plus a per-tile offset: offsets [0, 32] are not non-negative multiples of the leading stride 64}}
  %v = ktdp.construct_memory_view %at, sizes: [1, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<1x64xf16>
  return
}
