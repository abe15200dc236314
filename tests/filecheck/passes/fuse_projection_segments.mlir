// RUN: spyre-opt %s -p 'spyre-fuse-norm-prologue,spyre-stickify,spyre-fuse' | filecheck %s
// RUN: spyre-opt %s -p 'spyre-fuse-norm-prologue,spyre-stickify,spyre-fuse{fuse-projection-segments=false}' | filecheck %s --check-prefix=OFF

// spyre-fuse's projection segments (spyre_ir/passes/fuse_segments.py): two projections
// of one RMSNorm (each group carrying its copy of the norm prologue) merge into one
// group, the later matmul marked as segment 1, one prologue chain for both, so the
// kernel reads x once. Switched off, each projection is a group of its own, each
// computing the norm.

// CHECK-LABEL: func.func @rms_norm_q_k
// CHECK:         %{{.*}}, %{{.*}} = dataflow.group @matmul_0(%{{.*}}, %w, %wq, %wk)
// CHECK-COUNT-1:   spyre.mean
// CHECK:           %q = spyre.matmul %[[Y:[0-9]+]], %tq :
// CHECK:           %k = spyre.matmul %[[Y]], %tk {dataflow.segment = 1 : i64}
// CHECK-NOT:     dataflow.group
// CHECK:         func.return
// OFF-LABEL:   func.func @rms_norm_q_k
// OFF:           dataflow.group @matmul_0(%{{.*}}, %w, %wq)
// OFF:             spyre.mean
// OFF:             spyre.matmul
// OFF-NOT:         dataflow.segment
// OFF:           dataflow.group @matmul_1(%{{.*}}, %w, %wk)
// OFF:             spyre.mean
// OFF-NOT:         dataflow.segment
// OFF:             spyre.matmul %{{.*}}, %tk :
func.func @rms_norm_q_k(%x: tensor<1x64x256xf16>, %w: tensor<256xf16>, %wq: tensor<256x256xf16>, %wk: tensor<128x256xf16>) -> (tensor<64x256xf16>, tensor<64x128xf16>) {
  %x32 = spyre.cast %x : tensor<1x64x256xf16> -> tensor<1x64x256xf32>
  %two = spyre.full {value = 2.0 : f64} : tensor<f32>
  %sq = spyre.pow %x32, %two : tensor<1x64x256xf32>, tensor<f32> -> tensor<1x64x256xf32>
  %ms = spyre.mean %sq dims = [-1] keepdim : tensor<1x64x256xf32> -> tensor<1x64x1xf32>
  %eps = spyre.full {value = 1.0e-05 : f64} : tensor<f32>
  %v = spyre.add %ms, %eps : tensor<1x64x1xf32>, tensor<f32> -> tensor<1x64x1xf32>
  %r = spyre.rsqrt %v : tensor<1x64x1xf32> -> tensor<1x64x1xf32>
  %n = spyre.mul %x32, %r : tensor<1x64x256xf32>, tensor<1x64x1xf32> -> tensor<1x64x256xf32>
  %n16 = spyre.cast %n : tensor<1x64x256xf32> -> tensor<1x64x256xf16>
  %y = spyre.mul %w, %n16 : tensor<256xf16>, tensor<1x64x256xf16> -> tensor<1x64x256xf16>
  %tq = spyre.transpose %wq perm = [1, 0] : tensor<256x256xf16> -> tensor<256x256xf16>
  %yq = spyre.reshape %y : tensor<1x64x256xf16> -> tensor<64x256xf16>
  %q = spyre.matmul %yq, %tq : tensor<64x256xf16>, tensor<256x256xf16> -> tensor<64x256xf16>
  %tk = spyre.transpose %wk perm = [1, 0] : tensor<128x256xf16> -> tensor<256x128xf16>
  %yk = spyre.reshape %y : tensor<1x64x256xf16> -> tensor<64x256xf16>
  %k = spyre.matmul %yk, %tk : tensor<64x256xf16>, tensor<256x128xf16> -> tensor<64x128xf16>
  func.return %q, %k : tensor<64x256xf16>, tensor<64x128xf16>
}
