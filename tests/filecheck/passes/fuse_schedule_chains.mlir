// RUN: spyre-opt %s -p spyre-schedule-chains --split-input-file | filecheck %s
// RUN: spyre-opt %s -p 'spyre-schedule-chains{schedule-chains=false}' --split-input-file | filecheck %s --check-prefix=OFF
// RUN: spyre-opt %s -p spyre-schedule-chains,spyre-stickify,spyre-fuse --split-input-file | filecheck %s --check-prefix=GROUPS
// RUN: spyre-opt %s -p spyre-stickify,spyre-fuse --split-input-file | filecheck %s --check-prefix=UNSCHEDULED

// Two projections of one activation, then a chain on each: torch's order computes both
// projections before either chain. Scheduled, the two matmuls sharing A with Bs of one
// shape come side by side (spyre-fuse pairs them), each chain follows its producer, and
// an op reading only arguments (the exp of %c) comes just before its first reader:
// one kernel. In torch's order, three.

// CHECK-LABEL: func.func @two_chains
// CHECK:         %p = spyre.matmul %a, %w1
// CHECK-NEXT:    %q = spyre.matmul %a, %w2
// CHECK-NEXT:    %p1 = spyre.neg %p
// CHECK-NEXT:    %p2 = spyre.exp %p1
// CHECK-NEXT:    %q1 = spyre.relu %q
// CHECK-NEXT:    %e = spyre.exp %c
// CHECK-NEXT:    %q2 = spyre.add %q1, %e
// CHECK-NEXT:    func.return %p2, %q2
// OFF-LABEL:   func.func @two_chains
// OFF:           %p = spyre.matmul
// OFF-NEXT:      %p1 = spyre.neg %p
// OFF-NEXT:      %e = spyre.exp %c
// OFF-NEXT:      %q = spyre.matmul
// GROUPS-LABEL: func.func @two_chains
// GROUPS:        dataflow.group @matmul_0
// GROUPS:          spyre.matmul
// GROUPS-NEXT:     spyre.matmul
// GROUPS-NEXT:     spyre.neg
// GROUPS-NEXT:     spyre.exp
// GROUPS-NEXT:     spyre.relu
// GROUPS-NEXT:     spyre.exp
// GROUPS-NEXT:     spyre.add
// GROUPS-NEXT:     dataflow.yield
// GROUPS-NOT:    dataflow.group
// GROUPS:        func.return
// UNSCHEDULED-LABEL: func.func @two_chains
// UNSCHEDULED-COUNT-3: dataflow.group
func.func @two_chains(%a: tensor<64x128xf16>, %w1: tensor<128x256xf16>, %w2: tensor<128x256xf16>, %c: tensor<64x256xf16>) -> (tensor<64x256xf16>, tensor<64x256xf16>) {
  %p = spyre.matmul %a, %w1 : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %p1 = spyre.neg %p : tensor<64x256xf16> -> tensor<64x256xf16>
  %e = spyre.exp %c : tensor<64x256xf16> -> tensor<64x256xf16>
  %q = spyre.matmul %a, %w2 : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %p2 = spyre.exp %p1 : tensor<64x256xf16> -> tensor<64x256xf16>
  %q1 = spyre.relu %q : tensor<64x256xf16> -> tensor<64x256xf16>
  %q2 = spyre.add %q1, %e : tensor<64x256xf16>, tensor<64x256xf16> -> tensor<64x256xf16>
  func.return %p2, %q2 : tensor<64x256xf16>, tensor<64x256xf16>
}

// -----

// torch flattens an activation once per projection: the reshapes of one value to one
// type become one.

// CHECK-LABEL: func.func @duplicate_reshapes
// CHECK:         %a = spyre.reshape %x
// CHECK-NOT:     spyre.reshape
// CHECK:         spyre.matmul %a, %w1
// CHECK-NEXT:    spyre.matmul %a, %w2
// OFF-LABEL:   func.func @duplicate_reshapes
// OFF:           %b = spyre.reshape %x
func.func @duplicate_reshapes(%x: tensor<1x64x128xf16>, %w1: tensor<128x256xf16>, %w2: tensor<128x256xf16>) -> (tensor<64x256xf16>, tensor<64x256xf16>) {
  %a = spyre.reshape %x : tensor<1x64x128xf16> -> tensor<64x128xf16>
  %p = spyre.matmul %a, %w1 : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  %b = spyre.reshape %x : tensor<1x64x128xf16> -> tensor<64x128xf16>
  %q = spyre.matmul %b, %w2 : tensor<64x128xf16>, tensor<128x256xf16> -> tensor<64x256xf16>
  func.return %p, %q : tensor<64x256xf16>, tensor<64x256xf16>
}
