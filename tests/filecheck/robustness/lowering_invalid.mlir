// What the L1 -> L2 lowering cannot run on the card is a located error, and an op
// whose result nobody uses is dropped before planning (it used to make
// spyre-partition-cores raise IndexError).

// RUN: not spyre-opt %s --split-input-file -p spyre-to-dataflow 2>&1 | filecheck %s
// RUN: not spyre-opt %s --split-input-file -p spyre-to-dataflow 2>&1 | %no-traceback
// RUN: not spyre-opt %s --split-input-file -p spyre-to-dataflow 2>/dev/null | filecheck %s --check-prefix=DEAD

// Zero-size tensors (a ZeroDivisionError in cost_model.ceil_div).
func.func @zero(%a: tensor<0x128xf16>, %b: tensor<0x128xf16>) -> tensor<0x128xf16> {
  // CHECK: lowering_invalid.mlir:[[# @LINE + 1]]:3: error: group @rows_0: a zero-size tensor (tensor<0x128xf16>) has no work for the card
  %0 = spyre.add %a, %b : tensor<0x128xf16>, tensor<0x128xf16> -> tensor<0x128xf16>
  func.return %0 : tensor<0x128xf16>
}

// -----

// DEAD-LABEL: func.func @unused
// DEAD:         dataflow.kernel @rows_0
// DEAD-NOT:     dataflow.kernel
// DEAD-NOT:     spyre.exp
// DEAD:         func.return
func.func @unused(%a: tensor<64x128xf16>, %b: tensor<64x128xf16>) -> tensor<64x128xf16> {
  %0 = spyre.add %a, %b : tensor<64x128xf16>, tensor<64x128xf16> -> tensor<64x128xf16>
  %1 = spyre.exp %a : tensor<64x128xf16> -> tensor<64x128xf16>
  func.return %0 : tensor<64x128xf16>
}

// -----

// An op that computes no tensor (here a KTIR one) is not lowered: a located error, not
// an assertion in spyre-fuse.
func.func @k(%m: memref<64xf16>) attributes {grid = [1]} {
  // CHECK: lowering_invalid.mlir:[[# @LINE + 1]]:3: error: spyre-fuse: 'ktdp.get_compute_tile_id' does not compute tensors: only L1 tensor ops lower to dataflow
  %t = ktdp.get_compute_tile_id : index
  func.return
}
