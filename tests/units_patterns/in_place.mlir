// A buffer written in place by the PE, then by the SFP, then stored.
func.func @main(%x: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<64x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %xm: !dataflow.ddr<64x64xf16>, %out: !dataflow.ddr<64x64xf16>):
    %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %xm[%row, %c0] into %a : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
      dataflow.compute "spyre.add" on "pe" (%a, %a) -> (%a) : (!dataflow.lx<16x64xf16>, !dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
      dataflow.compute "spyre.tanh" on "sfp" (%a) -> (%a) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
      dataflow.store %a into %out[%row, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
    }
    dataflow.end
  }
  func.return %r : tensor<64x64xf16>
}
