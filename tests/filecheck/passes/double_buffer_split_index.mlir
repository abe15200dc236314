// spyre-double-buffer on a rows kernel whose tile's place is split over two row dims
// (spyre-tile's `split_index`: an `arith.remui` and an `arith.divui` of the item): the
// address arithmetic is side-effect free, so the load is prefetched. (xDSL 0.74 gives
// `arith.remui` no traits; spyre_ir/xdsl_fixes.py gives it `NoMemoryEffect`, without
// which the pass stopped at the remui and left the load as it was.)

// RUN: spyre-opt %s -p 'spyre-double-buffer{alternate=false}' | filecheck %s

// CHECK-LABEL: dataflow.kernel @rows
// CHECK:       %a = dataflow.alloc_lx : !dataflow.lx<2x1x1x256xf16>
// CHECK:       %row_first = arith.remui %c0, %c4 : index
// CHECK-NEXT:  %batch_first = arith.divui %c0, %c4 : index
// CHECK:       dataflow.load %in[%batch_first, %row_first, %c0] into %a_first
// CHECK:       scf.for %i = %c0 to %c8 step %c1 {
// CHECK:         scf.if %more {
// CHECK:           %row_next = arith.remui %next, %c4 : index
// CHECK-NEXT:      %batch_next = arith.divui %next, %c4 : index
// CHECK:           dataflow.load %in[%batch_next, %row_next, %c0] into %a_next
// CHECK-NEXT:    }
// CHECK:         dataflow.compute "spyre.exp" on "sfp"(%a_slot) -> (%b)
func.func @main(%x: tensor<2x4x256xf16>) -> tensor<2x4x256xf16> {
  %r = dataflow.kernel @rows cores(1) (%x) : (tensor<2x4x256xf16>) -> tensor<2x4x256xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<2x4x256xf16>, %out: !dataflow.ddr<2x4x256xf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %a = dataflow.alloc_lx : !dataflow.lx<1x1x256xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<1x1x256xf16>
    scf.for %i = %c0 to %c8 step %c1 {
      %row = arith.remui %i, %c4 : index
      %batch = arith.divui %i, %c4 : index
      dataflow.load %in[%batch, %row, %c0] into %a : !dataflow.ddr<2x4x256xf16>, !dataflow.lx<1x1x256xf16>
      dataflow.compute "spyre.exp" on "sfp" (%a) -> (%b) : (!dataflow.lx<1x1x256xf16>) -> !dataflow.lx<1x1x256xf16>
      dataflow.store %b into %out[%batch, %row, %c0] : !dataflow.lx<1x1x256xf16>, !dataflow.ddr<2x4x256xf16>
    }
    dataflow.end
  }
  func.return %r : tensor<2x4x256xf16>
}
