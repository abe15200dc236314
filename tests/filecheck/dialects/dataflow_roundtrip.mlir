// Every op of the dataflow dialect (spyre_ir/dialects/dataflow.py) and both of its
// types (!dataflow.lx, !dataflow.ddr with and without a stick layout) and its work plans
// (#dataflow.*_plan, spyre_ir/dialects/dataflow_plan.py) in custom form,
// printed back as written; the generic form of each op; and stability: the printed
// output, custom or generic, parses back to the same custom form.

// RUN: spyre-opt %s | filecheck %s
// RUN: spyre-opt %s | spyre-opt | filecheck %s
// RUN: spyre-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: spyre-opt %s --print-op-generic | spyre-opt | filecheck %s
// RUN: spyre-opt %s 2>&1 | %no-traceback

// A group (fused tensor ops with a plan), a kernel using every kernel-body op (a
// 2-slot buffer, a transposed load, an accumulating matmul, a position-dependent
// compute with offsets, the ring), and an embedding kernel (gather).
// CHECK-LABEL: func.func @graph(%x: tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>, %w: tensor<64x64xf16>, %table: tensor<1000x64xf16>, %ids: tensor<8xi32>) -> (tensor<4x64xf16>, tensor<4x64xf16>, tensor<8x64xf16>) {
func.func @graph(%x: tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>, %w: tensor<64x64xf16>, %table: tensor<1000x64xf16>, %ids: tensor<8xi32>) -> (tensor<4x64xf16>, tensor<4x64xf16>, tensor<8x64xf16>) {
  // CHECK-NEXT: %g = dataflow.group @g0(%x) {plan = #dataflow.rows_plan<row_dims = 1, cores = 4>} : (tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>) -> tensor<4x64xf16> {
  // GENERIC: %g = "dataflow.group"(%x) <{sym_name = "g0", plan = #dataflow.rows_plan<row_dims = 1, cores = 4>}> ({
  %g = dataflow.group @g0 (%x) {plan = #dataflow.rows_plan<row_dims = 1, cores = 4>} : (tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>) -> tensor<4x64xf16> {
  // CHECK-NEXT: ^bb0(%a: tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>):
  ^bb0(%a: tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>):
    // CHECK-NEXT: %e = spyre.exp %a : tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>> -> tensor<4x64xf16>
    %e = spyre.exp %a : tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>> -> tensor<4x64xf16>
    // CHECK-NEXT: dataflow.yield %e : tensor<4x64xf16>
    // GENERIC: "dataflow.yield"(%e) : (tensor<4x64xf16>) -> ()
    dataflow.yield %e : tensor<4x64xf16>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: %k = dataflow.kernel @k0 cores(32) (%x, %w) {plan = #dataflow.matmul_plan<cores = 32, split = [1, 8, 4]>, lx_capacity = 2097152 : i64, lx_peak_bytes = 1536 : i64} : (tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>, tensor<64x64xf16>) -> tensor<4x64xf16> {
  // GENERIC: %k = "dataflow.kernel"(%x, %w) <{sym_name = "k0", cores = 32 : i64, plan = #dataflow.matmul_plan<cores = 32, split = [1, 8, 4]>, lx_capacity = 2097152 : i64, lx_peak_bytes = 1536 : i64}> ({
  %k = dataflow.kernel @k0 cores(32) (%x, %w) {plan = #dataflow.matmul_plan<cores = 32, split = [1, 8, 4]>, lx_capacity = 2097152 : i64, lx_peak_bytes = 1536 : i64} : (tensor<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>, tensor<64x64xf16>) -> tensor<4x64xf16> {
  // CHECK-NEXT: ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>, %wt: !dataflow.ddr<64x64xf16>, %out: !dataflow.ddr<4x64xf16>):
  ^bb0(%core: index, %in: !dataflow.ddr<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>, %wt: !dataflow.ddr<64x64xf16>, %out: !dataflow.ddr<4x64xf16>):
    // CHECK-NEXT: %c0 = arith.constant 0 : index
    %c0 = arith.constant 0 : index
    // CHECK-NEXT: %c1 = arith.constant 1 : index
    %c1 = arith.constant 1 : index
    // CHECK-NEXT: %c2 = arith.constant 2 : index
    %c2 = arith.constant 2 : index
    // CHECK-NEXT: %buf = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<2x4x64xf16>
    // GENERIC: %buf = "dataflow.alloc_lx"() <{offset = 0 : i64}> : () -> !dataflow.lx<2x4x64xf16>
    %buf = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<2x4x64xf16>
    // CHECK-NEXT: %wb = dataflow.alloc_lx {offset = 1024 : i64} : !dataflow.lx<64x64xf16>
    // GENERIC: %wb = "dataflow.alloc_lx"() <{offset = 1024 : i64}> : () -> !dataflow.lx<64x64xf16>
    %wb = dataflow.alloc_lx {offset = 1024 : i64} : !dataflow.lx<64x64xf16>
    // CHECK-NEXT: %acc = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // GENERIC: %acc = "dataflow.alloc_lx"() : () -> !dataflow.lx<4x64xf16>
    %acc = dataflow.alloc_lx : !dataflow.lx<4x64xf16>
    // CHECK-NEXT: scf.for %i = %c0 to %c2 step %c1 {
    scf.for %i = %c0 to %c2 step %c1 {
      // CHECK-NEXT: %s = dataflow.slot %buf[%i] : !dataflow.lx<2x4x64xf16> -> !dataflow.lx<4x64xf16>
      // GENERIC: %s = "dataflow.slot"(%buf, %i) : (!dataflow.lx<2x4x64xf16>, index) -> !dataflow.lx<4x64xf16>
      %s = dataflow.slot %buf[%i] : !dataflow.lx<2x4x64xf16> -> !dataflow.lx<4x64xf16>
      // CHECK-NEXT: dataflow.load %in[%c0, %c0] into %s {pad = 0xfff0000000000000 : f64} : !dataflow.ddr<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>, !dataflow.lx<4x64xf16>
      // GENERIC: "dataflow.load"(%in, %c0, %c0, %s) <{pad = 0xfff0000000000000 : f64, operandSegmentSizes = array<i32: 1, 2, 1>}> : (!dataflow.ddr<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>, index, index, !dataflow.lx<4x64xf16>) -> ()
      dataflow.load %in[%c0, %c0] into %s {pad = 0xFFF0000000000000 : f64} : !dataflow.ddr<4x64xf16, #spyre.stick<dim = 1, device = [1, 4, 64], map = [1, 0, 1], strides = [64, 64, 1], pad = 0>>, !dataflow.lx<4x64xf16>
      // CHECK-NEXT: dataflow.load %wt[%c0, %c0] into %wb {perm = array<i64: 1, 0>} : !dataflow.ddr<64x64xf16>, !dataflow.lx<64x64xf16>
      // GENERIC: "dataflow.load"(%wt, %c0, %c0, %wb) <{perm = array<i64: 1, 0>, operandSegmentSizes = array<i32: 1, 2, 1>}> : (!dataflow.ddr<64x64xf16>, index, index, !dataflow.lx<64x64xf16>) -> ()
      dataflow.load %wt[%c0, %c0] into %wb {perm = array<i64: 1, 0>} : !dataflow.ddr<64x64xf16>, !dataflow.lx<64x64xf16>
      // CHECK-NEXT: dataflow.compute "spyre.matmul" on "pe"(%s, %wb) -> (%acc) {accumulate} : (!dataflow.lx<4x64xf16>, !dataflow.lx<64x64xf16>) -> !dataflow.lx<4x64xf16>
      // GENERIC: "dataflow.compute"(%s, %wb, %acc) <{kind = "spyre.matmul", unit = "pe", accumulate, operandSegmentSizes = array<i32: 2, 1, 0>}> : (!dataflow.lx<4x64xf16>, !dataflow.lx<64x64xf16>, !dataflow.lx<4x64xf16>) -> ()
      dataflow.compute "spyre.matmul" on "pe" (%s, %wb) -> (%acc) {accumulate} : (!dataflow.lx<4x64xf16>, !dataflow.lx<64x64xf16>) -> !dataflow.lx<4x64xf16>
    // CHECK-NEXT: }
    }
    // CHECK-NEXT: dataflow.compute "spyre.iota" on "pe"() -> (%acc) offsets[%core, %c0] {attrs = {dim = 1 : i64, start = 0 : i64, step = 1 : i64}} : () -> !dataflow.lx<4x64xf16>
    // GENERIC: "dataflow.compute"(%acc, %core, %c0) <{kind = "spyre.iota", unit = "pe", attrs = {dim = 1 : i64, start = 0 : i64, step = 1 : i64}, operandSegmentSizes = array<i32: 0, 1, 2>}> : (!dataflow.lx<4x64xf16>, index, index) -> ()
    dataflow.compute "spyre.iota" on "pe" () -> (%acc) offsets [%core, %c0] {attrs = {dim = 1 : i64, start = 0 : i64, step = 1 : i64}} : () -> !dataflow.lx<4x64xf16>
    // CHECK-NEXT: dataflow.ring_allreduce %acc {kind = "add", group_size = 4 : i64} : !dataflow.lx<4x64xf16>
    // GENERIC: "dataflow.ring_allreduce"(%acc) <{kind = "add", group_size = 4 : i64}> : (!dataflow.lx<4x64xf16>) -> ()
    dataflow.ring_allreduce %acc {kind = "add", group_size = 4 : i64} : !dataflow.lx<4x64xf16>
    // CHECK-NEXT: dataflow.store %acc into %out[%c0, %c0] : !dataflow.lx<4x64xf16>, !dataflow.ddr<4x64xf16>
    // GENERIC: "dataflow.store"(%acc, %out, %c0, %c0) <{operandSegmentSizes = array<i32: 1, 1, 2>}> : (!dataflow.lx<4x64xf16>, !dataflow.ddr<4x64xf16>, index, index) -> ()
    dataflow.store %acc into %out[%c0, %c0] : !dataflow.lx<4x64xf16>, !dataflow.ddr<4x64xf16>
    // CHECK-NEXT: dataflow.end
    // GENERIC: "dataflow.end"() : () -> ()
    dataflow.end
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: %e = dataflow.kernel @embed cores(1) (%table, %ids) {plan = #dataflow.gather_plan<row_dims = 1, cores = 1>} : (tensor<1000x64xf16>, tensor<8xi32>) -> tensor<8x64xf16> {
  // GENERIC: %e = "dataflow.kernel"(%table, %ids) <{sym_name = "embed", cores = 1 : i64, plan = #dataflow.gather_plan<row_dims = 1, cores = 1>}> ({
  %e = dataflow.kernel @embed cores(1) (%table, %ids) {plan = #dataflow.gather_plan<row_dims = 1, cores = 1>} : (tensor<1000x64xf16>, tensor<8xi32>) -> tensor<8x64xf16> {
  // CHECK-NEXT: ^bb0(%core: index, %t: !dataflow.ddr<1000x64xf16>, %idx: !dataflow.ddr<8xi32>, %o: !dataflow.ddr<8x64xf16>):
  ^bb0(%core: index, %t: !dataflow.ddr<1000x64xf16>, %idx: !dataflow.ddr<8xi32>, %o: !dataflow.ddr<8x64xf16>):
    // CHECK-NEXT: %c0 = arith.constant 0 : index
    %c0 = arith.constant 0 : index
    // CHECK-NEXT: %ib = dataflow.alloc_lx : !dataflow.lx<8xi32>
    // GENERIC: %ib = "dataflow.alloc_lx"() : () -> !dataflow.lx<8xi32>
    %ib = dataflow.alloc_lx : !dataflow.lx<8xi32>
    // CHECK-NEXT: %rows = dataflow.alloc_lx : !dataflow.lx<8x64xf16>
    // GENERIC: %rows = "dataflow.alloc_lx"() : () -> !dataflow.lx<8x64xf16>
    %rows = dataflow.alloc_lx : !dataflow.lx<8x64xf16>
    // CHECK-NEXT: dataflow.load %idx[%c0] into %ib : !dataflow.ddr<8xi32>, !dataflow.lx<8xi32>
    // GENERIC: "dataflow.load"(%idx, %c0, %ib) <{operandSegmentSizes = array<i32: 1, 1, 1>}> : (!dataflow.ddr<8xi32>, index, !dataflow.lx<8xi32>) -> ()
    dataflow.load %idx[%c0] into %ib : !dataflow.ddr<8xi32>, !dataflow.lx<8xi32>
    // CHECK-NEXT: dataflow.gather %t[%ib] into %rows : !dataflow.ddr<1000x64xf16>, !dataflow.lx<8xi32>, !dataflow.lx<8x64xf16>
    // GENERIC: "dataflow.gather"(%t, %ib, %rows) : (!dataflow.ddr<1000x64xf16>, !dataflow.lx<8xi32>, !dataflow.lx<8x64xf16>) -> ()
    dataflow.gather %t[%ib] into %rows : !dataflow.ddr<1000x64xf16>, !dataflow.lx<8xi32>, !dataflow.lx<8x64xf16>
    // CHECK-NEXT: dataflow.store %rows into %o[%c0, %c0] : !dataflow.lx<8x64xf16>, !dataflow.ddr<8x64xf16>
    // GENERIC: "dataflow.store"(%rows, %o, %c0, %c0) <{operandSegmentSizes = array<i32: 1, 1, 2>}> : (!dataflow.lx<8x64xf16>, !dataflow.ddr<8x64xf16>, index, index) -> ()
    dataflow.store %rows into %o[%c0, %c0] : !dataflow.lx<8x64xf16>, !dataflow.ddr<8x64xf16>
    // CHECK-NEXT: dataflow.end
    // GENERIC: "dataflow.end"() : () -> ()
    dataflow.end
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return %g, %k, %e : tensor<4x64xf16>, tensor<4x64xf16>, tensor<8x64xf16>
  func.return %g, %k, %e : tensor<4x64xf16>, tensor<4x64xf16>, tensor<8x64xf16>
// CHECK-NEXT: }
}

// The other kinds of work plan, printed in their field order whatever the order written
// (optional fields left out when absent).
// CHECK-LABEL: func.func @plans(%x: tensor<64x128xf16>) -> (tensor<64x128xf16>, tensor<64x128xf16>, tensor<64x128xf16>, tensor<64x128xf16>, tensor<64x128xf16>) {
func.func @plans(%x: tensor<64x128xf16>) -> (tensor<64x128xf16>, tensor<64x128xf16>, tensor<64x128xf16>, tensor<64x128xf16>, tensor<64x128xf16>) {
  // CHECK-NEXT: %c = dataflow.kernel @copy cores(2) (%x) {plan = #dataflow.copy_plan<row_dims = 1, cores = 2>} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  // GENERIC: "dataflow.kernel"(%x) <{sym_name = "copy", cores = 2 : i64, plan = #dataflow.copy_plan<row_dims = 1, cores = 2>}> ({
  %c = dataflow.kernel @copy cores(2) (%x) {plan = #dataflow.copy_plan<cores = 2, row_dims = 1>} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%core: index, %i: !dataflow.ddr<64x128xf16>, %o: !dataflow.ddr<64x128xf16>):
    dataflow.end
  }
  // CHECK: %a = dataflow.kernel @attention cores(8) (%x) {plan = #dataflow.attention_plan<cores = 8, tile = [1, 64, 128], split_kv = 2>} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  // GENERIC: "dataflow.kernel"(%x) <{sym_name = "attention", cores = 8 : i64, plan = #dataflow.attention_plan<cores = 8, tile = [1, 64, 128], split_kv = 2>}> ({
  %a = dataflow.kernel @attention cores(8) (%x) {plan = #dataflow.attention_plan<split_kv = 2, cores = 8, tile = [1, 64, 128]>} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%core: index, %i: !dataflow.ddr<64x128xf16>, %o: !dataflow.ddr<64x128xf16>):
    dataflow.end
  }
  // CHECK: %g = dataflow.group @attention_group(%x) {plan = #dataflow.attention_plan<cores = 8>} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  %g = dataflow.group @attention_group (%x) {plan = #dataflow.attention_plan<cores = 8>} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%y: tensor<64x128xf16>):
    dataflow.yield %y : tensor<64x128xf16>
  }
  // CHECK: %k = dataflow.kernel @ktir cores(4) (%x) {plan = #dataflow.ktir_plan<grid = [2, 2]>} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  %k = dataflow.kernel @ktir cores(4) (%x) {plan = #dataflow.ktir_plan<grid = [2, 2]>} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%core: index, %i: !dataflow.ddr<64x128xf16>, %o: !dataflow.ddr<64x128xf16>):
    dataflow.end
  }
  // CHECK: %n = dataflow.kernel @ktir_no_grid cores(1) (%x) {plan = #dataflow.ktir_plan} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  %n = dataflow.kernel @ktir_no_grid cores(1) (%x) {plan = #dataflow.ktir_plan<>} : (tensor<64x128xf16>) -> tensor<64x128xf16> {
  ^bb0(%core: index, %i: !dataflow.ddr<64x128xf16>, %o: !dataflow.ddr<64x128xf16>):
    dataflow.end
  }
  func.return %c, %a, %g, %k, %n : tensor<64x128xf16>, tensor<64x128xf16>, tensor<64x128xf16>, tensor<64x128xf16>, tensor<64x128xf16>
}
