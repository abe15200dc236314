// RUN: spyre-opt %s -p 'spyre-fuse,spyre-partition-cores{cores=1},spyre-tile{a-resident=true}' | filecheck %s
// RUN: spyre-opt %s -p 'spyre-fuse,spyre-partition-cores{cores=1},spyre-tile{lx-bytes=65536 a-resident=true}' | filecheck %s --check-prefix=SMALL

// A-resident matmul (opt-in: a-resident=true; the default card, one core): 32 N tiles of 128 columns, K in two
// steps of 256. The M tile's A row block stays in LX ([1, 2, 64, 256]: a slot per K
// step), loaded once in the M loop; one loop over the N tiles' K steps, both steps of
// a tile per iteration (each its own B tiles, one per corelet), loads only B tiles and
// reads A from the block's slot of each step; the first zeroes the accumulators, the
// last finishes and stores the tile.
// CHECK-LABEL: func.func @resident
// CHECK:         %[[WHOLE:.*]] = dataflow.alloc_lx : !dataflow.lx<1x2x64x256xf16>
// CHECK:         %[[BLOCK:.*]] = dataflow.slot %[[WHOLE]][%{{.*}}] : !dataflow.lx<1x2x64x256xf16> -> !dataflow.lx<2x64x256xf16>
// CHECK:         scf.for
// CHECK:           %[[S0:.*]] = dataflow.slot %[[BLOCK]][%{{.*}}]
// CHECK-NEXT:      dataflow.load %{{.*}} into %[[S0]]
// CHECK:           %[[S1:.*]] = dataflow.slot %[[BLOCK]][%{{.*}}]
// CHECK-NEXT:      dataflow.load %{{.*}} into %[[S1]]
// CHECK:           scf.for
// CHECK-NOT:         scf.for
// CHECK-COUNT-4:     dataflow.load %{{.*}} : !dataflow.ddr<512x4096xf16>, !dataflow.lx<256x64xf16>
// CHECK-NOT:         !dataflow.ddr<64x512xf16>
// CHECK:             scf.if
// CHECK:               dataflow.compute "spyre.full"
// CHECK:             %[[A0:.*]] = dataflow.slot %[[BLOCK]][%{{.*}}]
// CHECK-NEXT:        dataflow.compute "spyre.matmul" on "pe"(%[[A0]], %{{.*}})
// CHECK:             %[[A1:.*]] = dataflow.slot %[[BLOCK]][%{{.*}}]
// CHECK-NEXT:        dataflow.compute "spyre.matmul" on "pe"(%[[A1]], %{{.*}})
// CHECK:             scf.if
// CHECK:               dataflow.compute "spyre.cast"
// CHECK:               dataflow.store

// With 64 KiB of LX the block does not fit beside the other tiles: A streams in the
// K loop with B (the k-loop variant).
// SMALL-LABEL: func.func @resident
// SMALL-NOT:     dataflow.slot
// SMALL:         scf.for
// SMALL:           scf.for
// SMALL:             scf.for
// SMALL-NEXT:          arith.muli
// SMALL:               dataflow.load %{{.*}} : !dataflow.ddr<64x512xf16>, !dataflow.lx<32x64xf16>
// SMALL-NEXT:          dataflow.load %{{.*}} : !dataflow.ddr<512x4096xf16>
func.func @resident(%a: tensor<64x512xf16>, %b: tensor<512x4096xf16>) -> tensor<64x4096xf16> {
  %p = spyre.matmul %a, %b : tensor<64x512xf16>, tensor<512x4096xf16> -> tensor<64x4096xf16>
  func.return %p : tensor<64x4096xf16>
}
