// RUN: spyre-opt %s -p spyre-fuse-attention --split-input-file | filecheck %s
// RUN: spyre-opt %s -p 'spyre-fuse-attention{fuse-attention=false}' --split-input-file | filecheck %s --check-prefix=OFF
// RUN: spyre-opt %s -p spyre-to-dataflow --split-input-file | filecheck %s --check-prefix=KERNEL
// RUN: spyre-opt %s -p 'spyre-to-dataflow{fuse-attention=false}' --split-input-file | filecheck %s --check-prefix=UNFUSED

// Grouped-query attention as Inductor's SDPA decomposition gives it: f32 casts, the scale
// split over q and k^T, repeat_kv (reshape, broadcast_to, reshape), an additive mask,
// softmax as amax/sub/exp/sum/div, and a cast back. One spyre.attention on the
// unrepeated k and v with the mask in f16 and the scales multiplied; nothing is left.
// CHECK-LABEL: func.func @gqa_sdpa
// CHECK-NEXT:    %[[O:.*]] = spyre.attention %q, %k, %v mask(%mask : tensor<1x1x32x40xf16>) scale = 2.500000e-01 : tensor<1x4x32x16xf16>, tensor<1x2x40x16xf16>, tensor<1x2x40x16xf16> -> tensor<1x4x32x16xf16>
// CHECK-NEXT:    func.return %[[O]]
// OFF-LABEL: func.func @gqa_sdpa
// OFF:         spyre.broadcast_to
// OFF:         spyre.reduce_max
// OFF-NOT:     spyre.attention
// The fused pipeline: one attention kernel; unfused: the matmuls and the softmax apart.
// KERNEL-LABEL: func.func @gqa_sdpa
// KERNEL:        dataflow.kernel @attention_0 cores({{[0-9]+}})
// KERNEL-SAME:     plan = #dataflow.attention_plan<
// Q K^T on corelet 0's PE array, p V on corelet 1's (the kernel's pipeline stages).
// KERNEL:          dataflow.compute "spyre.matmul" on "pe"({{.*}}) {corelet = 0 : i64, accumulate}
// KERNEL:          dataflow.compute "spyre.reduce_max"
// KERNEL:          dataflow.compute "spyre.exp"
// KERNEL:          dataflow.compute "spyre.matmul" on "pe"({{.*}}) {corelet = 1 : i64, accumulate}
// KERNEL-NOT:    dataflow.kernel
// KERNEL:        func.return
// UNFUSED-LABEL: func.func @gqa_sdpa
// UNFUSED-COUNT-2: plan = #dataflow.matmul_plan<
func.func @gqa_sdpa(%q: tensor<1x4x32x16xf16>, %k: tensor<1x2x40x16xf16>, %v: tensor<1x2x40x16xf16>, %mask: tensor<1x1x32x40xf16>) -> tensor<1x4x32x16xf16> {
  %k1 = spyre.reshape %k : tensor<1x2x40x16xf16> -> tensor<1x2x1x40x16xf16>
  %k2 = spyre.broadcast_to %k1 : tensor<1x2x1x40x16xf16> -> tensor<1x2x2x40x16xf16>
  %k3 = spyre.reshape %k2 : tensor<1x2x2x40x16xf16> -> tensor<1x4x40x16xf16>
  %v1 = spyre.reshape %v : tensor<1x2x40x16xf16> -> tensor<1x2x1x40x16xf16>
  %v2 = spyre.broadcast_to %v1 : tensor<1x2x1x40x16xf16> -> tensor<1x2x2x40x16xf16>
  %v3 = spyre.reshape %v2 : tensor<1x2x2x40x16xf16> -> tensor<1x4x40x16xf16>
  %qf = spyre.cast %q : tensor<1x4x32x16xf16> -> tensor<1x4x32x16xf32>
  %kf = spyre.cast %k3 : tensor<1x4x40x16xf16> -> tensor<1x4x40x16xf32>
  %vf = spyre.cast %v3 : tensor<1x4x40x16xf16> -> tensor<1x4x40x16xf32>
  %c = spyre.full {value = 0.5 : f64} : tensor<f32>
  %qs = spyre.mul %qf, %c : tensor<1x4x32x16xf32>, tensor<f32> -> tensor<1x4x32x16xf32>
  %kt = spyre.transpose %kf perm = [0, 1, 3, 2] : tensor<1x4x40x16xf32> -> tensor<1x4x16x40xf32>
  %ks = spyre.mul %kt, %c : tensor<1x4x16x40xf32>, tensor<f32> -> tensor<1x4x16x40xf32>
  %q3 = spyre.reshape %qs : tensor<1x4x32x16xf32> -> tensor<4x32x16xf32>
  %k4 = spyre.reshape %ks : tensor<1x4x16x40xf32> -> tensor<4x16x40xf32>
  %s = spyre.matmul %q3, %k4 : tensor<4x32x16xf32>, tensor<4x16x40xf32> -> tensor<4x32x40xf32>
  %s4 = spyre.reshape %s : tensor<4x32x40xf32> -> tensor<1x4x32x40xf32>
  %mf = spyre.cast %mask : tensor<1x1x32x40xf16> -> tensor<1x1x32x40xf32>
  %x = spyre.add %s4, %mf : tensor<1x4x32x40xf32>, tensor<1x1x32x40xf32> -> tensor<1x4x32x40xf32>
  %mx = spyre.reduce_max %x dims = [-1] keepdim : tensor<1x4x32x40xf32> -> tensor<1x4x32x1xf32>
  %d = spyre.sub %x, %mx : tensor<1x4x32x40xf32>, tensor<1x4x32x1xf32> -> tensor<1x4x32x40xf32>
  %e = spyre.exp %d : tensor<1x4x32x40xf32> -> tensor<1x4x32x40xf32>
  %sm = spyre.sum %e dims = [-1] keepdim : tensor<1x4x32x40xf32> -> tensor<1x4x32x1xf32>
  %p = spyre.div %e, %sm : tensor<1x4x32x40xf32>, tensor<1x4x32x1xf32> -> tensor<1x4x32x40xf32>
  %p3 = spyre.reshape %p : tensor<1x4x32x40xf32> -> tensor<4x32x40xf32>
  %v4 = spyre.reshape %vf : tensor<1x4x40x16xf32> -> tensor<4x40x16xf32>
  %o = spyre.matmul %p3, %v4 : tensor<4x32x40xf32>, tensor<4x40x16xf32> -> tensor<4x32x16xf32>
  %o4 = spyre.reshape %o : tensor<4x32x16xf32> -> tensor<1x4x32x16xf32>
  %oh = spyre.cast %o4 : tensor<1x4x32x16xf32> -> tensor<1x4x32x16xf16>
  func.return %oh : tensor<1x4x32x16xf16>
}

// -----

// Written by hand in f16: a fused softmax, a boolean mask filled with -inf where it is
// false (masked_fill(~keep, -inf)): the mask is read as is, keeping where true.
// CHECK-LABEL: func.func @manual_bool_mask
// CHECK-NEXT:    %[[M:.*]] = spyre.reshape %keep : tensor<24x24xi1> -> tensor<1x1x24x24xi1>
// CHECK-NEXT:    %[[O:.*]] = spyre.attention %q, %k, %v mask(%[[M]] : tensor<1x1x24x24xi1>) scale = 1.250000e-01 : tensor<2x3x24x64xf16>, tensor<2x3x24x64xf16>, tensor<2x3x24x64xf16> -> tensor<2x3x24x64xf16>
// CHECK-NEXT:    func.return %[[O]]
func.func @manual_bool_mask(%q: tensor<2x3x24x64xf16>, %k: tensor<2x3x24x64xf16>, %v: tensor<2x3x24x64xf16>, %keep: tensor<24x24xi1>) -> tensor<2x3x24x64xf16> {
  %kt = spyre.transpose %k perm = [0, 1, 3, 2] : tensor<2x3x24x64xf16> -> tensor<2x3x64x24xf16>
  %s = spyre.matmul %q, %kt : tensor<2x3x24x64xf16>, tensor<2x3x64x24xf16> -> tensor<2x3x24x24xf16>
  %c = spyre.full {value = 0.125 : f64} : tensor<f16>
  %ss = spyre.mul %s, %c : tensor<2x3x24x24xf16>, tensor<f16> -> tensor<2x3x24x24xf16>
  %drop = spyre.logical_not %keep : tensor<24x24xi1> -> tensor<24x24xi1>
  %ninf = spyre.full {value = 0xFFF0000000000000 : f64} : tensor<f16>
  %x = spyre.select %drop, %ninf, %ss : tensor<24x24xi1>, tensor<f16>, tensor<2x3x24x24xf16> -> tensor<2x3x24x24xf16>
  %p = spyre.softmax %x dim = -1 : tensor<2x3x24x24xf16> -> tensor<2x3x24x24xf16>
  %o = spyre.matmul %p, %v : tensor<2x3x24x24xf16>, tensor<2x3x24x64xf16> -> tensor<2x3x24x64xf16>
  func.return %o : tensor<2x3x24x64xf16>
}

// -----

// A score used outside the pattern keeps every op: nothing is fused.
// CHECK-LABEL: func.func @scores_escape
// CHECK-NOT:     spyre.attention
// CHECK:         spyre.softmax
func.func @scores_escape(%q: tensor<1x2x8x64xf16>, %k: tensor<1x2x8x64xf16>, %v: tensor<1x2x8x64xf16>) -> (tensor<1x2x8x64xf16>, tensor<1x2x8x8xf16>) {
  %kt = spyre.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x64xf16> -> tensor<1x2x64x8xf16>
  %s = spyre.matmul %q, %kt : tensor<1x2x8x64xf16>, tensor<1x2x64x8xf16> -> tensor<1x2x8x8xf16>
  %p = spyre.softmax %s dim = -1 : tensor<1x2x8x8xf16> -> tensor<1x2x8x8xf16>
  %o = spyre.matmul %p, %v : tensor<1x2x8x8xf16>, tensor<1x2x8x64xf16> -> tensor<1x2x8x64xf16>
  func.return %o, %s : tensor<1x2x8x64xf16>, tensor<1x2x8x8xf16>
}

// -----

// torch's SDPA decomposition permutes its output to the query's memory format and back:
// the pair composes to the identity and folds away, so the attention kernel is the only
// kernel (no copy kernel after it); a transpose of the result that moves data stays.
// CHECK-LABEL: func.func @output_permutes
// CHECK-NEXT:    %[[O:.*]] = spyre.attention %q, %k, %v scale = 1.250000e-01
// CHECK-NEXT:    %[[T:.*]] = spyre.transpose %[[O]] perm = [0, 2, 1, 3] : tensor<1x2x8x64xf16> -> tensor<1x8x2x64xf16>
// CHECK-NEXT:    func.return %[[O]], %[[T]]
// OFF-LABEL: func.func @output_permutes
// OFF:           spyre.transpose %o perm = [2, 0, 1, 3]
// OFF-NEXT:      spyre.transpose %t1 perm = [1, 2, 0, 3]
// KERNEL-LABEL: func.func @output_permutes
// KERNEL:        dataflow.kernel @attention_0
// KERNEL-NOT:    spyre.transpose
// KERNEL:        dataflow.kernel @rows_1
// KERNEL-NOT:    perm = array<i64: 2, 0, 1, 3>
// KERNEL:        dataflow.compute "spyre.transpose" on "ls"({{.*}}) {attrs = {perm = array<i64: 0, 2, 1, 3>}}
// KERNEL-NOT:    dataflow.kernel
// KERNEL-NOT:    spyre.transpose
// KERNEL:        func.return
func.func @output_permutes(%q: tensor<1x2x8x64xf16>, %k: tensor<1x2x8x64xf16>, %v: tensor<1x2x8x64xf16>) -> (tensor<1x2x8x64xf16>, tensor<1x8x2x64xf16>) {
  %kt = spyre.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x64xf16> -> tensor<1x2x64x8xf16>
  %s = spyre.matmul %q, %kt : tensor<1x2x8x64xf16>, tensor<1x2x64x8xf16> -> tensor<1x2x8x8xf16>
  %c = spyre.full {value = 0.125 : f64} : tensor<f16>
  %ss = spyre.mul %s, %c : tensor<1x2x8x8xf16>, tensor<f16> -> tensor<1x2x8x8xf16>
  %p = spyre.softmax %ss dim = -1 : tensor<1x2x8x8xf16> -> tensor<1x2x8x8xf16>
  %o = spyre.matmul %p, %v : tensor<1x2x8x8xf16>, tensor<1x2x8x64xf16> -> tensor<1x2x8x64xf16>
  %t1 = spyre.transpose %o perm = [2, 0, 1, 3] : tensor<1x2x8x64xf16> -> tensor<8x1x2x64xf16>
  %t2 = spyre.transpose %t1 perm = [1, 2, 0, 3] : tensor<8x1x2x64xf16> -> tensor<1x2x8x64xf16>
  %t3 = spyre.transpose %t1 perm = [1, 0, 2, 3] : tensor<8x1x2x64xf16> -> tensor<1x8x2x64xf16>
  func.return %t2, %t3 : tensor<1x2x8x64xf16>, tensor<1x8x2x64xf16>
}

// -----

// torch's SDPA of a boolean mask, as it decomposes: the mask made additive,
// where(keep, 0, -inf) in f16 and widened, then the zero-row guard (eq -inf). The
// additive mask is read as the boolean one it came from: on the card a 16-bit -inf is
// DLFloat16's -MAXIMUM, and a row with every key masked would escape the guard.
// CHECK-LABEL: func.func @additive_from_boolean
// CHECK-NEXT:    %[[M:.*]] = spyre.reshape %keep : tensor<8x8xi1> -> tensor<1x1x8x8xi1>
// CHECK-NEXT:    %[[O:.*]] = spyre.attention %q, %k, %v mask(%[[M]] : tensor<1x1x8x8xi1>) scale = 1.250000e-01 {zero_masked_rows} : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16> -> tensor<1x2x8x64xf16>
// CHECK-NEXT:    func.return %[[O]]
func.func @additive_from_boolean(%q: tensor<1x2x8x64xf16>, %k: tensor<1x2x8x64xf16>, %v: tensor<1x2x8x64xf16>, %keep: tensor<8x8xi1>) -> tensor<1x2x8x64xf16> {
  %zero = spyre.full {value = 0.0 : f64} : tensor<f16>
  %ninf = spyre.full {value = 0xFFF0000000000000 : f64} : tensor<f16>
  %add_mask = spyre.select %keep, %zero, %ninf : tensor<8x8xi1>, tensor<f16>, tensor<f16> -> tensor<8x8xf16>
  %mf = spyre.cast %add_mask : tensor<8x8xf16> -> tensor<8x8xf32>
  %qf = spyre.cast %q : tensor<1x2x8x64xf16> -> tensor<1x2x8x64xf32>
  %kf = spyre.cast %k : tensor<1x2x8x64xf16> -> tensor<1x2x8x64xf32>
  %vf = spyre.cast %v : tensor<1x2x8x64xf16> -> tensor<1x2x8x64xf32>
  %kt = spyre.transpose %kf perm = [0, 1, 3, 2] : tensor<1x2x8x64xf32> -> tensor<1x2x64x8xf32>
  %s = spyre.matmul %qf, %kt : tensor<1x2x8x64xf32>, tensor<1x2x64x8xf32> -> tensor<1x2x8x8xf32>
  %c = spyre.full {value = 0.125 : f64} : tensor<f32>
  %ss = spyre.mul %s, %c : tensor<1x2x8x8xf32>, tensor<f32> -> tensor<1x2x8x8xf32>
  %x = spyre.add %ss, %mf : tensor<1x2x8x8xf32>, tensor<8x8xf32> -> tensor<1x2x8x8xf32>
  %mx = spyre.reduce_max %x dims = [-1] keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %d = spyre.sub %x, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32> -> tensor<1x2x8x8xf32>
  %e = spyre.exp %d : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>
  %sm = spyre.sum %e dims = [-1] keepdim : tensor<1x2x8x8xf32> -> tensor<1x2x8x1xf32>
  %p = spyre.div %e, %sm : tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32> -> tensor<1x2x8x8xf32>
  %finf = spyre.full {value = 0xFFF0000000000000 : f64} : tensor<f32>
  %isinf = spyre.eq %x, %finf : tensor<1x2x8x8xf32>, tensor<f32> -> tensor<1x2x8x8xi1>
  %live = spyre.logical_not %isinf : tensor<1x2x8x8xi1> -> tensor<1x2x8x8xi1>
  %any = spyre.reduce_max %live dims = [-1] keepdim : tensor<1x2x8x8xi1> -> tensor<1x2x8x1xi1>
  %dead = spyre.logical_not %any : tensor<1x2x8x1xi1> -> tensor<1x2x8x1xi1>
  %zeros = spyre.full {value = 0.0 : f64} : tensor<1x2x8x8xf32>
  %safe = spyre.select %dead, %zeros, %p : tensor<1x2x8x1xi1>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>
  %o = spyre.matmul %safe, %vf : tensor<1x2x8x8xf32>, tensor<1x2x8x64xf32> -> tensor<1x2x8x64xf32>
  %oh = spyre.cast %o : tensor<1x2x8x64xf32> -> tensor<1x2x8x64xf16>
  func.return %oh : tensor<1x2x8x64xf16>
}

// -----

// The same additive mask made from a mask that drops: where(not keep, -inf, 0) is read as
// keep itself (no not of a not).
// CHECK-LABEL: func.func @additive_from_dropping_mask
// CHECK-NEXT:    %[[M:.*]] = spyre.reshape %keep : tensor<8x8xi1> -> tensor<1x1x8x8xi1>
// CHECK-NEXT:    %[[O:.*]] = spyre.attention %q, %k, %v mask(%[[M]] : tensor<1x1x8x8xi1>) scale = 1.250000e-01 : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16> -> tensor<1x2x8x64xf16>
// CHECK-NEXT:    func.return %[[O]]
func.func @additive_from_dropping_mask(%q: tensor<1x2x8x64xf16>, %k: tensor<1x2x8x64xf16>, %v: tensor<1x2x8x64xf16>, %keep: tensor<8x8xi1>) -> tensor<1x2x8x64xf16> {
  %drop = spyre.logical_not %keep : tensor<8x8xi1> -> tensor<8x8xi1>
  %zero = spyre.full {value = 0.0 : f64} : tensor<f16>
  %ninf = spyre.full {value = 0xFFF0000000000000 : f64} : tensor<f16>
  %add_mask = spyre.select %drop, %ninf, %zero : tensor<8x8xi1>, tensor<f16>, tensor<f16> -> tensor<8x8xf16>
  %kt = spyre.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x64xf16> -> tensor<1x2x64x8xf16>
  %s = spyre.matmul %q, %kt : tensor<1x2x8x64xf16>, tensor<1x2x64x8xf16> -> tensor<1x2x8x8xf16>
  %c = spyre.full {value = 0.125 : f64} : tensor<f16>
  %ss = spyre.mul %s, %c : tensor<1x2x8x8xf16>, tensor<f16> -> tensor<1x2x8x8xf16>
  %x = spyre.add %ss, %add_mask : tensor<1x2x8x8xf16>, tensor<8x8xf16> -> tensor<1x2x8x8xf16>
  %p = spyre.softmax %x dim = -1 : tensor<1x2x8x8xf16> -> tensor<1x2x8x8xf16>
  %o = spyre.matmul %p, %v : tensor<1x2x8x8xf16>, tensor<1x2x8x64xf16> -> tensor<1x2x8x64xf16>
  func.return %o : tensor<1x2x8x64xf16>
}
