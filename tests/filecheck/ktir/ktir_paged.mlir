// RUN: spyre-opt %s -p convert-ktir-to-dataflow | filecheck %s

// A paged copy (ktir_paged.py): Y[b, t, h, d] = X[I[b, t floordiv 4], h, t mod 4, d]
// over 2 sequences of 2 pages of 4 tokens. Not materialised: a loop over the
// sequences and one over their page steps (both pages in one step: at most 128 KiB of
// pages a step), each loading the step's page-table entries, gathering those pages
// (2 heads x 4 tokens x 64 each), transposing heads and tokens into Y's order and
// storing them at their sequence and first token.
// CHECK-LABEL: func.func @k
// CHECK: ^bb0(%{{.*}}: index, %[[X:.*]]: !dataflow.ddr<6x2x4x64xf16, {{.*}}>, %[[I:.*]]: !dataflow.ddr<2x2x1xi32, {{.*}}>, %[[Y:.*]]: !dataflow.ddr<2x8x2x64xf16, {{.*}}>):
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step
// CHECK: dataflow.load %[[I]][%[[B]], %{{.*}}, %{{.*}}] into %{{.*}} : {{.*}}, !dataflow.lx<1x2x1xi32>
// CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK: %[[AT:.*]] = arith.addi %{{.*}}, %[[ROW]] : index
// CHECK: dataflow.gather %[[X]][%{{.*}}] into %[[PAGE:.*]] : {{.*}}, !dataflow.lx<1x2xi32>, !dataflow.lx<1x2x2x4x64xf16>
// CHECK: dataflow.compute "spyre.transpose" on "{{.*}}"(%[[PAGE]]) -> (%[[T:.*]]) {attrs = {perm = array<i64: 0, 1, 3, 2, 4>}} : (!dataflow.lx<1x2x2x4x64xf16>) -> !dataflow.lx<1x2x4x2x64xf16>
// CHECK: dataflow.compute "spyre.reshape" on "{{.*}}"(%[[T]]) -> (%[[C:.*]]) : {{.*}} -> !dataflow.lx<1x8x2x64xf16>
// CHECK: dataflow.store %[[C]] into %[[Y]][%{{.*}}, %[[AT]], %{{.*}}, %{{.*}}]
func.func @k(%xp: index, %ip: index, %yp: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %x = ktdp.construct_memory_view %xp, sizes: [6, 2, 4, 64], strides: [512, 256, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 5 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 3 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<6x2x4x64xf16>
  %i = ktdp.construct_memory_view %ip, sizes: [2, 2], strides: [2, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x2xi32>
  %y = ktdp.construct_memory_view %yp, sizes: [2, 8, 2, 64], strides: [1024, 128, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x8x2x64xf16>
  %src = ktdp.construct_indirect_access_tile intermediate_variables(%b, %h, %t, %d) %x[ind(%i[%b, %t floordiv 4]), (%h), (%t mod 4), (%d)] {variables_space_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 7 >= 0, d3 >= 0, -d3 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>} : memref<6x2x4x64xf16>, memref<2x2xi32> -> !ktdp.access_tile<2x2x8x64xindex>
  %v = ktdp.load %src : !ktdp.access_tile<2x2x8x64xindex> -> tensor<2x2x8x64xf16>
  %dst = ktdp.construct_access_tile %y[%c0, %c0, %c0, %c0] {access_tile_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>} : memref<2x8x2x64xf16> -> !ktdp.access_tile<2x2x8x64xindex>
  ktdp.store %v, %dst : tensor<2x2x8x64xf16>, !ktdp.access_tile<2x2x8x64xindex>
  return
}

