// convert-dataflow-to-units refuses patterns of hand-written L2 that its queues would
// order wrongly (the compiler does not emit them), each with a located error
// naming the pattern; tests/test_units_patterns.py runs the ring input
// through L2 and L3.

// RUN: spyre-opt %s -p convert-dataflow-to-units --verify-diagnostics --split-input-file
// RUN: spyre-opt %s -p convert-dataflow-to-units --verify-diagnostics --split-input-file 2>&1 | %no-traceback

// One LX buffer written in two sibling loops, by the LS unit in the first (a load) and
// by the SFP in the second (tests/units_patterns/sibling_loads.mlir, where both
// versions are loads, lowers and agrees with L2).
func.func @main(%x: tensor<64x64xf16>, %y: tensor<64x64xf16>) -> (tensor<64x64xf16>, tensor<64x64xf16>) {
  %r:2 = dataflow.kernel @k cores(1) (%x, %y) : (tensor<64x64xf16>, tensor<64x64xf16>) -> (tensor<64x64xf16>, tensor<64x64xf16>) {
  ^bb0(%core: index, %xm: !dataflow.ddr<64x64xf16>, %ym: !dataflow.ddr<64x64xf16>, %o1: !dataflow.ddr<64x64xf16>, %o2: !dataflow.ddr<64x64xf16>):
    %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
    %b = dataflow.alloc_lx {offset = 2048 : i64} : !dataflow.lx<16x64xf16>
    %c = dataflow.alloc_lx {offset = 4096 : i64} : !dataflow.lx<16x64xf16>
    %d = dataflow.alloc_lx {offset = 6144 : i64} : !dataflow.lx<16x64xf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %xm[%row, %c0] into %a : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
      dataflow.compute "spyre.exp" on "sfp" (%a) -> (%b) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
      dataflow.store %b into %o1[%row, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
    }
    dataflow.compute "spyre.full" on "pe" () -> (%c) {attrs = {value = 0.0 : f64}} : () -> !dataflow.lx<16x64xf16>
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %ym[%row, %c0] into %d : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
      // expected-error @+1 {{a buffer written by more than one unit is written afresh after another unit read its previous version (e.g. an LX buffer loaded in two sibling loops)}}
      dataflow.compute "spyre.exp" on "sfp" (%d) -> (%a) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
      dataflow.compute "spyre.add" on "pe" (%a, %c) -> (%c) : (!dataflow.lx<16x64xf16>, !dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
    }
    dataflow.store %c into %o2[%c0, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
    dataflow.end
  }
  func.return %r#0, %r#1 : tensor<64x64xf16>, tensor<64x64xf16>
}

// -----

// A loop-carried buffer: tile i adds tanh of tile i-1, which the SFP writes at the
// bottom of the body for the PE to read at the top of the next iteration.
func.func @main(%x: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<64x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %xm: !dataflow.ddr<64x64xf16>, %out: !dataflow.ddr<64x64xf16>):
    %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
    %s = dataflow.alloc_lx {offset = 2048 : i64} : !dataflow.lx<16x64xf16>
    %p = dataflow.alloc_lx {offset = 4096 : i64} : !dataflow.lx<16x64xf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    dataflow.compute "spyre.full" on "pe" () -> (%p) {attrs = {value = 0.0 : f64}} : () -> !dataflow.lx<16x64xf16>
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %xm[%row, %c0] into %a : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
      // expected-error @+1 {{a loop-carried value used as a ring buffer}}
      dataflow.compute "spyre.add" on "pe" (%a, %p) -> (%s) : (!dataflow.lx<16x64xf16>, !dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
      dataflow.store %s into %out[%row, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
      dataflow.compute "spyre.tanh" on "sfp" (%a) -> (%p) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
    }
    dataflow.end
  }
  func.return %r : tensor<64x64xf16>
}
