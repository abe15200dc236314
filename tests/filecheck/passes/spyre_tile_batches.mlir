// RUN: spyre-opt %s -p spyre-fuse,spyre-partition-cores,spyre-tile | filecheck %s
// A batched matmul under a forced batch split moves a core's batches together: every
// tile is `batch_tile` batches deep (matmul_tiling.plan_tiling: the most batches of
// the core group whose tiles fit LX), so in torch-spyre's layout of a 3-D tensor
// ([m, k/64, b, 64], the batch just outside the stick) each load and store is runs of
// that many sticks, not one stick per run (spyre_ir/sim/lpddr.box_runs).

// 32 heads of (512x512 @ 512x128) as 1 x 16 x 2 x 1: each core takes 32 rows and 64
// columns of all 32 batches, in tiles of all 32 batches: one M tile, one N tile, and a
// K loop of 8 steps of [32, 32, 64] A tiles and [32, 64, 64] B tiles.
// CHECK-LABEL: func.func @heads
// CHECK:       dataflow.kernel @matmul_0 cores(32) {{.*}}split = [16, 2, 1], split_b = 1>
// CHECK-DAG:     %[[A:[0-9]+]] = dataflow.alloc_lx : !dataflow.lx<32x32x64xf16>
// CHECK-DAG:     %[[B:[0-9]+]] = dataflow.alloc_lx : !dataflow.lx<32x64x64xf16>
// CHECK-DAG:     %[[ACC:[0-9]+]] = dataflow.alloc_lx : !dataflow.lx<32x32x64xf32>
// CHECK-DAG:     %[[ONE:[0-9]+]] = arith.constant 1 : index
// CHECK-DAG:     %[[EIGHT:[0-9]+]] = arith.constant 8 : index
// CHECK:         scf.for %{{[0-9]+}} = %{{[0-9]+}} to %[[ONE]] step %[[ONE]] {
// CHECK:           scf.for %{{[0-9]+}} = %{{[0-9]+}} to %[[ONE]] step %[[ONE]] {
// CHECK:             scf.for %{{[0-9]+}} = %{{[0-9]+}} to %[[EIGHT]] step %[[ONE]] {
// CHECK:               dataflow.load %{{[0-9]+}}[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}] into %[[A]] {{.*}} !dataflow.lx<32x32x64xf16>
// CHECK-NEXT:          dataflow.load %{{[0-9]+}}[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}] into %[[B]] {{.*}} !dataflow.lx<32x64x64xf16>
// CHECK-NEXT:          dataflow.compute "spyre.matmul" on "pe"(%[[A]], %[[B]]) -> (%[[ACC]]) {accumulate}
// CHECK:           dataflow.store %{{[0-9]+}} into %{{[0-9]+}}[{{.*}}] : !dataflow.lx<32x32x64xf16>
func.func @heads(%q: tensor<32x512x512xf16>, %k: tensor<32x512x128xf16>) -> tensor<32x512x128xf16> {
  %o = spyre.matmul %q, %k {spyre.split = array<i64: 1, 16, 2, 1>} : tensor<32x512x512xf16>, tensor<32x512x128xf16> -> tensor<32x512x128xf16>
  func.return %o : tensor<32x512x128xf16>
}

// Split-K inside the batch groups (16 x 1 x 1 x 2): a group's 4 batches in one tile;
// the two cores of a K group hold the same reduced tile and each stores 2 of its
// batches, its slot ck of the tile reshaped to [2, 2, 64, 64], at batch 4 cb + 2 ck.
// CHECK-LABEL: func.func @split_k
// CHECK:       dataflow.kernel @matmul_1 cores(32) {{.*}}split = [1, 1, 2], split_b = 16>
// CHECK-NEXT:  ^bb0(%[[CORE:[0-9]+]]: index
// CHECK-DAG:     %[[ONE:[0-9]+]] = arith.constant 1 : index
// CHECK-DAG:     %[[TWO:[0-9]+]] = arith.constant 2 : index
// CHECK-DAG:     %[[FOUR:[0-9]+]] = arith.constant 4 : index
// CHECK:         %[[CK:[0-9]+]] = arith.remui %[[CORE]], %[[TWO]] : index
// CHECK:         %[[CB:[0-9]+]] = arith.divui %{{[0-9]+}}, %[[ONE]] : index
// CHECK:         scf.for
// CHECK-NEXT:      %[[BASE:[0-9]+]] = arith.muli %[[CB]], %[[FOUR]] : index
// CHECK:           %[[FIRST:[0-9]+]] = arith.addi %[[BASE]], %{{[0-9]+}} : index
// CHECK:               dataflow.load %{{[0-9]+}}[%[[FIRST]], {{.*}} !dataflow.lx<4x64x64xf16>
// CHECK:             dataflow.ring_allreduce %{{[0-9]+}} {kind = "add", group_size = 2 : i64} : !dataflow.lx<4x64x64xf32>
// CHECK:             dataflow.compute "spyre.reshape" on "ls"(%{{[0-9]+}}) -> (%[[HALVES:[0-9]+]]) : (!dataflow.lx<4x64x64xf16>) -> !dataflow.lx<2x2x64x64xf16>
// CHECK-NEXT:        %[[MINE:[0-9]+]] = dataflow.slot %[[HALVES]][%[[CK]]]
// CHECK-NEXT:        %[[SKIP:[0-9]+]] = arith.muli %[[CK]], %[[TWO]] : index
// CHECK-NEXT:        %[[AT:[0-9]+]] = arith.addi %[[FIRST]], %[[SKIP]] : index
// CHECK-NEXT:        dataflow.store %[[MINE]] into %{{[0-9]+}}[%[[AT]], {{.*}} : !dataflow.lx<2x64x64xf16>
func.func @split_k(%a: tensor<64x64x256xf16>, %b: tensor<64x256x128xf16>) -> tensor<64x64x128xf16> {
  %p = spyre.matmul %a, %b {spyre.split = array<i64: 16, 1, 1, 2>} : tensor<64x64x256xf16>, tensor<64x256x128xf16> -> tensor<64x64x128xf16>
  func.return %p : tensor<64x64x128xf16>
}
