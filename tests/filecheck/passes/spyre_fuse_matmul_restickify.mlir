// RUN: spyre-opt %s -p spyre-stickify,spyre-fuse | filecheck %s
// RUN: spyre-opt %s -p spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile | filecheck %s --check-prefix=TILE

// nn.Linear on [b, s, d]: the flattening reshape is no view under default layouts, so
// stickify restickifies it. The restickify feeds only the matmul, so the matmul group
// takes it in: no kernel of its own, the matmul's A tiles are loaded from the reshaped
// bytes directly (as the weight's transpose is a transposed load).
// CHECK-LABEL: func.func @linear
// CHECK:         %v = spyre.reshape %x : {{.*}} -> tensor<128x256xf16>
// CHECK-NEXT:    dataflow.group @matmul_0(%w, %v) {dataflow.kind = "matmul"
// CHECK:           spyre.transpose
// CHECK-NEXT:      %[[R:.*]] = spyre.restickify
// CHECK-NEXT:      spyre.matmul %[[R]],
// CHECK-NOT:     dataflow.group
// TILE-LABEL: func.func @linear
// TILE:         dataflow.kernel @matmul_0
// TILE-NEXT:    ^bb0(%{{.*}}: index, %[[W:.*]]: !dataflow.ddr<128x256xf16, {{.*}}>, %[[V:.*]]: !dataflow.ddr<128x256xf16>, %{{.*}}: !dataflow.ddr<128x128xf16, {{.*}}>):
// TILE-DAG:     dataflow.load %[[V]][{{.*}}] into {{.*}} {pad = 0.000000e+00 : f64} : !dataflow.ddr<128x256xf16>, !dataflow.lx<
// TILE-DAG:     dataflow.load %[[W]][{{.*}}] into {{.*}} {perm = array<i64: 1, 0>
// TILE-NOT:     dataflow.kernel
func.func @linear(%x: tensor<2x64x256xf16>, %w: tensor<128x256xf16>) -> tensor<128x128xf16> {
  %v = spyre.reshape %x : tensor<2x64x256xf16> -> tensor<128x256xf16>
  %t = spyre.transpose %w perm = [1, 0] : tensor<128x256xf16> -> tensor<256x128xf16>
  %m = spyre.matmul %v, %t : tensor<128x256xf16>, tensor<256x128xf16> -> tensor<128x128xf16>
  func.return %m : tensor<128x128xf16>
}
