// RUN: spyre-opt %s -p convert-ktir-to-dataflow | filecheck %s

// A paged write (ktir_paged.py): Y[I[b, t floordiv 4], h, t mod 4, d] = X[b, t, h, d]
// over 2 sequences of 2 pages of 4 tokens. The load of X is not materialised: per
// sequence and page, the page's part of X is loaded transposed into the page's order
// (heads before tokens: the DMA's perm) and scattered to the page the table names.
// CHECK-LABEL: func.func @w
// CHECK: ^bb0(%{{.*}}: index, %[[X:.*]]: !dataflow.ddr<2x8x2x64xf16, {{.*}}>, %[[I:.*]]: !dataflow.ddr<2x2x1xi32, {{.*}}>, %[[Y:.*]]: !dataflow.ddr<6x2x4x64xf16, {{.*}}>):
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[PAGE:.*]] = arith.muli %[[P]], %{{.*}} : index
// CHECK: dataflow.load %[[I]][%[[B]], %[[PAGE]], %{{.*}}] into
// CHECK: %[[ROW:.*]] = arith.muli %[[PAGE]], %{{.*}} : index
// CHECK: %[[AT:.*]] = arith.addi %{{.*}}, %[[ROW]] : index
// CHECK: dataflow.load %[[X]][%{{.*}}, %[[AT]], %{{.*}}, %{{.*}}] into %[[PART:.*]] {perm = array<i64: 0, 2, 1, 3>} : {{.*}}, !dataflow.lx<1x2x4x64xf16>
// CHECK: dataflow.compute "spyre.reshape" on "{{.*}}"(%[[PART]]) -> (%[[ROWS:.*]]) : {{.*}} -> !dataflow.lx<1x1x2x4x64xf16>
// CHECK: dataflow.scatter %[[ROWS]] into %[[Y]][%{{.*}}] : !dataflow.lx<1x1x2x4x64xf16>, !dataflow.lx<1x1xi32>, !dataflow.ddr<6x2x4x64xf16, {{.*}}>
func.func @w(%xp: index, %ip: index, %yp: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %x = ktdp.construct_memory_view %xp, sizes: [2, 8, 2, 64], strides: [1024, 128, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x8x2x64xf16>
  %i = ktdp.construct_memory_view %ip, sizes: [2, 2], strides: [2, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x2xi32>
  %y = ktdp.construct_memory_view %yp, sizes: [6, 2, 4, 64], strides: [512, 256, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 5 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 3 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<6x2x4x64xf16>
  %src = ktdp.construct_access_tile %x[%c0, %c0, %c0, %c0] {access_tile_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>} : memref<2x8x2x64xf16> -> !ktdp.access_tile<2x2x8x64xindex>
  %dst = ktdp.construct_indirect_access_tile intermediate_variables(%b, %h, %t, %d) %y[ind(%i[%b, %t floordiv 4]), (%h), (%t mod 4), (%d)] {variables_space_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 7 >= 0, d3 >= 0, -d3 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>} : memref<6x2x4x64xf16>, memref<2x2xi32> -> !ktdp.access_tile<2x2x8x64xindex>
  %v = ktdp.load %src : !ktdp.access_tile<2x2x8x64xindex> -> tensor<2x2x8x64xf16>
  ktdp.store %v, %dst : tensor<2x2x8x64xf16>, !ktdp.access_tile<2x2x8x64xindex>
  return
}
