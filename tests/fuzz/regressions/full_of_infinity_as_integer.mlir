

// Written by hand in i64: a fused softmax, a boolean mask filled with -inf where it is
// false (masked_fill(~keep, -inf)): the mask is read as is, keeping where true.
// CHECK-LABEL: func.func @manual_bool_mask
// CHECK-NEXT:    %[[M:.*]] = spyre.reshape %keep : tensor<24x24xi1> -> tensor<1x1x24x24xi1>
// CHECK-NEXT:    %[[O:.*]] = spyre.attention %q, %k, %v mask(%[[M]] : tensor<1x1x24x24xi1>) scale = 1.250000e-01 : tensor<2x3x24x64xf16>, tensor<2x3x24x64xf16>, tensor<2x3x24x64xf16> -> tensor<2x3x24x64xf16>
// CHECK-NEXT:    func.return %[[O]]
func.func @manual_bool_mask(%q: tensor<2x3x24x64xf16>, %k: tensor<2x3x24x64xf16>, %v: tensor<2x3x24x64xf16>, %keep: tensor<24x24xi1>) -> tensor<2x3x24x64xf16> {
  %kt = spyre.transpose %k perm = [0, 1, 3, 2] : tensor<2x3x24x64xf16> -> tensor<2x3x64x24xf16>
  %s = spyre.matmul %q, %kt : tensor<2x3x24x64xf16>, tensor<2x3x64x24xf16> -> tensor<2x3x24x24xf16>
  %c = spyre.full {value = 0.125 : f64} : tensor<i64>
  %ss = spyre.mul %s, %c : tensor<2x3x24x24xf16>, tensor<i64> -> tensor<2x3x24x24xf16>
  %drop = spyre.logical_not %keep : tensor<24x24xi1> -> tensor<24x24xi1>
  %ninf = spyre.full {value = 0xFFF0000000000000 : f64} : tensor<i64>
  %x = spyre.select %drop, %ninf, %ss : tensor<24x24xi1>, tensor<i64>, tensor<2x3x24x24xf16> -> tensor<2x3x24x24xf16>
  %p = spyre.softmax %x dim = -1 : tensor<2x3x24x24xf16> -> tensor<2x3x24x24xf16>
  %o = spyre.matmul %p, %v : tensor<2x3x24x24xf16>, tensor<2x3x24x64xf16> -> tensor<2x3x24x64xf16>
  func.return %o : tensor<2x3x24x64xf16>
}

