// RUN: spyre-opt %s -p convert-ktir-to-dataflow | filecheck %s


// Views of two element types that overlap share memory: one buffer per type
// (%mem0_f16 holds the f16 views at 0 and 4096, %mem1024_i32 the i32 view at 1024,
// bytes 4096..20479 of the same memory), which the lowering holds apart (the kernel's
// meaning when no access races: spyre-run checks that, docs/ktir.md). The f16 load
// and store are of one buffer, as the i32 ones are.
// CHECK-LABEL: func.func @copy_over(%mem0_f16: tensor<128x64xf16, {{.*}}>, %mem1024_i32: tensor<64x64xi32, {{.*}}>) -> (tensor<128x64xf16, {{.*}}>, tensor<64x64xi32, {{.*}}>)
// CHECK: dataflow.kernel @copy_over cores(1) (%mem0_f16, %mem1024_i32)
// CHECK: ^bb0(%{{.*}}: index, %[[H:.*]]: !dataflow.ddr<128x64xf16, {{.*}}>, %[[W:.*]]: !dataflow.ddr<64x64xi32, {{.*}}>, %[[HO:.*]]: !dataflow.ddr<128x64xf16, {{.*}}>, %[[WO:.*]]: !dataflow.ddr<64x64xi32, {{.*}}>):
// CHECK-DAG: dataflow.load %[[H]]
// CHECK-DAG: dataflow.load %[[W]]
// CHECK-DAG: dataflow.store %{{.*}} into %[[HO]]
// CHECK-DAG: dataflow.store %{{.*}} into %[[WO]]
// ALIAS: func.func @shifted_sum
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @copy_over() attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %x_at = arith.constant 0 : index
  %w_at = arith.constant 1024 : index
  %y_at = arith.constant 4096 : index
  %x = ktdp.construct_memory_view %x_at, sizes: [64, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  %w = ktdp.construct_memory_view %w_at, sizes: [64, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xi32>
  %y = ktdp.construct_memory_view %y_at, sizes: [64, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  %xt = ktdp.construct_access_tile %x[%c0, %c0] {access_tile_set = #all, access_tile_order = #id} : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
  %wt = ktdp.construct_access_tile %w[%c0, %c0] {access_tile_set = #all, access_tile_order = #id} : memref<64x64xi32> -> !ktdp.access_tile<64x64xindex>
  %yt = ktdp.construct_access_tile %y[%c0, %c0] {access_tile_set = #all, access_tile_order = #id} : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
  %a = ktdp.load %xt : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
  %b = ktdp.load %wt : !ktdp.access_tile<64x64xindex> -> tensor<64x64xi32>
  ktdp.store %a, %yt : tensor<64x64xf16>, !ktdp.access_tile<64x64xindex>
  ktdp.store %b, %wt : tensor<64x64xi32>, !ktdp.access_tile<64x64xindex>
  return
}
