// RUN: spyre-opt %s --split-input-file --verify-diagnostics

func.func @heads_not_a_multiple(%q: tensor<1x3x8x64xf16>, %k: tensor<1x2x8x64xf16>) -> tensor<1x3x8x64xf16> {
  // expected-error @+1 {{the query heads be a multiple of the key heads}}
  %o = spyre.attention %q, %k, %k scale = 1.0 : tensor<1x3x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16> -> tensor<1x3x8x64xf16>
  func.return %o : tensor<1x3x8x64xf16>
}

// -----

func.func @mask_does_not_broadcast(%q: tensor<1x2x8x64xf16>, %m: tensor<8x9xf16>) -> tensor<1x2x8x64xf16> {
  // expected-error @+1 {{shapes [8, 9] and [1, 2, 8, 8] do not broadcast}}
  %o = spyre.attention %q, %q, %q mask(%m : tensor<8x9xf16>) scale = 1.0 : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16> -> tensor<1x2x8x64xf16>
  func.return %o : tensor<1x2x8x64xf16>
}

// -----

func.func @rank_three(%q: tensor<2x8x64xf16>) -> tensor<2x8x64xf16> {
  // expected-error @+1 {{takes rank-4 q, k and v}}
  %o = spyre.attention %q, %q, %q scale = 1.0 : tensor<2x8x64xf16>, tensor<2x8x64xf16>, tensor<2x8x64xf16> -> tensor<2x8x64xf16>
  func.return %o : tensor<2x8x64xf16>
}

// -----

func.func @integer_mask(%q: tensor<1x2x8x64xf16>, %m: tensor<8x8xi32>) -> tensor<1x2x8x64xf16> {
  // expected-error @+1 {{the mask must be float or i1}}
  %o = spyre.attention %q, %q, %q mask(%m : tensor<8x8xi32>) scale = 1.0 : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16> -> tensor<1x2x8x64xf16>
  func.return %o : tensor<1x2x8x64xf16>
}
