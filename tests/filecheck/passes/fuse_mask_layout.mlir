// RUN: spyre-opt %s -p spyre-stickify,spyre-fuse | filecheck %s
// RUN: spyre-opt %s -p 'spyre-stickify,spyre-fuse{fuse-mask-layout=false}' | filecheck %s --check-prefix=OFF
// RUN: spyre-opt %s -p spyre-to-dataflow | filecheck %s --check-prefix=KERNELS

// A [s, t] mask viewed as [1, 1, s, t] moves bytes (three sticks of keys per row in
// either layout, in another order): a restickify. spyre-fuse puts it in the attention
// group, whose mask loads read the [s, t] bytes; off, it is a group of its own.

// CHECK-LABEL: func.func @mask_2d
// CHECK:         dataflow.group @attention_0(%m4, %q, %k, %v) {dataflow.kind = "attention"
// CHECK:           spyre.restickify
// CHECK-NEXT:      spyre.attention
// CHECK-NEXT:      dataflow.yield
// CHECK-NOT:     dataflow.group
// OFF-LABEL:   func.func @mask_2d
// OFF:           dataflow.group @rows_0
// OFF:             spyre.restickify
// OFF:           dataflow.group @attention_1
// KERNELS-LABEL: func.func @mask_2d
// KERNELS-COUNT-1: dataflow.kernel
// KERNELS-NOT:   dataflow.kernel
// KERNELS:       func.return
func.func @mask_2d(%q: tensor<1x4x64x64xf16>, %k: tensor<1x2x129x64xf16>, %v: tensor<1x2x129x64xf16>, %m: tensor<64x129xf16>) -> tensor<1x4x64x64xf16> {
  %m4 = spyre.reshape %m : tensor<64x129xf16> -> tensor<1x1x64x129xf16>
  %o = spyre.attention %q, %k, %v mask(%m4 : tensor<1x1x64x129xf16>) scale = 1.250000e-01 : tensor<1x4x64x64xf16>, tensor<1x2x129x64xf16>, tensor<1x2x129x64xf16> -> tensor<1x4x64x64xf16>
  func.return %o : tensor<1x4x64x64xf16>
}
