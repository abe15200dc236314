// One chunk per verifier rule of the dataflow dialect (spyre_ir/dialects/dataflow.py),
// plus the parse-time rule of its types. The `expected-error` annotations are checked
// strictly by spyre-opt (a missing or an unexpected error exits 1); the CHECK lines pin
// the full printed diagnostic, location included.

// RUN: spyre-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: spyre-opt %s --split-input-file --verify-diagnostics 2>&1 | %no-traceback

// The group's block takes the group's inputs.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.group' @g: block arguments must match the inputs
  // expected-error @+1 {{block arguments must match the inputs}}
  %g = dataflow.group @g (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%a: tensor<4x64xf32>):
    %e = spyre.cast %a : tensor<4x64xf32> -> tensor<4x64xf16>
    dataflow.yield %e : tensor<4x64xf16>
  }
  func.return %g : tensor<4x64xf16>
}

// -----

// A group yields values of its result types.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.group' @g: must end in dataflow.yield of its result types
  // expected-error @+1 {{must end in dataflow.yield of its result types}}
  %g = dataflow.group @g (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%a: tensor<4x64xf16>):
    %e = spyre.cast %a : tensor<4x64xf16> -> tensor<4x64xf32>
    dataflow.yield %e : tensor<4x64xf32>
  }
  func.return %g : tensor<4x64xf16>
}

// -----

// dataflow.yield terminates a group and nothing else.
func.func @f(%x: tensor<4x64xf16>) {
  // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.yield' expects parent op 'dataflow.group'
  // expected-error @+1 {{expects parent op 'dataflow.group'}}
  dataflow.yield %x : tensor<4x64xf16>
}

// -----

// A kernel runs on at least one core.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k: needs at least one core
  // expected-error @+1 {{needs at least one core}}
  %r = dataflow.kernel @k cores(0) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// The kernel block takes the core id, then one ddr memory per input and per result.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k: block arguments must be (index, ddr per input and result); expected index, !dataflow.ddr<4x64xf16>, !dataflow.ddr<4x64xf16>
  // expected-error @+1 {{block arguments must be (index, ddr per input and result); expected index, !dataflow.ddr<4x64xf16>, !dataflow.ddr<4x64xf16>}}
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>):
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// A kernel ends in dataflow.end (and xDSL's own block check says the last op is not a
// terminator).
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k: must end in dataflow.end
  // expected-error @+1 {{must end in dataflow.end}}
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: Operation dataflow.alloc_lx terminates block in single-block region but is not a terminator
    // expected-error @+1 {{Operation dataflow.alloc_lx terminates block in single-block region but is not a terminator}}
    %a = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// dataflow.end terminates a kernel and nothing else.
func.func @f() {
  // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.end' expects parent op 'dataflow.kernel'
  // expected-error @+1 {{expects parent op 'dataflow.kernel'}}
  dataflow.end
}

// -----

// Before allocation, the largest buffer must fit the kernel's LX (buffers never live
// together may share bytes, so their sum is not checked).
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k: needs 4608 bytes of LX per core, but a core has 4096
  // expected-error @+1 {{needs 4608 bytes of LX per core, but a core has 4096}}
  %r = dataflow.kernel @k cores(1) (%x) {lx_capacity = 4096 : i64} : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %a = dataflow.alloc_lx : !dataflow.lx<36x64xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<30x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// After allocation, the highest buffer must end within the kernel's LX (the kernel and
// the buffer both say so).
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.kernel' @k: needs 4224 bytes of LX per core, but a core has 4096
  // expected-error @+1 {{needs 4224 bytes of LX per core, but a core has 4096}}
  %r = dataflow.kernel @k cores(1) (%x) {lx_capacity = 4096 : i64} : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.alloc_lx': buffer ends at byte 4224, past the 4096 bytes of LX
    // expected-error @+1 {{buffer ends at byte 4224, past the 4096 bytes of LX}}
    %b = dataflow.alloc_lx {offset = 3712 : i64} : !dataflow.lx<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// Offsets are whole sticks.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.alloc_lx': offset 64 is not 128-byte aligned
    // expected-error @+1 {{offset 64 is not 128-byte aligned}}
    %a = dataflow.alloc_lx {offset = 64 : i64} : !dataflow.lx<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// LX buffers belong to a kernel.
func.func @f() {
  // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:3: error: 'dataflow.alloc_lx' must be inside a dataflow.kernel
  // expected-error @+1 {{must be inside a dataflow.kernel}}
  %a = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
  func.return
}

// -----

// LX buffers have static shapes.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:51: error: dataflow.lx needs a static shape
    // expected-error @+1 {{dataflow.lx needs a static shape}}
    %a = dataflow.alloc_lx : !dataflow.lx<?x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// A slot drops the leading dim of its multi-buffer, and only that.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<2x4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.slot': a slot drops exactly the leading dim
    // expected-error @+1 {{a slot drops exactly the leading dim}}
    %s = dataflow.slot %a[%c0] : !dataflow.lx<2x4x64xf16> -> !dataflow.lx<2x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// A load gives one offset per tensor dim.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.load': needs one offset per tensor dim
    // expected-error @+1 {{needs one offset per tensor dim}}
    dataflow.load %in[%c0] into %a : !dataflow.ddr<4x64xf16>, !dataflow.lx<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// A loaded tile has the tensor's rank.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<1x4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.load': tile rank 3 differs from tensor rank 2
    // expected-error @+1 {{tile rank 3 differs from tensor rank 2}}
    dataflow.load %in[%c0, %c0] into %a : !dataflow.ddr<4x64xf16>, !dataflow.lx<1x4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// A load does not convert: the tile has the tensor's element type.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<4x64xf32>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.load': element types differ (f16 vs f32)
    // expected-error @+1 {{element types differ (f16 vs f32)}}
    dataflow.load %in[%c0, %c0] into %a : !dataflow.ddr<4x64xf16>, !dataflow.lx<4x64xf32>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// A transposed load's perm is a permutation of the tensor's dims.
func.func @f(%x: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<64x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x64xf16>, %out: !dataflow.ddr<64x64xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<64x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.load': perm [1, 1] is not a permutation
    // expected-error @+1 {{perm [1, 1] is not a permutation}}
    dataflow.load %in[%c0, %c0] into %a {perm = array<i64: 1, 1>} : !dataflow.ddr<64x64xf16>, !dataflow.lx<64x64xf16>
    dataflow.end
  }
  func.return %r : tensor<64x64xf16>
}

// -----

// Along the stick dim a load moves whole sticks (64 f16 elements) unless `masked` ...
func.func @f(%x: tensor<4x256xf16>) -> tensor<4x256xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x256xf16>) -> tensor<4x256xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x256xf16>, %out: !dataflow.ddr<4x256xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<4x96xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.load': moves 96 elements along stick dim 1, part of a stick of 64 inside the tensor, without `masked`
    // expected-error @+1 {{moves 96 elements along stick dim 1, part of a stick of 64 inside the tensor, without `masked`}}
    dataflow.load %in[%c0, %c0] into %a : !dataflow.ddr<4x256xf16>, !dataflow.lx<4x96xf16>
    dataflow.end
  }
  func.return %r : tensor<4x256xf16>
}

// -----

// ... and the stick dim is the layout's: here dim 0, so a box of 16 rows is partial
// sticks even though each row of 4 is the whole tensor.
func.func @f(%x: tensor<128x4xf16, #spyre.stick<dim = 0, device = [2, 4, 64], map = [0, 1, 0], strides = [256, 1, 4], pad = 0>>) -> tensor<128x4xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<128x4xf16, #spyre.stick<dim = 0, device = [2, 4, 64], map = [0, 1, 0], strides = [256, 1, 4], pad = 0>>) -> tensor<128x4xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<128x4xf16, #spyre.stick<dim = 0, device = [2, 4, 64], map = [0, 1, 0], strides = [256, 1, 4], pad = 0>>, %out: !dataflow.ddr<128x4xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<16x4xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.load': moves 16 elements along stick dim 0, part of a stick of 64 inside the tensor, without `masked`
    // expected-error @+1 {{moves 16 elements along stick dim 0, part of a stick of 64 inside the tensor, without `masked`}}
    dataflow.load %in[%c0, %c0] into %a : !dataflow.ddr<128x4xf16, #spyre.stick<dim = 0, device = [2, 4, 64], map = [0, 1, 0], strides = [256, 1, 4], pad = 0>>, !dataflow.lx<16x4xf16>
    dataflow.end
  }
  func.return %r : tensor<128x4xf16>
}

// -----

// A transposed load's stick rule applies to the box in the tensor: tile dim 0 is
// tensor dim 1 (the stick dim) and 32 of its elements are half a stick.
func.func @f(%x: tensor<64x256xf16>) -> tensor<64x256xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<64x256xf16>) -> tensor<64x256xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x256xf16>, %out: !dataflow.ddr<64x256xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<32x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.load': moves 32 elements along stick dim 1, part of a stick of 64 inside the tensor, without `masked`
    // expected-error @+1 {{moves 32 elements along stick dim 1, part of a stick of 64 inside the tensor, without `masked`}}
    dataflow.load %in[%c0, %c0] into %a {perm = array<i64: 1, 0>} : !dataflow.ddr<64x256xf16>, !dataflow.lx<32x64xf16>
    dataflow.end
  }
  func.return %r : tensor<64x256xf16>
}

// -----

// A store gives one offset per tensor dim.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.store': needs one offset per tensor dim
    // expected-error @+1 {{needs one offset per tensor dim}}
    dataflow.store %a into %out[%c0, %c0, %c0] : !dataflow.lx<4x64xf16>, !dataflow.ddr<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// A stored tile has the tensor's rank.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<256xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.store': tile rank 1 differs from tensor rank 2
    // expected-error @+1 {{tile rank 1 differs from tensor rank 2}}
    dataflow.store %a into %out[%c0, %c0] : !dataflow.lx<256xf16>, !dataflow.ddr<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// A store does not convert either.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<4x64xbf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.store': element types differ (f16 vs bf16)
    // expected-error @+1 {{element types differ (f16 vs bf16)}}
    dataflow.store %a into %out[%c0, %c0] : !dataflow.lx<4x64xbf16>, !dataflow.ddr<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// A store moves whole sticks too, unless `masked` (it writes only its own elements).
func.func @f(%x: tensor<4x256xf16>) -> tensor<4x256xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x256xf16>) -> tensor<4x256xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x256xf16>, %out: !dataflow.ddr<4x256xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<4x8xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.store': moves 8 elements along stick dim 1, part of a stick of 64 inside the tensor, without `masked`
    // expected-error @+1 {{moves 8 elements along stick dim 1, part of a stick of 64 inside the tensor, without `masked`}}
    dataflow.store %a into %out[%c0, %c0] : !dataflow.lx<4x8xf16>, !dataflow.ddr<4x256xf16>
    dataflow.end
  }
  func.return %r : tensor<4x256xf16>
}

// -----

// Gather indices are integers.
func.func @f(%t: tensor<100x64xf16>) -> tensor<8x64xf16> {
  %r = dataflow.kernel @k cores(1) (%t) : (tensor<100x64xf16>) -> tensor<8x64xf16> {
  ^bb0(%core: index, %table: !dataflow.ddr<100x64xf16>, %out: !dataflow.ddr<8x64xf16>):
    %ids = dataflow.alloc_lx : !dataflow.lx<8xf32>
    %rows = dataflow.alloc_lx : !dataflow.lx<8x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.gather': indices must be i32 or i64
    // expected-error @+1 {{indices must be i32 or i64}}
    dataflow.gather %table[%ids] into %rows : !dataflow.ddr<100x64xf16>, !dataflow.lx<8xf32>, !dataflow.lx<8x64xf16>
    dataflow.end
  }
  func.return %r : tensor<8x64xf16>
}

// -----

// A gather's destination is the indices' shape followed by a table row.
func.func @f(%t: tensor<100x64xf16>) -> tensor<8x64xf16> {
  %r = dataflow.kernel @k cores(1) (%t) : (tensor<100x64xf16>) -> tensor<8x64xf16> {
  ^bb0(%core: index, %table: !dataflow.ddr<100x64xf16>, %out: !dataflow.ddr<8x64xf16>):
    %ids = dataflow.alloc_lx : !dataflow.lx<8xi32>
    %rows = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.gather': destination should be [8, 64] of f16
    // expected-error @+1 {{destination should be [8, 64] of f16}}
    dataflow.gather %table[%ids] into %rows : !dataflow.ddr<100x64xf16>, !dataflow.lx<8xi32>, !dataflow.lx<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<8x64xf16>
}

// -----

// A tile op names a spyre op.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %a = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.compute': 'spyre.frobnicate' is not a spyre op
    // expected-error @+1 {{'spyre.frobnicate' is not a spyre op}}
    dataflow.compute "spyre.frobnicate" on "pe" (%a) -> (%b) : (!dataflow.lx<4x64xf16>) -> !dataflow.lx<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// A tile op runs on the unit the machine model gives it.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %a = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.compute': spyre.exp runs on sfp, not pe
    // expected-error @+1 {{spyre.exp runs on sfp, not pe}}
    dataflow.compute "spyre.exp" on "pe" (%a) -> (%b) : (!dataflow.lx<4x64xf16>) -> !dataflow.lx<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// Only matmul, sum, reduce_max and reduce_min accumulate.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %a = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.compute': spyre.exp cannot accumulate
    // expected-error @+1 {{spyre.exp cannot accumulate}}
    dataflow.compute "spyre.exp" on "sfp" (%a) -> (%b) {accumulate} : (!dataflow.lx<4x64xf16>) -> !dataflow.lx<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// A tile op writes at least one buffer.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %a = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.compute' needs an output buffer
    // expected-error @+1 {{needs an output buffer}}
    dataflow.compute "spyre.exp" on "sfp" (%a) -> () : (!dataflow.lx<4x64xf16>) -> ()
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// A tile op's buffers obey the spyre op's own verifier: matmul's inner dims agree.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %a = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    %w = dataflow.alloc_lx : !dataflow.lx<32x64xf16>
    %c = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.compute' 'spyre.matmul': matmul inner sizes differ: [4, 64] @ [32, 64] (64 != 32)
    // expected-error @+1 {{'spyre.matmul': matmul inner sizes differ: [4, 64] @ [32, 64] (64 != 32)}}
    dataflow.compute "spyre.matmul" on "pe" (%a, %w) -> (%c) : (!dataflow.lx<4x64xf16>, !dataflow.lx<32x64xf16>) -> !dataflow.lx<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// ... and the op's properties, given in `attrs`: sum's dims are in range.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %a = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    %s = dataflow.alloc_lx : !dataflow.lx<4x1xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.compute' 'spyre.sum': dim 2 is out of range for rank 2
    // expected-error @+1 {{'spyre.sum': dim 2 is out of range for rank 2}}
    dataflow.compute "spyre.sum" on "sfp" (%a) -> (%s) {attrs = {dims = array<i64: 2>, keepdim}} : (!dataflow.lx<4x64xf16>) -> !dataflow.lx<4x1xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// The ring combines by add, max or min.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(4) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %a = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.ring_allreduce': kind must be add, max or min
    // expected-error @+1 {{kind must be add, max or min}}
    dataflow.ring_allreduce %a {kind = "mul", group_size = 4 : i64} : !dataflow.lx<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// Ring groups divide the kernel's cores.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(32) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %a = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.ring_allreduce': groups of 3 cores 1 apart do not tile 32 cores
    // expected-error @+1 {{groups of 3 cores 1 apart do not tile 32 cores}}
    dataflow.ring_allreduce %a {kind = "add", group_size = 3 : i64} : !dataflow.lx<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// An all-gather stacks group_size parts along dim 0.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(4) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %p = dataflow.alloc_lx : !dataflow.lx<2x64xf16>
    %f = dataflow.alloc_lx : !dataflow.lx<6x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.ring_allgather': 4 parts of [2, 64] stack to [8, 64], not [6, 64]
    // expected-error @+1 {{4 parts of [2, 64] stack to [8, 64], not [6, 64]}}
    dataflow.ring_allgather %p into %f {group_size = 4 : i64} : !dataflow.lx<2x64xf16>, !dataflow.lx<6x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}

// -----

// Groups of cores `stride` apart must tile the kernel's cores.
func.func @f(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = dataflow.kernel @k cores(4) (%x) : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %p = dataflow.alloc_lx : !dataflow.lx<2x64xf16>
    %f = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // CHECK: dataflow_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.ring_allgather': groups of 2 cores 4 apart do not tile 4 cores
    // expected-error @+1 {{groups of 2 cores 4 apart do not tile 4 cores}}
    dataflow.ring_allgather %p into %f {group_size = 2 : i64, stride = 4 : i64} : !dataflow.lx<2x64xf16>, !dataflow.lx<4x64xf16>
    dataflow.end
  }
  func.return %r : tensor<4x64xf16>
}
