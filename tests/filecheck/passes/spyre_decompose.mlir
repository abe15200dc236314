// spyre-decompose rewrites softmax / layer_norm / rms_norm into primitive spyre ops,
// computing as torch eager does (half inputs in f32). Its `ops` option picks the
// composites: a comma-separated list (`ops=softmax,rms_norm`), names with or without the
// `spyre.` prefix (the prefixed form quoted: `ops="spyre.rms_norm"`); `ops` with no value
// selects none. The numerics are checked against torch in tests/test_decompose.py.

// RUN: spyre-opt %s -p spyre-decompose | filecheck %s
// RUN: spyre-opt %s -p spyre-decompose,canonicalize | filecheck %s --check-prefix=CANON
// RUN: spyre-opt %s -p 'spyre-decompose{ops=softmax}' | filecheck %s --check-prefix=SOFTMAX
// RUN: spyre-opt %s -p 'spyre-decompose{ops=layer_norm,rms_norm}' | filecheck %s --check-prefix=NORMS
// RUN: spyre-opt %s -p 'spyre-decompose{ops="spyre.rms_norm"}' | filecheck %s --check-prefix=RMS
// RUN: spyre-opt %s -p 'spyre-decompose{ops}' | filecheck %s --check-prefix=NONE
// RUN: not spyre-opt %s -p 'spyre-decompose{ops=softmax,gelu}' 2>&1 | filecheck %s --check-prefix=BADOPT
// RUN: spyre-opt %s -p spyre-decompose 2>&1 | %no-traceback

// BADOPT: spyre-opt: error: spyre-decompose: unknown op(s) gelu in ops=; expected some of softmax, layer_norm, rms_norm

// Nothing composite is left, and the result verifies (spyre-opt verifies after the passes).
// CANON-NOT: spyre.softmax
// CANON-NOT: spyre.layer_norm
// CANON-NOT: spyre.rms_norm


// softmax(x, d) = exp(x - max) / sum(exp(x - max)), max and sum along d with keepdim
// (the negative dim is normalised).
// CHECK-LABEL: func.func @softmax_f32(
// CHECK-NEXT:    [[MAX:%[0-9]+]] = spyre.reduce_max %x dims = [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[SUB:%[0-9]+]] = spyre.sub %x, [[MAX]] : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[EXP:%[0-9]+]] = spyre.exp [[SUB]] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[SUM:%[0-9]+]] = spyre.sum [[EXP]] dims = [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[DIV:%[0-9]+]] = spyre.div [[EXP]], [[SUM]] : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    func.return [[DIV]] : tensor<4x8xf32>
// CHECK-NEXT:  }
// SOFTMAX-LABEL: func.func @softmax_f32(
// SOFTMAX-NEXT: = spyre.reduce_max 
// NORMS-LABEL: func.func @softmax_f32(
// NORMS-NEXT: = spyre.softmax 
// RMS-LABEL: func.func @softmax_f32(
// RMS-NEXT: = spyre.softmax 
// NONE-LABEL: func.func @softmax_f32(
// NONE-NEXT: = spyre.softmax 
func.func @softmax_f32(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = spyre.softmax %x dim = -1 : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// Half inputs compute in f32, as torch's CPU kernel does, and round once at the end.
// CHECK-LABEL: func.func @softmax_f16_dim0(
// CHECK-NEXT:    [[CAST:%[0-9]+]] = spyre.cast %x : tensor<4x8xf16> -> tensor<4x8xf32>
// CHECK-NEXT:    [[MAX:%[0-9]+]] = spyre.reduce_max [[CAST]] dims = [0] keepdim : tensor<4x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT:    [[SUB:%[0-9]+]] = spyre.sub [[CAST]], [[MAX]] : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[EXP:%[0-9]+]] = spyre.exp [[SUB]] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[SUM:%[0-9]+]] = spyre.sum [[EXP]] dims = [0] keepdim : tensor<4x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT:    [[DIV:%[0-9]+]] = spyre.div [[EXP]], [[SUM]] : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[CAST2:%[0-9]+]] = spyre.cast [[DIV]] : tensor<4x8xf32> -> tensor<4x8xf16>
// CHECK-NEXT:    func.return [[CAST2]] : tensor<4x8xf16>
// CHECK-NEXT:  }
// SOFTMAX-LABEL: func.func @softmax_f16_dim0(
// SOFTMAX-NEXT: = spyre.cast 
// NORMS-LABEL: func.func @softmax_f16_dim0(
// NORMS-NEXT: = spyre.softmax 
// RMS-LABEL: func.func @softmax_f16_dim0(
// RMS-NEXT: = spyre.softmax 
// NONE-LABEL: func.func @softmax_f16_dim0(
// NONE-NEXT: = spyre.softmax 
func.func @softmax_f16_dim0(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = spyre.softmax %x dim = 0 : tensor<4x8xf16> -> tensor<4x8xf16>
  func.return %0 : tensor<4x8xf16>
}

// layer_norm: mean, centre, biased variance as the mean of squares, + eps (a rank-0
// spyre.full that broadcasts), rsqrt, scale, then * weight + bias.
// CHECK-LABEL: func.func @layer_norm_f32(
// CHECK-NEXT:    [[MEAN:%[0-9]+]] = spyre.mean %x dims = [2] keepdim : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
// CHECK-NEXT:    [[SUB:%[0-9]+]] = spyre.sub %x, [[MEAN]] : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    [[MUL:%[0-9]+]] = spyre.mul [[SUB]], [[SUB]] : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    [[MEAN2:%[0-9]+]] = spyre.mean [[MUL]] dims = [2] keepdim : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
// CHECK-NEXT:    [[EPS:%[0-9]+]] = spyre.full {value = 1.000000e-05 : f64} : tensor<f32>
// CHECK-NEXT:    [[ADD:%[0-9]+]] = spyre.add [[MEAN2]], [[EPS]] : tensor<2x4x1xf32>, tensor<f32> -> tensor<2x4x1xf32>
// CHECK-NEXT:    [[RSQRT:%[0-9]+]] = spyre.rsqrt [[ADD]] : tensor<2x4x1xf32> -> tensor<2x4x1xf32>
// CHECK-NEXT:    [[MUL2:%[0-9]+]] = spyre.mul [[SUB]], [[RSQRT]] : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    [[MUL3:%[0-9]+]] = spyre.mul [[MUL2]], %w : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    [[ADD2:%[0-9]+]] = spyre.add [[MUL3]], %b : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    func.return [[ADD2]] : tensor<2x4x8xf32>
// CHECK-NEXT:  }
// SOFTMAX-LABEL: func.func @layer_norm_f32(
// SOFTMAX-NEXT: = spyre.layer_norm 
// NORMS-LABEL: func.func @layer_norm_f32(
// NORMS-NEXT: = spyre.mean 
// RMS-LABEL: func.func @layer_norm_f32(
// RMS-NEXT: = spyre.layer_norm 
// NONE-LABEL: func.func @layer_norm_f32(
// NONE-NEXT: = spyre.layer_norm 
func.func @layer_norm_f32(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %0 = spyre.layer_norm %x weight(%w : tensor<8xf32>) bias(%b : tensor<8xf32>) {eps = 1.0e-05 : f64} : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  func.return %0 : tensor<2x4x8xf32>
}

// normalized_ndim = 2 reduces the last two dims; no weight or bias.
// CHECK-LABEL: func.func @layer_norm_2d_plain(
// CHECK-NEXT:    [[MEAN:%[0-9]+]] = spyre.mean %x dims = [1, 2] keepdim : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
// CHECK-NEXT:    [[SUB:%[0-9]+]] = spyre.sub %x, [[MEAN]] : tensor<2x4x8xf32>, tensor<2x1x1xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    [[MUL:%[0-9]+]] = spyre.mul [[SUB]], [[SUB]] : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    [[MEAN2:%[0-9]+]] = spyre.mean [[MUL]] dims = [1, 2] keepdim : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
// CHECK-NEXT:    [[EPS:%[0-9]+]] = spyre.full {value = 1.000000e-05 : f64} : tensor<f32>
// CHECK-NEXT:    [[ADD:%[0-9]+]] = spyre.add [[MEAN2]], [[EPS]] : tensor<2x1x1xf32>, tensor<f32> -> tensor<2x1x1xf32>
// CHECK-NEXT:    [[RSQRT:%[0-9]+]] = spyre.rsqrt [[ADD]] : tensor<2x1x1xf32> -> tensor<2x1x1xf32>
// CHECK-NEXT:    [[MUL2:%[0-9]+]] = spyre.mul [[SUB]], [[RSQRT]] : tensor<2x4x8xf32>, tensor<2x1x1xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    func.return [[MUL2]] : tensor<2x4x8xf32>
// CHECK-NEXT:  }
// SOFTMAX-LABEL: func.func @layer_norm_2d_plain(
// SOFTMAX-NEXT: = spyre.layer_norm 
// NORMS-LABEL: func.func @layer_norm_2d_plain(
// NORMS-NEXT: = spyre.mean 
// RMS-LABEL: func.func @layer_norm_2d_plain(
// RMS-NEXT: = spyre.layer_norm 
// NONE-LABEL: func.func @layer_norm_2d_plain(
// NONE-NEXT: = spyre.layer_norm 
func.func @layer_norm_2d_plain(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = spyre.layer_norm %x {eps = 1.0e-05 : f64, normalized_ndim = 2 : i64} : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  func.return %0 : tensor<2x4x8xf32>
}

// f16: statistics and the affine part in f32 (bias cast up), one cast back.
// CHECK-LABEL: func.func @layer_norm_f16_bias_only(
// CHECK-NEXT:    [[CAST:%[0-9]+]] = spyre.cast %x : tensor<4x8xf16> -> tensor<4x8xf32>
// CHECK-NEXT:    [[MEAN:%[0-9]+]] = spyre.mean [[CAST]] dims = [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[SUB:%[0-9]+]] = spyre.sub [[CAST]], [[MEAN]] : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[MUL:%[0-9]+]] = spyre.mul [[SUB]], [[SUB]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[MEAN2:%[0-9]+]] = spyre.mean [[MUL]] dims = [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[EPS:%[0-9]+]] = spyre.full {value = 1.000000e-05 : f64} : tensor<f32>
// CHECK-NEXT:    [[ADD:%[0-9]+]] = spyre.add [[MEAN2]], [[EPS]] : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[RSQRT:%[0-9]+]] = spyre.rsqrt [[ADD]] : tensor<4x1xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[MUL2:%[0-9]+]] = spyre.mul [[SUB]], [[RSQRT]] : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[CAST2:%[0-9]+]] = spyre.cast %b : tensor<8xf16> -> tensor<8xf32>
// CHECK-NEXT:    [[ADD2:%[0-9]+]] = spyre.add [[MUL2]], [[CAST2]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[CAST3:%[0-9]+]] = spyre.cast [[ADD2]] : tensor<4x8xf32> -> tensor<4x8xf16>
// CHECK-NEXT:    func.return [[CAST3]] : tensor<4x8xf16>
// CHECK-NEXT:  }
// SOFTMAX-LABEL: func.func @layer_norm_f16_bias_only(
// SOFTMAX-NEXT: = spyre.layer_norm 
// NORMS-LABEL: func.func @layer_norm_f16_bias_only(
// NORMS-NEXT: = spyre.cast 
// RMS-LABEL: func.func @layer_norm_f16_bias_only(
// RMS-NEXT: = spyre.layer_norm 
// NONE-LABEL: func.func @layer_norm_f16_bias_only(
// NONE-NEXT: = spyre.layer_norm 
func.func @layer_norm_f16_bias_only(%x: tensor<4x8xf16>, %b: tensor<8xf16>) -> tensor<4x8xf16> {
  %0 = spyre.layer_norm %x bias(%b : tensor<8xf16>) {eps = 1.0e-05 : f64} : tensor<4x8xf16> -> tensor<4x8xf16>
  func.return %0 : tensor<4x8xf16>
}

// rms_norm: x * rsqrt(mean(x * x, -1, keepdim) + eps) * weight.
// CHECK-LABEL: func.func @rms_norm_f32(
// CHECK-NEXT:    [[MUL:%[0-9]+]] = spyre.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[MEAN:%[0-9]+]] = spyre.mean [[MUL]] dims = [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[EPS:%[0-9]+]] = spyre.full {value = 1.000000e-06 : f64} : tensor<f32>
// CHECK-NEXT:    [[ADD:%[0-9]+]] = spyre.add [[MEAN]], [[EPS]] : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[RSQRT:%[0-9]+]] = spyre.rsqrt [[ADD]] : tensor<4x1xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[MUL2:%[0-9]+]] = spyre.mul %x, [[RSQRT]] : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[MUL3:%[0-9]+]] = spyre.mul [[MUL2]], %w : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    func.return [[MUL3]] : tensor<4x8xf32>
// CHECK-NEXT:  }
// SOFTMAX-LABEL: func.func @rms_norm_f32(
// SOFTMAX-NEXT: = spyre.rms_norm 
// NORMS-LABEL: func.func @rms_norm_f32(
// NORMS-NEXT: = spyre.mul 
// RMS-LABEL: func.func @rms_norm_f32(
// RMS-NEXT: = spyre.mul 
// NONE-LABEL: func.func @rms_norm_f32(
// NONE-NEXT: = spyre.rms_norm 
func.func @rms_norm_f32(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = spyre.rms_norm %x weight(%w : tensor<8xf32>) {eps = 1.0e-06 : f64} : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// bf16: all in f32, weight included, rounded once (torch 2.13's CPU kernel).
// CHECK-LABEL: func.func @rms_norm_bf16(
// CHECK-NEXT:    [[CAST:%[0-9]+]] = spyre.cast %x : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT:    [[MUL:%[0-9]+]] = spyre.mul [[CAST]], [[CAST]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[MEAN:%[0-9]+]] = spyre.mean [[MUL]] dims = [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[EPS:%[0-9]+]] = spyre.full {value = 1.000000e-06 : f64} : tensor<f32>
// CHECK-NEXT:    [[ADD:%[0-9]+]] = spyre.add [[MEAN]], [[EPS]] : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[RSQRT:%[0-9]+]] = spyre.rsqrt [[ADD]] : tensor<4x1xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[MUL2:%[0-9]+]] = spyre.mul [[CAST]], [[RSQRT]] : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[CAST2:%[0-9]+]] = spyre.cast %w : tensor<8xbf16> -> tensor<8xf32>
// CHECK-NEXT:    [[MUL3:%[0-9]+]] = spyre.mul [[MUL2]], [[CAST2]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[CAST3:%[0-9]+]] = spyre.cast [[MUL3]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT:    func.return [[CAST3]] : tensor<4x8xbf16>
// CHECK-NEXT:  }
// SOFTMAX-LABEL: func.func @rms_norm_bf16(
// SOFTMAX-NEXT: = spyre.rms_norm 
// NORMS-LABEL: func.func @rms_norm_bf16(
// NORMS-NEXT: = spyre.cast 
// RMS-LABEL: func.func @rms_norm_bf16(
// RMS-NEXT: = spyre.cast 
// NONE-LABEL: func.func @rms_norm_bf16(
// NONE-NEXT: = spyre.rms_norm 
func.func @rms_norm_bf16(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %0 = spyre.rms_norm %x weight(%w : tensor<8xbf16>) {eps = 1.0e-06 : f64} : tensor<4x8xbf16> -> tensor<4x8xbf16>
  func.return %0 : tensor<4x8xbf16>
}

// No weight.
// CHECK-LABEL: func.func @rms_norm_plain(
// CHECK-NEXT:    [[MUL:%[0-9]+]] = spyre.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    [[MEAN:%[0-9]+]] = spyre.mean [[MUL]] dims = [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[EPS:%[0-9]+]] = spyre.full {value = 1.000000e-06 : f64} : tensor<f32>
// CHECK-NEXT:    [[ADD:%[0-9]+]] = spyre.add [[MEAN]], [[EPS]] : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[RSQRT:%[0-9]+]] = spyre.rsqrt [[ADD]] : tensor<4x1xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[MUL2:%[0-9]+]] = spyre.mul %x, [[RSQRT]] : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    func.return [[MUL2]] : tensor<4x8xf32>
// CHECK-NEXT:  }
// SOFTMAX-LABEL: func.func @rms_norm_plain(
// SOFTMAX-NEXT: = spyre.rms_norm 
// NORMS-LABEL: func.func @rms_norm_plain(
// NORMS-NEXT: = spyre.mul 
// RMS-LABEL: func.func @rms_norm_plain(
// RMS-NEXT: = spyre.mul 
// NONE-LABEL: func.func @rms_norm_plain(
// NONE-NEXT: = spyre.rms_norm 
func.func @rms_norm_plain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = spyre.rms_norm %x {eps = 1.0e-06 : f64} : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// The composite's operand and result types (stick layouts included) are kept;
// intermediates carry no encoding.
// CHECK-LABEL: func.func @softmax_keeps_layout(
// CHECK-NEXT:    [[MAX:%[0-9]+]] = spyre.reduce_max %x dims = [1] keepdim : tensor<4x64xf32, #spyre.stick<dim = 1, device = [2, 4, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>> -> tensor<4x1xf32>
// CHECK-NEXT:    [[SUB:%[0-9]+]] = spyre.sub %x, [[MAX]] : tensor<4x64xf32, #spyre.stick<dim = 1, device = [2, 4, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>>, tensor<4x1xf32> -> tensor<4x64xf32>
// CHECK-NEXT:    [[EXP:%[0-9]+]] = spyre.exp [[SUB]] : tensor<4x64xf32> -> tensor<4x64xf32>
// CHECK-NEXT:    [[SUM:%[0-9]+]] = spyre.sum [[EXP]] dims = [1] keepdim : tensor<4x64xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[DIV:%[0-9]+]] = spyre.div [[EXP]], [[SUM]] : tensor<4x64xf32>, tensor<4x1xf32> -> tensor<4x64xf32, #spyre.stick<dim = 1, device = [2, 4, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>>
// CHECK-NEXT:    func.return [[DIV]] : tensor<4x64xf32, #spyre.stick<dim = 1, device = [2, 4, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>>
// CHECK-NEXT:  }
// SOFTMAX-LABEL: func.func @softmax_keeps_layout(
// SOFTMAX-NEXT: = spyre.reduce_max 
// NORMS-LABEL: func.func @softmax_keeps_layout(
// NORMS-NEXT: = spyre.softmax 
// RMS-LABEL: func.func @softmax_keeps_layout(
// RMS-NEXT: = spyre.softmax 
// NONE-LABEL: func.func @softmax_keeps_layout(
// NONE-NEXT: = spyre.softmax 
func.func @softmax_keeps_layout(%x: tensor<4x64xf32, #spyre.stick<dim = 1, device = [2, 4, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>>) -> tensor<4x64xf32, #spyre.stick<dim = 1, device = [2, 4, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>> {
  %0 = spyre.softmax %x dim = 1 : tensor<4x64xf32, #spyre.stick<dim = 1, device = [2, 4, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>> -> tensor<4x64xf32, #spyre.stick<dim = 1, device = [2, 4, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>>
  func.return %0 : tensor<4x64xf32, #spyre.stick<dim = 1, device = [2, 4, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>>
}

// The final cast produces exactly the composite's result type.
// CHECK-LABEL: func.func @rms_norm_f16_keeps_layout(
// CHECK-NEXT:    [[CAST:%[0-9]+]] = spyre.cast %x : tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>> -> tensor<4x64xf32>
// CHECK-NEXT:    [[MUL:%[0-9]+]] = spyre.mul [[CAST]], [[CAST]] : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
// CHECK-NEXT:    [[MEAN:%[0-9]+]] = spyre.mean [[MUL]] dims = [1] keepdim : tensor<4x64xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[EPS:%[0-9]+]] = spyre.full {value = 1.000000e-06 : f64} : tensor<f32>
// CHECK-NEXT:    [[ADD:%[0-9]+]] = spyre.add [[MEAN]], [[EPS]] : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[RSQRT:%[0-9]+]] = spyre.rsqrt [[ADD]] : tensor<4x1xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    [[MUL2:%[0-9]+]] = spyre.mul [[CAST]], [[RSQRT]] : tensor<4x64xf32>, tensor<4x1xf32> -> tensor<4x64xf32>
// CHECK-NEXT:    [[CAST2:%[0-9]+]] = spyre.cast [[MUL2]] : tensor<4x64xf32> -> tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>
// CHECK-NEXT:    func.return [[CAST2]] : tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>
// CHECK-NEXT:  }
// SOFTMAX-LABEL: func.func @rms_norm_f16_keeps_layout(
// SOFTMAX-NEXT: = spyre.rms_norm 
// NORMS-LABEL: func.func @rms_norm_f16_keeps_layout(
// NORMS-NEXT: = spyre.cast 
// RMS-LABEL: func.func @rms_norm_f16_keeps_layout(
// RMS-NEXT: = spyre.cast 
// NONE-LABEL: func.func @rms_norm_f16_keeps_layout(
// NONE-NEXT: = spyre.rms_norm 
func.func @rms_norm_f16_keeps_layout(%x: tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>) -> tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>> {
  %0 = spyre.rms_norm %x {eps = 1.0e-06 : f64} : tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>> -> tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>
  func.return %0 : tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>
}
