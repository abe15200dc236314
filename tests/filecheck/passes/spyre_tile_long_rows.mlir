// RUN: spyre-opt %s --split-input-file -p spyre-decompose-long-rows,spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile | filecheck %s
// RUN: spyre-opt %s --split-input-file -p spyre-to-dataflow | filecheck %s --check-prefix=PIPE

// Rows of 1M f16 elements: one row of the input and the result is 4 MiB, more than half
// of LX, so the stick dim becomes a row dim too (row_dims = 2, whole sticks per tile) and
// its 128 tiles of 16384 elements spread over all 32 cores: each core walks 4 of them,
// loading at (row, column) offsets, instead of a "one row needs N bytes" error.
// CHECK-LABEL: func.func @exp_long_rows
// CHECK:       dataflow.kernel @rows_0 cores(32) (%x) {plan = #dataflow.rows_plan<row_dims = 2, cores = 32>
// CHECK-DAG:     %[[IN:.*]] = dataflow.alloc_lx : !dataflow.lx<1x[[T:[0-9]+]]xf16>
// CHECK-DAG:     %[[OUT:.*]] = dataflow.alloc_lx : !dataflow.lx<1x[[T]]xf16>
// CHECK:         scf.for
// CHECK:           %[[ROW:.*]] = arith.divui
// CHECK:           %[[COL:.*]] = arith.muli
// CHECK:           dataflow.load %{{.*}}[%[[ROW]], %[[COL]]] into %[[IN]]
// CHECK:           dataflow.compute "spyre.exp" on "sfp"(%[[IN]]) -> (%[[OUT]])
// CHECK:           dataflow.store %[[OUT]] into %{{.*}}[%[[ROW]], %[[COL]]]
func.func @exp_long_rows(%x: tensor<2x1048576xf16>) -> tensor<2x1048576xf16> {
  %y = spyre.exp %x : tensor<2x1048576xf16> -> tensor<2x1048576xf16>
  func.return %y : tensor<2x1048576xf16>
}

// -----

// A sum over rows of 1M elements: no row fits, and a reduced dim cannot be a row dim,
// so the row streams in three chunks of whole sticks, each reduced into an f32
// accumulator (filled with the identity first; loads past the end read it too). Two
// rows leave cores idle: each row's chunks go to a ring group of three cores (one
// chunk each), which all-reduce their partial sums; the sum is rounded once to f16
// before the store.
// CHECK-LABEL: func.func @sum_long_rows
// CHECK:       dataflow.kernel @rows_0 cores(6) (%x) {plan = #dataflow.rows_plan<row_dims = 1, cores = 6>
// CHECK-DAG:     %[[CHUNK:.*]] = dataflow.alloc_lx : !dataflow.lx<1x349568xf16>
// CHECK-DAG:     %[[ACC:.*]] = dataflow.alloc_lx : !dataflow.lx<1x1xf32>
// CHECK-DAG:     %[[OUT:.*]] = dataflow.alloc_lx : !dataflow.lx<1x1xf16>
// CHECK:         scf.for
// CHECK:           dataflow.compute "spyre.full" on "pe"() -> (%[[ACC]]) {attrs = {value = 0.000000e+00 : f64}}
// CHECK:           scf.for
// CHECK:             dataflow.load %{{.*}} into %[[CHUNK]] {pad = 0.000000e+00 : f64}
// CHECK-NEXT:        dataflow.compute "spyre.sum" on "sfp"(%[[CHUNK]]) -> (%[[ACC]]) {attrs = {dims = array<i64: 1>, keepdim}, accumulate}
// CHECK-NEXT:      }
// CHECK-NEXT:      dataflow.ring_allreduce %[[ACC]] {kind = "add", group_size = 3 : i64}
// CHECK-NEXT:      dataflow.compute "spyre.cast" on "sfp"(%[[ACC]]) -> (%[[OUT]])
// CHECK-NEXT:      dataflow.store %[[OUT]]
func.func @sum_long_rows(%x: tensor<2x1048576xf16>) -> tensor<2x1xf16> {
  %y = spyre.sum %x dims = [1] keepdim : tensor<2x1048576xf16> -> tensor<2x1xf16>
  func.return %y : tensor<2x1xf16>
}

// -----

// A softmax over dim 0 of 512x1024: its row is the whole tensor (2 MiB of input and
// result), so spyre-decompose-long-rows splits it into a streamed max, the elementwise
// shift and exp over rows of 1024, a streamed sum and the division.
// PIPE-LABEL: func.func @softmax_dim0
// PIPE:         dataflow.kernel @rows_0
// PIPE:           dataflow.compute "spyre.cast"
// PIPE:         dataflow.kernel @rows_1
// PIPE:           dataflow.compute "spyre.reduce_max"{{.*}}accumulate
// PIPE:         dataflow.kernel @rows_2
// PIPE:           dataflow.compute "spyre.exp"
// PIPE:         dataflow.kernel @rows_3
// PIPE:           dataflow.compute "spyre.sum"{{.*}}accumulate
// PIPE:         dataflow.kernel @rows_4
// PIPE:           dataflow.compute "spyre.div"
// PIPE-NOT:     dataflow.kernel
func.func @softmax_dim0(%x: tensor<512x1024xf16>) -> tensor<512x1024xf16> {
  %y = spyre.softmax %x dim = 0 : tensor<512x1024xf16> -> tensor<512x1024xf16>
  func.return %y : tensor<512x1024xf16>
}

// -----

// A transpose of 16384 x 16384 f16: a rows tile would be 64 whole rows of the input's
// sticks, 64 x 16384 x 2 bytes, loaded and stored - 4 MiB. Instead the result moves in
// blocks of 1024 x 512 (1 MiB): a transposed load of whole input sticks, a store of whole
// result sticks; the 512 blocks are dealt out 16 to a core.
// CHECK-LABEL: func.func @transpose_large
// CHECK:       dataflow.kernel @rows_0 cores(32) (%x) {plan = #dataflow.copy_plan<row_dims = 2, cores = 32>
// CHECK:         %[[BLOCK:.*]] = dataflow.alloc_lx : !dataflow.lx<1024x512xf16>
// CHECK:         scf.for
// CHECK:           arith.divui
// CHECK-NEXT:      %[[ROW:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT:      %[[COL:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT:      dataflow.load %{{.*}}[%[[COL]], %[[ROW]]] into %[[BLOCK]] {perm = array<i64: 1, 0>, pad = 0.000000e+00 : f64}
// CHECK-NEXT:      dataflow.store %[[BLOCK]] into %{{.*}}[%[[ROW]], %[[COL]]]
// PIPE-LABEL: func.func @transpose_large
// PIPE:         lx_peak_bytes = {{[0-9]+}}
func.func @transpose_large(%x: tensor<16384x16384xf16>) -> tensor<16384x16384xf16> {
  %y = spyre.transpose %x perm = [1, 0] : tensor<16384x16384xf16> -> tensor<16384x16384xf16>
  func.return %y : tensor<16384x16384xf16>
}
