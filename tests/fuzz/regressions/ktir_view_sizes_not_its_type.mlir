// RUN: spyre-opt %s -p convert-ktir-to-dataflow | filecheck %s
// RUN: spyre-opt %s -p '{grid="2"}' | filecheck %s --check-prefix=UNITS

// Views at constant addresses are buffers of the kernel's address space: the views at
// 0 and 2048 overlap and alias one buffer %mem0 (rows 0..95), the view at 8192 is
// %mem8192 (stored: the result). A kernel without a grid attribute takes the
// pipeline's `grid` option.
// CHECK-LABEL: func.func @shifted_sum(%mem0: tensor<96x64xf16, {{.*}}>) -> tensor<64x64xf16, {{.*}}>
// CHECK: dataflow.kernel @shifted_sum cores(1) (%mem0)
// CHECK: ^bb0(%{{.*}}: index, %[[BUF:.*]]: !dataflow.ddr<96x64xf16, {{.*}}>, %[[OUT:.*]]: !dataflow.ddr<64x64xf16, {{.*}}>):
// CHECK: %[[LOW:.*]] = arith.muli
// CHECK: %[[HIGH:.*]] = arith.addi %[[LOW]], %{{.*}} : index
// CHECK: dataflow.load %[[BUF]][%[[LOW]], %{{.*}}] into
// CHECK: dataflow.load %[[BUF]][%[[HIGH]], %{{.*}}] into
// CHECK: dataflow.store %{{.*}} into %[[OUT]][%[[LOW]], %{{.*}}]
// UNITS: core.program @shifted_sum cores(2)
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @shifted_sum() {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %low_at = arith.constant 0 : index
  %high_at = arith.constant 2048 : index
  %out_at = arith.constant 8192 : index
  %t = ktdp.get_compute_tile_id : index
  %row = arith.muli %t, %c32 : index
  %low = ktdp.construct_memory_view %low_at, sizes: [64, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  %high = ktdp.construct_memory_view %high_at, sizes: [64, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  %out = ktdp.construct_memory_view %out_at, sizes: [1, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  %lt = ktdp.construct_access_tile %low[%row, %c0] {access_tile_set = #rows, access_tile_order = #id} : memref<64x64xf16> -> !ktdp.access_tile<32x64xindex>
  %ht = ktdp.construct_access_tile %high[%row, %c0] {access_tile_set = #rows, access_tile_order = #id} : memref<64x64xf16> -> !ktdp.access_tile<32x64xindex>
  %a = ktdp.load %lt : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
  %b = ktdp.load %ht : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
  %s = arith.addf %a, %b : tensor<32x64xf16>
  %ot = ktdp.construct_access_tile %out[%row, %c0] {access_tile_set = #rows, access_tile_order = #id} : memref<64x64xf16> -> !ktdp.access_tile<32x64xindex>
  ktdp.store %s, %ot : tensor<32x64xf16>, !ktdp.access_tile<32x64xindex>
  return
}
