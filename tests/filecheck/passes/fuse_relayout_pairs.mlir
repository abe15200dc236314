// RUN: spyre-opt %s -p spyre-stickify,spyre-fuse | filecheck %s
// RUN: spyre-opt %s -p 'spyre-stickify,spyre-fuse{fuse-relayout-pairs=false}' | filecheck %s --check-prefix=OFF

// The v and k projections' head splits: each (after spyre-stickify) a restickify of
// the [s, h * d] rows viewed as [1, s, h, d], then the transpose to [1, h, s, d]. The
// restickified k has other rows than the open group's output (v's transposed heads),
// so alone it cannot join; with its transpose it can: one kernel.

// CHECK-LABEL: func.func @head_splits
// CHECK:         dataflow.group @rows_0
// CHECK-COUNT-2:   spyre.transpose
// CHECK:           dataflow.yield
// CHECK-NOT:     dataflow.group
// OFF-LABEL:   func.func @head_splits
// OFF-COUNT-2: dataflow.group
func.func @head_splits(%v: tensor<64x128xf16>, %k: tensor<64x128xf16>) -> (tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) {
  %vr = spyre.reshape %v : tensor<64x128xf16> -> tensor<1x64x2x64xf16>
  %vt = spyre.transpose %vr perm = [0, 2, 1, 3] : tensor<1x64x2x64xf16> -> tensor<1x2x64x64xf16>
  %kr = spyre.reshape %k : tensor<64x128xf16> -> tensor<1x64x2x64xf16>
  %kt = spyre.transpose %kr perm = [0, 2, 1, 3] : tensor<1x64x2x64xf16> -> tensor<1x2x64x64xf16>
  func.return %vt, %kt : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>
}
