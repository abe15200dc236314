// RUN: spyre-opt %s -p spyre-sink-matmul-reshapes --split-input-file | filecheck %s
// RUN: spyre-opt %s -p 'spyre-sink-matmul-reshapes{sink-reshapes=false}' --split-input-file | filecheck %s --check-prefix=OFF

// A linear layer on [2, 33, 96]: the bias (a row vector), the silu and the residual
// (reshaped to the rows) run on the matmul's [66, 96] rows; one reshape back at the end.
// CHECK-LABEL: func.func @linear
// CHECK:         %[[MM:.*]] = spyre.matmul
// CHECK-NEXT:    %[[B:.*]] = spyre.add %[[MM]], %bias : tensor<66x96xf32>, tensor<96xf32> -> tensor<66x96xf32>
// CHECK-NEXT:    %[[N:.*]] = spyre.neg %[[B]] : tensor<66x96xf32> -> tensor<66x96xf32>
// CHECK:         %[[X:.*]] = spyre.reshape %x : tensor<2x33x96xf32> -> tensor<66x96xf32>
// CHECK-NEXT:    %[[R:.*]] = spyre.add %[[X]], %[[N]] : tensor<66x96xf32>, tensor<66x96xf32> -> tensor<66x96xf32>
// CHECK-NEXT:    %[[OUT:.*]] = spyre.reshape %[[R]] : tensor<66x96xf32> -> tensor<2x33x96xf32>
// CHECK-NEXT:    func.return %[[OUT]]
// OFF-LABEL: func.func @linear
// OFF:         spyre.matmul
// OFF-NEXT:    spyre.reshape
// OFF-NEXT:    spyre.add {{.*}} : tensor<2x33x96xf32>, tensor<96xf32> -> tensor<2x33x96xf32>
func.func @linear(%x: tensor<2x33x96xf32>, %w: tensor<96x96xf32>, %bias: tensor<96xf32>) -> tensor<2x33x96xf32> {
  %v = spyre.reshape %x : tensor<2x33x96xf32> -> tensor<66x96xf32>
  %mm = spyre.matmul %v, %w : tensor<66x96xf32>, tensor<96x96xf32> -> tensor<66x96xf32>
  %r = spyre.reshape %mm : tensor<66x96xf32> -> tensor<2x33x96xf32>
  %b = spyre.add %r, %bias : tensor<2x33x96xf32>, tensor<96xf32> -> tensor<2x33x96xf32>
  %n = spyre.neg %b : tensor<2x33x96xf32> -> tensor<2x33x96xf32>
  %o = spyre.add %x, %n : tensor<2x33x96xf32>, tensor<2x33x96xf32> -> tensor<2x33x96xf32>
  func.return %o : tensor<2x33x96xf32>
}

// -----

// A per-batch operand [2, 1, 96] does not broadcast over the rows: the op stays on
// the view.
// CHECK-LABEL: func.func @per_batch
// CHECK:         %[[R:.*]] = spyre.reshape %mm : tensor<66x96xf32> -> tensor<2x33x96xf32>
// CHECK-NEXT:    spyre.add %[[R]], %s : tensor<2x33x96xf32>, tensor<2x1x96xf32> -> tensor<2x33x96xf32>
func.func @per_batch(%a: tensor<66x96xf32>, %w: tensor<96x96xf32>, %s: tensor<2x1x96xf32>) -> tensor<2x33x96xf32> {
  %mm = spyre.matmul %a, %w : tensor<66x96xf32>, tensor<96x96xf32> -> tensor<66x96xf32>
  %r = spyre.reshape %mm : tensor<66x96xf32> -> tensor<2x33x96xf32>
  %o = spyre.add %r, %s : tensor<2x33x96xf32>, tensor<2x1x96xf32> -> tensor<2x33x96xf32>
  func.return %o : tensor<2x33x96xf32>
}

// -----

// Two linear layers meet (SwiGLU's silu(gate) * up): the product runs on the rows of
// both, and the next layer's flattening reshape reads it directly.
// CHECK-LABEL: func.func @two_layers
// CHECK:         %[[G:.*]] = spyre.matmul %a, %w
// CHECK:         %[[U:.*]] = spyre.matmul %a, %w
// CHECK-NEXT:    %[[P:.*]] = spyre.mul %[[G]], %[[U]] : tensor<66x96xf32>, tensor<66x96xf32> -> tensor<66x96xf32>
// CHECK-NEXT:    %[[D:.*]] = spyre.matmul %[[P]], %w
// CHECK-NEXT:    func.return %[[D]]
func.func @two_layers(%a: tensor<66x96xf32>, %w: tensor<96x96xf32>) -> tensor<66x96xf32> {
  %g = spyre.matmul %a, %w : tensor<66x96xf32>, tensor<96x96xf32> -> tensor<66x96xf32>
  %gv = spyre.reshape %g : tensor<66x96xf32> -> tensor<2x33x96xf32>
  %u = spyre.matmul %a, %w : tensor<66x96xf32>, tensor<96x96xf32> -> tensor<66x96xf32>
  %uv = spyre.reshape %u : tensor<66x96xf32> -> tensor<2x33x96xf32>
  %p = spyre.mul %gv, %uv : tensor<2x33x96xf32>, tensor<2x33x96xf32> -> tensor<2x33x96xf32>
  %f = spyre.reshape %p : tensor<2x33x96xf32> -> tensor<66x96xf32>
  %d = spyre.matmul %f, %w : tensor<66x96xf32>, tensor<96x96xf32> -> tensor<66x96xf32>
  func.return %d : tensor<66x96xf32>
}

// -----

// A residual add, then an RMSNorm's statistic (a mean over the last dim, keepdim) and
// the scaling by it: all on the rows, the statistic as [66, 1].
// CHECK-LABEL: func.func @norm_after_residual
// CHECK:         %[[H:.*]] = spyre.add %{{.*}}, %mm : tensor<66x96xf32>, tensor<66x96xf32> -> tensor<66x96xf32>
// CHECK-NEXT:    %[[SQ:.*]] = spyre.mul %[[H]], %[[H]] : tensor<66x96xf32>, tensor<66x96xf32> -> tensor<66x96xf32>
// CHECK-NEXT:    %[[M:.*]] = spyre.mean %[[SQ]] dims = [-1] keepdim : tensor<66x96xf32> -> tensor<66x1xf32>
// CHECK-NEXT:    %[[S:.*]] = spyre.mul %[[H]], %[[M]] : tensor<66x96xf32>, tensor<66x1xf32> -> tensor<66x96xf32>
// CHECK-NEXT:    spyre.reshape %[[S]] : tensor<66x96xf32> -> tensor<2x33x96xf32>
func.func @norm_after_residual(%x: tensor<2x33x96xf32>, %a: tensor<66x96xf32>, %w: tensor<96x96xf32>) -> tensor<2x33x96xf32> {
  %mm = spyre.matmul %a, %w : tensor<66x96xf32>, tensor<96x96xf32> -> tensor<66x96xf32>
  %r = spyre.reshape %mm : tensor<66x96xf32> -> tensor<2x33x96xf32>
  %h = spyre.add %x, %r : tensor<2x33x96xf32>, tensor<2x33x96xf32> -> tensor<2x33x96xf32>
  %sq = spyre.mul %h, %h : tensor<2x33x96xf32>, tensor<2x33x96xf32> -> tensor<2x33x96xf32>
  %m = spyre.mean %sq dims = [2] keepdim : tensor<2x33x96xf32> -> tensor<2x33x1xf32>
  %s = spyre.mul %h, %m : tensor<2x33x96xf32>, tensor<2x33x1xf32> -> tensor<2x33x96xf32>
  func.return %s : tensor<2x33x96xf32>
}
