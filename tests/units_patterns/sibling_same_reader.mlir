// One LX buffer loaded in two sibling loops and read by the same SFP in both (its
// `corelet` attribute keeps both tile ops on sfp0): the credits of the two versions
// share one queue.
func.func @main(%x: tensor<64x64xf16>, %y: tensor<64x64xf16>) -> (tensor<64x64xf16>, tensor<64x64xf16>) {
  %r:2 = dataflow.kernel @k cores(1) (%x, %y) : (tensor<64x64xf16>, tensor<64x64xf16>) -> (tensor<64x64xf16>, tensor<64x64xf16>) {
  ^bb0(%core: index, %xm: !dataflow.ddr<64x64xf16>, %ym: !dataflow.ddr<64x64xf16>, %o1: !dataflow.ddr<64x64xf16>, %o2: !dataflow.ddr<64x64xf16>):
    %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
    %b = dataflow.alloc_lx {offset = 2048 : i64} : !dataflow.lx<16x64xf16>
    %c = dataflow.alloc_lx {offset = 4096 : i64} : !dataflow.lx<16x64xf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %xm[%row, %c0] into %a : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
      dataflow.compute "spyre.exp" on "sfp" (%a) -> (%b) {corelet = 0 : i64} : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
      dataflow.store %b into %o1[%row, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
    }
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %ym[%row, %c0] into %a : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
      dataflow.compute "spyre.tanh" on "sfp" (%a) -> (%c) {corelet = 0 : i64} : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
      dataflow.store %c into %o2[%row, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
    }
    dataflow.end
  }
  func.return %r#0, %r#1 : tensor<64x64xf16>, tensor<64x64xf16>
}
