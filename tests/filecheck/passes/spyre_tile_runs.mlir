// spyre-tile on a card that limits a core's LPDDR5 requests in flight
// (`lpddr_core_requests_in_flight`; a request never spans two contiguous runs): a rows
// kernel takes the box tile the card's model times fastest (spyre_ir/passes/row_tiles.py).
// A [4096, 4096] tensor lives as [64, 4096, 64] (its sticks outermost), so the rows
// kernel's 32 whole rows are 64 runs of 32 sticks; on the limited card the tile runs
// down the rows, whole sticks wide (row_dims 2: the last dim is tiled too). A
// [4, 1, 4096] tensor lives as [1, 64, 4, 64]: one batch's row is a run per stick, so
// the limited card's tiles hold every batch. The default card keeps its tiles.
// RUN: spyre-opt %s -p spyre-tile | filecheck %s --check-prefix=DEFAULT
// RUN: spyre-opt %s -p spyre-tile --card %S/limited_requests_card.json | filecheck %s --check-prefix=LIMITED

// DEFAULT-LABEL: func.func @add
// DEFAULT:         dataflow.kernel @rows_0 cores(1) {{.*}}rows_plan<row_dims = 1, cores = 1>
// DEFAULT:           dataflow.alloc_lx : !dataflow.lx<32x4096xf16>
// LIMITED-LABEL: func.func @add
// LIMITED:         dataflow.kernel @rows_0 cores(1) {{.*}}rows_plan<row_dims = 2, cores = 1>
// LIMITED:           dataflow.alloc_lx : !dataflow.lx<{{[0-9]+}}x{{64|128}}xf16>
// LIMITED-NOT:       lx<{{[0-9]+}}x4096xf16>
// LIMITED:         func.return
func.func @add(%x: tensor<4096x4096xf16>, %z: tensor<4096x4096xf16>) -> tensor<4096x4096xf16> {
  %y = dataflow.group @rows_0(%x, %z) {dataflow.kind = "rows", dataflow.row_dims = 1 : i64, plan = #dataflow.rows_plan<row_dims = 1, cores = 1>} : (tensor<4096x4096xf16>, tensor<4096x4096xf16>) -> tensor<4096x4096xf16> {
  ^bb0(%a: tensor<4096x4096xf16>, %b: tensor<4096x4096xf16>):
    %e = spyre.add %a, %b : tensor<4096x4096xf16>, tensor<4096x4096xf16> -> tensor<4096x4096xf16>
    dataflow.yield %e : tensor<4096x4096xf16>
  }
  func.return %y : tensor<4096x4096xf16>
}

// DEFAULT-LABEL: func.func @batches
// DEFAULT:         dataflow.kernel @rows_1 cores(4)
// DEFAULT:           dataflow.alloc_lx : !dataflow.lx<1x1x4096xf16>
// LIMITED-LABEL: func.func @batches
// LIMITED:         dataflow.kernel @rows_1
// LIMITED:           dataflow.alloc_lx : !dataflow.lx<4x1x{{[0-9]+}}xf16>
// LIMITED-NOT:       lx<1x1x
func.func @batches(%x: tensor<4x1x4096xf16>, %z: tensor<4x1x4096xf16>) -> tensor<4x1x4096xf16> {
  %y = dataflow.group @rows_1(%x, %z) {dataflow.kind = "rows", dataflow.row_dims = 2 : i64, plan = #dataflow.rows_plan<row_dims = 2, cores = 32>} : (tensor<4x1x4096xf16>, tensor<4x1x4096xf16>) -> tensor<4x1x4096xf16> {
  ^bb0(%a: tensor<4x1x4096xf16>, %b: tensor<4x1x4096xf16>):
    %e = spyre.add %a, %b : tensor<4x1x4096xf16>, tensor<4x1x4096xf16> -> tensor<4x1x4096xf16>
    dataflow.yield %e : tensor<4x1x4096xf16>
  }
  func.return %y : tensor<4x1x4096xf16>
}
