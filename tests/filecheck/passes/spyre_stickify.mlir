// spyre-stickify gives every tensor its default stick layout (args, results, op results,
// constants; rank-0 tensors stay plain) and inserts spyre.restickify where bytes must
// move: after a reshape that is no view of its source (its result stays plain) and
// before an op that needs another layout than the one its operand has. The rules and
// their sources are in spyre_ir/passes/stickify.py; the numerics (unchanged) are checked
// in tests/test_stickify.py. The second RUN line checks that a second run changes nothing.

// RUN: spyre-opt %s -p spyre-stickify | filecheck %s
// RUN: spyre-opt %s -p spyre-stickify | spyre-opt -p spyre-stickify | filecheck %s
// RUN: spyre-opt %s -p spyre-stickify 2>&1 | %no-traceback

// Default layouts on arguments, results and op results, rank 1 to 4, f16 and f32; a
// rank-0 tensor stays plain. The signature changes with the body.
// CHECK-LABEL: func.func @ranks(%a: tensor<100xf16, #spyre.stick<dim = 0, device = [2, 64], map = [0, 0], strides = [64, 1], pad = 28>>, %b: tensor<4x100xf32, #spyre.stick<dim = 1, device = [4, 4, 32], map = [1, 0, 1], strides = [32, 100, 1], pad = 28>>, %c: tensor<2x3x100xf16, #spyre.stick<dim = 2, device = [3, 2, 2, 64], map = [1, 2, 0, 2], strides = [100, 64, 300, 1], pad = 28>>, %d: tensor<2x3x4x100xf32, #spyre.stick<dim = 3, device = [3, 4, 4, 2, 32], map = [1, 2, 3, 0, 3], strides = [400, 100, 32, 1200, 1], pad = 28>>, %s: tensor<f32>) -> (tensor<100xf16, #spyre.stick<dim = 0, device = [2, 64], map = [0, 0], strides = [64, 1], pad = 28>>, tensor<4x100xf32, #spyre.stick<dim = 1, device = [4, 4, 32], map = [1, 0, 1], strides = [32, 100, 1], pad = 28>>, tensor<2x3x100xf16, #spyre.stick<dim = 2, device = [3, 2, 2, 64], map = [1, 2, 0, 2], strides = [100, 64, 300, 1], pad = 28>>, tensor<2x3x4x100xf32, #spyre.stick<dim = 3, device = [3, 4, 4, 2, 32], map = [1, 2, 3, 0, 3], strides = [400, 100, 32, 1200, 1], pad = 28>>) {
// CHECK-NEXT:    %ra = spyre.relu %a : tensor<100xf16, #spyre.stick<dim = 0, device = [2, 64], map = [0, 0], strides = [64, 1], pad = 28>> -> tensor<100xf16, #spyre.stick<dim = 0, device = [2, 64], map = [0, 0], strides = [64, 1], pad = 28>>
// CHECK-NEXT:    %rb = spyre.mul %b, %s : tensor<4x100xf32, #spyre.stick<dim = 1, device = [4, 4, 32], map = [1, 0, 1], strides = [32, 100, 1], pad = 28>>, tensor<f32> -> tensor<4x100xf32, #spyre.stick<dim = 1, device = [4, 4, 32], map = [1, 0, 1], strides = [32, 100, 1], pad = 28>>
// CHECK-NEXT:    %rc = spyre.neg %c : tensor<2x3x100xf16, #spyre.stick<dim = 2, device = [3, 2, 2, 64], map = [1, 2, 0, 2], strides = [100, 64, 300, 1], pad = 28>> -> tensor<2x3x100xf16, #spyre.stick<dim = 2, device = [3, 2, 2, 64], map = [1, 2, 0, 2], strides = [100, 64, 300, 1], pad = 28>>
// CHECK-NEXT:    %rd = spyre.add %d, %b : tensor<2x3x4x100xf32, #spyre.stick<dim = 3, device = [3, 4, 4, 2, 32], map = [1, 2, 3, 0, 3], strides = [400, 100, 32, 1200, 1], pad = 28>>, tensor<4x100xf32, #spyre.stick<dim = 1, device = [4, 4, 32], map = [1, 0, 1], strides = [32, 100, 1], pad = 28>> -> tensor<2x3x4x100xf32, #spyre.stick<dim = 3, device = [3, 4, 4, 2, 32], map = [1, 2, 3, 0, 3], strides = [400, 100, 32, 1200, 1], pad = 28>>
// CHECK-NEXT:    func.return %ra, %rb, %rc, %rd : tensor<100xf16, #spyre.stick<dim = 0, device = [2, 64], map = [0, 0], strides = [64, 1], pad = 28>>, tensor<4x100xf32, #spyre.stick<dim = 1, device = [4, 4, 32], map = [1, 0, 1], strides = [32, 100, 1], pad = 28>>, tensor<2x3x100xf16, #spyre.stick<dim = 2, device = [3, 2, 2, 64], map = [1, 2, 0, 2], strides = [100, 64, 300, 1], pad = 28>>, tensor<2x3x4x100xf32, #spyre.stick<dim = 3, device = [3, 4, 4, 2, 32], map = [1, 2, 3, 0, 3], strides = [400, 100, 32, 1200, 1], pad = 28>>
// CHECK-NEXT:  }
func.func @ranks(%a: tensor<100xf16>, %b: tensor<4x100xf32>, %c: tensor<2x3x100xf16>, %d: tensor<2x3x4x100xf32>, %s: tensor<f32>) -> (tensor<100xf16>, tensor<4x100xf32>, tensor<2x3x100xf16>, tensor<2x3x4x100xf32>) {
  %ra = spyre.relu %a : tensor<100xf16> -> tensor<100xf16>
  %rb = spyre.mul %b, %s : tensor<4x100xf32>, tensor<f32> -> tensor<4x100xf32>
  %rc = spyre.neg %c : tensor<2x3x100xf16> -> tensor<2x3x100xf16>
  %rd = spyre.add %d, %b : tensor<2x3x4x100xf32>, tensor<4x100xf32> -> tensor<2x3x4x100xf32>
  func.return %ra, %rb, %rc, %rd : tensor<100xf16>, tensor<4x100xf32>, tensor<2x3x100xf16>, tensor<2x3x4x100xf32>
}

// The example of spyre_ir/layout.py and torch-spyre's docs: [5, 100, 150] f16 is device
// [100, 3, 5, 64], 150 padded to 3 sticks (42 padding elements).
// CHECK-LABEL: func.func @example(%x: tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>) -> tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>> {
// CHECK-NEXT:    %y = spyre.exp %x : tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>> -> tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>
// CHECK-NEXT:    func.return %y : tensor<5x100x150xf16, #spyre.stick<dim = 2, device = [100, 3, 5, 64], map = [1, 2, 0, 2], strides = [150, 64, 15000, 1], pad = 42>>
// CHECK-NEXT:  }
func.func @example(%x: tensor<5x100x150xf16>) -> tensor<5x100x150xf16> {
  %y = spyre.exp %x : tensor<5x100x150xf16> -> tensor<5x100x150xf16>
  func.return %y : tensor<5x100x150xf16>
}

// Constants carry the layout on their value's type too; a rank-0 full stays plain.
// CHECK-LABEL: func.func @constants() -> tensor<2x64xf32, #spyre.stick<dim = 1, device = [2, 2, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>> {
// CHECK-NEXT:    %c = spyre.constant dense<1.000000e+00> : tensor<2x64xf32, #spyre.stick<dim = 1, device = [2, 2, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>>
// CHECK-NEXT:    %z = spyre.full {value = 0.000000e+00 : f64} : tensor<f32>
// CHECK-NEXT:    %r = spyre.add %c, %z : tensor<2x64xf32, #spyre.stick<dim = 1, device = [2, 2, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>>, tensor<f32> -> tensor<2x64xf32, #spyre.stick<dim = 1, device = [2, 2, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>>
// CHECK-NEXT:    func.return %r : tensor<2x64xf32, #spyre.stick<dim = 1, device = [2, 2, 32], map = [1, 0, 1], strides = [32, 64, 1], pad = 0>>
// CHECK-NEXT:  }
func.func @constants() -> tensor<2x64xf32> {
  %c = spyre.constant dense<1.0> : tensor<2x64xf32>
  %z = spyre.full {value = 0.0 : f64} : tensor<f32>
  %r = spyre.add %c, %z : tensor<2x64xf32>, tensor<f32> -> tensor<2x64xf32>
  func.return %r : tensor<2x64xf32>
}

// Reshapes that keep every element at its device offset are views: no restickify.
// Splitting whole sticks off the stick dim and merging dims between dim 0 and the stick
// dim keep the bytes in place.
// CHECK-LABEL: func.func @reshape_view(%x: tensor<2x4x128xf16, #spyre.stick<dim = 2, device = [4, 2, 2, 64], map = [1, 2, 0, 2], strides = [128, 64, 512, 1], pad = 0>>, %y: tensor<4x3x5x64xf32, #spyre.stick<dim = 3, device = [3, 5, 2, 4, 32], map = [1, 2, 3, 0, 3], strides = [320, 64, 32, 960, 1], pad = 0>>) -> (tensor<2x4x2x64xf16, #spyre.stick<dim = 3, device = [4, 2, 1, 2, 64], map = [1, 2, 3, 0, 3], strides = [128, 64, 64, 512, 1], pad = 0>>, tensor<4x15x64xf32, #spyre.stick<dim = 2, device = [15, 2, 4, 32], map = [1, 2, 0, 2], strides = [64, 32, 960, 1], pad = 0>>) {
// CHECK-NEXT:    %split = spyre.reshape %x : tensor<2x4x128xf16, #spyre.stick<dim = 2, device = [4, 2, 2, 64], map = [1, 2, 0, 2], strides = [128, 64, 512, 1], pad = 0>> -> tensor<2x4x2x64xf16, #spyre.stick<dim = 3, device = [4, 2, 1, 2, 64], map = [1, 2, 3, 0, 3], strides = [128, 64, 64, 512, 1], pad = 0>>
// CHECK-NEXT:    %merge = spyre.reshape %y : tensor<4x3x5x64xf32, #spyre.stick<dim = 3, device = [3, 5, 2, 4, 32], map = [1, 2, 3, 0, 3], strides = [320, 64, 32, 960, 1], pad = 0>> -> tensor<4x15x64xf32, #spyre.stick<dim = 2, device = [15, 2, 4, 32], map = [1, 2, 0, 2], strides = [64, 32, 960, 1], pad = 0>>
// CHECK-NEXT:    func.return %split, %merge : tensor<2x4x2x64xf16, #spyre.stick<dim = 3, device = [4, 2, 1, 2, 64], map = [1, 2, 3, 0, 3], strides = [128, 64, 64, 512, 1], pad = 0>>, tensor<4x15x64xf32, #spyre.stick<dim = 2, device = [15, 2, 4, 32], map = [1, 2, 0, 2], strides = [64, 32, 960, 1], pad = 0>>
// CHECK-NEXT:  }
func.func @reshape_view(%x: tensor<2x4x128xf16>, %y: tensor<4x3x5x64xf32>) -> (tensor<2x4x2x64xf16>, tensor<4x15x64xf32>) {
  %split = spyre.reshape %x : tensor<2x4x128xf16> -> tensor<2x4x2x64xf16>
  %merge = spyre.reshape %y : tensor<4x3x5x64xf32> -> tensor<4x15x64xf32>
  func.return %split, %merge : tensor<2x4x2x64xf16>, tensor<4x15x64xf32>
}

// Reshapes that move bytes: the result stays plain and every user reads a restickify
// to its default layout. Merging dim 0 into the next dim changes which dim sits just
// outside the stick; flattening [4, 100] removes the padding after each row.
// CHECK-LABEL: func.func @reshape_moves(%x: tensor<2x4x64xf16, #spyre.stick<dim = 2, device = [4, 1, 2, 64], map = [1, 2, 0, 2], strides = [64, 64, 256, 1], pad = 0>>, %b: tensor<4x100xf32, #spyre.stick<dim = 1, device = [4, 4, 32], map = [1, 0, 1], strides = [32, 100, 1], pad = 28>>) -> (tensor<8x64xf16, #spyre.stick<dim = 1, device = [1, 8, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>, tensor<400xf32, #spyre.stick<dim = 0, device = [13, 32], map = [0, 0], strides = [32, 1], pad = 16>>) {
// CHECK-NEXT:    %rows = spyre.reshape %x : tensor<2x4x64xf16, #spyre.stick<dim = 2, device = [4, 1, 2, 64], map = [1, 2, 0, 2], strides = [64, 64, 256, 1], pad = 0>> -> tensor<8x64xf16>
// CHECK-NEXT:    %rows_restick = spyre.restickify %rows : tensor<8x64xf16> -> tensor<8x64xf16, #spyre.stick<dim = 1, device = [1, 8, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>
// CHECK-NEXT:    %flat = spyre.reshape %b : tensor<4x100xf32, #spyre.stick<dim = 1, device = [4, 4, 32], map = [1, 0, 1], strides = [32, 100, 1], pad = 28>> -> tensor<400xf32>
// CHECK-NEXT:    %flat_restick = spyre.restickify %flat : tensor<400xf32> -> tensor<400xf32, #spyre.stick<dim = 0, device = [13, 32], map = [0, 0], strides = [32, 1], pad = 16>>
// CHECK-NEXT:    %e = spyre.exp %flat_restick : tensor<400xf32, #spyre.stick<dim = 0, device = [13, 32], map = [0, 0], strides = [32, 1], pad = 16>> -> tensor<400xf32, #spyre.stick<dim = 0, device = [13, 32], map = [0, 0], strides = [32, 1], pad = 16>>
// CHECK-NEXT:    %sq = spyre.mul %flat_restick, %flat_restick : tensor<400xf32, #spyre.stick<dim = 0, device = [13, 32], map = [0, 0], strides = [32, 1], pad = 16>>, tensor<400xf32, #spyre.stick<dim = 0, device = [13, 32], map = [0, 0], strides = [32, 1], pad = 16>> -> tensor<400xf32, #spyre.stick<dim = 0, device = [13, 32], map = [0, 0], strides = [32, 1], pad = 16>>
// CHECK-NEXT:    %r = spyre.add %e, %sq : tensor<400xf32, #spyre.stick<dim = 0, device = [13, 32], map = [0, 0], strides = [32, 1], pad = 16>>, tensor<400xf32, #spyre.stick<dim = 0, device = [13, 32], map = [0, 0], strides = [32, 1], pad = 16>> -> tensor<400xf32, #spyre.stick<dim = 0, device = [13, 32], map = [0, 0], strides = [32, 1], pad = 16>>
// CHECK-NEXT:    func.return %rows_restick, %r : tensor<8x64xf16, #spyre.stick<dim = 1, device = [1, 8, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>, tensor<400xf32, #spyre.stick<dim = 0, device = [13, 32], map = [0, 0], strides = [32, 1], pad = 16>>
// CHECK-NEXT:  }
func.func @reshape_moves(%x: tensor<2x4x64xf16>, %b: tensor<4x100xf32>) -> (tensor<8x64xf16>, tensor<400xf32>) {
  %rows = spyre.reshape %x : tensor<2x4x64xf16> -> tensor<8x64xf16>
  %flat = spyre.reshape %b : tensor<4x100xf32> -> tensor<400xf32>
  %e = spyre.exp %flat : tensor<400xf32> -> tensor<400xf32>
  %sq = spyre.mul %flat, %flat : tensor<400xf32>, tensor<400xf32> -> tensor<400xf32>
  %r = spyre.add %e, %sq : tensor<400xf32>, tensor<400xf32> -> tensor<400xf32>
  func.return %rows, %r : tensor<8x64xf16>, tensor<400xf32>
}

// matmul: A sticked on k, B and C on n are the default layouts of [m, k], [k, n] and
// [m, n] (also batched, and for a 1-D B): nothing to insert.
// CHECK-LABEL: func.func @matmul(%a: tensor<2x4x96xf16, #spyre.stick<dim = 2, device = [4, 2, 2, 64], map = [1, 2, 0, 2], strides = [96, 64, 384, 1], pad = 32>>, %w: tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>>, %v: tensor<96xf16, #spyre.stick<dim = 0, device = [2, 64], map = [0, 0], strides = [64, 1], pad = 32>>) -> (tensor<2x4x80xf16, #spyre.stick<dim = 2, device = [4, 2, 2, 64], map = [1, 2, 0, 2], strides = [80, 64, 320, 1], pad = 48>>, tensor<2x4xf16, #spyre.stick<dim = 1, device = [1, 2, 64], map = [1, 0, 1], strides = [64, 4, 1], pad = 60>>) {
// CHECK-NEXT:    %mm = spyre.matmul %a, %w : tensor<2x4x96xf16, #spyre.stick<dim = 2, device = [4, 2, 2, 64], map = [1, 2, 0, 2], strides = [96, 64, 384, 1], pad = 32>>, tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>> -> tensor<2x4x80xf16, #spyre.stick<dim = 2, device = [4, 2, 2, 64], map = [1, 2, 0, 2], strides = [80, 64, 320, 1], pad = 48>>
// CHECK-NEXT:    %mv = spyre.matmul %a, %v : tensor<2x4x96xf16, #spyre.stick<dim = 2, device = [4, 2, 2, 64], map = [1, 2, 0, 2], strides = [96, 64, 384, 1], pad = 32>>, tensor<96xf16, #spyre.stick<dim = 0, device = [2, 64], map = [0, 0], strides = [64, 1], pad = 32>> -> tensor<2x4xf16, #spyre.stick<dim = 1, device = [1, 2, 64], map = [1, 0, 1], strides = [64, 4, 1], pad = 60>>
// CHECK-NEXT:    func.return %mm, %mv : tensor<2x4x80xf16, #spyre.stick<dim = 2, device = [4, 2, 2, 64], map = [1, 2, 0, 2], strides = [80, 64, 320, 1], pad = 48>>, tensor<2x4xf16, #spyre.stick<dim = 1, device = [1, 2, 64], map = [1, 0, 1], strides = [64, 4, 1], pad = 60>>
// CHECK-NEXT:  }
func.func @matmul(%a: tensor<2x4x96xf16>, %w: tensor<96x80xf16>, %v: tensor<96xf16>) -> (tensor<2x4x80xf16>, tensor<2x4xf16>) {
  %mm = spyre.matmul %a, %w : tensor<2x4x96xf16>, tensor<96x80xf16> -> tensor<2x4x80xf16>
  %mv = spyre.matmul %a, %v : tensor<2x4x96xf16>, tensor<96xf16> -> tensor<2x4xf16>
  func.return %mm, %mv : tensor<2x4x80xf16>, tensor<2x4xf16>
}

// A B argument that arrives sticked on k (device [ceil(k/e), n, e]) is restickified to
// its default (sticked on n) before the matmul; the argument keeps its layout.
// CHECK-LABEL: func.func @matmul_b_on_k(%a: tensor<4x96xf16, #spyre.stick<dim = 1, device = [2, 4, 64], map = [1, 0, 1], strides = [64, 96, 1], pad = 32>>, %w: tensor<96x80xf16, #spyre.stick<dim = 0, device = [2, 80, 64], map = [0, 1, 0], strides = [5120, 1, 80], pad = 32>>) -> tensor<4x80xf16, #spyre.stick<dim = 1, device = [2, 4, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>> {
// CHECK-NEXT:    %w_restick = spyre.restickify %w : tensor<96x80xf16, #spyre.stick<dim = 0, device = [2, 80, 64], map = [0, 1, 0], strides = [5120, 1, 80], pad = 32>> -> tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>>
// CHECK-NEXT:    %mm = spyre.matmul %a, %w_restick : tensor<4x96xf16, #spyre.stick<dim = 1, device = [2, 4, 64], map = [1, 0, 1], strides = [64, 96, 1], pad = 32>>, tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>> -> tensor<4x80xf16, #spyre.stick<dim = 1, device = [2, 4, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>>
// CHECK-NEXT:    func.return %mm : tensor<4x80xf16, #spyre.stick<dim = 1, device = [2, 4, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>>
// CHECK-NEXT:  }
func.func @matmul_b_on_k(%a: tensor<4x96xf16>, %w: tensor<96x80xf16, #spyre.stick<dim = 0, device = [2, 80, 64], map = [0, 1, 0], strides = [5120, 1, 80], pad = 32>>) -> tensor<4x80xf16> {
  %mm = spyre.matmul %a, %w : tensor<4x96xf16>, tensor<96x80xf16, #spyre.stick<dim = 0, device = [2, 80, 64], map = [0, 1, 0], strides = [5120, 1, 80], pad = 32>> -> tensor<4x80xf16>
  func.return %mm : tensor<4x80xf16>
}

// A transpose that moves the stick dim is the data movement itself: its result gets
// its own default layout (sticked on the new last dim), no restickify.
// CHECK-LABEL: func.func @transpose(%x: tensor<4x100xf16, #spyre.stick<dim = 1, device = [2, 4, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>>) -> tensor<100x4xf16, #spyre.stick<dim = 1, device = [1, 100, 64], map = [1, 0, 1], strides = [64, 4, 1], pad = 60>> {
// CHECK-NEXT:    %t = spyre.transpose %x perm = [1, 0] : tensor<4x100xf16, #spyre.stick<dim = 1, device = [2, 4, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>> -> tensor<100x4xf16, #spyre.stick<dim = 1, device = [1, 100, 64], map = [1, 0, 1], strides = [64, 4, 1], pad = 60>>
// CHECK-NEXT:    func.return %t : tensor<100x4xf16, #spyre.stick<dim = 1, device = [1, 100, 64], map = [1, 0, 1], strides = [64, 4, 1], pad = 60>>
// CHECK-NEXT:  }
func.func @transpose(%x: tensor<4x100xf16>) -> tensor<100x4xf16> {
  %t = spyre.transpose %x perm = [1, 0] : tensor<4x100xf16> -> tensor<100x4xf16>
  func.return %t : tensor<100x4xf16>
}

// A reduction over the stick dim with keepdim: the result [4, 1] is sticked on its
// size-1 dim, one element per stick (pad 63): the sparse result. Without keepdim the
// result [4] is dense.
// CHECK-LABEL: func.func @reduce_stick_dim(%x: tensor<4x100xf16, #spyre.stick<dim = 1, device = [2, 4, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>>) -> (tensor<4x1xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 1, 1], pad = 63>>, tensor<4xf16, #spyre.stick<dim = 0, device = [1, 64], map = [0, 0], strides = [64, 1], pad = 60>>) {
// CHECK-NEXT:    %keep = spyre.sum %x dims = [1] keepdim : tensor<4x100xf16, #spyre.stick<dim = 1, device = [2, 4, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>> -> tensor<4x1xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 1, 1], pad = 63>>
// CHECK-NEXT:    %drop = spyre.reduce_max %x dims = [-1] : tensor<4x100xf16, #spyre.stick<dim = 1, device = [2, 4, 64], map = [1, 0, 1], strides = [64, 100, 1], pad = 28>> -> tensor<4xf16, #spyre.stick<dim = 0, device = [1, 64], map = [0, 0], strides = [64, 1], pad = 60>>
// CHECK-NEXT:    func.return %keep, %drop : tensor<4x1xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 1, 1], pad = 63>>, tensor<4xf16, #spyre.stick<dim = 0, device = [1, 64], map = [0, 0], strides = [64, 1], pad = 60>>
// CHECK-NEXT:  }
func.func @reduce_stick_dim(%x: tensor<4x100xf16>) -> (tensor<4x1xf16>, tensor<4xf16>) {
  %keep = spyre.sum %x dims = [1] keepdim : tensor<4x100xf16> -> tensor<4x1xf16>
  %drop = spyre.reduce_max %x dims = [-1] : tensor<4x100xf16> -> tensor<4xf16>
  func.return %keep, %drop : tensor<4x1xf16>, tensor<4xf16>
}

// Calls pass their callee's argument types and get its result types.
// CHECK-LABEL: func.func @callee(%x: tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>>) -> tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>> {
// CHECK-NEXT:    %r = spyre.relu %x : tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>> -> tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>>
// CHECK-NEXT:    func.return %r : tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>>
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @caller(%x: tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>>) -> tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>> {
// CHECK-NEXT:    %r = func.call @callee(%x) : (tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>>) -> tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>>
// CHECK-NEXT:    func.return %r : tensor<96x80xf16, #spyre.stick<dim = 1, device = [2, 96, 64], map = [1, 0, 1], strides = [64, 80, 1], pad = 48>>
// CHECK-NEXT:  }
func.func @callee(%x: tensor<96x80xf16>) -> tensor<96x80xf16> {
  %r = spyre.relu %x : tensor<96x80xf16> -> tensor<96x80xf16>
  func.return %r : tensor<96x80xf16>
}
func.func @caller(%x: tensor<96x80xf16>) -> tensor<96x80xf16> {
  %r = func.call @callee(%x) : (tensor<96x80xf16>) -> tensor<96x80xf16>
  func.return %r : tensor<96x80xf16>
}
