// Forced work division: `split=B,M,N,K` forces the split of every matmul, and a
// `spyre.split` attribute on one matmul forces its own (and wins over the option). The
// plan records [m, n, k] cores; a batch split folds into the row split (B x M cores
// take contiguous row ranges of all batches).
// RUN: spyre-opt %s -p 'spyre-fuse,spyre-partition-cores{split=1,4,8,1}' | filecheck %s
// RUN: spyre-opt %s -p 'spyre-to-dataflow{split=1,2,16,1}' | filecheck %s --check-prefix=PIPE

// CHECK-LABEL: func.func @forced
// CHECK: dataflow.group @matmul_0{{.*}}plan = #dataflow.matmul_plan<cores = 32, split = [4, 8, 1]>
// CHECK: dataflow.group @matmul_1{{.*}}plan = #dataflow.matmul_plan<cores = 32, split = [16, 1, 2]>
// CHECK: dataflow.group @matmul_2{{.*}}plan = #dataflow.matmul_plan<cores = 32, split = [32, 1, 1]>
// PIPE-LABEL: func.func @forced
// PIPE: dataflow.kernel @matmul_0 cores(32){{.*}}plan = #dataflow.matmul_plan<cores = 32, split = [2, 16, 1]>
// PIPE: dataflow.kernel @matmul_1 cores(32){{.*}}plan = #dataflow.matmul_plan<cores = 32, split = [16, 1, 2]>
func.func @forced(%a: tensor<512x4096xf16>, %b: tensor<4096x4096xf16>, %q: tensor<32x512x512xf16>, %k: tensor<32x512x128xf16>) -> (tensor<512x4096xf16>, tensor<512x4096xf16>, tensor<32x512x128xf16>) {
  %m = spyre.matmul %a, %b : tensor<512x4096xf16>, tensor<4096x4096xf16> -> tensor<512x4096xf16>
  %n = spyre.matmul %a, %b {spyre.split = array<i64: 1, 16, 1, 2>} : tensor<512x4096xf16>, tensor<4096x4096xf16> -> tensor<512x4096xf16>
  %o = spyre.matmul %q, %k {spyre.split = array<i64: 16, 2, 1, 1>} : tensor<32x512x512xf16>, tensor<32x512x128xf16> -> tensor<32x512x128xf16>
  func.return %m, %n, %o : tensor<512x4096xf16>, tensor<512x4096xf16>, tensor<32x512x128xf16>
}
