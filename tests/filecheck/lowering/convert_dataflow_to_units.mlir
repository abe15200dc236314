// RUN: spyre-opt %s -p convert-dataflow-to-units --split-input-file | filecheck %s

// A row kernel: LS loads a tile, the SFP exponentiates it, the PE scales it, LS stores.
// Each hand-over is a data queue (producer pushes after writing, consumer pops before
// reading) and a credit queue back (one token per buffer slot).
// CHECK-LABEL: func.func @rows
// CHECK:       core.program @k cores(4) (%x) {lx_capacity = 2097152 : i64, lx_peak_bytes = 8192 : i64}
// CHECK-DAG:     %[[LS_SFP:.*]] = core.queue "ls" -> "sfp0" {depth = 1 : i64, credits = 0 : i64}
// CHECK-DAG:     %[[SFP_LS:.*]] = core.queue "sfp0" -> "ls" {depth = 1 : i64, credits = 1 : i64}
// CHECK-DAG:     %[[SFP_PE:.*]] = core.queue "sfp0" -> "pe1" {depth = 1 : i64, credits = 0 : i64}
// CHECK-DAG:     %[[PE_LS:.*]] = core.queue "pe1" -> "ls" {depth = 1 : i64, credits = 0 : i64}
// The constant is made once on pe0 and handed to pe1 once, before its loop.
// CHECK-DAG:     %[[CONST:.*]] = core.queue "pe0" -> "pe1" {depth = 1 : i64, credits = 0 : i64}
// CHECK:         core.unit "ls" {
// CHECK:           scf.for
// CHECK:             core.pop %[[SFP_LS]]
// CHECK-NEXT:        ls.load
// CHECK-NEXT:        core.push %[[LS_SFP]]
// CHECK:             core.pop %[[PE_LS]]
// CHECK-NEXT:        ls.store
// CHECK:         core.unit "pe0" {
// CHECK-NEXT:      core.pop
// CHECK-NEXT:      pe.compute "spyre.full"
// CHECK-NEXT:      core.push %[[CONST]]
// CHECK:         core.unit "pe1" {
// CHECK-NEXT:      core.pop %[[CONST]]
// CHECK:           scf.for
// CHECK:             core.pop %[[SFP_PE]]
// CHECK:             pe.compute "spyre.mul" on "pe"
// CHECK:         core.unit "sfp0" {
// CHECK:           scf.for
// CHECK:             core.pop %[[LS_SFP]]
// CHECK:             sfp.compute "spyre.exp" on "sfp"
// CHECK:             core.push %[[SFP_LS]]
func.func @rows(%x: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %r = dataflow.kernel @k cores(4) (%x) {lx_capacity = 2097152 : i64, lx_peak_bytes = 8192 : i64} : (tensor<64x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<64x64xf16>, %out: !dataflow.ddr<64x64xf16>):
    %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<16x64xf16>
    %b = dataflow.alloc_lx {offset = 2048 : i64} : !dataflow.lx<16x64xf16>
    %c = dataflow.alloc_lx {offset = 4096 : i64} : !dataflow.lx<16x64xf16>
    %two = dataflow.alloc_lx {offset = 6144 : i64} : !dataflow.lx<f16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    dataflow.compute "spyre.full" on "pe" () -> (%two) {attrs = {value = 2.0 : f64}} : () -> !dataflow.lx<f16>
    scf.for %i = %c0 to %c1 step %c1 {
      %row = arith.muli %core, %c16 : index
      dataflow.load %in[%row, %c0] into %a : !dataflow.ddr<64x64xf16>, !dataflow.lx<16x64xf16>
      dataflow.compute "spyre.exp" on "sfp" (%a) -> (%b) : (!dataflow.lx<16x64xf16>) -> !dataflow.lx<16x64xf16>
      dataflow.compute "spyre.mul" on "pe" (%b, %two) -> (%c) : (!dataflow.lx<16x64xf16>, !dataflow.lx<f16>) -> !dataflow.lx<16x64xf16>
      dataflow.store %c into %out[%row, %c0] : !dataflow.lx<16x64xf16>, !dataflow.ddr<64x64xf16>
    }
    dataflow.end
  }
  func.return %r : tensor<64x64xf16>
}

// -----

// A K loop: the accumulator stays on the PE that zeroes it; its partial sums are handed
// to the SFP once, after the loop; zeroing it again would wait for the SFP's credit.
// CHECK-LABEL: func.func @k_loop
// CHECK:         core.unit "pe0" {
// CHECK:           core.pop %[[CREDIT:.*]]
// CHECK-NEXT:      pe.compute "spyre.full"
// CHECK:           scf.for
// CHECK:             pe.compute "spyre.matmul" {{.*}} {accumulate}
// CHECK:           }
// CHECK-NEXT:      core.push %[[DATA:.*]]
// CHECK:         core.unit "sfp0" {
// CHECK:           core.pop %[[DATA]]
// CHECK:           sfp.compute "spyre.cast"
// CHECK:           core.push %[[CREDIT]]
func.func @k_loop(%a: tensor<64x256xf16>, %b: tensor<256x64xf16>) -> tensor<64x64xf16> {
  %r = dataflow.kernel @k cores(1) (%a, %b) : (tensor<64x256xf16>, tensor<256x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %am: !dataflow.ddr<64x256xf16>, %bm: !dataflow.ddr<256x64xf16>, %out: !dataflow.ddr<64x64xf16>):
    %at = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<64x64xf16>
    %bt = dataflow.alloc_lx {offset = 8192 : i64} : !dataflow.lx<64x64xf16>
    %acc = dataflow.alloc_lx {offset = 16384 : i64} : !dataflow.lx<64x64xf32>
    %res = dataflow.alloc_lx {offset = 32768 : i64} : !dataflow.lx<64x64xf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    dataflow.compute "spyre.full" on "pe" () -> (%acc) {attrs = {value = 0.0 : f64}} : () -> !dataflow.lx<64x64xf32>
    scf.for %k = %c0 to %c4 step %c1 {
      %k0 = arith.muli %k, %c64 : index
      dataflow.load %am[%c0, %k0] into %at : !dataflow.ddr<64x256xf16>, !dataflow.lx<64x64xf16>
      dataflow.load %bm[%k0, %c0] into %bt : !dataflow.ddr<256x64xf16>, !dataflow.lx<64x64xf16>
      dataflow.compute "spyre.matmul" on "pe" (%at, %bt) -> (%acc) {accumulate} : (!dataflow.lx<64x64xf16>, !dataflow.lx<64x64xf16>) -> !dataflow.lx<64x64xf32>
    }
    dataflow.compute "spyre.cast" on "sfp" (%acc) -> (%res) : (!dataflow.lx<64x64xf32>) -> !dataflow.lx<64x64xf16>
    dataflow.store %res into %out[%c0, %c0] : !dataflow.lx<64x64xf16>, !dataflow.ddr<64x64xf16>
    dataflow.end
  }
  func.return %r : tensor<64x64xf16>
}

// -----

// The last K step apart (spyre-tile's row blocks): the tiles are read in both regions of
// an scf.if, which never run in the same pass, so each region pops the loads' tokens
// and hands the credits back; the cast and the store follow the else region's matmul.
// CHECK-LABEL: func.func @last_step_apart
// CHECK:         core.unit "ls" {
// CHECK:           scf.for
// CHECK:             core.pop %[[A_CREDIT:.*]]
// CHECK-NEXT:        ls.load
// CHECK-NEXT:        core.push %[[A_DATA:.*]]
// CHECK:             core.pop %[[B_CREDIT:.*]]
// CHECK-NEXT:        ls.load
// CHECK-NEXT:        core.push %[[B_DATA:.*]]
// CHECK:             scf.if
// CHECK-NEXT:        } else {
// CHECK-NEXT:          core.pop %[[RES:.*]]
// CHECK-NEXT:          ls.store
// CHECK:         core.unit "pe0" {
// CHECK:           scf.for
// CHECK:             scf.if
// CHECK-NEXT:          core.pop %[[A_DATA]]
// CHECK-NEXT:          core.pop %[[B_DATA]]
// CHECK-NEXT:          pe.compute "spyre.matmul" {{.*}} {accumulate}
// CHECK-NEXT:          core.push %[[B_CREDIT]]
// CHECK-NEXT:          core.push %[[A_CREDIT]]
// CHECK-NEXT:        } else {
// CHECK-NEXT:          core.pop %[[A_DATA]]
// CHECK-NEXT:          core.pop %[[B_DATA]]
// CHECK-NEXT:          pe.compute "spyre.matmul" {{.*}} {accumulate}
// CHECK-NEXT:          core.push %[[B_CREDIT]]
// CHECK-NEXT:          core.push %[[A_CREDIT]]
// CHECK-NEXT:          core.push %[[ACC:.*]]
// CHECK-NEXT:        }
// CHECK:         core.unit "sfp0" {
// CHECK:           scf.for
// CHECK:             scf.if
// CHECK-NEXT:        } else {
// CHECK-NEXT:          core.pop %[[ACC]]
// CHECK:               sfp.compute "spyre.cast"
func.func @last_step_apart(%a: tensor<64x256xf16>, %b: tensor<256x64xf16>) -> tensor<64x64xf16> {
  %r = dataflow.kernel @k cores(1) (%a, %b) : (tensor<64x256xf16>, tensor<256x64xf16>) -> tensor<64x64xf16> {
  ^bb0(%core: index, %am: !dataflow.ddr<64x256xf16>, %bm: !dataflow.ddr<256x64xf16>, %out: !dataflow.ddr<64x64xf16>):
    %at = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<64x64xf16>
    %bt = dataflow.alloc_lx {offset = 8192 : i64} : !dataflow.lx<64x64xf16>
    %acc = dataflow.alloc_lx {offset = 16384 : i64} : !dataflow.lx<64x64xf32>
    %res = dataflow.alloc_lx {offset = 32768 : i64} : !dataflow.lx<64x64xf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    dataflow.compute "spyre.full" on "pe" () -> (%acc) {attrs = {value = 0.0 : f64}} : () -> !dataflow.lx<64x64xf32>
    scf.for %k = %c0 to %c4 step %c1 {
      %k0 = arith.muli %k, %c64 : index
      dataflow.load %am[%c0, %k0] into %at : !dataflow.ddr<64x256xf16>, !dataflow.lx<64x64xf16>
      dataflow.load %bm[%k0, %c0] into %bt : !dataflow.ddr<256x64xf16>, !dataflow.lx<64x64xf16>
      %more = arith.cmpi ult, %k, %c3 : index
      scf.if %more {
        dataflow.compute "spyre.matmul" on "pe" (%at, %bt) -> (%acc) {accumulate} : (!dataflow.lx<64x64xf16>, !dataflow.lx<64x64xf16>) -> !dataflow.lx<64x64xf32>
      } else {
        dataflow.compute "spyre.matmul" on "pe" (%at, %bt) -> (%acc) {accumulate} : (!dataflow.lx<64x64xf16>, !dataflow.lx<64x64xf16>) -> !dataflow.lx<64x64xf32>
        dataflow.compute "spyre.cast" on "sfp" (%acc) -> (%res) : (!dataflow.lx<64x64xf32>) -> !dataflow.lx<64x64xf16>
        dataflow.store %res into %out[%c0, %c0] : !dataflow.lx<64x64xf16>, !dataflow.ddr<64x64xf16>
      }
    }
    dataflow.end
  }
  func.return %r : tensor<64x64xf16>
}
