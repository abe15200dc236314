// RUN: spyre-opt %s -p spyre-to-dataflow | filecheck %s
// RUN: spyre-opt %s -p spyre-to-units 2>&1 | %no-traceback

// transformers' padding-mask lookup `mask[batch_idx, kv_idx]` for a (4, 32) mask: 32
// i1 results per row (a quarter of a 128-element stick) from i64 indices (16 per
// stick). The gather kernel's tiles hold whole rows of 32: every store writes whole
// rows up to the tensor's end, none is masked (this once failed to verify: "moves 16
// elements along stick dim 3, not whole sticks").
// CHECK-LABEL: func.func @mask_lookup
// CHECK:       dataflow.kernel @gather_{{[0-9]+}} cores(4)
// CHECK:         dataflow.load %{{.*}} into %{{.*}} : !dataflow.ddr<4x1x1x32xi64{{.*}}>, !dataflow.lx<1x1x1x32xi64>
// CHECK:         dataflow.gather
// CHECK-NOT:     masked
// CHECK:         dataflow.store %{{.*}} into %{{.*}} : !dataflow.lx<1x1x1x32xi1>, !dataflow.ddr<4x1x1x32xi1
func.func @mask_lookup(%mask: tensor<4x32xi64>) -> tensor<4x1x1x32xi1> {
  %b = spyre.cast %mask : tensor<4x32xi64> -> tensor<4x32xi1>
  %flat = spyre.reshape %b : tensor<4x32xi1> -> tensor<128xi1>
  %kv = spyre.iota {dim = 3 : i64, start = 0 : i64, step = 1 : i64} : tensor<1x1x1x32xi64>
  %bi = spyre.iota {dim = 0 : i64, start = 0 : i64, step = 32 : i64} : tensor<4x1x1x1xi64>
  %idx = spyre.add %kv, %bi : tensor<1x1x1x32xi64>, tensor<4x1x1x1xi64> -> tensor<4x1x1x32xi64>
  %m = spyre.gather %flat[%idx] : tensor<128xi1>, tensor<4x1x1x32xi64> -> tensor<4x1x1x32xi1>
  func.return %m : tensor<4x1x1x32xi1>
}
