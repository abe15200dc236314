// RUN: spyre-opt %s -p spyre-fuse,spyre-partition-cores | filecheck %s
// RUN: spyre-opt %s -p 'spyre-fuse,spyre-partition-cores{cores=8}' | filecheck %s --check-prefix=EIGHT

// Rows divide over every core while there are rows for them; a matmul's split comes
// from the cost model (PE time, LPDDR5 time, ring time for split-K).
// CHECK-LABEL: func.func @plans
// CHECK:  dataflow.group @rows_0{{.*}}plan = #dataflow.rows_plan<row_dims = 1, cores = 32>
// CHECK:  dataflow.group @rows_1{{.*}}plan = #dataflow.rows_plan<row_dims = 1, cores = 4>
// CHECK:  dataflow.group @matmul_2{{.*}}plan = #dataflow.matmul_plan<cores = {{[0-9]+}}, split = [{{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}]>
// EIGHT:  dataflow.group @rows_0{{.*}}plan = #dataflow.rows_plan<row_dims = 1, cores = 8>
// EIGHT:  dataflow.group @rows_1{{.*}}plan = #dataflow.rows_plan<row_dims = 1, cores = 4>
func.func @plans(%x: tensor<4096x1024xf16>, %y: tensor<4x64xf16>, %a: tensor<512x4096xf16>, %b: tensor<4096x4096xf16>) -> (tensor<4096x1024xf16>, tensor<4x64xf16>, tensor<512x4096xf16>) {
  %s = spyre.softmax %x dim = -1 : tensor<4096x1024xf16> -> tensor<4096x1024xf16>
  %t = spyre.tanh %y : tensor<4x64xf16> -> tensor<4x64xf16>
  %m = spyre.matmul %a, %b : tensor<512x4096xf16>, tensor<4096x4096xf16> -> tensor<512x4096xf16>
  func.return %s, %t, %m : tensor<4096x1024xf16>, tensor<4x64xf16>, tensor<512x4096xf16>
}
