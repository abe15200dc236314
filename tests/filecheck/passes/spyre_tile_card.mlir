// One target card: `spyre-opt --card FILE.json` records the card on the module
// (`spyre.card`, the fields that differ from the default card) and every pass plans for
// it. With 256 KiB of LX instead of 2 MiB, the same matmul gets another split and
// smaller tiles (its A tile: 64 instead of 512 columns).
// RUN: spyre-opt %s -p spyre-fuse,spyre-partition-cores,spyre-tile | filecheck %s --check-prefix=DEFAULT
// RUN: spyre-opt %s -p spyre-fuse,spyre-partition-cores,spyre-tile --card %S/small_lx_card.json | filecheck %s --check-prefix=SMALL
// RUN: not spyre-opt %s -p spyre-tile --card %S/no_such_card.json 2>&1 | filecheck %s --check-prefix=MISSING

// DEFAULT:      builtin.module {
// DEFAULT:        dataflow.kernel @matmul_0 cores(32) {{.*}}lx_capacity = 2097152 : i64}
// DEFAULT:          dataflow.alloc_lx : !dataflow.lx<{{[0-9]+}}x512xf16>
// SMALL:        builtin.module attributes {spyre.card = {lx_bytes = 262144 : i64}} {
// SMALL:          dataflow.kernel @matmul_0 cores(32) {{.*}}lx_capacity = 262144 : i64}
// SMALL:            dataflow.alloc_lx : !dataflow.lx<128x64xf16>
// SMALL-NOT:        x512xf16>
// MISSING: spyre-opt: error: --card {{.*}}no_such_card.json: cannot read: No such file or directory
func.func @matmul(%a: tensor<512x4096xf16>, %b: tensor<4096x4096xf16>) -> tensor<512x4096xf16> {
  %m = spyre.matmul %a, %b : tensor<512x4096xf16>, tensor<4096x4096xf16> -> tensor<512x4096xf16>
  func.return %m : tensor<512x4096xf16>
}
