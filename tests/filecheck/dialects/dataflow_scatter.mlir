// RUN: spyre-opt %s | filecheck %s
// RUN: spyre-opt %s | spyre-opt | filecheck %s
// RUN: spyre-opt %s -p convert-dataflow-to-units | filecheck %s --check-prefix=UNITS

// dataflow.scatter, gather's dual (a paged KV-cache write): the rows of an LX buffer
// written to the table rows an index buffer names; at L3 an ls.scatter on the LS unit.
// CHECK-LABEL: func.func @update
// CHECK: dataflow.scatter %[[ROWS:.*]] into %[[T:.*]][%[[IDS:.*]]] : !dataflow.lx<8x64xf16>, !dataflow.lx<8xi32>, !dataflow.ddr<100x64xf16>
// UNITS: ls.scatter %{{.*}} into %{{.*}}[%{{.*}}] : !dataflow.lx<8x64xf16>, !dataflow.lx<8xi32>, !dataflow.ddr<100x64xf16>
func.func @update(%table: tensor<100x64xf16>, %ids: tensor<8xi32>, %new: tensor<8x64xf16>) -> tensor<100x64xf16> {
  %r = dataflow.kernel @update cores(1) (%table, %ids, %new) : (tensor<100x64xf16>, tensor<8xi32>, tensor<8x64xf16>) -> tensor<100x64xf16> {
  ^bb0(%core: index, %t: !dataflow.ddr<100x64xf16>, %i: !dataflow.ddr<8xi32>, %n: !dataflow.ddr<8x64xf16>, %out: !dataflow.ddr<100x64xf16>):
    %c0 = arith.constant 0 : index
    %rows = dataflow.alloc_lx : !dataflow.lx<8x64xf16>
    %idx = dataflow.alloc_lx : !dataflow.lx<8xi32>
    dataflow.load %i[%c0] into %idx : !dataflow.ddr<8xi32>, !dataflow.lx<8xi32>
    dataflow.load %n[%c0, %c0] into %rows : !dataflow.ddr<8x64xf16>, !dataflow.lx<8x64xf16>
    dataflow.scatter %rows into %out[%idx] : !dataflow.lx<8x64xf16>, !dataflow.lx<8xi32>, !dataflow.ddr<100x64xf16>
    dataflow.end
  }
  func.return %r : tensor<100x64xf16>
}

// With dims = 2 an index is a flat position of the table's two dims (a KTIR element
// scatter): one element per index, part of a stick, so masked.
// CHECK-LABEL: func.func @elements
// CHECK: dataflow.scatter %{{.*}} into %{{.*}}[%{{.*}}] {dims = 2 : i64, masked} : !dataflow.lx<2x64xf16>, !dataflow.lx<2x64xi32>, !dataflow.ddr<100x64xf16>
// UNITS: ls.scatter %{{.*}} into %{{.*}}[%{{.*}}] {dims = 2 : i64, masked} : !dataflow.lx<2x64xf16>, !dataflow.lx<2x64xi32>, !dataflow.ddr<100x64xf16>
func.func @elements(%table: tensor<100x64xf16>, %at: tensor<2x64xi32>, %new: tensor<2x64xf16>) -> tensor<100x64xf16> {
  %r = dataflow.kernel @elements cores(1) (%table, %at, %new) : (tensor<100x64xf16>, tensor<2x64xi32>, tensor<2x64xf16>) -> tensor<100x64xf16> {
  ^bb0(%core: index, %t: !dataflow.ddr<100x64xf16>, %i: !dataflow.ddr<2x64xi32>, %n: !dataflow.ddr<2x64xf16>, %out: !dataflow.ddr<100x64xf16>):
    %c0 = arith.constant 0 : index
    %vals = dataflow.alloc_lx : !dataflow.lx<2x64xf16>
    %idx = dataflow.alloc_lx : !dataflow.lx<2x64xi32>
    dataflow.load %i[%c0, %c0] into %idx : !dataflow.ddr<2x64xi32>, !dataflow.lx<2x64xi32>
    dataflow.load %n[%c0, %c0] into %vals : !dataflow.ddr<2x64xf16>, !dataflow.lx<2x64xf16>
    dataflow.scatter %vals into %out[%idx] {dims = 2 : i64, masked} : !dataflow.lx<2x64xf16>, !dataflow.lx<2x64xi32>, !dataflow.ddr<100x64xf16>
    dataflow.end
  }
  func.return %r : tensor<100x64xf16>
}
