// RUN: spyre-opt %s -p 'convert-ktir-to-dataflow{scalars="n=64"}' | filecheck %s

// A distributed view over two pointers (ktir_distributed.py): the loop the scalar
// fixes (two 32-column tiles) is unrolled; the first tile lies in %a0 (columns
// 0..47 of the view) and is one load; the second straddles, so it is a 16-column
// load from each partition, each stored where it lies in %b.
// CHECK-LABEL: func.func @two_pointers(%a0_ptr: tensor<32x48x1xf16, {{.*}}>, %a1_ptr: tensor<32x80x1xf16, {{.*}}>)
// CHECK: ^bb0(%{{.*}}: index, %[[A0:.*]]: !dataflow.ddr<32x48x1xf16, {{.*}}>, %[[A1:.*]]: !dataflow.ddr<32x80x1xf16, {{.*}}>, %[[B:.*]]: !dataflow.ddr<32x128x1xf16, {{.*}}>):
// CHECK: dataflow.load %[[A0]][{{.*}}] into %{{.*}} : {{.*}}, !dataflow.lx<32x32x1xf16>
// CHECK: dataflow.store %{{.*}} into %[[B]]
// CHECK: dataflow.load %[[A0]][{{.*}}] into %{{.*}} : {{.*}}, !dataflow.lx<32x16x1xf16>
// CHECK: dataflow.load %[[A1]][{{.*}}] into %{{.*}} : {{.*}}, !dataflow.lx<32x16x1xf16>
// CHECK: dataflow.store %{{.*}} into %[[B]]
// CHECK: dataflow.store %{{.*}} into %[[B]]
// CHECK-NEXT: dataflow.end
#A0_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 47 >= 0)>
#A1_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 - 48 >= 0, -d1 + 127 >= 0)>
#B_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @two_pointers(%a0_ptr: index, %a1_ptr: index, %b_ptr: index, %n: i32) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %ub = arith.index_cast %n : i32 to index
  %a0 = ktdp.construct_memory_view %a0_ptr, sizes: [32, 48], strides: [48, 1] {coordinate_set = #A0_set, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<32x48xf16>
  %a1 = ktdp.construct_memory_view %a1_ptr, sizes: [32, 80], strides: [80, 1] {coordinate_set = #A1_set, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<32x80xf16>
  %a = ktdp.construct_distributed_memory_view (%a0, %a1 : memref<32x48xf16>, memref<32x80xf16>) : memref<32x128xf16>
  %b = ktdp.construct_memory_view %b_ptr, sizes: [32, 128], strides: [128, 1] {coordinate_set = #B_set, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<32x128xf16>
  scf.for %off = %c0 to %ub step %c32 {
    %at = ktdp.construct_access_tile %a[%c0, %off] {access_tile_set = #tile, access_tile_order = #id} : memref<32x128xf16> -> !ktdp.access_tile<32x32xindex>
    %bt = ktdp.construct_access_tile %b[%c0, %off] {access_tile_set = #tile, access_tile_order = #id} : memref<32x128xf16> -> !ktdp.access_tile<32x32xindex>
    %x = ktdp.load %at : !ktdp.access_tile<32x32xindex> -> tensor<32x32xf16>
    ktdp.store %x, %bt : tensor<32x32xf16>, !ktdp.access_tile<32x32xindex>
  }
  return
}
