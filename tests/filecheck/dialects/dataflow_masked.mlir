// RUN: spyre-opt %s | filecheck %s
// RUN: spyre-opt %s | spyre-opt | filecheck %s

// Moves of part of a stick inside a tensor verify when `masked` (the lowering marks
// them so; without it they are errors, see dataflow_invalid.mlir): a load of 16 f16
// elements and a store of 8, both in the middle of 256-element rows.
// CHECK-LABEL: func.func @f
// CHECK:         dataflow.load %in[%c0, %c16] into %a {masked} : !dataflow.ddr<4x256xf16>, !dataflow.lx<4x16xf16>
// CHECK:         dataflow.store %b into %out[%c0, %c16] {masked} : !dataflow.lx<4x8xf16>, !dataflow.ddr<4x256xf16>
func.func @f(%x: tensor<4x256xf16>) -> tensor<4x256xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x256xf16>) -> tensor<4x256xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<4x256xf16>, %out: !dataflow.ddr<4x256xf16>):
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %a = dataflow.alloc_lx : !dataflow.lx<4x16xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<4x8xf16>
    dataflow.load %in[%c0, %c16] into %a {masked} : !dataflow.ddr<4x256xf16>, !dataflow.lx<4x16xf16>
    dataflow.store %b into %out[%c0, %c16] {masked} : !dataflow.lx<4x8xf16>, !dataflow.ddr<4x256xf16>
    dataflow.end
  }
  func.return %r : tensor<4x256xf16>
}
