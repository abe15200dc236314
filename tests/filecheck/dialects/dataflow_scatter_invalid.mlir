// The verifier rules of dataflow.scatter (spyre_ir/dialects/dataflow.py), one chunk each.
// RUN: spyre-opt %s --split-input-file --verify-diagnostics

// A scatter's indices are integers.
func.func @f(%t: tensor<100x64xf16>) -> tensor<100x64xf16> {
  %r = dataflow.kernel @k cores(1) (%t) : (tensor<100x64xf16>) -> tensor<100x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<100x64xf16>, %out: !dataflow.ddr<100x64xf16>):
    %ids = dataflow.alloc_lx : !dataflow.lx<8xf32>
    %rows = dataflow.alloc_lx : !dataflow.lx<8x64xf16>
    // expected-error @+1 {{'dataflow.scatter': indices must be i32 or i64}}
    dataflow.scatter %rows into %out[%ids] : !dataflow.lx<8x64xf16>, !dataflow.lx<8xf32>, !dataflow.ddr<100x64xf16>
    dataflow.end
  }
  func.return %r : tensor<100x64xf16>
}

// -----

// A scatter's source is the indices' shape followed by a table row.
func.func @f(%t: tensor<100x64xf16>) -> tensor<100x64xf16> {
  %r = dataflow.kernel @k cores(1) (%t) : (tensor<100x64xf16>) -> tensor<100x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<100x64xf16>, %out: !dataflow.ddr<100x64xf16>):
    %ids = dataflow.alloc_lx : !dataflow.lx<8xi32>
    %rows = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // expected-error @+1 {{'dataflow.scatter': source should be [8, 64] of f16}}
    dataflow.scatter %rows into %out[%ids] : !dataflow.lx<4x64xf16>, !dataflow.lx<8xi32>, !dataflow.ddr<100x64xf16>
    dataflow.end
  }
  func.return %r : tensor<100x64xf16>
}

// -----

// `dims` names leading dims of the destination: at most its rank.
func.func @f(%t: tensor<100x64xf16>) -> tensor<100x64xf16> {
  %r = dataflow.kernel @k cores(1) (%t) : (tensor<100x64xf16>) -> tensor<100x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<100x64xf16>, %out: !dataflow.ddr<100x64xf16>):
    %ids = dataflow.alloc_lx : !dataflow.lx<8xi32>
    %vals = dataflow.alloc_lx : !dataflow.lx<8xf16>
    // expected-error @+1 {{'dataflow.scatter': dims = 3 must name 1 to 2 leading dims of the destination}}
    dataflow.scatter %vals into %out[%ids] {dims = 3 : i64, masked} : !dataflow.lx<8xf16>, !dataflow.lx<8xi32>, !dataflow.ddr<100x64xf16>
    dataflow.end
  }
  func.return %r : tensor<100x64xf16>
}

// -----

// A scatter of elements (dims = the rank) writes part of a stick per index: masked.
func.func @f(%t: tensor<100x64xf16>) -> tensor<100x64xf16> {
  %r = dataflow.kernel @k cores(1) (%t) : (tensor<100x64xf16>) -> tensor<100x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<100x64xf16>, %out: !dataflow.ddr<100x64xf16>):
    %ids = dataflow.alloc_lx : !dataflow.lx<8xi32>
    %vals = dataflow.alloc_lx : !dataflow.lx<8xf16>
    // expected-error @+1 {{'dataflow.scatter': its rows [] cover part of a stick of the destination, so it must be masked}}
    dataflow.scatter %vals into %out[%ids] {dims = 2 : i64} : !dataflow.lx<8xf16>, !dataflow.lx<8xi32>, !dataflow.ddr<100x64xf16>
    dataflow.end
  }
  func.return %r : tensor<100x64xf16>
}
