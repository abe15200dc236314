// RUN: spyre-opt %s -p spyre-double-buffer,convert-dataflow-to-units | filecheck %s

// Double-buffered loads and a split-K ring reduction. The prefetch stays conditional and
// so do its sync ops: the load/store unit takes a credit and sends a token only when it
// really loads; the PE pops one token per K step (one per slot fill) and returns a
// credit per step (two slots: the loads run one step ahead). The partial sums go to the
// load/store unit for the ring all-reduce once, after the K loop (which also waits for
// the SFP's credit: the all-reduce rewrites the accumulator the SFP reads).
// CHECK-LABEL: core.program @k cores(4)
// CHECK-DAG:     %[[DATA:.*]] = core.queue "ls" -> "pe0" {depth = 2 : i64, credits = 0 : i64}
// CHECK-DAG:     %[[CREDIT:.*]] = core.queue "pe0" -> "ls" {depth = 2 : i64, credits = 2 : i64}
// CHECK-DAG:     %[[SUMS:.*]] = core.queue "pe0" -> "ls" {depth = 1 : i64, credits = 0 : i64}
// CHECK:         core.unit "ls" {
// CHECK:           core.pop %[[CREDIT]]
// CHECK-NEXT:      ls.load
// CHECK-NEXT:      core.push %[[DATA]]
// CHECK:           scf.for
// CHECK:             scf.if
// CHECK:               core.pop %[[CREDIT]]
// CHECK-NEXT:          ls.load
// CHECK-NEXT:          core.push %[[DATA]]
// CHECK:           core.pop %[[SUMS]]
// CHECK:           ls.ring_allreduce %acc {kind = "add", group_size = 4 : i64}
// CHECK:         core.unit "pe0" {
// CHECK:           scf.for
// CHECK:             core.pop %[[DATA]]
// CHECK:             pe.compute "spyre.matmul" {{.*}} {accumulate}
// CHECK:             core.push %[[CREDIT]]
// CHECK:           }
// CHECK-NEXT:      core.push %[[SUMS]]
func.func @split_k(%a: tensor<64x1024xf16>, %b: tensor<1024x64xf16>) -> tensor<64x64xf16> {
  %r = dataflow.kernel @k cores(4) (%a, %b) : (tensor<64x1024xf16>, tensor<1024x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %am: !dataflow.ddr<64x1024xf16>, %bm: !dataflow.ddr<1024x64xf16>, %out: !dataflow.ddr<64x64xf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %at = dataflow.alloc_lx : !dataflow.lx<64x64xf16>
    %bt = dataflow.alloc_lx : !dataflow.lx<64x64xf16>
    %acc = dataflow.alloc_lx : !dataflow.lx<64x64xf32>
    %res = dataflow.alloc_lx : !dataflow.lx<64x64xf16>
    %base = arith.muli %core, %c256 : index
    dataflow.compute "spyre.full" on "pe" () -> (%acc) {attrs = {value = 0.0 : f64}} : () -> !dataflow.lx<64x64xf32>
    scf.for %k = %c0 to %c4 step %c1 {
      %step = arith.muli %k, %c64 : index
      %k0 = arith.addi %base, %step : index
      dataflow.load %am[%c0, %k0] into %at : !dataflow.ddr<64x1024xf16>, !dataflow.lx<64x64xf16>
      dataflow.load %bm[%k0, %c0] into %bt : !dataflow.ddr<1024x64xf16>, !dataflow.lx<64x64xf16>
      dataflow.compute "spyre.matmul" on "pe" (%at, %bt) -> (%acc) {accumulate} : (!dataflow.lx<64x64xf16>, !dataflow.lx<64x64xf16>) -> !dataflow.lx<64x64xf32>
    }
    dataflow.ring_allreduce %acc {kind = "add", group_size = 4 : i64} : !dataflow.lx<64x64xf32>
    dataflow.compute "spyre.cast" on "sfp" (%acc) -> (%res) : (!dataflow.lx<64x64xf32>) -> !dataflow.lx<64x64xf16>
    dataflow.store %res into %out[%c0, %c0] : !dataflow.lx<64x64xf16>, !dataflow.ddr<64x64xf16>
    dataflow.end
  }
  func.return %r : tensor<64x64xf16>
}
