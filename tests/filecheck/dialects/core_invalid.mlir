// RUN: spyre-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every pop needs a push: here the consumer waits twice per tile, the producer signals once.
func.func @f(%x: tensor<64x64xf16>) -> tensor<64x64xf16> {
  // CHECK: core_invalid.mlir:[[# @LINE + 2]]:3: error: 'core.program' @p: queue ls -> sfp0 gets 4 pushes but 8 pops
  // expected-error @+1 {{queue ls -> sfp0 gets 4 pushes but 8 pops}}
  %r = core.program @p cores(1) (%x) : (tensor<64x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x64xf16>, %out: !dataflow.ddr<64x64xf16>):
    %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %q = core.queue "ls" -> "sfp0" {depth = 1 : i64, credits = 0 : i64}
    core.unit "ls" {
      scf.for %i = %c0 to %c4 step %c1 {
        ls.load %in[%i, %c0] into %a : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
        core.push %q
      }
      core.end
    }
    core.unit "sfp0" {
      scf.for %i = %c0 to %c4 step %c1 {
        core.pop %q
        core.pop %q
      }
      core.end
    }
    core.end
  }
  func.return %r : tensor<64x64xf16>
}

// -----

// Two units that each wait for the other before signalling: a deadlock.
func.func @f(%x: tensor<64x64xf16>) -> tensor<64x64xf16> {
  // CHECK: core_invalid.mlir:[[# @LINE + 2]]:3: error: 'core.program' @p: deadlock: ls -> sfp0 wait on each other
  // expected-error @+1 {{deadlock: ls -> sfp0 wait on each other}}
  %r = core.program @p cores(1) (%x) : (tensor<64x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x64xf16>, %out: !dataflow.ddr<64x64xf16>):
    %q1 = core.queue "ls" -> "sfp0" {depth = 1 : i64, credits = 0 : i64}
    %q2 = core.queue "sfp0" -> "ls" {depth = 1 : i64, credits = 0 : i64}
    core.unit "ls" {
      core.pop %q2
      core.push %q1
      core.end
    }
    core.unit "sfp0" {
      core.pop %q1
      core.push %q2
      core.end
    }
    core.end
  }
  func.return %r : tensor<64x64xf16>
}

// -----

// A unit may not wait on itself.
func.func @f() {
  core.program @p cores(1) () : () -> () {
  ^bb0(%core: index):
    // CHECK: core_invalid.mlir:[[# @LINE + 2]]:5: error: 'core.queue': unit pe0 would wait on itself
    // expected-error @+1 {{unit pe0 would wait on itself}}
    %q = core.queue "pe0" -> "pe0" {depth = 1 : i64, credits = 0 : i64}
    core.end
  }
  func.return
}

// -----

// Initial tokens must fit the queue's depth.
func.func @f() {
  core.program @p cores(1) () : () -> () {
  ^bb0(%core: index):
    // CHECK: core_invalid.mlir:[[# @LINE + 2]]:5: error: 'core.queue': 3 initial tokens do not fit a queue of depth 2
    // expected-error @+1 {{3 initial tokens do not fit a queue of depth 2}}
    %q = core.queue "sfp0" -> "ls" {depth = 2 : i64, credits = 3 : i64}
    core.end
  }
  func.return
}

// -----

// A push stands in the queue's source unit.
func.func @f() {
  // CHECK: core_invalid.mlir:[[# @LINE + 2]]:3: error: 'core.program' @p: core.push on a queue ls -> pe0 stands in unit sfp0, not ls
  // expected-error @+1 {{core.push on a queue ls -> pe0 stands in unit sfp0, not ls}}
  core.program @p cores(1) () : () -> () {
  ^bb0(%core: index):
    %q = core.queue "ls" -> "pe0" {depth = 1 : i64, credits = 0 : i64}
    core.unit "sfp0" {
      core.push %q
      core.end
    }
    core.end
  }
  func.return
}

// -----

// The core's buffers must fit its LX.
func.func @f() {
  // CHECK: core_invalid.mlir:[[# @LINE + 2]]:3: error: 'core.program' @p: needs 4224 bytes of LX per core, but a core has 4096
  // expected-error @+1 {{needs 4224 bytes of LX per core, but a core has 4096}}
  core.program @p cores(1) () {lx_capacity = 4096 : i64} : () -> () {
  ^bb0(%core: index):
    // CHECK: core_invalid.mlir:[[# @LINE + 2]]:5: error: 'dataflow.alloc_lx': buffer ends at byte 4224, past the 4096 bytes of LX
    // expected-error @+1 {{buffer ends at byte 4224, past the 4096 bytes of LX}}
    %a = dataflow.alloc_lx {offset = 128 : i64} : !dataflow.lx<32x64xf16>
    core.end
  }
  func.return
}

// -----

// A move covers whole sticks unless `masked`.
func.func @f(%x: tensor<64x128xf16>) -> tensor<64x128xf16> {
  %r = core.program @p cores(1) (%x) : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x128xf16>, %out: !dataflow.ddr<64x128xf16>):
    %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x32xf16>
    %c0 = arith.constant 0 : index
    core.unit "ls" {
      // CHECK: core_invalid.mlir:[[# @LINE + 2]]:7: error: 'ls.load': moves 32 elements along stick dim 1, part of a stick of 64 inside the tensor, without `masked`
      // expected-error @+1 {{moves 32 elements along stick dim 1, part of a stick of 64 inside the tensor, without `masked`}}
      ls.load %in[%c0, %c0] into %a : !dataflow.ddr<64x128xf16>, !dataflow.lx<16x32xf16>
      core.end
    }
    core.end
  }
  func.return %r : tensor<64x128xf16>
}

// -----

// Unit instructions stand in their own unit.
func.func @f(%x: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %r = core.program @p cores(1) (%x) : (tensor<64x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x64xf16>, %out: !dataflow.ddr<64x64xf16>):
    %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
    %b = dataflow.alloc_lx {offset = 2048 : i64} : !dataflow.lx<16x64xf16>
    core.unit "pe0" {
      // CHECK: core_invalid.mlir:[[# @LINE + 2]]:7: error: 'sfp.compute' belongs in the sfp unit, not pe0
      // expected-error @+1 {{belongs in the sfp unit, not pe0}}
      sfp.compute "spyre.exp" on "sfp" (%a) -> (%b) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
      core.end
    }
    core.end
  }
  func.return %r : tensor<64x64xf16>
}
