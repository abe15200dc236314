// RUN: spyre-opt %s -p spyre-fold-broadcast-matmul --split-input-file | filecheck %s

// Grouped-query scores: keys expanded from 2 to 4 heads, then transposed. The queries
// become 2 heads of 2 x 3 rows against the unexpanded keys (transposed), and the
// expansion is gone.
// CHECK-LABEL: func.func @scores
// CHECK-NEXT:    %[[Q:.*]] = spyre.reshape %q : tensor<1x4x3x16xf16> -> tensor<1x2x6x16xf16>
// CHECK-NEXT:    %[[KT:.*]] = spyre.transpose %k perm = [0, 1, 3, 2] : tensor<1x2x8x16xf16> -> tensor<1x2x16x8xf16>
// CHECK-NEXT:    %[[P:.*]] = spyre.matmul %[[Q]], %[[KT]] : tensor<1x2x6x16xf16>, tensor<1x2x16x8xf16> -> tensor<1x2x6x8xf16>
// CHECK-NEXT:    %s = spyre.reshape %[[P]] : tensor<1x2x6x8xf16> -> tensor<1x4x3x8xf16>
// CHECK-NEXT:    func.return %s
// CHECK-NOT:   spyre.broadcast_to
func.func @scores(%q: tensor<1x4x3x16xf16>, %k: tensor<1x2x8x16xf16>) -> tensor<1x4x3x8xf16> {
  %u = spyre.reshape %k : tensor<1x2x8x16xf16> -> tensor<1x2x1x8x16xf16>
  %e = spyre.broadcast_to %u : tensor<1x2x1x8x16xf16> -> tensor<1x2x2x8x16xf16>
  %r = spyre.reshape %e : tensor<1x2x2x8x16xf16> -> tensor<1x4x8x16xf16>
  %t = spyre.transpose %r perm = [0, 1, 3, 2] : tensor<1x4x8x16xf16> -> tensor<1x4x16x8xf16>
  %s = spyre.matmul %q, %t : tensor<1x4x3x16xf16>, tensor<1x4x16x8xf16> -> tensor<1x4x3x8xf16>
  func.return %s : tensor<1x4x3x8xf16>
}

// -----

// Values (no transpose), the batch dims flattened to 3-D around the matmul as the FX
// graph has them: each reshape chain is read from its start, one reshape each.
// CHECK-LABEL: func.func @values
// CHECK-NEXT:    %[[P:.*]] = spyre.reshape %p : tensor<1x4x3x8xf16> -> tensor<1x2x6x8xf16>
// CHECK-NEXT:    %[[O:.*]] = spyre.matmul %[[P]], %v : tensor<1x2x6x8xf16>, tensor<1x2x8x16xf16> -> tensor<1x2x6x16xf16>
// CHECK-NEXT:    %o4 = spyre.reshape %[[O]] : tensor<1x2x6x16xf16> -> tensor<1x4x3x16xf16>
// CHECK-NEXT:    func.return %o4
func.func @values(%p: tensor<1x4x3x8xf16>, %v: tensor<1x2x8x16xf16>) -> tensor<1x4x3x16xf16> {
  %u = spyre.reshape %v : tensor<1x2x8x16xf16> -> tensor<1x2x1x8x16xf16>
  %e = spyre.broadcast_to %u : tensor<1x2x1x8x16xf16> -> tensor<1x2x2x8x16xf16>
  %r = spyre.reshape %e : tensor<1x2x2x8x16xf16> -> tensor<1x4x8x16xf16>
  %p3 = spyre.reshape %p : tensor<1x4x3x8xf16> -> tensor<4x3x8xf16>
  %r3 = spyre.reshape %r : tensor<1x4x8x16xf16> -> tensor<4x8x16xf16>
  %o = spyre.matmul %p3, %r3 : tensor<4x3x8xf16>, tensor<4x8x16xf16> -> tensor<4x3x16xf16>
  %o4 = spyre.reshape %o : tensor<4x3x16xf16> -> tensor<1x4x3x16xf16>
  func.return %o4 : tensor<1x4x3x16xf16>
}

// -----

// Stretched over a dim that is not the last batch dim: the heads of one KV head are
// not neighbours, so nothing changes.
// CHECK-LABEL: func.func @outer_broadcast
// CHECK:         spyre.broadcast_to
// CHECK:         spyre.matmul %q, %r
func.func @outer_broadcast(%q: tensor<2x4x3x16xf16>, %k: tensor<1x4x16x8xf16>) -> tensor<2x4x3x8xf16> {
  %e = spyre.broadcast_to %k : tensor<1x4x16x8xf16> -> tensor<2x4x16x8xf16>
  %r = spyre.reshape %e : tensor<2x4x16x8xf16> -> tensor<2x4x16x8xf16>
  %s = spyre.matmul %q, %r : tensor<2x4x3x16xf16>, tensor<2x4x16x8xf16> -> tensor<2x4x3x8xf16>
  func.return %s : tensor<2x4x3x8xf16>
}
