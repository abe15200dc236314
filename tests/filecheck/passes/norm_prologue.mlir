// RUN: spyre-opt %s -p spyre-fuse-norm-prologue --split-input-file | filecheck %s
// RUN: spyre-opt %s -p 'spyre-fuse-norm-prologue{fuse-norm-prologue=false}' --split-input-file | filecheck %s --check-prefix=OFF
// RUN: spyre-opt %s -p 'spyre-to-dataflow' --split-input-file | filecheck %s --check-prefix=KERNELS
// RUN: spyre-opt %s -p 'spyre-to-dataflow{fuse-norm-prologue=false}' --split-input-file | filecheck %s --check-prefix=UNFUSED

// Llama's RMSNorm on [b, s, d] read only by projections through their flattening
// reshape: the chain moves onto the 2-D rows, its ops marked spyre.prologue, and each
// matmul kernel computes it: the row statistics in a K loop over x, every A tile times
// the weight's slice as it is loaded, and each output tile's f32 accumulator times its
// rows' rsqrt factors. The normalised activation is never stored. Switched off, the
// norm is a kernel of its own writing it, which the matmuls read back.

// CHECK-LABEL: func.func @rms_norm_q_k
// CHECK:         %[[X:.*]] = spyre.reshape %x : tensor<1x64x256xf16> -> tensor<64x256xf16>
// CHECK-NEXT:    spyre.cast %[[X]] {spyre.prologue} : tensor<64x256xf16> -> tensor<64x256xf32>
// CHECK-NEXT:    spyre.pow {{.*}} {spyre.prologue}
// CHECK-NEXT:    spyre.mean {{.*}} dims = [-1] keepdim {spyre.prologue} : tensor<64x256xf32> -> tensor<64x1xf32>
// CHECK-NEXT:    spyre.add {{.*}} {spyre.prologue}
// CHECK-NEXT:    spyre.rsqrt {{.*}} {spyre.prologue}
// CHECK-NEXT:    spyre.mul {{.*}} {spyre.prologue}
// CHECK-NEXT:    spyre.cast {{.*}} {spyre.prologue}
// CHECK-NEXT:    %[[Y:.*]] = spyre.mul %w, {{.*}} {spyre.prologue} : tensor<256xf16>, tensor<64x256xf16> -> tensor<64x256xf16>
// CHECK-NOT:     spyre.reshape
// CHECK:         spyre.matmul %[[Y]], %tq
// CHECK:         spyre.matmul %[[Y]], %tk
// OFF-LABEL:   func.func @rms_norm_q_k
// OFF-NOT:       spyre.prologue
// OFF:           spyre.mean {{.*}} : tensor<1x64x256xf32> -> tensor<1x64x1xf32>
// OFF-COUNT-2:   spyre.reshape %y
// KERNELS-LABEL: func.func @rms_norm_q_k
// KERNELS-NOT:   dataflow.kernel @rows
// q: one N tile per core, whose K loop loads each A tile once: the statistics read
// them there (cast, square, mean of this core's slice), the factors follow the last K
// step. (spyre-fuse merges the two groups, which read one prologue; streaming A, their
// plan keeps no A block resident, so spyre-tile splits them apart again: matmul_0_0 and
// matmul_0_1, see passes/fuse_segments.py.) k too: the plan weighs a loop of the statistics' own over x, so it takes a
// split whose cores walk K for one N tile (16 x 2 cores, two K steps), not one K step.
// KERNELS:       dataflow.kernel @matmul_0_0 cores({{[0-9]+}}) (%{{.*}}, %w, %wq)
// KERNELS:         scf.for
// KERNELS:           dataflow.load
// KERNELS:           dataflow.compute "spyre.cast"
// KERNELS:           dataflow.compute "spyre.pow"
// KERNELS:           dataflow.compute "spyre.mean"
// KERNELS:           dataflow.compute "spyre.mul" on "pe"{{.*}} : (!dataflow.lx<{{[0-9]+}}xf16>, !dataflow.lx<{{[0-9]+}}x{{[0-9]+}}xf16>)
// KERNELS:           dataflow.compute "spyre.rsqrt"
// KERNELS:           dataflow.compute "spyre.matmul"
// KERNELS:         dataflow.compute "spyre.mul" on "pe"{{.*}} : (!dataflow.lx<{{[0-9]+}}x{{[0-9]+}}xf32>, !dataflow.lx<{{[0-9]+}}x1xf32>)
// KERNELS-NOT:     dataflow.store {{.*}} !dataflow.lx<{{.*}}xf32>
// KERNELS:       dataflow.kernel @matmul_0_1 cores({{[0-9]+}}) (%{{.*}}, %w, %wk)
// KERNELS:         scf.for
// KERNELS:           dataflow.load
// KERNELS:           dataflow.compute "spyre.mean"
// KERNELS:           dataflow.compute "spyre.mul" on "pe"{{.*}} : (!dataflow.lx<{{[0-9]+}}xf16>, !dataflow.lx<{{[0-9]+}}x{{[0-9]+}}xf16>)
// KERNELS:           dataflow.compute "spyre.matmul"
// KERNELS:         dataflow.compute "spyre.rsqrt"
// KERNELS:         dataflow.compute "spyre.mul" on "pe"{{.*}} : (!dataflow.lx<{{[0-9]+}}x{{[0-9]+}}xf32>, !dataflow.lx<{{[0-9]+}}x1xf32>)
// KERNELS-NOT:   dataflow.kernel
// KERNELS:       func.return
// UNFUSED-LABEL: func.func @rms_norm_q_k
// UNFUSED:       dataflow.kernel @rows_0
// UNFUSED:         dataflow.compute "spyre.mean"
// UNFUSED:       dataflow.kernel @matmul_1
// UNFUSED-NOT:     dataflow.compute "spyre.mean"
// UNFUSED:       dataflow.kernel @matmul_2
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

// -----

// The normalised value is also returned: it is written anyway, so the norm stays a
// kernel of its own and nothing is marked.

// CHECK-LABEL: func.func @norm_also_returned
// CHECK-NOT:     spyre.prologue
// CHECK:         func.return
func.func @norm_also_returned(%x: tensor<64x256xf16>, %wq: tensor<256x256xf16>) -> (tensor<64x256xf16>, tensor<64x256xf16>) {
  %x32 = spyre.cast %x : tensor<64x256xf16> -> tensor<64x256xf32>
  %sq = spyre.mul %x32, %x32 : tensor<64x256xf32>, tensor<64x256xf32> -> tensor<64x256xf32>
  %ms = spyre.mean %sq dims = [-1] keepdim : tensor<64x256xf32> -> tensor<64x1xf32>
  %eps = spyre.full {value = 1.0e-06 : f64} : tensor<f32>
  %v = spyre.add %ms, %eps : tensor<64x1xf32>, tensor<f32> -> tensor<64x1xf32>
  %r = spyre.rsqrt %v : tensor<64x1xf32> -> tensor<64x1xf32>
  %n = spyre.mul %x32, %r : tensor<64x256xf32>, tensor<64x1xf32> -> tensor<64x256xf32>
  %y = spyre.cast %n : tensor<64x256xf32> -> tensor<64x256xf16>
  %tq = spyre.transpose %wq perm = [1, 0] : tensor<256x256xf16> -> tensor<256x256xf16>
  %q = spyre.matmul %y, %tq : tensor<64x256xf16>, tensor<256x256xf16> -> tensor<64x256xf16>
  func.return %q, %y : tensor<64x256xf16>, tensor<64x256xf16>
}
