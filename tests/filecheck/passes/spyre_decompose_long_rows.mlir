// RUN: spyre-opt %s --split-input-file -p 'spyre-decompose-long-rows{lx-bytes=65536 stream-softmax=false}' | filecheck %s
// RUN: spyre-opt %s --split-input-file -p 'spyre-decompose-long-rows{lx-bytes=65536}' | filecheck %s --check-prefix=STREAM

// A row of 8192 f16 input and result elements is 32 KiB: exactly half of LX, so it fits
// and the softmax stays whole; one of 8256 does not and is decomposed.
// CHECK-LABEL: func.func @fits
// CHECK-NEXT:    spyre.softmax
func.func @fits(%x: tensor<4x8192xf16>) -> tensor<4x8192xf16> {
  %y = spyre.softmax %x dim = 1 : tensor<4x8192xf16> -> tensor<4x8192xf16>
  func.return %y : tensor<4x8192xf16>
}

// -----

// A float softmax over the last dim is left whole unless stream-softmax=false:
// spyre-tile streams it in one kernel (spyre_tile_online_softmax.mlir).
// STREAM-LABEL: func.func @too_long
// STREAM-NEXT:    spyre.softmax
// CHECK-LABEL: func.func @too_long
// CHECK-NOT:     spyre.softmax
// CHECK:         spyre.reduce_max {{.*}} dims = [1] keepdim
// CHECK:         spyre.exp
// CHECK:         spyre.sum {{.*}} dims = [1] keepdim
// CHECK:         spyre.div
func.func @too_long(%x: tensor<4x8256xf16>) -> tensor<4x8256xf16> {
  %y = spyre.softmax %x dim = 1 : tensor<4x8256xf16> -> tensor<4x8256xf16>
  func.return %y : tensor<4x8256xf16>
}

// -----

// Over dim 0 the row is everything from dim 0 on: 64 x 512 elements. Not the last
// dim: decomposed whatever stream-softmax says.
// STREAM-LABEL: func.func @dim0
// STREAM:         spyre.reduce_max {{.*}} dims = [0] keepdim
// CHECK-LABEL: func.func @dim0
// CHECK:         spyre.reduce_max {{.*}} dims = [0] keepdim
func.func @dim0(%x: tensor<64x512xf16>) -> tensor<64x512xf16> {
  %y = spyre.softmax %x dim = 0 : tensor<64x512xf16> -> tensor<64x512xf16>
  func.return %y : tensor<64x512xf16>
}

// -----

// Norms: over their normalised dims (the last one here).
// CHECK-LABEL: func.func @norms
// CHECK-NOT:     spyre.rms_norm
// CHECK-NOT:     spyre.layer_norm
// CHECK:         spyre.mean
// CHECK:         spyre.rsqrt
func.func @norms(%x: tensor<2x16384xf16>) -> (tensor<2x16384xf16>, tensor<2x16384xf16>) {
  %r = spyre.rms_norm %x {eps = 1.0e-06 : f64} : tensor<2x16384xf16> -> tensor<2x16384xf16>
  %l = spyre.layer_norm %x {eps = 1.0e-05 : f64} : tensor<2x16384xf16> -> tensor<2x16384xf16>
  func.return %r, %l : tensor<2x16384xf16>, tensor<2x16384xf16>
}
