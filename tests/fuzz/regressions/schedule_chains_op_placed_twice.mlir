

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

