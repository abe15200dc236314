// RUN: spyre-opt %s -p spyre-double-buffer | filecheck %s

// A buffer each iteration overwrites whole (the exp result, then stored) gets two slots
// used alternately, so the next tile can be computed while this one is being stored.
// The loaded tile is prefetched as usual.
// CHECK-LABEL: dataflow.kernel @k0
// CHECK:       %[[A:.*]] = dataflow.alloc_lx : !dataflow.lx<2x16x256xf16>
// CHECK:       %[[B:.*]] = dataflow.alloc_lx : !dataflow.lx<2x16x256xf16>
// CHECK:       scf.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:    %parity = arith.remui %i, %c2 : index
// CHECK-NEXT:    %[[BS:.*]] = dataflow.slot %[[B]][%parity]
// CHECK:         dataflow.compute "spyre.exp" on "sfp"(%{{.*}}) -> (%[[BS]])
// CHECK-NEXT:    dataflow.store %[[BS]] into %out
func.func @main(%x: tensor<64x256xf16>) -> tensor<64x256xf16> {
  %r = dataflow.kernel @k0 cores(1) (%x) : (tensor<64x256xf16>) -> tensor<64x256xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x256xf16>, %out: !dataflow.ddr<64x256xf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant -9223372036854775809 : index
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

// A buffer that carries a value across iterations (an accumulator) keeps one slot.
// CHECK-LABEL: dataflow.kernel @k1
// CHECK:       %acc = dataflow.alloc_lx : !dataflow.lx<16x256xf32>
func.func @carried(%x: tensor<64x256xf16>) -> tensor<16x256xf16> {
  %r = dataflow.kernel @k1 cores(1) (%x) : (tensor<64x256xf16>) -> tensor<16x256xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x256xf16>, %out: !dataflow.ddr<16x256xf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %a = dataflow.alloc_lx : !dataflow.lx<16x256xf16>
    %acc = dataflow.alloc_lx : !dataflow.lx<16x256xf32>
    %res = dataflow.alloc_lx : !dataflow.lx<16x256xf16>
    dataflow.compute "spyre.full" on "pe" () -> (%acc) {attrs = {value = 0.0 : f64}} : () -> !dataflow.lx<16x256xf32>
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %in[%row, %c0] into %a : !dataflow.ddr<64x256xf16>, !dataflow.lx<16x256xf16>
      dataflow.compute "spyre.cast" on "sfp" (%a) -> (%res) : (!dataflow.lx<16x256xf16>) -> !dataflow.lx<16x256xf16>
    }
    dataflow.store %res into %out[%c0, %c0] : !dataflow.lx<16x256xf16>, !dataflow.ddr<16x256xf16>
    dataflow.end
  }
  func.return %r : tensor<16x256xf16>
}
