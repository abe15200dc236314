// A buffer placed on the bytes of one that is dead in program order (%c on %a's), first
// written by an op with no operands: the PE could fill %c while the SFP still reads %a,
// unless a queue orders the fill after that read.
func.func @main(%x: tensor<16x64xf16>) -> tensor<16x64xf16> {
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<16x64xf16>) -> tensor<16x64xf16> {
  ^bb0(%core: index, %xm: !dataflow.ddr<16x64xf16>, %out: !dataflow.ddr<16x64xf16>):
    %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
    %b = dataflow.alloc_lx {offset = 2048 : i64} : !dataflow.lx<16x64xf16>
    %c = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
    %d = dataflow.alloc_lx {offset = 4096 : i64} : !dataflow.lx<16x64xf16>
    %c0 = arith.constant 0 : index
    dataflow.load %xm[%c0, %c0] into %a : !dataflow.ddr<16x64xf16>, !dataflow.lx<16x64xf16>
    dataflow.compute "spyre.tanh" on "sfp" (%a) -> (%b) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
    dataflow.compute "spyre.full" on "pe" () -> (%c) {attrs = {value = 2.0 : f64}} : () -> !dataflow.lx<16x64xf16>
    dataflow.compute "spyre.mul" on "pe" (%b, %c) -> (%d) : (!dataflow.lx<16x64xf16>, !dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
    dataflow.store %d into %out[%c0, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<16x64xf16>
    dataflow.end
  }
  func.return %r : tensor<16x64xf16>
}
