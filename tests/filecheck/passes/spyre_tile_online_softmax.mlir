// RUN: spyre-opt %s --split-input-file -p 'spyre-tile{lx-bytes=16384}' | filecheck %s

// A lone softmax over rows of 20001 f16 elements (not whole sticks): a row of input and
// result is 80 KiB, half of LX 8 KiB. spyre-tile streams it in one kernel, one row per
// core: pass 1 walks the row's chunks of 576 (whole sticks; loads past the end read
// -inf) keeping a running max m and a rescaled running sum s in f32, on corelet 0; pass
// 2 walks them again and stores exp(x - m) * (1 / s). The off switch and the pipeline:
// spyre_online_softmax_switch.mlir.
// CHECK-LABEL: func.func @main
// CHECK:       dataflow.kernel @rows_0 cores(3) (%x) {plan = #dataflow.rows_plan<row_dims = 1, cores = 3>
// CHECK-DAG:     %[[C1:[0-9]+]] = dataflow.alloc_lx : !dataflow.lx<1x576xf16>
// CHECK-DAG:     %[[C2:[0-9]+]] = dataflow.alloc_lx : !dataflow.lx<1x576xf16>
// CHECK:         dataflow.alloc_lx : !dataflow.lx<1x1xf32>
// CHECK:         scf.for
// CHECK:           dataflow.compute "spyre.full" on "pe"() -> (%[[M:[0-9]+]]) {corelet = 0 : i64, attrs = {value = 0xfff0000000000000 : f64}}
// CHECK:           dataflow.compute "spyre.full" on "pe"() -> (%[[S:[0-9]+]]) {corelet = 0 : i64, attrs = {value = 0.000000e+00 : f64}}
// CHECK:           scf.for
// CHECK:             dataflow.load %{{.*}} into %[[C1]] {pad = 0xfff0000000000000 : f64}
// CHECK:             dataflow.compute "spyre.reduce_max"
// CHECK:             dataflow.compute "spyre.max" on "pe"(%[[M]], %[[TMAX:[0-9]+]]) -> (%[[NEW:[0-9]+]])
// CHECK:             dataflow.compute "spyre.sub" on "pe"(%[[M]], %[[NEW]]) -> (%[[DIFF:[0-9]+]])
// CHECK:             dataflow.compute "spyre.max" on "pe"(%[[M]], %[[TMAX]]) -> (%[[M]])
// CHECK:             dataflow.compute "spyre.exp" on "sfp"(%[[DIFF]]) -> (%[[SCALE:[0-9]+]])
// CHECK:             dataflow.compute "spyre.sub" on "pe"(%{{.*}}, %[[M]])
// CHECK:             dataflow.compute "spyre.exp"
// CHECK:             dataflow.compute "spyre.sum" on "sfp"(%{{.*}}) -> (%[[TSUM:[0-9]+]])
// CHECK:             dataflow.compute "spyre.mul" on "pe"(%[[S]], %[[SCALE]]) -> (%[[S]])
// CHECK:             dataflow.compute "spyre.add" on "pe"(%[[S]], %[[TSUM]]) -> (%[[S]])
// CHECK-NOT:         dataflow.store
// CHECK:           }
// CHECK:           dataflow.compute "spyre.reciprocal" on "sfp"(%[[S]]) -> (%[[R:[0-9]+]])
// CHECK:           scf.for
// CHECK:             dataflow.load %{{.*}} into %[[C2]]
// CHECK:             dataflow.compute "spyre.sub" on "pe"(%{{.*}}, %[[M]])
// CHECK:             dataflow.compute "spyre.exp"
// CHECK:             dataflow.compute "spyre.mul" on "pe"(%{{.*}}, %[[R]])
// CHECK:             dataflow.compute "spyre.cast"
// CHECK:             dataflow.store
// CHECK-NOT:   dataflow.kernel
func.func @main(%x: tensor<3x20001xf16>) -> tensor<3x20001xf16> {
  %0 = dataflow.group @rows_0(%x) {dataflow.kind = "rows", dataflow.row_dims = 1 : i64, plan = #dataflow.rows_plan<row_dims = 1, cores = 3>} : (tensor<3x20001xf16>) -> tensor<3x20001xf16> {
  ^bb0(%1: tensor<3x20001xf16>):
    %y = spyre.softmax %1 dim = 1 : tensor<3x20001xf16> -> tensor<3x20001xf16>
    dataflow.yield %y : tensor<3x20001xf16>
  }
  func.return %0 : tensor<3x20001xf16>
}

// -----

// The same softmax given 32 cores: its 3 rows leave cores idle, so each row's 35 chunks
// go to a ring group of 9 cores (4 chunks each). After pass 1 the members combine their
// running max with a ring max, rescale their sums to it and add them on the ring; pass 2
// then stores each member's own chunks.
// CHECK-LABEL: func.func @ring
// CHECK:       dataflow.kernel @rows_0 cores(27) (%x) {plan = #dataflow.rows_plan<row_dims = 1, cores = 27>
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             dataflow.compute "spyre.add" on "pe"
// CHECK:           dataflow.compute "spyre.cast" on "sfp"(%{{[0-9]+}}) -> (%[[MAX:[0-9]+]])
// CHECK:           dataflow.ring_allreduce %[[MAX]] {kind = "max", group_size = 9 : i64}
// CHECK:           dataflow.compute "spyre.sub" on "pe"(%{{[0-9]+}}, %[[MAX]])
// CHECK:           dataflow.compute "spyre.exp"
// CHECK:           dataflow.compute "spyre.mul" on "pe"(%{{[0-9]+}}, %{{[0-9]+}}) -> (%[[SUM:[0-9]+]])
// CHECK:           dataflow.ring_allreduce %[[SUM]] {kind = "add", group_size = 9 : i64}
// CHECK:           dataflow.compute "spyre.reciprocal" on "sfp"(%[[SUM]])
// CHECK:           scf.for
// CHECK:             dataflow.compute "spyre.sub" on "pe"(%{{[0-9]+}}, %[[MAX]])
// CHECK:             dataflow.store
func.func @ring(%x: tensor<3x20001xf16>) -> tensor<3x20001xf16> {
  %0 = dataflow.group @rows_0(%x) {dataflow.kind = "rows", dataflow.row_dims = 1 : i64, plan = #dataflow.rows_plan<row_dims = 1, cores = 32>} : (tensor<3x20001xf16>) -> tensor<3x20001xf16> {
  ^bb0(%1: tensor<3x20001xf16>):
    %y = spyre.softmax %1 dim = 1 : tensor<3x20001xf16> -> tensor<3x20001xf16>
    dataflow.yield %y : tensor<3x20001xf16>
  }
  func.return %0 : tensor<3x20001xf16>
}
