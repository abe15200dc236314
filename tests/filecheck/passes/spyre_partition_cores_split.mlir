// Forced work division: `split=B,M,N,K` forces the split of every matmul, and a
// `spyre.split` attribute on one matmul forces its own (and wins over the option). The
// plan records [m, n, k] cores, and of a batched matmul its batch split as `split_b`:
// spyre-tile then runs the card's division, split_b groups of M x N x K cores each
// walking a contiguous range of batches, the M split dividing each batch's rows.
// RUN: spyre-opt %s -p 'spyre-fuse,spyre-partition-cores{split=1,4,8,1}' | filecheck %s
// RUN: spyre-opt %s -p 'spyre-to-dataflow{split=1,2,16,1}' | filecheck %s --check-prefix=PIPE

// CHECK-LABEL: func.func @forced
// CHECK: dataflow.group @matmul_0{{.*}}plan = #dataflow.matmul_plan<cores = 32, split = [4, 8, 1]>
// CHECK: dataflow.group @matmul_1{{.*}}plan = #dataflow.matmul_plan<cores = 32, split = [16, 1, 2]>
// CHECK: dataflow.group @matmul_2{{.*}}plan = #dataflow.matmul_plan<cores = 32, split = [2, 1, 1], split_b = 16>
// PIPE-LABEL: func.func @forced
// PIPE: dataflow.kernel @matmul_0 cores(32){{.*}}plan = #dataflow.matmul_plan<cores = 32, split = [2, 16, 1]>
// PIPE: dataflow.kernel @matmul_1 cores(32){{.*}}plan = #dataflow.matmul_plan<cores = 32, split = [16, 1, 2]>
// The bmm: core = (cb x 2 + cm) (one N and K core), the group cb = core / 2 walks
// batches 2 cb and 2 cb + 1 (in one tile of both batches: spyre_tile_batches.mlir), its
// core cm = core % 2 taking rows [256 cm, 256 cm + 256) of each (one M tile of 256 rows
// a batch).
// PIPE: dataflow.kernel @matmul_2 cores(32){{.*}}plan = #dataflow.matmul_plan<cores = 32, split = [2, 1, 1], split_b = 16>
// PIPE-NEXT: ^bb0(%[[CORE:[0-9]+]]: index
// PIPE-DAG: %[[ONE:[0-9]+]] = arith.constant 1 : index
// PIPE-DAG: %[[TWO:[0-9]+]] = arith.constant 2 : index
// PIPE-DAG: %[[ROWS:[0-9]+]] = arith.constant 256 : index
// PIPE: arith.remui %[[CORE]], %[[ONE]] : index
// PIPE-NEXT: arith.divui %[[CORE]], %[[ONE]] : index
// PIPE-NEXT: arith.remui
// PIPE-NEXT: %[[MNK:[0-9]+]] = arith.divui %[[CORE]], %[[ONE]] : index
// PIPE-NEXT: %[[CB:[0-9]+]] = arith.divui %[[MNK]], %[[TWO]] : index
// PIPE-NEXT: %[[CM:[0-9]+]] = arith.remui %[[MNK]], %[[TWO]] : index
// PIPE-NEXT: scf.for %[[I:[0-9]+]] = %{{[0-9]+}} to %[[ONE]] step %[[ONE]] {
// PIPE-NEXT: %[[BASE:[0-9]+]] = arith.muli %[[CB]], %[[TWO]] : index
// PIPE-NEXT: %[[TB:[0-9]+]] = arith.divui %[[I]], %[[ONE]] : index
// PIPE-NEXT: %[[OFF:[0-9]+]] = arith.muli %[[TB]], %[[TWO]] : index
// PIPE-NEXT: %{{[0-9]+}} = arith.addi %[[BASE]], %[[OFF]] : index
// PIPE-NEXT: %[[TILE:[0-9]+]] = arith.muli %[[CM]], %[[ONE]] : index
// PIPE-NEXT: %[[IN:[0-9]+]] = arith.remui %[[I]], %[[ONE]] : index
// PIPE-NEXT: %[[T:[0-9]+]] = arith.addi %[[TILE]], %[[IN]] : index
// PIPE-NEXT: %{{[0-9]+}} = arith.muli %[[T]], %[[ROWS]] : index
func.func @forced(%a: tensor<512x4096xf16>, %b: tensor<4096x4096xf16>, %q: tensor<32x512x512xf16>, %k: tensor<32x512x128xf16>) -> (tensor<512x4096xf16>, tensor<512x4096xf16>, tensor<32x512x128xf16>) {
  %m = spyre.matmul %a, %b : tensor<512x4096xf16>, tensor<4096x4096xf16> -> tensor<512x4096xf16>
  %n = spyre.matmul %a, %b {spyre.split = array<i64: 1, 16, 1, 2>} : tensor<512x4096xf16>, tensor<4096x4096xf16> -> tensor<512x4096xf16>
  %o = spyre.matmul %q, %k {spyre.split = array<i64: 16, 2, 1, 1>} : tensor<32x512x512xf16>, tensor<32x512x128xf16> -> tensor<32x512x128xf16>
  func.return %m, %n, %o : tensor<512x4096xf16>, tensor<512x4096xf16>, tensor<32x512x128xf16>
}
