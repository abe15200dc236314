

// linalg.index in a generic's body: an iota tile of the body's shape; the tile id it
// is compared with becomes a one-element tile (an iota started at it).
// CHECK-LABEL: func.func @positions
// CHECK: dataflow.compute "spyre.iota" on "pe"() -> (%[[COL:.*]]) {attrs = {dim = 1 : i64, start = 0 : i64, step = 1 : i64}} : () -> !dataflow.lx<8x64xi32>
// CHECK: dataflow.compute "spyre.iota" on "pe"() -> (%[[AT:.*]]) offsets[%{{.*}}] {attrs = {dim = 0 : i64, start = 0 : i64, step = 1 : i64}} : () -> !dataflow.lx<1xi32>
// CHECK: dataflow.compute "spyre.le" on "{{.*}}"(%[[COL]], %[[AT]]) -> (%[[KEEP:.*]]) : (!dataflow.lx<8x64xi32>, !dataflow.lx<1xi32>) -> !dataflow.lx<8x64xi1>
// CHECK: dataflow.compute "spyre.select" on "{{.*}}"(%[[KEEP]], %{{.*}}, %{{.*}})
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
  %row = arith.muli %t, %c0 : index
  %ya = ktdp.construct_access_tile %yv[%row, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<16x64xf16> -> !ktdp.access_tile<8x64xindex>
  ktdp.store %y, %ya : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
  return
}

