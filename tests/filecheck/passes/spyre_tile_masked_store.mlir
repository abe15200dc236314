// RUN: spyre-opt %s -p spyre-to-dataflow | filecheck %s
// RUN: spyre-opt %s -p 'spyre-to-dataflow{lx-bytes=1024}' | filecheck %s --check-prefix=SMALL
// RUN: spyre-opt %s -p 'spyre-to-units{lx-bytes=1024}' 2>&1 | %no-traceback

// A lookup of 512 f16 values by i64 indices: with the default LX each tile is a whole
// f16 stick (64 rows); with 1 KiB of LX a 64-row tile does not fit half of LX, so tiles
// are one i64 stick (16 rows) and their f16 results are stored `masked`: a quarter of
// a stick, the rest of which belongs to the neighbouring tile.
// CHECK-LABEL: func.func @lookup
// CHECK:         dataflow.store %{{.*}} into %{{.*}}[%{{.*}}] : !dataflow.lx<64xf16>
// SMALL-LABEL: func.func @lookup
// SMALL:         dataflow.load %{{.*}}[%{{.*}}] into %{{.*}} : !dataflow.ddr<512xi64{{.*}}>, !dataflow.lx<16xi64>
// SMALL:         dataflow.store %{{.*}} into %{{.*}}[%{{.*}}] {masked} : !dataflow.lx<16xf16>
func.func @lookup(%table: tensor<4096xf16>, %ids: tensor<512xi64>) -> tensor<512xf16> {
  %g = spyre.gather %table[%ids] : tensor<4096xf16>, tensor<512xi64> -> tensor<512xf16>
  func.return %g : tensor<512xf16>
}
