// A loop-carried buffer: tile i adds tanh of tile i-1, which the SFP writes at the
// bottom of the body for the PE to read at the top of the next iteration.
func.func @main(%x: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<64x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %xm: !dataflow.ddr<64x64xf16>, %out: !dataflow.ddr<64x64xf16>):
    %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
    %s = dataflow.alloc_lx {offset = 2048 : i64} : !dataflow.lx<16x64xf16>
    %p = dataflow.alloc_lx {offset = 4096 : i64} : !dataflow.lx<16x64xf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    dataflow.compute "spyre.full" on "pe" () -> (%p) {attrs = {value = 0.0 : f64}} : () -> !dataflow.lx<16x64xf16>
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.muli %i, %c16 : index
      dataflow.load %xm[%row, %c0] into %a : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
      dataflow.compute "spyre.add" on "pe" (%a, %p) -> (%s) : (!dataflow.lx<16x64xf16>, !dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
      dataflow.store %s into %out[%row, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
      dataflow.compute "spyre.tanh" on "sfp" (%a) -> (%p) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
    }
    dataflow.end
  }
  func.return %r : tensor<64x64xf16>
}
