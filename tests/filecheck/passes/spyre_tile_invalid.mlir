// spyre-tile's located errors on groups it cannot tile, fed a group as spyre-fuse would
// make it (hand-written, plain layouts).
// RUN: spyre-opt %s -p spyre-partition-cores,spyre-tile --verify-diagnostics --split-input-file | filecheck %s
// RUN: spyre-opt %s -p spyre-partition-cores,spyre-tile --verify-diagnostics --split-input-file 2>&1 | %no-traceback

// Two projection segments of one A; an epilogue op that reads both segments' results
// has no one segment whose epilogue could run it.
func.func @epilogue_of_two_segments(%a: tensor<64x256xf16>, %wq: tensor<256x128xf16>, %wk: tensor<256x128xf16>) -> tensor<64x128xf16> {
  %r = dataflow.group @matmul_0(%a, %wq, %wk) {dataflow.kind = "matmul", dataflow.row_dims = 1 : i64} : (tensor<64x256xf16>, tensor<256x128xf16>, tensor<256x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%x: tensor<64x256xf16>, %bq: tensor<256x128xf16>, %bk: tensor<256x128xf16>):
    %q = spyre.matmul %x, %bq : tensor<64x256xf16>, tensor<256x128xf16> -> tensor<64x128xf16>
    %k = spyre.matmul %x, %bk {dataflow.segment = 1 : i64} : tensor<64x256xf16>, tensor<256x128xf16> -> tensor<64x128xf16>
    // CHECK: error: {{.*}}spyre-tile: group @matmul_0: an epilogue op reads the results of two segments
    // expected-error @+1 {{spyre-tile: group @matmul_0: an epilogue op reads the results of two segments}}
    %s = spyre.add %q, %k : tensor<64x128xf16>, tensor<64x128xf16> -> tensor<64x128xf16>
    dataflow.yield %s : tensor<64x128xf16>
  }
  func.return %r : tensor<64x128xf16>
}
