// RUN: spyre-opt %s -p 'spyre-to-dataflow{lx-bytes=16384}' | filecheck %s --check-prefix=PIPE
// RUN: spyre-opt %s -p 'spyre-to-dataflow{lx-bytes=16384 stream-softmax=false}' | filecheck %s --check-prefix=OFF

// Through the pipeline: the softmax stays whole (one kernel, the row read twice, nothing
// between the passes in LPDDR5); with stream-softmax=false it is decomposed into
// reductions and elementwise kernels, as before.
// PIPE-LABEL: func.func @softmax
// PIPE:         dataflow.kernel @rows_0
// PIPE-NOT:     dataflow.kernel
// OFF-LABEL:  func.func @softmax
// OFF:          dataflow.kernel @rows_0
// OFF:          dataflow.kernel @rows_1
// OFF:          dataflow.kernel @rows_2
func.func @softmax(%x: tensor<3x20001xf16>) -> tensor<3x20001xf16> {
  %y = spyre.softmax %x dim = 1 : tensor<3x20001xf16> -> tensor<3x20001xf16>
  func.return %y : tensor<3x20001xf16>
}
