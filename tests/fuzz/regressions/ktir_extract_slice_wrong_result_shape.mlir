// tensor.extract_slice of a tile: one spyre.slice compute in LX (convert-ktir-to-dataflow),
// a rank-reducing result reshaped (SSA offsets: ktir_slice_invalid.mlir).

// RUN: spyre-opt %s -p convert-ktir-to-dataflow | filecheck %s

// CHECK-LABEL: dataflow.kernel @k
// CHECK: dataflow.compute "spyre.slice" on "ls"(%[[TILE:.*]]) -> (%[[PART:.*]]) {attrs = {starts = array<i64: 1, 0>, stops = array<i64: 2, 63>, steps = array<i64: 1, 2>}} : (!dataflow.lx<2x64xf16>) -> !dataflow.lx<1x32xf16>
// CHECK-NEXT: dataflow.compute "spyre.reshape" on "ls"(%[[PART]]) -> ({{.*}}) : (!dataflow.lx<1x32xf16>) -> !dataflow.lx<1xf16>
func.func @k(%x: index, %y: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %v = ktdp.construct_memory_view %x, sizes: [2, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x64xf16>
  %t = ktdp.construct_access_tile %v[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<2x64xf16> -> !ktdp.access_tile<2x64xindex>
  %a = ktdp.load %t : !ktdp.access_tile<2x64xindex> -> tensor<2x64xf16>
  %s = tensor.extract_slice %a[1, 0] [1, 32] [1, 2] : tensor<2x64xf16> to tensor<1xf16>
  %w = ktdp.construct_memory_view %y, sizes: [32], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<1xf16>
  %u = ktdp.construct_access_tile %w[%c0] {access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>, access_tile_order = affine_map<(d0) -> (d0)>} : memref<1xf16> -> !ktdp.access_tile<1xindex>
  ktdp.store %s, %u : tensor<1xf16>, !ktdp.access_tile<1xindex>
  return
}

