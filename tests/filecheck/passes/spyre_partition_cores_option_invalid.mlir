// A forced split given as the pass option is checked against every matmul, and the
// error is located at the matmul that cannot take it; spyre-opt exits 1.
// RUN: not spyre-opt %s -p 'spyre-fuse,spyre-partition-cores{split=1,4,4,1}' 2>&1 | filecheck %s
// RUN: not spyre-opt %s -p 'spyre-to-dataflow{split=1,1,32,1}' 2>&1 | filecheck %s --check-prefix=PIPE

func.func @product(%a: tensor<512x4096xf16>, %b: tensor<4096x1024xf16>) -> tensor<512x1024xf16> {
  // CHECK: spyre_partition_cores_option_invalid.mlir:[[# @LINE + 2]]:3: error: split=B,M,N,K: cannot split matmul 1x512x1024x4096 as [1, 4, 4, 1]: 1 x 4 x 4 x 1 = 16 cores, not 32
  // PIPE: spyre_partition_cores_option_invalid.mlir:[[# @LINE + 1]]:3: error: split=B,M,N,K: cannot split matmul 1x512x1024x4096 as [1, 1, 32, 1]: N = 1024 does not split into 32 parts of whole sticks (64 elements)
  %m = spyre.matmul %a, %b : tensor<512x4096xf16>, tensor<4096x1024xf16> -> tensor<512x1024xf16>
  func.return %m : tensor<512x1024xf16>
}
