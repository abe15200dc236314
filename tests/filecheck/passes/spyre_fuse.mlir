// RUN: spyre-opt %s -p spyre-fuse --split-input-file | filecheck %s

// An elementwise chain, a softmax and a reduction over the row body form one group of
// rows; the matmul starts a group of its own and takes its elementwise epilogue.
// CHECK-LABEL: func.func @chain_and_matmul
// CHECK:       %[[ROWS:.*]] = dataflow.group @rows_0(%x, %w) {dataflow.kind = "rows", dataflow.row_dims = 1 : i64}
// CHECK-NEXT:  ^bb0(%[[X:.*]]: tensor<67x256xf16>, %[[W:.*]]: tensor<256xf16>):
// CHECK-NEXT:    %e = spyre.exp %[[X]]
// CHECK-NEXT:    %m = spyre.mul %e, %[[W]]
// CHECK-NEXT:    %s = spyre.softmax %m dim = -1
// CHECK-NEXT:    dataflow.yield %s : tensor<67x256xf16>
// CHECK:       dataflow.group @matmul_1(%[[ROWS]], %b) {dataflow.kind = "matmul", dataflow.row_dims = 1 : i64}
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    %c = spyre.full {value = 2.000000e+00 : f64} : tensor<f16>
// CHECK-NEXT:    %mm = spyre.matmul
// CHECK-NEXT:    %o = spyre.mul %mm, %c
// CHECK-NEXT:    dataflow.yield %o
func.func @chain_and_matmul(%x: tensor<67x256xf16>, %w: tensor<256xf16>, %b: tensor<256x320xf16>) -> tensor<67x320xf16> {
  %e = spyre.exp %x : tensor<67x256xf16> -> tensor<67x256xf16>
  %m = spyre.mul %e, %w : tensor<67x256xf16>, tensor<256xf16> -> tensor<67x256xf16>
  %s = spyre.softmax %m dim = -1 : tensor<67x256xf16> -> tensor<67x256xf16>
  %mm = spyre.matmul %s, %b : tensor<67x256xf16>, tensor<256x320xf16> -> tensor<67x320xf16>
  %c = spyre.full {value = 2.0 : f64} : tensor<f16>
  %o = spyre.mul %mm, %c : tensor<67x320xf16>, tensor<f16> -> tensor<67x320xf16>
  func.return %o : tensor<67x320xf16>
}

// -----

// A value used after the group is also a group result.
// CHECK-LABEL: func.func @two_results
// CHECK:       %[[G0:.*]], %[[G1:.*]] = dataflow.group @rows_0(%x)
// CHECK:         dataflow.yield %a, %b : tensor<8x64xf32>, tensor<8x64xf32>
// CHECK:       func.return %[[G0]], %[[G1]]
func.func @two_results(%x: tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %a = spyre.exp %x : tensor<8x64xf32> -> tensor<8x64xf32>
  %b = spyre.neg %a : tensor<8x64xf32> -> tensor<8x64xf32>
  func.return %a, %b : tensor<8x64xf32>, tensor<8x64xf32>
}

// -----

// A reduction over the rows cannot join a group tiled by rows: it starts its own group
// with fewer row dims.
// CHECK-LABEL: func.func @column_sum
// CHECK:       dataflow.group @rows_0(%x) {dataflow.kind = "rows", dataflow.row_dims = 1 : i64}
// CHECK:         spyre.exp
// CHECK:       dataflow.group @rows_1({{.*}}) {dataflow.kind = "rows", dataflow.row_dims = 0 : i64}
// CHECK:         spyre.sum {{.*}} dims = [0]
func.func @column_sum(%x: tensor<64x128xf32>) -> tensor<128xf32> {
  %a = spyre.exp %x : tensor<64x128xf32> -> tensor<64x128xf32>
  %s = spyre.sum %a dims = [0] : tensor<64x128xf32> -> tensor<128xf32>
  func.return %s : tensor<128xf32>
}

// -----

// A reshape that keeps the rows joins the group; an embedding gather starts a group.
// CHECK-LABEL: func.func @gather_then_reshape
// CHECK:       dataflow.group @gather_0(%table, %ids) {dataflow.kind = "gather", dataflow.row_dims = 2 : i64}
// CHECK:         spyre.gather
// CHECK:         spyre.mul
func.func @gather_then_reshape(%table: tensor<1000x128xf16>, %ids: tensor<2x16xi64>) -> tensor<2x16x128xf16> {
  %g = spyre.gather %table[%ids] : tensor<1000x128xf16>, tensor<2x16xi64> -> tensor<2x16x128xf16>
  %c = spyre.full {value = 0.5 : f64} : tensor<f16>
  %s = spyre.mul %g, %c : tensor<2x16x128xf16>, tensor<f16> -> tensor<2x16x128xf16>
  func.return %s : tensor<2x16x128xf16>
}
