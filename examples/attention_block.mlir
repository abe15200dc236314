// A hand-written pre-norm attention block at the tensor level (L1), f16:
// RMSNorm, one head of causal self-attention, output projection, residual add.
// Try: spyre-opt examples/attention_block.mlir -p spyre-decompose,canonicalize
func.func @main(%x: tensor<128x256xf16>, %norm_w: tensor<256xf16>,
                %wq: tensor<256x64xf16>, %wk: tensor<256x64xf16>, %wv: tensor<256x64xf16>,
                %wo: tensor<64x256xf16>) -> tensor<128x256xf16> {
  %h = spyre.rms_norm %x weight(%norm_w : tensor<256xf16>) {eps = 1.0e-05 : f64} : tensor<128x256xf16> -> tensor<128x256xf16>
  %q = spyre.matmul %h, %wq : tensor<128x256xf16>, tensor<256x64xf16> -> tensor<128x64xf16>
  %k = spyre.matmul %h, %wk : tensor<128x256xf16>, tensor<256x64xf16> -> tensor<128x64xf16>
  %v = spyre.matmul %h, %wv : tensor<128x256xf16>, tensor<256x64xf16> -> tensor<128x64xf16>
  %kt = spyre.transpose %k perm = [1, 0] : tensor<128x64xf16> -> tensor<64x128xf16>
  %s = spyre.matmul %q, %kt : tensor<128x64xf16>, tensor<64x128xf16> -> tensor<128x128xf16>
  %scale = spyre.full {value = 0.125 : f64} : tensor<f16>
  %scaled = spyre.mul %s, %scale : tensor<128x128xf16>, tensor<f16> -> tensor<128x128xf16>
  // Causal mask: key position > query position is masked out.
  %row = spyre.iota {dim = 0 : i64, start = 0 : i64, step = 1 : i64} : tensor<128x1xi64>
  %col = spyre.iota {dim = 1 : i64, start = 0 : i64, step = 1 : i64} : tensor<1x128xi64>
  %future = spyre.gt %col, %row : tensor<1x128xi64>, tensor<128x1xi64> -> tensor<128x128xi1>
  %ninf = spyre.full {value = -6.0e+04 : f64} : tensor<f16>
  %masked = spyre.select %future, %ninf, %scaled : tensor<128x128xi1>, tensor<f16>, tensor<128x128xf16> -> tensor<128x128xf16>
  %p = spyre.softmax %masked dim = -1 : tensor<128x128xf16> -> tensor<128x128xf16>
  %ctx = spyre.matmul %p, %v : tensor<128x128xf16>, tensor<128x64xf16> -> tensor<128x64xf16>
  %o = spyre.matmul %ctx, %wo : tensor<128x64xf16>, tensor<64x256xf16> -> tensor<128x256xf16>
  %y = spyre.add %x, %o : tensor<128x256xf16>, tensor<128x256xf16> -> tensor<128x256xf16>
  func.return %y : tensor<128x256xf16>
}
