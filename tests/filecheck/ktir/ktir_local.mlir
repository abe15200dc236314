// RUN: spyre-opt %s -p 'convert-ktir-to-dataflow{grid="2"}' | filecheck %s

// A view of a tile's own memory (`ct_local`) at an absolute address that the kernel
// only reads is each tile's input slab: a pointer argument %local0 holding the two
// tiles' 8x64 slabs one after the other, tile t's rows at 8 * t (ktir_local.py).
// CHECK-LABEL: func.func @copy_own(%local0: tensor<16x64xf16, {{.*}}>) -> tensor<16x64xf16, {{.*}}>
// CHECK: dataflow.kernel @copy_own cores(2) (%local0)
// CHECK: ^bb0(%[[CORE:.*]]: index, %[[SLABS:.*]]: !dataflow.ddr<16x64xf16, {{.*}}>, %[[OUT:.*]]: !dataflow.ddr<16x64xf16, {{.*}}>):
// CHECK: dataflow.load %[[SLABS]][%[[ROW:.*]], %{{.*}}] into
// CHECK: dataflow.store %{{.*}} into %[[OUT]][%{{.*}}, %{{.*}}]
#slab = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @copy_own() {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %at = arith.constant 0 : index
  %out_at = arith.constant 100000 : index
  %t = ktdp.get_compute_tile_id : index
  %row = arith.muli %t, %c8 : index
  %own = ktdp.construct_memory_view %at, sizes: [8, 64], strides: [64, 1] {coordinate_set = #slab, memory_space = #ktdp.memory_space<ct_local>} : memref<8x64xf16>
  %out = ktdp.construct_memory_view %out_at, sizes: [16, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<16x64xf16>
  %own_tile = ktdp.construct_access_tile %own[%c0, %c0] {access_tile_set = #slab, access_tile_order = #id} : memref<8x64xf16> -> !ktdp.access_tile<8x64xindex>
  %out_tile = ktdp.construct_access_tile %out[%row, %c0] {access_tile_set = #slab, access_tile_order = #id} : memref<16x64xf16> -> !ktdp.access_tile<8x64xindex>
  %x = ktdp.load %own_tile : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
  ktdp.store %x, %out_tile : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
  return
}
