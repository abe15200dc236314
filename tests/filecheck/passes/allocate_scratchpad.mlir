// spyre-allocate-scratchpad (spyre_ir/passes/allocate_scratchpad.py): liveness-based,
// stick-aligned offsets for every dataflow.alloc_lx and lx_peak_bytes on every kernel.
// The last two chunks do not fit, so spyre-opt exits 1; stdout and stderr are checked
// together (each chunk's output is flushed before the next chunk runs).

// RUN: not spyre-opt %s --split-input-file -p spyre-allocate-scratchpad 2>&1 | filecheck %s --check-prefixes=CHECK,DEFAULT
// RUN: not spyre-opt %s --split-input-file -p 'spyre-allocate-scratchpad{lx-bytes=2097152}' 2>&1 | filecheck %s --check-prefixes=CHECK,SMALL
// RUN: not spyre-opt %s --split-input-file -p spyre-allocate-scratchpad 2>&1 | %no-traceback

// Straight-line code: a buffer dead before another is first used gives up its bytes.
// %a dies at the first compute, so %c (first used after that) reuses offset 0 and %d
// reuses %b's bytes: the peak is 2 buffers, not 4.
// CHECK-LABEL: dataflow.kernel @reuse
// CHECK-SAME:    lx_peak_bytes = 4096 : i64
// CHECK:         %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
// CHECK-NEXT:    %b = dataflow.alloc_lx {offset = 2048 : i64} : !dataflow.lx<16x64xf16>
// CHECK-NEXT:    %c = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
// CHECK-NEXT:    %d = dataflow.alloc_lx {offset = 2048 : i64} : !dataflow.lx<16x64xf16>
func.func @reuse(%x: tensor<16x64xf16>) -> tensor<16x64xf16> {
  %r = dataflow.kernel @reuse cores(1) (%x) : (tensor<16x64xf16>) -> tensor<16x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<16x64xf16>, %out: !dataflow.ddr<16x64xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
    %c = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
    %d = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
    dataflow.load %in[%c0, %c0] into %a : !dataflow.ddr<16x64xf16>, !dataflow.lx<16x64xf16>
    dataflow.compute "spyre.exp" on "sfp" (%a) -> (%b) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
    dataflow.compute "spyre.tanh" on "sfp" (%b) -> (%c) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
    dataflow.compute "spyre.neg" on "pe" (%c) -> (%d) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
    dataflow.store %d into %out[%c0, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<16x64xf16>
    dataflow.end
  }
  func.return %r : tensor<16x64xf16>
}

// -----

// Offsets are whole sticks: three buffers of 100 bytes (a 50-element f16 tensor, one
// partial stick) live together sit 128 bytes apart; the peak is the end of the last.
// CHECK-LABEL: dataflow.kernel @align
// CHECK-SAME:    lx_peak_bytes = 356 : i64
// CHECK:         %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<50xf16>
// CHECK-NEXT:    %b = dataflow.alloc_lx {offset = 128 : i64} : !dataflow.lx<50xf16>
// CHECK-NEXT:    %c = dataflow.alloc_lx {offset = 256 : i64} : !dataflow.lx<50xf16>
func.func @align(%x: tensor<50xf16>) -> tensor<50xf16> {
  %r = dataflow.kernel @align cores(1) (%x) : (tensor<50xf16>) -> tensor<50xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<50xf16>, %out: !dataflow.ddr<50xf16>):
    %c0 = arith.constant 0 : index
    %a = dataflow.alloc_lx : !dataflow.lx<50xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<50xf16>
    %c = dataflow.alloc_lx : !dataflow.lx<50xf16>
    dataflow.load %in[%c0] into %a : !dataflow.ddr<50xf16>, !dataflow.lx<50xf16>
    dataflow.compute "spyre.exp" on "sfp" (%a) -> (%b) : (!dataflow.lx<50xf16>) -> !dataflow.lx<50xf16>
    dataflow.compute "spyre.add" on "pe" (%a, %b) -> (%c) : (!dataflow.lx<50xf16>, !dataflow.lx<50xf16>) -> !dataflow.lx<50xf16>
    dataflow.store %c into %out[%c0] : !dataflow.lx<50xf16>, !dataflow.ddr<50xf16>
    dataflow.end
  }
  func.return %r : tensor<50xf16>
}

// -----

// A use inside a loop makes a buffer allocated outside it live for the whole loop (it
// may carry a value from one iteration to the next): %t and %u, used one after the
// other in the body, do not share. The same code straight-line shares (@reuse), and
// buffers allocated inside the body (fresh each iteration) share too. A buffer
// allocated in the outer body and used in the inner loop lives for the inner loop
// only: %v and %w share.
// CHECK-LABEL: dataflow.kernel @loops
// CHECK-SAME:    lx_peak_bytes = 4096 : i64
// CHECK:         %t = dataflow.alloc_lx {offset = 0 : i64}
// CHECK-NEXT:    %u = dataflow.alloc_lx {offset = 2048 : i64}
// CHECK:         %p = dataflow.alloc_lx {offset = 0 : i64}
// CHECK:         %q = dataflow.alloc_lx {offset = 0 : i64}
// CHECK:         %v = dataflow.alloc_lx {offset = 0 : i64}
// CHECK:         %w = dataflow.alloc_lx {offset = 0 : i64}
func.func @loops(%x: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %r = dataflow.kernel @loops cores(1) (%x) : (tensor<64x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x64xf16>, %out: !dataflow.ddr<64x64xf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %t = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
    %u = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %in[%row, %c0] into %t : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
      dataflow.store %t into %out[%row, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
      dataflow.load %in[%row, %c0] into %u : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
      dataflow.store %u into %out[%row, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
    }
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      %p = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
      dataflow.load %in[%row, %c0] into %p : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
      dataflow.store %p into %out[%row, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
      %q = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
      dataflow.load %in[%row, %c0] into %q : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
      dataflow.store %q into %out[%row, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
      %v = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
      scf.for %j = %c0 to %c4 step %c1 {
        dataflow.load %in[%row, %c0] into %v : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
        dataflow.store %v into %out[%row, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
      }
      %w = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
      dataflow.load %in[%row, %c0] into %w : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
      dataflow.store %w into %out[%row, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
    }
    dataflow.end
  }
  func.return %r : tensor<64x64xf16>
}

// -----

// A 2-slot buffer is used through its slots (before the loop and inside it): it lives
// from the prologue load to the end of the loop. %tmp, dead before the prologue, and
// %acc, first used after the loop, reuse its bytes; %sum, used in the loop, does not.
// CHECK-LABEL: dataflow.kernel @slots
// CHECK-SAME:    lx_peak_bytes = 6144 : i64
// CHECK:         %tmp = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
// CHECK:         %db = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<2x16x64xf16>
// CHECK-NEXT:    %sum = dataflow.alloc_lx {offset = 4096 : i64} : !dataflow.lx<16x64xf16>
// CHECK:         %acc = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
func.func @slots(%x: tensor<64x64xf16>) -> tensor<16x64xf16> {
  %r = dataflow.kernel @slots cores(1) (%x) : (tensor<64x64xf16>) -> tensor<16x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x64xf16>, %out: !dataflow.ddr<16x64xf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %tmp = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
    dataflow.load %in[%c0, %c0] into %tmp : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
    dataflow.store %tmp into %out[%c0, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<16x64xf16>
    %db = dataflow.alloc_lx : !dataflow.lx<2x16x64xf16>
    %sum = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
    dataflow.compute "spyre.full" on "pe" () -> (%sum) {attrs = {value = 0.0 : f64}} : () -> !dataflow.lx<16x64xf16>
    %first = dataflow.slot %db[%c0] : !dataflow.lx<2x16x64xf16> -> !dataflow.lx<16x64xf16>
    dataflow.load %in[%c0, %c0] into %first : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
    scf.for %i = %c0 to %c4 step %c1 {
      %k = arith.remui %i, %c2 : index
      %s = dataflow.slot %db[%k] : !dataflow.lx<2x16x64xf16> -> !dataflow.lx<16x64xf16>
      dataflow.compute "spyre.add" on "pe" (%sum, %s) -> (%sum) : (!dataflow.lx<16x64xf16>, !dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
    }
    %acc = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
    dataflow.compute "spyre.exp" on "sfp" (%sum) -> (%acc) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
    dataflow.store %acc into %out[%c0, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<16x64xf16>
    dataflow.end
  }
  func.return %r : tensor<16x64xf16>
}

// -----

// An offset already set stays; the other buffers go around it while it is live and
// may reuse its bytes when it is not. A kernel without buffers peaks at 0.
// CHECK-LABEL: dataflow.kernel @fixed
// CHECK-SAME:    lx_peak_bytes = 4096 : i64
// CHECK:         %pinned = dataflow.alloc_lx {offset = 0 : i64}
// CHECK-NEXT:    %live = dataflow.alloc_lx {offset = 2048 : i64}
// CHECK-NEXT:    %later = dataflow.alloc_lx {offset = 0 : i64}
// CHECK:         dataflow.kernel @empty cores(1) (%x) {lx_peak_bytes = 0 : i64}
func.func @fixed(%x: tensor<16x64xf16>) -> (tensor<16x64xf16>, tensor<16x64xf16>) {
  %r = dataflow.kernel @fixed cores(1) (%x) : (tensor<16x64xf16>) -> tensor<16x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<16x64xf16>, %out: !dataflow.ddr<16x64xf16>):
    %c0 = arith.constant 0 : index
    %pinned = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
    %live = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
    %later = dataflow.alloc_lx : !dataflow.lx<16x64xf16>
    dataflow.load %in[%c0, %c0] into %pinned : !dataflow.ddr<16x64xf16>, !dataflow.lx<16x64xf16>
    dataflow.compute "spyre.exp" on "sfp" (%pinned) -> (%live) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
    dataflow.compute "spyre.exp" on "sfp" (%live) -> (%later) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
    dataflow.store %later into %out[%c0, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<16x64xf16>
    dataflow.end
  }
  %e = dataflow.kernel @empty cores(1) (%x) : (tensor<16x64xf16>) -> tensor<16x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<16x64xf16>, %out: !dataflow.ddr<16x64xf16>):
    dataflow.end
  }
  func.return %r, %e : tensor<16x64xf16>, tensor<16x64xf16>
}

// -----

// Too big once each buffer starts on a stick: five 800-byte buffers live together
// are 4000 bytes (the verifier's sum fits the 4096 of the kernel) but 4 x 896 + 800
// = 4384 bytes with aligned offsets.
func.func @overflow_alignment(%x: tensor<400xf16>) -> tensor<400xf16> {
  // CHECK-NOT: dataflow.kernel @overflow_alignment
  // CHECK: allocate_scratchpad.mlir:[[# @LINE + 1]]:3: error: kernel @overflow_alignment needs 4384 bytes of LX per core; a core has 4096 (its largest set of buffers live at once is 4000 bytes)
  %r = dataflow.kernel @overflow_alignment cores(1) (%x) {lx_capacity = 4096 : i64} : (tensor<400xf16>) -> tensor<400xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<400xf16>, %out: !dataflow.ddr<400xf16>):
    %a = dataflow.alloc_lx : !dataflow.lx<400xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<400xf16>
    %c = dataflow.alloc_lx : !dataflow.lx<400xf16>
    %d = dataflow.alloc_lx : !dataflow.lx<400xf16>
    %e = dataflow.alloc_lx : !dataflow.lx<400xf16>
    dataflow.compute "spyre.add" on "pe" (%a, %b) -> (%c) : (!dataflow.lx<400xf16>, !dataflow.lx<400xf16>) -> !dataflow.lx<400xf16>
    dataflow.compute "spyre.add" on "pe" (%d, %e) -> (%c) : (!dataflow.lx<400xf16>, !dataflow.lx<400xf16>) -> !dataflow.lx<400xf16>
    dataflow.compute "spyre.add" on "pe" (%a, %e) -> (%c) : (!dataflow.lx<400xf16>, !dataflow.lx<400xf16>) -> !dataflow.lx<400xf16>
    dataflow.compute "spyre.add" on "pe" (%b, %d) -> (%c) : (!dataflow.lx<400xf16>, !dataflow.lx<400xf16>) -> !dataflow.lx<400xf16>
    dataflow.end
  }
  func.return %r : tensor<400xf16>
}

// -----

// Three 1 MiB buffers live together fit a kernel built for 4 MiB of LX, but not a
// 2 MiB core when the pass is told so (`lx-bytes`, which overrides the kernel's own).
func.func @overflow_option(%x: tensor<512x1024xf16>) -> tensor<512x1024xf16> {
  // DEFAULT:    dataflow.kernel @overflow_option
  // DEFAULT-SAME: lx_peak_bytes = 3145728 : i64
  // DEFAULT:      %c = dataflow.alloc_lx {offset = 2097152 : i64}
  // SMALL-NOT: dataflow.kernel @overflow_option
  // SMALL: allocate_scratchpad.mlir:[[# @LINE + 1]]:3: error: kernel @overflow_option needs 3145728 bytes of LX per core; a core has 2097152
  %r = dataflow.kernel @overflow_option cores(1) (%x) {lx_capacity = 4194304 : i64} : (tensor<512x1024xf16>) -> tensor<512x1024xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<512x1024xf16>, %out: !dataflow.ddr<512x1024xf16>):
    %a = dataflow.alloc_lx : !dataflow.lx<512x1024xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<512x1024xf16>
    %c = dataflow.alloc_lx : !dataflow.lx<512x1024xf16>
    dataflow.compute "spyre.add" on "pe" (%a, %b) -> (%c) : (!dataflow.lx<512x1024xf16>, !dataflow.lx<512x1024xf16>) -> !dataflow.lx<512x1024xf16>
    dataflow.end
  }
  func.return %r : tensor<512x1024xf16>
}
