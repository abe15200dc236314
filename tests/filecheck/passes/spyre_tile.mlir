// RUN: spyre-opt %s -p spyre-fuse,spyre-partition-cores,spyre-tile --split-input-file | filecheck %s
// RUN: spyre-opt %s -p 'spyre-fuse,spyre-partition-cores,spyre-tile{lx-bytes=65536}' --split-input-file | filecheck %s --check-prefix=SMALL

// A row kernel: the core id picks its tiles, each tile is loaded, computed on the
// SFP and stored; the weight that broadcasts over the rows is loaded once per core.
// CHECK-LABEL: func.func @rows
// CHECK:       dataflow.kernel @rows_0 cores(32) (%x, %w) {{.*}}lx_capacity = 2097152 : i64
// CHECK-NEXT:  ^bb0(%[[CORE:.*]]: index, %[[X:.*]]: !dataflow.ddr<4096x1024xf16>, %[[W:.*]]: !dataflow.ddr<1024xf16>, %[[OUT:.*]]: !dataflow.ddr<4096x1024xf16>):
// CHECK-DAG:     %[[XT:.*]] = dataflow.alloc_lx : !dataflow.lx<[[T:[0-9]+]]x1024xf16>
// CHECK-DAG:     %[[WT:.*]] = dataflow.alloc_lx : !dataflow.lx<1024xf16>
// CHECK:         dataflow.load %[[W]][%{{.*}}] into %[[WT]]
// CHECK:         scf.for
// CHECK:           arith.muli %[[CORE]]
// CHECK:           dataflow.load %[[X]][%{{.*}}, %{{.*}}] into %[[XT]]
// CHECK:           dataflow.compute "spyre.mul" on "pe"(%[[XT]], %[[WT]])
// CHECK:           dataflow.compute "spyre.softmax" on "sfp"
// CHECK:           dataflow.store {{.*}} into %[[OUT]]
// CHECK:         dataflow.end
// A smaller scratchpad gives smaller tiles.
// SMALL-LABEL: func.func @rows
// SMALL:       dataflow.alloc_lx : !dataflow.lx<4x1024xf16>
func.func @rows(%x: tensor<4096x1024xf16>, %w: tensor<1024xf16>) -> tensor<4096x1024xf16> {
  %m = spyre.mul %x, %w : tensor<4096x1024xf16>, tensor<1024xf16> -> tensor<4096x1024xf16>
  %s = spyre.softmax %m dim = -1 : tensor<4096x1024xf16> -> tensor<4096x1024xf16>
  func.return %s : tensor<4096x1024xf16>
}

// -----

// A matmul kernel: f32 accumulators zeroed per output tile, a K loop of A and B tile
// loads padded with zeros and accumulating PE matmuls, then the cast and epilogue.
// With N split over the 32 cores (forced), each core walks K for one 512 x 64 output
// tile, kept as four row blocks: the last
// K step computes, finishes and stores them one by one, so the first stores overlap
// the other blocks' matmuls.
// CHECK-LABEL: func.func @matmul
// CHECK:       dataflow.kernel @matmul_0 cores({{[0-9]+}})
// CHECK:         %[[A0:.*]] = dataflow.alloc_lx : !dataflow.lx<128x64xf16>
// CHECK:         %[[A1:.*]] = dataflow.alloc_lx : !dataflow.lx<128x64xf16>
// CHECK:         %[[ACC0:.*]] = dataflow.alloc_lx : !dataflow.lx<128x64xf32>
// CHECK:         %[[ACC1:.*]] = dataflow.alloc_lx : !dataflow.lx<128x64xf32>
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             dataflow.compute "spyre.full" on "pe"() -> (%[[ACC0]]) {attrs = {value = 0.000000e+00 : f64}}
// CHECK:             scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
// CHECK:               dataflow.load {{.*}} {pad = 0.000000e+00 : f64}
// CHECK:               dataflow.load {{.*}} {pad = 0.000000e+00 : f64}
// CHECK:               dataflow.ring_allgather %{{.*}} into %[[A0]]
// CHECK:               %[[MORE:.*]] = arith.cmpi ult, %[[K]], %{{.*}} : index
// CHECK-NEXT:          scf.if %[[MORE]] {
// CHECK-NEXT:            dataflow.compute "spyre.matmul" on "pe"(%[[A0]], %{{.*}}) -> (%[[ACC0]]) {accumulate}
// CHECK-NEXT:            dataflow.compute "spyre.matmul" on "pe"(%[[A1]], %{{.*}}) -> (%[[ACC1]]) {accumulate}
// CHECK:               } else {
// CHECK-NEXT:            dataflow.compute "spyre.matmul" on "pe"(%[[A0]], %{{.*}}) -> (%[[ACC0]]) {accumulate}
// CHECK-NEXT:            dataflow.compute "spyre.cast" on "sfp"(%[[ACC0]]) -> (%[[C0:.*]]) :
// CHECK:                 dataflow.compute "spyre.relu" on "pe"(%[[C0]]) -> (%[[R0:.*]]) :
// CHECK-NEXT:            dataflow.store %[[R0]]
// CHECK-NEXT:            dataflow.compute "spyre.matmul" on "pe"(%[[A1]], %{{.*}}) -> (%[[ACC1]]) {accumulate}
func.func @matmul(%a: tensor<512x1024xf16>, %b: tensor<1024x2048xf16>) -> tensor<512x2048xf16> {
  %m = spyre.matmul %a, %b {spyre.split = array<i64: 1, 1, 32, 1>} : tensor<512x1024xf16>, tensor<1024x2048xf16> -> tensor<512x2048xf16>
  %r = spyre.relu %m : tensor<512x2048xf16> -> tensor<512x2048xf16>
  func.return %r : tensor<512x2048xf16>
}

// -----

// An embedding: the index tile is loaded, rows are gathered from LPDDR5.
// CHECK-LABEL: func.func @embedding
// CHECK:       dataflow.kernel @gather_0
// CHECK:         scf.for
// CHECK:           dataflow.load {{.*}} : !dataflow.ddr<2x16xi64>, !dataflow.lx<1x{{[0-9]+}}xi64>
// CHECK:           dataflow.gather {{.*}} : !dataflow.ddr<50000x128xf16>, !dataflow.lx<1x{{[0-9]+}}xi64>, !dataflow.lx<1x{{[0-9]+}}x128xf16>
func.func @embedding(%table: tensor<50000x128xf16>, %ids: tensor<2x16xi64>) -> tensor<2x16x128xf16> {
  %g = spyre.gather %table[%ids] : tensor<50000x128xf16>, tensor<2x16xi64> -> tensor<2x16x128xf16>
  func.return %g : tensor<2x16x128xf16>
}

// -----

// A weight stored [N, K] and transposed for the matmul (nn.Linear) is read through
// transposed tile loads: no transposing kernel, one matmul kernel.
// CHECK-LABEL: func.func @linear
// CHECK-NOT:   spyre.transpose
// CHECK:       dataflow.kernel @matmul_0
// CHECK:         dataflow.load %{{.*}}[%{{.*}}, %{{.*}}] into %{{.*}} {{{.*}}perm = array<i64: 1, 0>{{.*}}} : !dataflow.ddr<512x256xf16>, !dataflow.lx<{{[0-9]+}}x{{[0-9]+}}xf16>
// CHECK-NOT:   dataflow.kernel
func.func @linear(%x: tensor<64x256xf16>, %w: tensor<512x256xf16>) -> tensor<64x512xf16> {
  %wt = spyre.transpose %w perm = [1, 0] : tensor<512x256xf16> -> tensor<256x512xf16>
  %y = spyre.matmul %x, %wt : tensor<64x256xf16>, tensor<256x512xf16> -> tensor<64x512xf16>
  func.return %y : tensor<64x512xf16>
}

// -----

// N = 200 sticks does not divide over 32 cores; with K split 16 ways (forced), each core's K
// range is one tile, so there is no K loop; the A tile is loaded once (half per core of
// an N pair, all-gathered) and reshaped to 16 stacked blocks of 32 rows; the N loop
// streams B tiles, all-reduces the stacked tile and casts it into one of two slots; each
// core stores its 32-row block of the previous tile, and of the last one after the loop.
// CHECK-LABEL: func.func @split_k
// CHECK:       dataflow.kernel @matmul_0 cores(32) {{.*}}split = [1, 2, 16]
// CHECK:         %[[OUT:.*]] = dataflow.alloc_lx : !dataflow.lx<2x16x32x64xf16>
// CHECK:         scf.for
// CHECK:           dataflow.load {{.*}} : !dataflow.ddr<512x4096xf16>, !dataflow.lx<256x256xf16>
// CHECK:           dataflow.ring_allgather {{.*}} {group_size = 2 : i64, stride = 16 : i64}
// CHECK:           dataflow.compute "spyre.reshape" on "ls"(%{{.*}}) -> (%[[A:.*]]) : (!dataflow.lx<512x256xf16>) -> !dataflow.lx<16x32x256xf16>
// CHECK:           scf.for
// CHECK:             dataflow.load {{.*}} : !dataflow.ddr<4096x12800xf16>, !dataflow.lx<256x64xf16>
// CHECK-NOT:         scf.for
// CHECK:             dataflow.compute "spyre.matmul" on "pe"(%[[A]], %{{.*}}) -> (%[[ACC:.*]]) {accumulate} : (!dataflow.lx<16x32x256xf16>, !dataflow.lx<256x64xf16>) -> !dataflow.lx<16x32x64xf32>
// CHECK:             dataflow.ring_allreduce %[[ACC]] {kind = "add", group_size = 16 : i64}
// CHECK:             %[[NOW:.*]] = dataflow.slot %[[OUT]][%{{.*}}]
// CHECK:             dataflow.compute "spyre.cast" on "sfp"(%[[ACC]]) -> (%[[NOW]])
// CHECK:             scf.if
// CHECK:               %[[BEFORE:.*]] = dataflow.slot %[[OUT]][%{{.*}}]
// CHECK:               %[[MINE:.*]] = dataflow.slot %[[BEFORE]][%{{.*}}] : !dataflow.lx<16x32x64xf16> -> !dataflow.lx<32x64xf16>
// CHECK:               dataflow.store %[[MINE]] into
// CHECK:           %[[LAST:.*]] = dataflow.slot %[[OUT]][%{{.*}}]
// CHECK:           %[[LASTMINE:.*]] = dataflow.slot %[[LAST]][%{{.*}}]
// CHECK:           dataflow.store %[[LASTMINE]] into
func.func @split_k(%a: tensor<512x4096xf16>, %b: tensor<4096x12800xf16>) -> tensor<512x12800xf16> {
  %m = spyre.matmul %a, %b {spyre.split = array<i64: 1, 1, 2, 16>} : tensor<512x4096xf16>, tensor<4096x12800xf16> -> tensor<512x12800xf16>
  func.return %m : tensor<512x12800xf16>
}
