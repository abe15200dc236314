// A forced split that cannot be honoured is a located error at the matmul.
// RUN: spyre-opt %s -p spyre-fuse,spyre-partition-cores --verify-diagnostics --split-input-file | filecheck %s
// RUN: spyre-opt %s -p spyre-fuse,spyre-partition-cores --verify-diagnostics --split-input-file 2>&1 | %no-traceback
func.func @product(%a: tensor<512x4096xf16>, %b: tensor<4096x4096xf16>) -> tensor<512x4096xf16> {
  // CHECK: error: spyre.split = array<i64: ...>: cannot split matmul 1x512x4096x4096 as [1, 4, 4, 1]: 1 x 4 x 4 x 1 = 16 cores, not 32
  // expected-error @+1 {{1 x 4 x 4 x 1 = 16 cores, not 32}}
  %m = spyre.matmul %a, %b {spyre.split = array<i64: 1, 4, 4, 1>} : tensor<512x4096xf16>, tensor<4096x4096xf16> -> tensor<512x4096xf16>
  func.return %m : tensor<512x4096xf16>
}

// -----

func.func @sticks(%a: tensor<512x4096xf16>, %b: tensor<4096x1024xf16>) -> tensor<512x1024xf16> {
  // CHECK: error: {{.*}}N = 1024 does not split into 32 parts of whole sticks (64 elements)
  // expected-error @+1 {{N = 1024 does not split into 32 parts of whole sticks (64 elements)}}
  %m = spyre.matmul %a, %b {spyre.split = array<i64: 1, 1, 32, 1>} : tensor<512x4096xf16>, tensor<4096x1024xf16> -> tensor<512x1024xf16>
  func.return %m : tensor<512x1024xf16>
}

// -----

func.func @batch(%a: tensor<512x4096xf16>, %b: tensor<4096x4096xf16>) -> tensor<512x4096xf16> {
  // CHECK: error: {{.*}}the batch split 2 does not divide the batch 1
  // expected-error @+1 {{the batch split 2 does not divide the batch 1}}
  %m = spyre.matmul %a, %b {spyre.split = array<i64: 2, 16, 1, 1>} : tensor<512x4096xf16>, tensor<4096x4096xf16> -> tensor<512x4096xf16>
  func.return %m : tensor<512x4096xf16>
}

// -----

func.func @arity(%a: tensor<512x4096xf16>, %b: tensor<4096x4096xf16>) -> tensor<512x4096xf16> {
  // CHECK: error: {{.*}}a split is four positive core counts (b, m, n, k), got [4, 8]
  // expected-error @+1 {{a split is four positive core counts (b, m, n, k), got [4, 8]}}
  %m = spyre.matmul %a, %b {spyre.split = array<i64: 4, 8>} : tensor<512x4096xf16>, tensor<4096x4096xf16> -> tensor<512x4096xf16>
  func.return %m : tensor<512x4096xf16>
}
