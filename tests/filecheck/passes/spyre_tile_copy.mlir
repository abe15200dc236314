// RUN: spyre-opt %s -p spyre-stickify,spyre-fuse,spyre-partition-cores,spyre-tile --split-input-file | filecheck %s

// A concat along its outermost dim: a row would be the whole 16 MiB result, so it is a
// copy kernel. Each input is one piece: boxes of 64 rows, loaded and stored at the
// piece's offset (the second input lands 2048 rows down), one box per core.
// CHECK-LABEL: func.func @concat_rows
// CHECK:       dataflow.kernel @copy_0 cores(32) (%a, %b) {plan = #dataflow.copy_plan<row_dims = 1, cores = 32>
// CHECK-NEXT:  ^bb0(%[[CORE:.*]]: index, %[[A:.*]]: !dataflow.ddr<2048x1024xf16, {{.*}}>, %[[B:.*]]: !dataflow.ddr<2048x1024xf16, {{.*}}>, %[[OUT:.*]]: !dataflow.ddr<4096x1024xf16, {{.*}}>):
// CHECK-DAG:     %[[BOX_A:.*]] = dataflow.alloc_lx : !dataflow.lx<64x1024xf16>
// CHECK-DAG:     %[[BOX_B:.*]] = dataflow.alloc_lx : !dataflow.lx<64x1024xf16>
// CHECK-DAG:     %[[START:.*]] = arith.constant 2048 : index
// CHECK:         scf.for
// CHECK:           arith.muli %[[CORE]]
// CHECK:           dataflow.load %[[A]][%[[ROW:.*]], %{{.*}}] into %[[BOX_A]]
// CHECK-NEXT:      dataflow.store %[[BOX_A]] into %[[OUT]][%[[ROW]], %{{.*}}]
// CHECK:         scf.for
// CHECK:           dataflow.load %[[B]][%[[ROW_B:.*]], %{{.*}}] into %[[BOX_B]]
// CHECK-NEXT:      %[[SHIFTED:.*]] = arith.addi %[[ROW_B]], %[[START]] : index
// CHECK-NEXT:      dataflow.store %[[BOX_B]] into %[[OUT]][%[[SHIFTED]], %{{.*}}]
// CHECK:         dataflow.end
func.func @concat_rows(%a: tensor<2048x1024xf16>, %b: tensor<2048x1024xf16>) -> tensor<4096x1024xf16> {
  %c = spyre.concat %a, %b dim = 0 : tensor<2048x1024xf16>, tensor<2048x1024xf16> -> tensor<4096x1024xf16>
  func.return %c : tensor<4096x1024xf16>
}

// -----

// Flattening moves bytes (a padded row of 1000 is no view of the 1-D result): the
// restickify is one row of 2 MB, so it too is a copy, in boxes of whole sticks.
// CHECK-LABEL: func.func @flatten
// CHECK:       %[[R:.*]] = spyre.reshape %a : {{.*}} -> tensor<1024000xf16>
// CHECK:       dataflow.kernel @copy_0 cores(32) (%[[R]]) {plan = #dataflow.copy_plan
// CHECK:         %[[BOX:.*]] = dataflow.alloc_lx : !dataflow.lx<32000xf16>
// CHECK:         scf.for
// CHECK:           dataflow.load %{{.*}}[%{{.*}}] into %[[BOX]]
// CHECK-NEXT:      dataflow.store %[[BOX]] into
func.func @flatten(%a: tensor<1024x1000xf16>) -> tensor<1024000xf16> {
  %r = spyre.reshape %a : tensor<1024x1000xf16> -> tensor<1024000xf16>
  func.return %r : tensor<1024000xf16>
}

// -----

// Rows that fit stay a row kernel.
// CHECK-LABEL: func.func @small_concat
// CHECK:       dataflow.kernel @rows_0
// CHECK-NOT:   #dataflow.copy_plan
func.func @small_concat(%a: tensor<64x128xf16>, %b: tensor<64x64xf16>) -> tensor<64x192xf16> {
  %c = spyre.concat %a, %b dim = 1 : tensor<64x128xf16>, tensor<64x64xf16> -> tensor<64x192xf16>
  func.return %c : tensor<64x192xf16>
}
