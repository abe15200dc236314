// convert-dataflow-to-units refuses what its queues cannot order, with a located error:
// a tile read both before an scf.if and in one of its regions (the credit would be
// handed back twice in some passes, never in others).

// RUN: spyre-opt %s -p convert-dataflow-to-units --verify-diagnostics | filecheck %s
// RUN: spyre-opt %s -p convert-dataflow-to-units --verify-diagnostics 2>&1 | %no-traceback

func.func @main(%a: tensor<64x256xf16>) -> tensor<64x64xf16> {
  %r = dataflow.kernel @k cores(1) (%a) : (tensor<64x256xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %am: !dataflow.ddr<64x256xf16>, %out: !dataflow.ddr<64x64xf16>):
    %at = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<64x64xf16>
    %x = dataflow.alloc_lx {offset = 8192 : i64} : !dataflow.lx<64x64xf16>
    %y = dataflow.alloc_lx {offset = 16384 : i64} : !dataflow.lx<64x64xf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    scf.for %k = %c0 to %c4 step %c1 {
      %k0 = arith.muli %k, %c64 : index
      dataflow.load %am[%c0, %k0] into %at : !dataflow.ddr<64x256xf16>, !dataflow.lx<64x64xf16>
      dataflow.compute "spyre.exp" on "sfp" (%at) -> (%x) : (!dataflow.lx<64x64xf16>) -> !dataflow.lx<64x64xf16>
      %more = arith.cmpi ult, %k, %c3 : index
      scf.if %more {
        dataflow.compute "spyre.exp" on "sfp" (%x) -> (%y) : (!dataflow.lx<64x64xf16>) -> !dataflow.lx<64x64xf16>
      } else {
        // CHECK: convert_dataflow_to_units_invalid.mlir:[[# @LINE + 2]]:9: error: convert-dataflow-to-units: a buffer is read both inside and outside the branches of an scf.if
        // expected-error @+1 {{a buffer is read both inside and outside the branches of an scf.if}}
        dataflow.compute "spyre.tanh" on "sfp" (%at) -> (%x) : (!dataflow.lx<64x64xf16>) -> !dataflow.lx<64x64xf16>
      }
      dataflow.store %y into %out[%c0, %c0] : !dataflow.lx<64x64xf16>, !dataflow.ddr<64x64xf16>
    }
    dataflow.end
  }
  func.return %r : tensor<64x64xf16>
}
