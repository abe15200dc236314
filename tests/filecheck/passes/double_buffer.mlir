// spyre-double-buffer (spyre_ir/passes/double_buffer.py): a tile loop's leading load
// into a buffer used only within the iteration gets a 2-slot buffer, a prologue load of
// iteration lb into slot 0, and in the loop a guarded prefetch of the next iteration
// into the other slot; the body computes on this iteration's slot. Loops where that
// does not apply are left as they are (alternate=false keeps this file to prefetching;
// double_buffer_alternate.mlir covers the alternating output slots). Running the pass again changes nothing; with
// enable=false it changes nothing at all; the result allocates.

// RUN: spyre-opt %s -p 'spyre-double-buffer{alternate=false}' | filecheck %s
// RUN: spyre-opt %s -p 'spyre-double-buffer{alternate=false}' | spyre-opt -p 'spyre-double-buffer{alternate=false}' | filecheck %s
// RUN: spyre-opt %s -p 'spyre-double-buffer{enable=false}' > %t.off
// RUN: spyre-opt %s > %t.none
// RUN: diff %t.off %t.none
// RUN: spyre-opt %s -p 'spyre-double-buffer{alternate=false},spyre-allocate-scratchpad' | filecheck %s --check-prefix=ALLOC
// RUN: spyre-opt %s -p spyre-double-buffer 2>&1 | %no-traceback

// ALLOC-LABEL: dataflow.kernel @k0
// ALLOC-SAME:    lx_peak_bytes = 24576 : i64
// ALLOC:         %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<2x16x256xf16>
// ALLOC-NEXT:    %b = dataflow.alloc_lx {offset = 16384 : i64} : !dataflow.lx<16x256xf16>

// The basic case: constant bounds (4 iterations), so the prologue load is not guarded;
// the load's address op is cloned for lb (%row_first) and for i + 1 (%row_next) and
// stays in the body for the store (%row). Existing constants are reused.
// CHECK-LABEL: dataflow.kernel @k0 
// CHECK-NEXT: ^bb0(%core: index, %in: !dataflow.ddr<64x256xf16>, %out: !dataflow.ddr<64x256xf16>):
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: %c1 = arith.constant 1 : index
// CHECK-NEXT: %c4 = arith.constant 4 : index
// CHECK-NEXT: %c16 = arith.constant 16 : index
// CHECK-NEXT: %a = dataflow.alloc_lx : !dataflow.lx<2x16x256xf16>
// CHECK-NEXT: %b = dataflow.alloc_lx : !dataflow.lx<16x256xf16>
// CHECK-NEXT: %c2 = arith.constant 2 : index
// CHECK-NEXT: %row_first = arith.muli %c0, %c16 : index
// CHECK-NEXT: %a_first = dataflow.slot %a[%c0] : !dataflow.lx<2x16x256xf16> -> !dataflow.lx<16x256xf16>
// CHECK-NEXT: dataflow.load %in[%row_first, %c0] into %a_first : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x256xf16>
// CHECK-NEXT: scf.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT: %slot = arith.remui %i, %c2 : index
// CHECK-NEXT: %a_slot = dataflow.slot %a[%slot] : !dataflow.lx<2x16x256xf16> -> !dataflow.lx<16x256xf16>
// CHECK-NEXT: %next = arith.addi %i, %c1 : index
// CHECK-NEXT: %more = arith.cmpi slt, %next, %c4 : index
// CHECK-NEXT: scf.if %more {
// CHECK-NEXT: %next_slot = arith.subi %c1, %slot : index
// CHECK-NEXT: %row_next = arith.muli %next, %c16 : index
// CHECK-NEXT: %a_next = dataflow.slot %a[%next_slot] : !dataflow.lx<2x16x256xf16> -> !dataflow.lx<16x256xf16>
// CHECK-NEXT: dataflow.load %in[%row_next, %c0] into %a_next : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x256xf16>
// CHECK-NEXT: }
// CHECK-NEXT: %row = arith.muli %i, %c16 : index
// CHECK-NEXT: dataflow.compute "spyre.exp" on "sfp"(%a_slot) -> (%b) : (!dataflow.lx<16x256xf16>) -> !dataflow.lx<16x256xf16>
// CHECK-NEXT: dataflow.store %b into %out[%row, %c0] : !dataflow.lx<16x256xf16>, !dataflow.ddr<64x256xf16>
// CHECK-NEXT: }
// CHECK-NEXT: dataflow.end
func.func @main(%x: tensor<64x256xf16>) -> tensor<64x256xf16> {
  %r = dataflow.kernel @k0 cores(1) (%x) : (tensor<64x256xf16>) -> tensor<64x256xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x256xf16>, %out: !dataflow.ddr<64x256xf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %a = dataflow.alloc_lx : !dataflow.lx<16x256xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<16x256xf16>
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %in[%row, %c0] into %a : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x256xf16>
      dataflow.compute "spyre.exp" on "sfp" (%a) -> (%b) : (!dataflow.lx<16x256xf16>) -> !dataflow.lx<16x256xf16>
      dataflow.store %b into %out[%row, %c0] : !dataflow.lx<16x256xf16>, !dataflow.ddr<64x256xf16>
    }
    dataflow.end
  }
  func.return %r : tensor<64x256xf16>
}

// Per-core bounds: the loop may run zero times, so the prologue is guarded by lb < ub;
// the slot counts iterations from lb.
// CHECK-LABEL: dataflow.kernel @k_dyn 
// CHECK-NEXT: ^bb0(%core: index, %in: !dataflow.ddr<40x256xf16>, %out: !dataflow.ddr<40x256xf16>):
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: %c1 = arith.constant 1 : index
// CHECK-NEXT: %c3 = arith.constant 3 : index
// CHECK-NEXT: %c8 = arith.constant 8 : index
// CHECK-NEXT: %c5 = arith.constant 5 : index
// CHECK-NEXT: %lb = arith.muli %core, %c3 : index
// CHECK-NEXT: %end = arith.addi %lb, %c3 : index
// CHECK-NEXT: %ub = arith.minui %end, %c5 : index
// CHECK-NEXT: %a = dataflow.alloc_lx : !dataflow.lx<2x8x256xf16>
// CHECK-NEXT: %b = dataflow.alloc_lx : !dataflow.lx<8x256xf16>
// CHECK-NEXT: %c2 = arith.constant 2 : index
// CHECK-NEXT: %runs = arith.cmpi slt, %lb, %ub : index
// CHECK-NEXT: scf.if %runs {
// CHECK-NEXT: %row_first = arith.muli %lb, %c8 : index
// CHECK-NEXT: %a_first = dataflow.slot %a[%c0] : !dataflow.lx<2x8x256xf16> -> !dataflow.lx<8x256xf16>
// CHECK-NEXT: dataflow.load %in[%row_first, %c0] into %a_first {pad = 0.000000e+00 : f64} : !dataflow.ddr<40x256xf16>, !dataflow.lx<8x256xf16>
// CHECK-NEXT: }
// CHECK-NEXT: scf.for %t = %lb to %ub step %c1 {
// CHECK-NEXT: %from_lb = arith.subi %t, %lb : index
// CHECK-NEXT: %slot = arith.remui %from_lb, %c2 : index
// CHECK-NEXT: %a_slot = dataflow.slot %a[%slot] : !dataflow.lx<2x8x256xf16> -> !dataflow.lx<8x256xf16>
// CHECK-NEXT: %next = arith.addi %t, %c1 : index
// CHECK-NEXT: %more = arith.cmpi slt, %next, %ub : index
// CHECK-NEXT: scf.if %more {
// CHECK-NEXT: %next_slot = arith.subi %c1, %slot : index
// CHECK-NEXT: %row_next = arith.muli %next, %c8 : index
// CHECK-NEXT: %a_next = dataflow.slot %a[%next_slot] : !dataflow.lx<2x8x256xf16> -> !dataflow.lx<8x256xf16>
// CHECK-NEXT: dataflow.load %in[%row_next, %c0] into %a_next {pad = 0.000000e+00 : f64} : !dataflow.ddr<40x256xf16>, !dataflow.lx<8x256xf16>
// CHECK-NEXT: }
// CHECK-NEXT: %row = arith.muli %t, %c8 : index
// CHECK-NEXT: dataflow.compute "spyre.exp" on "sfp"(%a_slot) -> (%b) : (!dataflow.lx<8x256xf16>) -> !dataflow.lx<8x256xf16>
// CHECK-NEXT: dataflow.store %b into %out[%row, %c0] : !dataflow.lx<8x256xf16>, !dataflow.ddr<40x256xf16>
// CHECK-NEXT: }
// CHECK-NEXT: dataflow.end
func.func @dyn(%x: tensor<40x256xf16>) -> tensor<40x256xf16> {
  %r = dataflow.kernel @k_dyn cores(4) (%x) : (tensor<40x256xf16>) -> tensor<40x256xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<40x256xf16>, %out: !dataflow.ddr<40x256xf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c8 = arith.constant 8 : index
    %c5 = arith.constant 5 : index
    %lb = arith.muli %core, %c3 : index
    %end = arith.addi %lb, %c3 : index
    %ub = arith.minui %end, %c5 : index
    %a = dataflow.alloc_lx : !dataflow.lx<8x256xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<8x256xf16>
    scf.for %t = %lb to %ub step %c1 {
      %row = arith.muli %t, %c8 : index
      dataflow.load %in[%row, %c0] into %a {pad = 0.0 : f64} : !dataflow.ddr<40x256xf16>, !dataflow.lx<8x256xf16>
      dataflow.compute "spyre.exp" on "sfp" (%a) -> (%b) : (!dataflow.lx<8x256xf16>) -> !dataflow.lx<8x256xf16>
      dataflow.store %b into %out[%row, %c0] : !dataflow.lx<8x256xf16>, !dataflow.ddr<40x256xf16>
    }
    dataflow.end
  }
  func.return %r : tensor<40x256xf16>
}

// A split-K matmul's k loop: both leading loads (the weight one transposed, with
// `perm`) get two slots, one slot index and one prefetch `scf.if`; the address op they
// share is cloned once. The outer loop (which does not start with a load) and the
// accumulator (written by the compute) are left alone.
// CHECK-LABEL: dataflow.kernel @k_mm 
// CHECK-NEXT: ^bb0(%core: index, %in: !dataflow.ddr<64x256xf16>, %wt: !dataflow.ddr<128x256xf16>, %out: !dataflow.ddr<64x128xf16>):
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: %c1 = arith.constant 1 : index
// CHECK-NEXT: %c2 = arith.constant 2 : index
// CHECK-NEXT: %c4 = arith.constant 4 : index
// CHECK-NEXT: %c64 = arith.constant 64 : index
// CHECK-NEXT: %c16 = arith.constant 16 : index
// CHECK-NEXT: %xa = dataflow.alloc_lx : !dataflow.lx<2x16x64xf16>
// CHECK-NEXT: %wb = dataflow.alloc_lx : !dataflow.lx<2x64x128xf16>
// CHECK-NEXT: %acc = dataflow.alloc_lx : !dataflow.lx<16x128xf16>
// CHECK-NEXT: scf.for %m = %c0 to %c4 step %c1 {
// CHECK-NEXT: %row = arith.muli %m, %c16 : index
// CHECK-NEXT: dataflow.compute "spyre.full" on "pe"() -> (%acc) {attrs = {value = 0.000000e+00 : f64}} : () -> !dataflow.lx<16x128xf16>
// CHECK-NEXT: %col_first = arith.muli %c0, %c64 : index
// CHECK-NEXT: %xa_first = dataflow.slot %xa[%c0] : !dataflow.lx<2x16x64xf16> -> !dataflow.lx<16x64xf16>
// CHECK-NEXT: dataflow.load %in[%row, %col_first] into %xa_first : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x64xf16>
// CHECK-NEXT: %wb_first = dataflow.slot %wb[%c0] : !dataflow.lx<2x64x128xf16> -> !dataflow.lx<64x128xf16>
// CHECK-NEXT: dataflow.load %wt[%c0, %col_first] into %wb_first {perm = array<i64: 1, 0>} : !dataflow.ddr<128x256xf16>, !dataflow.lx<64x128xf16>
// CHECK-NEXT: scf.for %k = %c0 to %c4 step %c1 {
// CHECK-NEXT: %slot = arith.remui %k, %c2 : index
// CHECK-NEXT: %xa_slot = dataflow.slot %xa[%slot] : !dataflow.lx<2x16x64xf16> -> !dataflow.lx<16x64xf16>
// CHECK-NEXT: %wb_slot = dataflow.slot %wb[%slot] : !dataflow.lx<2x64x128xf16> -> !dataflow.lx<64x128xf16>
// CHECK-NEXT: %next = arith.addi %k, %c1 : index
// CHECK-NEXT: %more = arith.cmpi slt, %next, %c4 : index
// CHECK-NEXT: scf.if %more {
// CHECK-NEXT: %next_slot = arith.subi %c1, %slot : index
// CHECK-NEXT: %col_next = arith.muli %next, %c64 : index
// CHECK-NEXT: %xa_next = dataflow.slot %xa[%next_slot] : !dataflow.lx<2x16x64xf16> -> !dataflow.lx<16x64xf16>
// CHECK-NEXT: dataflow.load %in[%row, %col_next] into %xa_next : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x64xf16>
// CHECK-NEXT: %wb_next = dataflow.slot %wb[%next_slot] : !dataflow.lx<2x64x128xf16> -> !dataflow.lx<64x128xf16>
// CHECK-NEXT: dataflow.load %wt[%c0, %col_next] into %wb_next {perm = array<i64: 1, 0>} : !dataflow.ddr<128x256xf16>, !dataflow.lx<64x128xf16>
// CHECK-NEXT: }
// CHECK-NEXT: dataflow.compute "spyre.matmul" on "pe"(%xa_slot, %wb_slot) -> (%acc) {accumulate} : (!dataflow.lx<16x64xf16>, !dataflow.lx<64x128xf16>) -> !dataflow.lx<16x128xf16>
// CHECK-NEXT: }
// CHECK-NEXT: dataflow.store %acc into %out[%row, %c0] : !dataflow.lx<16x128xf16>, !dataflow.ddr<64x128xf16>
// CHECK-NEXT: }
// CHECK-NEXT: dataflow.end
func.func @mm(%x: tensor<64x256xf16>, %w: tensor<128x256xf16>) -> tensor<64x128xf16> {
  %r = dataflow.kernel @k_mm cores(1) (%x, %w) : (tensor<64x256xf16>, tensor<128x256xf16>) -> tensor<64x128xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x256xf16>, %wt: !dataflow.ddr<128x256xf16>, %out: !dataflow.ddr<64x128xf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c16 = arith.constant 16 : index
    %xa = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
    %wb = dataflow.alloc_lx : !dataflow.lx<64x128xf16>
    %acc = dataflow.alloc_lx : !dataflow.lx<16x128xf16>
    scf.for %m = %c0 to %c4 step %c1 {
      %row = arith.muli %m, %c16 : index
      dataflow.compute "spyre.full" on "pe" () -> (%acc) {attrs = {value = 0.0 : f64}} : () -> !dataflow.lx<16x128xf16>
      scf.for %k = %c0 to %c4 step %c1 {
        %col = arith.muli %k, %c64 : index
        dataflow.load %in[%row, %col] into %xa : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x64xf16>
        dataflow.load %wt[%c0, %col] into %wb {perm = array<i64: 1, 0>} : !dataflow.ddr<128x256xf16>, !dataflow.lx<64x128xf16>
        dataflow.compute "spyre.matmul" on "pe" (%xa, %wb) -> (%acc) {accumulate} : (!dataflow.lx<16x64xf16>, !dataflow.lx<64x128xf16>) -> !dataflow.lx<16x128xf16>
      }
      dataflow.store %acc into %out[%row, %c0] : !dataflow.lx<16x128xf16>, !dataflow.ddr<64x128xf16>
    }
    dataflow.end
  }
  func.return %r : tensor<64x128xf16>
}

// lb = 1, step = 2: the slot is ((i - lb) / step) mod 2 and the prefetch is of i + step.
// CHECK-LABEL: dataflow.kernel @k_step 
// CHECK-NEXT: ^bb0(%core: index, %in: !dataflow.ddr<64x256xf16>, %out: !dataflow.ddr<64x256xf16>):
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: %c1 = arith.constant 1 : index
// CHECK-NEXT: %c2 = arith.constant 2 : index
// CHECK-NEXT: %c7 = arith.constant 7 : index
// CHECK-NEXT: %c8 = arith.constant 8 : index
// CHECK-NEXT: %a = dataflow.alloc_lx : !dataflow.lx<2x8x256xf16>
// CHECK-NEXT: %b = dataflow.alloc_lx : !dataflow.lx<8x256xf16>
// CHECK-NEXT: %row_first = arith.muli %c1, %c8 : index
// CHECK-NEXT: %a_first = dataflow.slot %a[%c0] : !dataflow.lx<2x8x256xf16> -> !dataflow.lx<8x256xf16>
// CHECK-NEXT: dataflow.load %in[%row_first, %c0] into %a_first : !dataflow.ddr<64x256xf16>, !dataflow.lx<8x256xf16>
// CHECK-NEXT: scf.for %i = %c1 to %c7 step %c2 {
// CHECK-NEXT: %from_lb = arith.subi %i, %c1 : index
// CHECK-NEXT: %iteration = arith.divui %from_lb, %c2 : index
// CHECK-NEXT: %slot = arith.remui %iteration, %c2 : index
// CHECK-NEXT: %a_slot = dataflow.slot %a[%slot] : !dataflow.lx<2x8x256xf16> -> !dataflow.lx<8x256xf16>
// CHECK-NEXT: %next = arith.addi %i, %c2 : index
// CHECK-NEXT: %more = arith.cmpi slt, %next, %c7 : index
// CHECK-NEXT: scf.if %more {
// CHECK-NEXT: %next_slot = arith.subi %c1, %slot : index
// CHECK-NEXT: %row_next = arith.muli %next, %c8 : index
// CHECK-NEXT: %a_next = dataflow.slot %a[%next_slot] : !dataflow.lx<2x8x256xf16> -> !dataflow.lx<8x256xf16>
// CHECK-NEXT: dataflow.load %in[%row_next, %c0] into %a_next : !dataflow.ddr<64x256xf16>, !dataflow.lx<8x256xf16>
// CHECK-NEXT: }
// CHECK-NEXT: %row = arith.muli %i, %c8 : index
// CHECK-NEXT: dataflow.compute "spyre.exp" on "sfp"(%a_slot) -> (%b) : (!dataflow.lx<8x256xf16>) -> !dataflow.lx<8x256xf16>
// CHECK-NEXT: dataflow.store %b into %out[%row, %c0] : !dataflow.lx<8x256xf16>, !dataflow.ddr<64x256xf16>
// CHECK-NEXT: }
// CHECK-NEXT: dataflow.end
func.func @step2(%x: tensor<64x256xf16>) -> tensor<64x256xf16> {
  %r = dataflow.kernel @k_step cores(1) (%x) : (tensor<64x256xf16>) -> tensor<64x256xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x256xf16>, %out: !dataflow.ddr<64x256xf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %a = dataflow.alloc_lx : !dataflow.lx<8x256xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<8x256xf16>
    scf.for %i = %c1 to %c7 step %c2 {
      %row = arith.muli %i, %c8 : index
      dataflow.load %in[%row, %c0] into %a : !dataflow.ddr<64x256xf16>, !dataflow.lx<8x256xf16>
      dataflow.compute "spyre.exp" on "sfp" (%a) -> (%b) : (!dataflow.lx<8x256xf16>) -> !dataflow.lx<8x256xf16>
      dataflow.store %b into %out[%row, %c0] : !dataflow.lx<8x256xf16>, !dataflow.ddr<64x256xf16>
    }
    dataflow.end
  }
  func.return %r : tensor<64x256xf16>
}

// Left alone, each for the reason in its comment: every buffer keeps its type and no
// slot or prefetch appears.
// CHECK-LABEL: dataflow.kernel @skip
// CHECK-NOT:   dataflow.slot
// CHECK-NOT:   scf.if
// CHECK-NOT:   !dataflow.lx<2x
// CHECK:       dataflow.end
func.func @skip(%x: tensor<64x256xf16>) -> tensor<64x256xf16> {
  %r = dataflow.kernel @skip cores(1) (%x) : (tensor<64x256xf16>) -> tensor<64x256xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x256xf16>, %out: !dataflow.ddr<64x256xf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %b = dataflow.alloc_lx : !dataflow.lx<16x256xf16>
    // Used after the loop: the last tile is live out.
    %live_out = dataflow.alloc_lx : !dataflow.lx<16x256xf16>
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %in[%row, %c0] into %live_out : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x256xf16>
      dataflow.compute "spyre.exp" on "sfp" (%live_out) -> (%b) : (!dataflow.lx<16x256xf16>) -> !dataflow.lx<16x256xf16>
      dataflow.store %b into %out[%row, %c0] : !dataflow.lx<16x256xf16>, !dataflow.ddr<64x256xf16>
    }
    dataflow.store %live_out into %out[%c0, %c0] : !dataflow.lx<16x256xf16>, !dataflow.ddr<64x256xf16>
    // Written again in the loop (an in-place compute).
    %rewritten = dataflow.alloc_lx : !dataflow.lx<16x256xf16>
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %in[%row, %c0] into %rewritten : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x256xf16>
      dataflow.compute "spyre.exp" on "sfp" (%rewritten) -> (%rewritten) : (!dataflow.lx<16x256xf16>) -> !dataflow.lx<16x256xf16>
      dataflow.store %rewritten into %out[%row, %c0] : !dataflow.lx<16x256xf16>, !dataflow.ddr<64x256xf16>
    }
    // Not at the start of the body.
    %late = dataflow.alloc_lx : !dataflow.lx<16x256xf16>
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.store %b into %out[%row, %c0] : !dataflow.lx<16x256xf16>, !dataflow.ddr<64x256xf16>
      dataflow.load %in[%row, %c0] into %late : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x256xf16>
      dataflow.compute "spyre.exp" on "sfp" (%late) -> (%b) : (!dataflow.lx<16x256xf16>) -> !dataflow.lx<16x256xf16>
    }
    // The loop stores into the memory it loads from: tile i+1 may be what tile i wrote.
    %in_place = dataflow.alloc_lx : !dataflow.lx<16x256xf16>
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %out[%row, %c0] into %in_place : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x256xf16>
      dataflow.compute "spyre.exp" on "sfp" (%in_place) -> (%b) : (!dataflow.lx<16x256xf16>) -> !dataflow.lx<16x256xf16>
      dataflow.store %b into %out[%row, %c0] : !dataflow.lx<16x256xf16>, !dataflow.ddr<64x256xf16>
    }
    // One iteration: nothing to overlap.
    %once = dataflow.alloc_lx : !dataflow.lx<16x256xf16>
    scf.for %i = %c0 to %c1 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %in[%row, %c0] into %once : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x256xf16>
      dataflow.compute "spyre.exp" on "sfp" (%once) -> (%b) : (!dataflow.lx<16x256xf16>) -> !dataflow.lx<16x256xf16>
    }
    // Already allocated: the bytes are fixed.
    %placed = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x256xf16>
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %in[%row, %c0] into %placed : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x256xf16>
      dataflow.compute "spyre.exp" on "sfp" (%placed) -> (%b) : (!dataflow.lx<16x256xf16>) -> !dataflow.lx<16x256xf16>
    }
    // Allocated in the body: a buffer per iteration already.
    scf.for %i = %c0 to %c4 step %c1 {
      %inner = dataflow.alloc_lx : !dataflow.lx<16x256xf16>
      %row = arith.muli %i, %c16 : index
      dataflow.load %in[%row, %c0] into %inner : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x256xf16>
      dataflow.compute "spyre.exp" on "sfp" (%inner) -> (%b) : (!dataflow.lx<16x256xf16>) -> !dataflow.lx<16x256xf16>
    }
    // The offset comes from a loop-carried value, not from the iv.
    %carried = dataflow.alloc_lx : !dataflow.lx<16x256xf16>
    %end = scf.for %i = %c0 to %c4 step %c1 iter_args(%row = %c0) -> (index) {
      dataflow.load %in[%row, %c0] into %carried : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x256xf16>
      dataflow.compute "spyre.exp" on "sfp" (%carried) -> (%b) : (!dataflow.lx<16x256xf16>) -> !dataflow.lx<16x256xf16>
      %next = arith.addi %row, %c16 : index
      scf.yield %next : index
    }
    dataflow.end
  }
  func.return %r : tensor<64x256xf16>
}
