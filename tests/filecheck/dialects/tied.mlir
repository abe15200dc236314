// A tied result (`tied` on dataflow.kernel / core.program, spyre_ir/dialects/dataflow.py):
// result i is input tied[i]'s buffer, written in place. The property prints back as
// written, survives convert-dataflow-to-units onto the core.program, and the L2
// interpreter and the simulator run the kernel in the input's buffer: exp(x) in place,
// with the results of the same kernel untied.

// RUN: spyre-opt %s | filecheck %s
// RUN: spyre-opt %s | spyre-opt | filecheck %s
// RUN: spyre-opt %s -p convert-dataflow-to-units | filecheck %s --check-prefix=UNITS
// RUN: sed 's/, tied = array<i64: 0>//' %s > %t.plain.mlir
// RUN: spyre-run %s --level dataflow --print > %t.tied.txt
// RUN: filecheck %s --check-prefix=OUT < %t.tied.txt
// RUN: spyre-run %t.plain.mlir --level dataflow --print | diff %t.tied.txt -
// RUN: spyre-opt %s -p convert-dataflow-to-units -o %t.units.mlir
// RUN: spyre-opt %t.plain.mlir -p convert-dataflow-to-units -o %t.plain-units.mlir
// RUN: spyre-run %t.units.mlir --level sim --print > %t.sim.txt
// RUN: filecheck %s --check-prefix=OUT < %t.sim.txt
// RUN: spyre-run %t.plain-units.mlir --level sim --print | diff %t.sim.txt -

// CHECK: dataflow.kernel @rows_0 cores(4) (%x) {plan = #dataflow.rows_plan<row_dims = 1, cores = 4>, lx_capacity = 2097152 : i64, lx_peak_bytes = 256 : i64, tied = array<i64: 0>}
// UNITS: core.program @rows_0 cores(4) (%x) {{{.*}}tied = array<i64: 0>}
// OUT: result 0: tensor<4x64xf16>  shape (4, 64)
func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %0 = dataflow.kernel @rows_0 cores(4) (%x) {plan = #dataflow.rows_plan<row_dims = 1, cores = 4>, lx_capacity = 2097152 : i64, lx_peak_bytes = 256 : i64, tied = array<i64: 0>} : (tensor<4x64xf16>) -> tensor<4x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<1x64xf16>
    %b = dataflow.alloc_lx {offset = 128 : i64} : !dataflow.lx<1x64xf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %c1 step %c1 {
      %row = arith.addi %core, %i : index
      dataflow.load %in[%row, %c0] into %a : !dataflow.ddr<4x64xf16>, !dataflow.lx<1x64xf16>
      dataflow.compute "spyre.exp" on "sfp"(%a) -> (%b) : (!dataflow.lx<1x64xf16>) -> !dataflow.lx<1x64xf16>
      dataflow.store %b into %out[%row, %c0] : !dataflow.lx<1x64xf16>, !dataflow.ddr<4x64xf16>
    }
    dataflow.end
  }
  func.return %0 : tensor<4x64xf16>
}
