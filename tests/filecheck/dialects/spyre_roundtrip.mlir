// Every op of spyre.SPYRE_OPS in its custom form, printed back as written; the generic
// form of each; and stability: printed output (custom or generic) parses back to the
// same custom form.

// RUN: spyre-opt %s | filecheck %s
// RUN: spyre-opt %s | spyre-opt | filecheck %s
// RUN: spyre-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: spyre-opt %s --print-op-generic | spyre-opt | filecheck %s
// RUN: spyre-opt %s 2>&1 | %no-traceback


// CHECK-LABEL: func.func @elementwise(
// GENERIC-LABEL: sym_name = "elementwise"
func.func @elementwise(%a: tensor<4x64xf16>, %b: tensor<4x64xf16>, %row: tensor<64xf16>, %p: tensor<4x64xi1>, %q: tensor<4x64xi1>, %i: tensor<4x64xi32>) -> tensor<4x64xf16> {
  // CHECK-NEXT: %generic = spyre.add %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %generic = "spyre.add"(%a, %b) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16>
  %generic = "spyre.add"(%a, %b) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16>
  // CHECK-NEXT: %add = spyre.add %a, %row : tensor<4x64xf16>, tensor<64xf16> -> tensor<4x64xf16>
  // GENERIC: %add = "spyre.add"(%a, %row) : (tensor<4x64xf16>, tensor<64xf16>) -> tensor<4x64xf16>
  %add = spyre.add %a, %row : tensor<4x64xf16>, tensor<64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %sub = spyre.sub %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %sub = "spyre.sub"(%a, %b) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16>
  %sub = spyre.sub %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %mul = spyre.mul %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %mul = "spyre.mul"(%a, %b) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16>
  %mul = spyre.mul %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %div = spyre.div %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %div = "spyre.div"(%a, %b) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16>
  %div = spyre.div %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %max = spyre.max %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %max = "spyre.max"(%a, %b) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16>
  %max = spyre.max %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %min = spyre.min %i, %i : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi32>
  // GENERIC: %min = "spyre.min"(%i, %i) : (tensor<4x64xi32>, tensor<4x64xi32>) -> tensor<4x64xi32>
  %min = spyre.min %i, %i : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi32>
  // CHECK-NEXT: %pow = spyre.pow %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %pow = "spyre.pow"(%a, %b) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16>
  %pow = spyre.pow %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %eq = spyre.eq %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xi1>
  // GENERIC: %eq = "spyre.eq"(%a, %b) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xi1>
  %eq = spyre.eq %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xi1>
  // CHECK-NEXT: %ne = spyre.ne %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xi1>
  // GENERIC: %ne = "spyre.ne"(%a, %b) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xi1>
  %ne = spyre.ne %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xi1>
  // CHECK-NEXT: %lt = spyre.lt %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xi1>
  // GENERIC: %lt = "spyre.lt"(%a, %b) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xi1>
  %lt = spyre.lt %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xi1>
  // CHECK-NEXT: %le = spyre.le %i, %i : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi1>
  // GENERIC: %le = "spyre.le"(%i, %i) : (tensor<4x64xi32>, tensor<4x64xi32>) -> tensor<4x64xi1>
  %le = spyre.le %i, %i : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi1>
  // CHECK-NEXT: %gt = spyre.gt %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xi1>
  // GENERIC: %gt = "spyre.gt"(%a, %b) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xi1>
  %gt = spyre.gt %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xi1>
  // CHECK-NEXT: %ge = spyre.ge %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xi1>
  // GENERIC: %ge = "spyre.ge"(%a, %b) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xi1>
  %ge = spyre.ge %a, %b : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xi1>
  // CHECK-NEXT: %and = spyre.logical_and %p, %q : tensor<4x64xi1>, tensor<4x64xi1> -> tensor<4x64xi1>
  // GENERIC: %and = "spyre.logical_and"(%p, %q) : (tensor<4x64xi1>, tensor<4x64xi1>) -> tensor<4x64xi1>
  %and = spyre.logical_and %p, %q : tensor<4x64xi1>, tensor<4x64xi1> -> tensor<4x64xi1>
  // CHECK-NEXT: %or = spyre.logical_or %p, %q : tensor<4x64xi1>, tensor<4x64xi1> -> tensor<4x64xi1>
  // GENERIC: %or = "spyre.logical_or"(%p, %q) : (tensor<4x64xi1>, tensor<4x64xi1>) -> tensor<4x64xi1>
  %or = spyre.logical_or %p, %q : tensor<4x64xi1>, tensor<4x64xi1> -> tensor<4x64xi1>
  // CHECK-NEXT: %xor = spyre.logical_xor %p, %q : tensor<4x64xi1>, tensor<4x64xi1> -> tensor<4x64xi1>
  // GENERIC: %xor = "spyre.logical_xor"(%p, %q) : (tensor<4x64xi1>, tensor<4x64xi1>) -> tensor<4x64xi1>
  %xor = spyre.logical_xor %p, %q : tensor<4x64xi1>, tensor<4x64xi1> -> tensor<4x64xi1>
  // CHECK-NEXT: %sel = spyre.select %p, %a, %row : tensor<4x64xi1>, tensor<4x64xf16>, tensor<64xf16> -> tensor<4x64xf16>
  // GENERIC: %sel = "spyre.select"(%p, %a, %row) : (tensor<4x64xi1>, tensor<4x64xf16>, tensor<64xf16>) -> tensor<4x64xf16>
  %sel = spyre.select %p, %a, %row : tensor<4x64xi1>, tensor<4x64xf16>, tensor<64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %neg = spyre.neg %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %neg = "spyre.neg"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %neg = spyre.neg %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %abs = spyre.abs %i : tensor<4x64xi32> -> tensor<4x64xi32>
  // GENERIC: %abs = "spyre.abs"(%i) : (tensor<4x64xi32>) -> tensor<4x64xi32>
  %abs = spyre.abs %i : tensor<4x64xi32> -> tensor<4x64xi32>
  // CHECK-NEXT: %sign = spyre.sign %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %sign = "spyre.sign"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %sign = spyre.sign %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %relu = spyre.relu %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %relu = "spyre.relu"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %relu = spyre.relu %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %exp = spyre.exp %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %exp = "spyre.exp"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %exp = spyre.exp %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %log = spyre.log %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %log = "spyre.log"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %log = spyre.log %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %sqrt = spyre.sqrt %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %sqrt = "spyre.sqrt"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %sqrt = spyre.sqrt %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %rsqrt = spyre.rsqrt %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %rsqrt = "spyre.rsqrt"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %rsqrt = spyre.rsqrt %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %recip = spyre.reciprocal %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %recip = "spyre.reciprocal"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %recip = spyre.reciprocal %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %tanh = spyre.tanh %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %tanh = "spyre.tanh"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %tanh = spyre.tanh %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %sigmoid = spyre.sigmoid %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %sigmoid = "spyre.sigmoid"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %sigmoid = spyre.sigmoid %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %erf = spyre.erf %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %erf = "spyre.erf"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %erf = spyre.erf %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %log1p = spyre.log1p %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %log1p = "spyre.log1p"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %log1p = spyre.log1p %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %silu = spyre.silu %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %silu = "spyre.silu"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %silu = spyre.silu %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %sin = spyre.sin %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %sin = "spyre.sin"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %sin = spyre.sin %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %cos = spyre.cos %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %cos = "spyre.cos"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %cos = spyre.cos %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %floor = spyre.floor %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %floor = "spyre.floor"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %floor = spyre.floor %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %ceil = spyre.ceil %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %ceil = "spyre.ceil"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %ceil = spyre.ceil %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %round = spyre.round %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %round = "spyre.round"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %round = spyre.round %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %bnot = spyre.bitwise_not %i : tensor<4x64xi32> -> tensor<4x64xi32>
  // GENERIC: %bnot = "spyre.bitwise_not"(%i) : (tensor<4x64xi32>) -> tensor<4x64xi32>
  %bnot = spyre.bitwise_not %i : tensor<4x64xi32> -> tensor<4x64xi32>
  // CHECK-NEXT: %bitwise_and = spyre.bitwise_and %i, %bnot : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi32>
  // GENERIC: %bitwise_and = "spyre.bitwise_and"(%i, %bnot) : (tensor<4x64xi32>, tensor<4x64xi32>) -> tensor<4x64xi32>
  %bitwise_and = spyre.bitwise_and %i, %bnot : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi32>
  // CHECK-NEXT: %bitwise_or = spyre.bitwise_or %i, %bnot : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi32>
  // GENERIC: %bitwise_or = "spyre.bitwise_or"(%i, %bnot) : (tensor<4x64xi32>, tensor<4x64xi32>) -> tensor<4x64xi32>
  %bitwise_or = spyre.bitwise_or %i, %bnot : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi32>
  // CHECK-NEXT: %bitwise_xor = spyre.bitwise_xor %i, %bnot : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi32>
  // GENERIC: %bitwise_xor = "spyre.bitwise_xor"(%i, %bnot) : (tensor<4x64xi32>, tensor<4x64xi32>) -> tensor<4x64xi32>
  %bitwise_xor = spyre.bitwise_xor %i, %bnot : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi32>
  // CHECK-NEXT: %shift_left = spyre.shift_left %i, %bnot : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi32>
  // GENERIC: %shift_left = "spyre.shift_left"(%i, %bnot) : (tensor<4x64xi32>, tensor<4x64xi32>) -> tensor<4x64xi32>
  %shift_left = spyre.shift_left %i, %bnot : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi32>
  // CHECK-NEXT: %shift_right = spyre.shift_right %i, %bnot : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi32>
  // GENERIC: %shift_right = "spyre.shift_right"(%i, %bnot) : (tensor<4x64xi32>, tensor<4x64xi32>) -> tensor<4x64xi32>
  %shift_right = spyre.shift_right %i, %bnot : tensor<4x64xi32>, tensor<4x64xi32> -> tensor<4x64xi32>
  // CHECK-NEXT: %not = spyre.logical_not %p : tensor<4x64xi1> -> tensor<4x64xi1>
  // GENERIC: %not = "spyre.logical_not"(%p) : (tensor<4x64xi1>) -> tensor<4x64xi1>
  %not = spyre.logical_not %p : tensor<4x64xi1> -> tensor<4x64xi1>
  // CHECK-NEXT: %gelu = spyre.gelu %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %gelu = "spyre.gelu"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %gelu = spyre.gelu %a : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %gelu_tanh = spyre.gelu %a {approximate = "tanh"} : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %gelu_tanh = "spyre.gelu"(%a) <{approximate = "tanh"}> : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %gelu_tanh = spyre.gelu %a {approximate = "tanh"} : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %clamp = spyre.clamp %a {min = -1.000000e+00 : f64, max = 1.000000e+00 : f64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %clamp = "spyre.clamp"(%a) <{min = -1.000000e+00 : f64, max = 1.000000e+00 : f64}> : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %clamp = spyre.clamp %a {min = -1.0 : f64, max = 1.0 : f64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %clamp_min = spyre.clamp %a {min = 0.000000e+00 : f64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %clamp_min = "spyre.clamp"(%a) <{min = 0.000000e+00 : f64}> : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %clamp_min = spyre.clamp %a {min = 0.0 : f64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %cast = spyre.cast %a : tensor<4x64xf16> -> tensor<4x64xf32>
  // GENERIC: %cast = "spyre.cast"(%a) : (tensor<4x64xf16>) -> tensor<4x64xf32>
  %cast = spyre.cast %a : tensor<4x64xf16> -> tensor<4x64xf32>
  // CHECK-NEXT: %cast_bf16 = spyre.cast %cast : tensor<4x64xf32> -> tensor<4x64xbf16>
  // GENERIC: %cast_bf16 = "spyre.cast"(%cast) : (tensor<4x64xf32>) -> tensor<4x64xbf16>
  %cast_bf16 = spyre.cast %cast : tensor<4x64xf32> -> tensor<4x64xbf16>
  // CHECK-NEXT: %cast_i64 = spyre.cast %i : tensor<4x64xi32> -> tensor<4x64xi64>
  // GENERIC: %cast_i64 = "spyre.cast"(%i) : (tensor<4x64xi32>) -> tensor<4x64xi64>
  %cast_i64 = spyre.cast %i : tensor<4x64xi32> -> tensor<4x64xi64>
  // CHECK-NEXT: func.return %add : tensor<4x64xf16>
  func.return %add : tensor<4x64xf16>
}


// CHECK-LABEL: func.func @matmul_and_reductions(
// GENERIC-LABEL: sym_name = "matmul_and_reductions"
func.func @matmul_and_reductions(%x: tensor<2x4x64xf32>, %w: tensor<64x32xf32>, %v: tensor<64xf32>, %ids: tensor<2x3xi64>) -> tensor<2x4x32xf32> {
  // CHECK-NEXT: %mm = spyre.matmul %x, %w : tensor<2x4x64xf32>, tensor<64x32xf32> -> tensor<2x4x32xf32>
  // GENERIC: %mm = "spyre.matmul"(%x, %w) : (tensor<2x4x64xf32>, tensor<64x32xf32>) -> tensor<2x4x32xf32>
  %mm = spyre.matmul %x, %w : tensor<2x4x64xf32>, tensor<64x32xf32> -> tensor<2x4x32xf32>
  // CHECK-NEXT: %mv = spyre.matmul %x, %v : tensor<2x4x64xf32>, tensor<64xf32> -> tensor<2x4xf32>
  // GENERIC: %mv = "spyre.matmul"(%x, %v) : (tensor<2x4x64xf32>, tensor<64xf32>) -> tensor<2x4xf32>
  %mv = spyre.matmul %x, %v : tensor<2x4x64xf32>, tensor<64xf32> -> tensor<2x4xf32>
  // CHECK-NEXT: %sum = spyre.sum %x dims = [-1] : tensor<2x4x64xf32> -> tensor<2x4xf32>
  // GENERIC: %sum = "spyre.sum"(%x) <{dims = array<i64: -1>}> : (tensor<2x4x64xf32>) -> tensor<2x4xf32>
  %sum = spyre.sum %x dims = [-1] : tensor<2x4x64xf32> -> tensor<2x4xf32>
  // CHECK-NEXT: %mean = spyre.mean %x dims = [1, 2] keepdim : tensor<2x4x64xf32> -> tensor<2x1x1xf32>
  // GENERIC: %mean = "spyre.mean"(%x) <{dims = array<i64: 1, 2>, keepdim}> : (tensor<2x4x64xf32>) -> tensor<2x1x1xf32>
  %mean = spyre.mean %x dims = [1, 2] keepdim : tensor<2x4x64xf32> -> tensor<2x1x1xf32>
  // CHECK-NEXT: %rmax = spyre.reduce_max %x dims = [0] : tensor<2x4x64xf32> -> tensor<4x64xf32>
  // GENERIC: %rmax = "spyre.reduce_max"(%x) <{dims = array<i64: 0>}> : (tensor<2x4x64xf32>) -> tensor<4x64xf32>
  %rmax = spyre.reduce_max %x dims = [0] : tensor<2x4x64xf32> -> tensor<4x64xf32>
  // CHECK-NEXT: %rmin = spyre.reduce_min %x dims = [2] keepdim : tensor<2x4x64xf32> -> tensor<2x4x1xf32>
  // GENERIC: %rmin = "spyre.reduce_min"(%x) <{dims = array<i64: 2>, keepdim}> : (tensor<2x4x64xf32>) -> tensor<2x4x1xf32>
  %rmin = spyre.reduce_min %x dims = [2] keepdim : tensor<2x4x64xf32> -> tensor<2x4x1xf32>
  // CHECK-NEXT: %argmax = spyre.argmax %x dims = [2] : tensor<2x4x64xf32> -> tensor<2x4xi64>
  // GENERIC: %argmax = "spyre.argmax"(%x) <{dims = array<i64: 2>}> : (tensor<2x4x64xf32>) -> tensor<2x4xi64>
  %argmax = spyre.argmax %x dims = [2] : tensor<2x4x64xf32> -> tensor<2x4xi64>
  // CHECK-NEXT: %argmin = spyre.argmin %x dims = [1] keepdim : tensor<2x4x64xf32> -> tensor<2x1x64xi64>
  // GENERIC: %argmin = "spyre.argmin"(%x) <{dims = array<i64: 1>, keepdim}> : (tensor<2x4x64xf32>) -> tensor<2x1x64xi64>
  %argmin = spyre.argmin %x dims = [1] keepdim : tensor<2x4x64xf32> -> tensor<2x1x64xi64>
  // CHECK-NEXT: %var = spyre.var %x dims = [2] {correction = 0 : i64} : tensor<2x4x64xf32> -> tensor<2x4xf32>
  // GENERIC: %var = "spyre.var"(%x) <{dims = array<i64: 2>, correction = 0 : i64}> : (tensor<2x4x64xf32>) -> tensor<2x4xf32>
  %var = spyre.var %x dims = [2] {correction = 0 : i64} : tensor<2x4x64xf32> -> tensor<2x4xf32>
  // CHECK-NEXT: %var1 = spyre.var %x dims = [2] keepdim : tensor<2x4x64xf32> -> tensor<2x4x1xf32>
  // GENERIC: %var1 = "spyre.var"(%x) <{dims = array<i64: 2>, keepdim}> : (tensor<2x4x64xf32>) -> tensor<2x4x1xf32>
  %var1 = spyre.var %x dims = [2] keepdim : tensor<2x4x64xf32> -> tensor<2x4x1xf32>
  // CHECK-NEXT: %cumsum = spyre.cumsum %x dim = -1 : tensor<2x4x64xf32> -> tensor<2x4x64xf32>
  // GENERIC: %cumsum = "spyre.cumsum"(%x) <{dim = -1 : i64}> : (tensor<2x4x64xf32>) -> tensor<2x4x64xf32>
  %cumsum = spyre.cumsum %x dim = -1 : tensor<2x4x64xf32> -> tensor<2x4x64xf32>
  // CHECK-NEXT: %cumsum_i = spyre.cumsum %ids dim = 0 : tensor<2x3xi64> -> tensor<2x3xi64>
  // GENERIC: %cumsum_i = "spyre.cumsum"(%ids) <{dim = 0 : i64}> : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %cumsum_i = spyre.cumsum %ids dim = 0 : tensor<2x3xi64> -> tensor<2x3xi64>
  // CHECK-NEXT: %sort = spyre.sort %x dim = -1 k = 3 descending : tensor<2x4x64xf32> -> tensor<2x4x3xf32>
  // GENERIC: %sort = "spyre.sort"(%x) <{dim = -1 : i64, k = 3 : i64, descending}> : (tensor<2x4x64xf32>) -> tensor<2x4x3xf32>
  %sort = spyre.sort %x dim = -1 k = 3 descending : tensor<2x4x64xf32> -> tensor<2x4x3xf32>
  // CHECK-NEXT: %argsort = spyre.argsort %ids dim = 0 : tensor<2x3xi64> -> tensor<2x3xi64>
  // GENERIC: %argsort = "spyre.argsort"(%ids) <{dim = 0 : i64}> : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %argsort = spyre.argsort %ids dim = 0 : tensor<2x3xi64> -> tensor<2x3xi64>
  // CHECK-NEXT: func.return %mm : tensor<2x4x32xf32>
  func.return %mm : tensor<2x4x32xf32>
}


// CHECK-LABEL: func.func @shapes(
// GENERIC-LABEL: sym_name = "shapes"
func.func @shapes(%x: tensor<2x4x64xf16>, %t: tensor<100x64xf16>, %ids: tensor<2x3xi64>, %one: tensor<4x1xf16>, %pos: tensor<4xi64>) -> tensor<8x64xf16> {
  // CHECK-NEXT: %reshape = spyre.reshape %x : tensor<2x4x64xf16> -> tensor<8x64xf16>
  // GENERIC: %reshape = "spyre.reshape"(%x) : (tensor<2x4x64xf16>) -> tensor<8x64xf16>
  %reshape = spyre.reshape %x : tensor<2x4x64xf16> -> tensor<8x64xf16>
  // CHECK-NEXT: %transpose = spyre.transpose %x perm = [0, 2, 1] : tensor<2x4x64xf16> -> tensor<2x64x4xf16>
  // GENERIC: %transpose = "spyre.transpose"(%x) <{perm = array<i64: 0, 2, 1>}> : (tensor<2x4x64xf16>) -> tensor<2x64x4xf16>
  %transpose = spyre.transpose %x perm = [0, 2, 1] : tensor<2x4x64xf16> -> tensor<2x64x4xf16>
  // CHECK-NEXT: %bcast = spyre.broadcast_to %one : tensor<4x1xf16> -> tensor<3x4x64xf16>
  // GENERIC: %bcast = "spyre.broadcast_to"(%one) : (tensor<4x1xf16>) -> tensor<3x4x64xf16>
  %bcast = spyre.broadcast_to %one : tensor<4x1xf16> -> tensor<3x4x64xf16>
  // CHECK-NEXT: %slice = spyre.slice %x starts = [0, 1, 0] stops = [2, 4, 64] steps = [1, 2, 32] : tensor<2x4x64xf16> -> tensor<2x2x2xf16>
  // GENERIC: %slice = "spyre.slice"(%x) <{starts = array<i64: 0, 1, 0>, stops = array<i64: 2, 4, 64>, steps = array<i64: 1, 2, 32>}> : (tensor<2x4x64xf16>) -> tensor<2x2x2xf16>
  %slice = spyre.slice %x starts = [0, 1, 0] stops = [2, 4, 64] steps = [1, 2, 32] : tensor<2x4x64xf16> -> tensor<2x2x2xf16>
  // CHECK-NEXT: %concat = spyre.concat %x, %x dim = 1 : tensor<2x4x64xf16>, tensor<2x4x64xf16> -> tensor<2x8x64xf16>
  // GENERIC: %concat = "spyre.concat"(%x, %x) <{dim = 1 : i64}> : (tensor<2x4x64xf16>, tensor<2x4x64xf16>) -> tensor<2x8x64xf16>
  %concat = spyre.concat %x, %x dim = 1 : tensor<2x4x64xf16>, tensor<2x4x64xf16> -> tensor<2x8x64xf16>
  // CHECK-NEXT: %pad = spyre.pad %x low = [0, 1, 0] high = [0, 2, 0] value = 0.000000e+00 : tensor<2x4x64xf16> -> tensor<2x7x64xf16>
  // GENERIC: %pad = "spyre.pad"(%x) <{low = array<i64: 0, 1, 0>, high = array<i64: 0, 2, 0>, value = 0.000000e+00 : f64}> : (tensor<2x4x64xf16>) -> tensor<2x7x64xf16>
  %pad = spyre.pad %x low = [0, 1, 0] high = [0, 2, 0] value = 0.0 : tensor<2x4x64xf16> -> tensor<2x7x64xf16>
  // CHECK-NEXT: %gather = spyre.gather %t[%ids] : tensor<100x64xf16>, tensor<2x3xi64> -> tensor<2x3x64xf16>
  // GENERIC: %gather = "spyre.gather"(%t, %ids) : (tensor<100x64xf16>, tensor<2x3xi64>) -> tensor<2x3x64xf16>
  %gather = spyre.gather %t[%ids] : tensor<100x64xf16>, tensor<2x3xi64> -> tensor<2x3x64xf16>
  // CHECK-NEXT: %scatter = spyre.scatter %concat[%pos], %x dim = 1 : tensor<2x8x64xf16>, tensor<4xi64>, tensor<2x4x64xf16> -> tensor<2x8x64xf16>
  // GENERIC: %scatter = "spyre.scatter"(%concat, %pos, %x) <{dim = 1 : i64}> : (tensor<2x8x64xf16>, tensor<4xi64>, tensor<2x4x64xf16>) -> tensor<2x8x64xf16>
  %scatter = spyre.scatter %concat[%pos], %x dim = 1 : tensor<2x8x64xf16>, tensor<4xi64>, tensor<2x4x64xf16> -> tensor<2x8x64xf16>
  // CHECK-NEXT: %scatter_add = spyre.scatter_add %scatter[%pos], %x dim = 1 : tensor<2x8x64xf16>, tensor<4xi64>, tensor<2x4x64xf16> -> tensor<2x8x64xf16>
  // GENERIC: %scatter_add = "spyre.scatter_add"(%scatter, %pos, %x) <{dim = 1 : i64}> : (tensor<2x8x64xf16>, tensor<4xi64>, tensor<2x4x64xf16>) -> tensor<2x8x64xf16>
  %scatter_add = spyre.scatter_add %scatter[%pos], %x dim = 1 : tensor<2x8x64xf16>, tensor<4xi64>, tensor<2x4x64xf16> -> tensor<2x8x64xf16>
  // CHECK-NEXT: func.return %reshape : tensor<8x64xf16>
  func.return %reshape : tensor<8x64xf16>
}


// CHECK-LABEL: func.func @constants(
// GENERIC-LABEL: sym_name = "constants"
func.func @constants() -> tensor<4x64xf32> {
  // CHECK-NEXT: %full = spyre.full {value = 1.000000e+00 : f64} : tensor<4x64xf32>
  // GENERIC: %full = "spyre.full"() <{value = 1.000000e+00 : f64}> : () -> tensor<4x64xf32>
  %full = spyre.full {value = 1.0 : f64} : tensor<4x64xf32>
  // CHECK-NEXT: %zero = spyre.full {value = 0 : i64} : tensor<i32>
  // GENERIC: %zero = "spyre.full"() <{value = 0 : i64}> : () -> tensor<i32>
  %zero = spyre.full {value = 0 : i64} : tensor<i32>
  // CHECK-NEXT: %dense = spyre.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
  // GENERIC: %dense = "spyre.constant"() <{value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>}> : () -> tensor<4xf32>
  %dense = spyre.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  // CHECK-NEXT: %splat = spyre.constant dense<true> : tensor<2x2xi1>
  // GENERIC: %splat = "spyre.constant"() <{value = dense<true> : tensor<2x2xi1>}> : () -> tensor<2x2xi1>
  %splat = spyre.constant dense<true> : tensor<2x2xi1>
  // CHECK-NEXT: %iota = spyre.iota {dim = 0 : i64, start = 0 : i64, step = 1 : i64} : tensor<16xi64>
  // GENERIC: %iota = "spyre.iota"() <{dim = 0 : i64, start = 0 : i64, step = 1 : i64}> : () -> tensor<16xi64>
  %iota = spyre.iota {dim = 0 : i64, start = 0 : i64, step = 1 : i64} : tensor<16xi64>
  // CHECK-NEXT: %iota2 = spyre.iota {dim = -1 : i64, start = 5 : i64, step = -2 : i64} : tensor<3x4xi32>
  // GENERIC: %iota2 = "spyre.iota"() <{dim = -1 : i64, start = 5 : i64, step = -2 : i64}> : () -> tensor<3x4xi32>
  %iota2 = spyre.iota {dim = -1 : i64, start = 5 : i64, step = -2 : i64} : tensor<3x4xi32>
  // CHECK-NEXT: func.return %full : tensor<4x64xf32>
  func.return %full : tensor<4x64xf32>
}


// CHECK-LABEL: func.func @composites(
// GENERIC-LABEL: sym_name = "composites"
func.func @composites(%x: tensor<4x64xf16>, %w: tensor<64xf16>, %b: tensor<64xf16>, %w2: tensor<4x64xf16>) -> tensor<4x64xf16> {
  // CHECK-NEXT: %softmax = spyre.softmax %x dim = -1 : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %softmax = "spyre.softmax"(%x) <{dim = -1 : i64}> : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %softmax = spyre.softmax %x dim = -1 : tensor<4x64xf16> -> tensor<4x64xf16>
  // The generic form lists (input, weight, bias), absent ones as 0 in the segment sizes.
  // CHECK-NEXT: %ln = spyre.layer_norm %x weight(%w : tensor<64xf16>) bias(%b : tensor<64xf16>) {eps = 1.000000e-05 : f64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %ln = "spyre.layer_norm"(%x, %w, %b) <{eps = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<4x64xf16>, tensor<64xf16>, tensor<64xf16>) -> tensor<4x64xf16>
  %ln = spyre.layer_norm %x weight(%w : tensor<64xf16>) bias(%b : tensor<64xf16>) {eps = 1.0e-05 : f64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %ln_bias = spyre.layer_norm %x bias(%b : tensor<64xf16>) {eps = 1.000000e-05 : f64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %ln_bias = "spyre.layer_norm"(%x, %b) <{eps = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 0, 1>}> : (tensor<4x64xf16>, tensor<64xf16>) -> tensor<4x64xf16>
  %ln_bias = spyre.layer_norm %x bias(%b : tensor<64xf16>) {eps = 1.0e-05 : f64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %ln_plain = spyre.layer_norm %x {eps = 1.000000e-05 : f64, normalized_ndim = 2 : i64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %ln_plain = "spyre.layer_norm"(%x) <{eps = 1.000000e-05 : f64, normalized_ndim = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %ln_plain = spyre.layer_norm %x {eps = 1.0e-05 : f64, normalized_ndim = 2 : i64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %ln_2d = spyre.layer_norm %x weight(%w2 : tensor<4x64xf16>) {eps = 1.000000e-05 : f64, normalized_ndim = 2 : i64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %ln_2d = "spyre.layer_norm"(%x, %w2) <{eps = 1.000000e-05 : f64, normalized_ndim = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16>
  %ln_2d = spyre.layer_norm %x weight(%w2 : tensor<4x64xf16>) {eps = 1.0e-05 : f64, normalized_ndim = 2 : i64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %rms = spyre.rms_norm %x weight(%w : tensor<64xf16>) {eps = 1.000000e-06 : f64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %rms = "spyre.rms_norm"(%x, %w) <{eps = 1.000000e-06 : f64}> : (tensor<4x64xf16>, tensor<64xf16>) -> tensor<4x64xf16>
  %rms = spyre.rms_norm %x weight(%w : tensor<64xf16>) {eps = 1.0e-06 : f64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: %rms_plain = spyre.rms_norm %x {eps = 1.000000e-06 : f64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // GENERIC: %rms_plain = "spyre.rms_norm"(%x) <{eps = 1.000000e-06 : f64}> : (tensor<4x64xf16>) -> tensor<4x64xf16>
  %rms_plain = spyre.rms_norm %x {eps = 1.0e-06 : f64} : tensor<4x64xf16> -> tensor<4x64xf16>
  // CHECK-NEXT: func.return %softmax : tensor<4x64xf16>
  func.return %softmax : tensor<4x64xf16>
}


// CHECK-LABEL: func.func @stick_layout(
// GENERIC-LABEL: sym_name = "stick_layout"
func.func @stick_layout(%x: tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>) -> tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>> {
  // CHECK-NEXT: %stick_relu = spyre.relu %x : tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>> -> tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>
  // GENERIC: %stick_relu = "spyre.relu"(%x) : (tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>) -> tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>
  %stick_relu = spyre.relu %x : tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>> -> tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>
  // CHECK-NEXT: func.return %stick_relu : tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>
  func.return %stick_relu : tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>
}

// A restickify changes only the layout; its input may carry none (a reshape that is no
// view of its source, see spyre_ir/passes/stickify.py).
// CHECK-LABEL: func.func @restickify(
// GENERIC-LABEL: sym_name = "restickify"
func.func @restickify(%x: tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>, %plain: tensor<5x100x150xf16>) -> tensor<5x100x150xf16, #spyre.stick<dim = 1, device = [150, 2, 5, 64], map = [2, 1, 0, 1], strides = [1, 9600, 15000, 150], pad = 28>> {
  // CHECK-NEXT: %restick = spyre.restickify %x : tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>> -> tensor<5x100x150xf16, #spyre.stick<dim = 1, device = [150, 2, 5, 64], map = [2, 1, 0, 1], strides = [1, 9600, 15000, 150], pad = 28>>
  // GENERIC: %restick = "spyre.restickify"(%x) : (tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>) -> tensor<5x100x150xf16, #spyre.stick<dim = 1, device = [150, 2, 5, 64], map = [2, 1, 0, 1], strides = [1, 9600, 15000, 150], pad = 28>>
  %restick = spyre.restickify %x : tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>> -> tensor<5x100x150xf16, #spyre.stick<dim = 1, device = [150, 2, 5, 64], map = [2, 1, 0, 1], strides = [1, 9600, 15000, 150], pad = 28>>
  // CHECK-NEXT: %restick_plain = spyre.restickify %plain : tensor<5x100x150xf16> -> tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>
  // GENERIC: %restick_plain = "spyre.restickify"(%plain) : (tensor<5x100x150xf16>) -> tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>
  %restick_plain = spyre.restickify %plain : tensor<5x100x150xf16> -> tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>
  // CHECK-NEXT: func.return %restick : tensor<5x100x150xf16, #spyre.stick<dim = 1, device = [150, 2, 5, 64], map = [2, 1, 0, 1], strides = [1, 9600, 15000, 150], pad = 28>>
  func.return %restick : tensor<5x100x150xf16, #spyre.stick<dim = 1, device = [150, 2, 5, 64], map = [2, 1, 0, 1], strides = [1, 9600, 15000, 150], pad = 28>>
}
