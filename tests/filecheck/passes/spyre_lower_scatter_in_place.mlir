// spyre-lower-scatter's in-place stores (spyre_ir/passes/lower_scatter.py): a plain
// scatter into a function argument that nothing else reads (a KV cache, whose written
// value attention reads) is marked `in_place` and not lowered; spyre-to-units makes it a
// kernel of its own (spyre-row-store-kernels, spyre_ir/passes/row_store_kernel.py) whose
// result is tied to the cache argument and whose LS unit stores each row at a runtime
// position (`dataflow.position`), and the kernel after it reads its result; the
// simulator gives what the one-hot lowering gives, bit for bit.

// RUN: spyre-opt %s -p spyre-lower-scatter --split-input-file | filecheck %s
// RUN: spyre-opt %s -p spyre-lower-scatter --split-input-file | spyre-opt --split-input-file 2>&1 | %no-traceback
// RUN: spyre-opt %s -p spyre-to-units --split-input-file | filecheck %s --check-prefix=UNITS
// RUN: spyre-opt %s -p spyre-to-units --split-input-file 2>&1 | %no-traceback

// The decode step's shape: the new key at a runtime position, then the scores read the
// written cache. The cache is stored into, not rewritten by a select.
// CHECK-LABEL: func.func @decode
// CHECK:         %w = spyre.scatter %cache[%pos], %k dim = 2 {in_place} : tensor<1x2x16x64xf16>, tensor<1xi64>, tensor<1x2x1x64xf16> -> tensor<1x2x16x64xf16>
// CHECK-NOT:     spyre.select
// CHECK-NOT:     spyre.broadcast_to
// UNITS-LABEL: func.func @decode
// UNITS:         core.program @rows_0
// UNITS:         %w = core.program @store_rows_0 cores(1) (%cache, %pos, %0) {{{.*}}tied = array<i64: 0>
// UNITS:           core.unit "ls" {
// UNITS-NEXT:        scf.for %step = %{{.*}} to %{{.*}} step
// UNITS:                 %[[J:.*]] = arith.remui
// UNITS-NEXT:          ls.load %{{.*}}[%{{.*}}, %{{.*}}, %[[J]], %{{.*}}] into %[[ROW:[a-z0-9_]+]]
// UNITS-NEXT:          %[[P:.*]] = dataflow.position %{{.*}}[%[[J]]] dim 2 bound 16 {wrap}
// UNITS-NEXT:          ls.store %[[ROW]] into %{{.*}}[%{{.*}}, %{{.*}}, %[[P]], %{{.*}}]
// UNITS-NOT:     spyre.scatter
// UNITS:         core.program @matmul_1 cores({{[0-9]+}}) (%w, %q)
func.func @decode(%cache: tensor<1x2x16x64xf16>, %pos: tensor<1xi64>, %x: tensor<1x2x1x64xf16>, %q: tensor<1x2x1x64xf16>) -> tensor<1x2x1x16xf16> {
  %two = spyre.full {value = 2.0 : f64} : tensor<f16>
  %k = spyre.mul %x, %two : tensor<1x2x1x64xf16>, tensor<f16> -> tensor<1x2x1x64xf16>
  %w = spyre.scatter %cache[%pos], %k dim = 2 : tensor<1x2x16x64xf16>, tensor<1xi64>, tensor<1x2x1x64xf16> -> tensor<1x2x16x64xf16>
  %t = spyre.transpose %w perm = [0, 1, 3, 2] : tensor<1x2x16x64xf16> -> tensor<1x2x64x16xf16>
  %s = spyre.matmul %q, %t : tensor<1x2x1x64xf16>, tensor<1x2x64x16xf16> -> tensor<1x2x1x16xf16>
  func.return %s : tensor<1x2x1x16xf16>
}

// -----

// The cache is also read elsewhere (its old value is still needed): one-hot, no in_place.
// CHECK-LABEL: func.func @read_twice
// CHECK-NOT:     in_place
// CHECK:         spyre.select %{{.*}}, %{{.*}}, %cache
func.func @read_twice(%cache: tensor<1x2x16x64xf16>, %pos: tensor<1xi64>, %k: tensor<1x2x1x64xf16>) -> (tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>) {
  %w = spyre.scatter %cache[%pos], %k dim = 2 : tensor<1x2x16x64xf16>, tensor<1xi64>, tensor<1x2x1x64xf16> -> tensor<1x2x16x64xf16>
  %e = spyre.exp %cache : tensor<1x2x16x64xf16> -> tensor<1x2x16x64xf16>
  func.return %w, %e : tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>
}

// -----

// A dest computed in the graph has no buffer of the caller's to store into: one-hot.
// CHECK-LABEL: func.func @computed_dest
// CHECK-NOT:     in_place
// CHECK:         spyre.select
func.func @computed_dest(%cache: tensor<1x2x16x64xf16>, %pos: tensor<1xi64>, %k: tensor<1x2x1x64xf16>) -> tensor<1x2x16x64xf16> {
  %e = spyre.exp %cache : tensor<1x2x16x64xf16> -> tensor<1x2x16x64xf16>
  %w = spyre.scatter %e[%pos], %k dim = 2 : tensor<1x2x16x64xf16>, tensor<1xi64>, tensor<1x2x1x64xf16> -> tensor<1x2x16x64xf16>
  func.return %w : tensor<1x2x16x64xf16>
}

// -----

// Along the last dim (the stick dim) a slice is part of a stick: one-hot.
// CHECK-LABEL: func.func @along_sticks
// CHECK-NOT:     in_place
// CHECK:         spyre.select
func.func @along_sticks(%m: tensor<4x64xf16>, %pos: tensor<2xi64>, %v: tensor<4x2xf16>) -> tensor<4x64xf16> {
  %w = spyre.scatter %m[%pos], %v dim = 1 : tensor<4x64xf16>, tensor<2xi64>, tensor<4x2xf16> -> tensor<4x64xf16>
  func.return %w : tensor<4x64xf16>
}

// -----

// An index_add accumulates into dest: one-hot.
// CHECK-LABEL: func.func @index_add
// CHECK-NOT:     in_place
// CHECK:         spyre.add %x
func.func @index_add(%x: tensor<16x64xf16>, %pos: tensor<3xi64>, %v: tensor<3x64xf16>) -> tensor<16x64xf16> {
  %r = spyre.scatter_add %x[%pos], %v dim = 0 : tensor<16x64xf16>, tensor<3xi64>, tensor<3x64xf16> -> tensor<16x64xf16>
  func.return %r : tensor<16x64xf16>
}

// -----

// Positions wrapped as the frontend writes them (select(i < 0, i + 16, i)): the row
// store wraps a negative position itself, so it is given the raw positions and the wrap
// (a kernel of its own at L3) goes; the rows are the argument %x, so the row store is
// the only kernel left.
// CHECK-LABEL: func.func @wrapped
// CHECK-NOT:     spyre.lt
// CHECK-NOT:     spyre.select
// CHECK:         %w = spyre.scatter %cache[%pos], %x dim = 2 {in_place}
// UNITS-LABEL: func.func @wrapped
// UNITS-NEXT:    %w = core.program @store_rows_0 cores(1) (%cache, %pos, %x)
// UNITS-NOT:     core.program
// UNITS:         func.return %w
func.func @wrapped(%cache: tensor<1x2x16x64xf16>, %pos: tensor<1xi64>, %x: tensor<1x2x1x64xf16>) -> tensor<1x2x16x64xf16> {
  %zero = spyre.full {value = 0 : i64} : tensor<i64>
  %neg = spyre.lt %pos, %zero : tensor<1xi64>, tensor<i64> -> tensor<1xi1>
  %size = spyre.full {value = 16 : i64} : tensor<i64>
  %up = spyre.add %pos, %size : tensor<1xi64>, tensor<i64> -> tensor<1xi64>
  %i = spyre.select %neg, %up, %pos : tensor<1xi1>, tensor<1xi64>, tensor<1xi64> -> tensor<1xi64>
  %w = spyre.scatter %cache[%i], %x dim = 2 : tensor<1x2x16x64xf16>, tensor<1xi64>, tensor<1x2x1x64xf16> -> tensor<1x2x16x64xf16>
  func.return %w : tensor<1x2x16x64xf16>
}

// -----

// A wrap by another size than dest's is not the frontend's: kept.
// CHECK-LABEL: func.func @other_wrap
// CHECK:         spyre.select
// CHECK:         spyre.scatter %cache[%i], %x dim = 2 {in_place}
func.func @other_wrap(%cache: tensor<1x2x16x64xf16>, %pos: tensor<1xi64>, %x: tensor<1x2x1x64xf16>) -> tensor<1x2x16x64xf16> {
  %zero = spyre.full {value = 0 : i64} : tensor<i64>
  %neg = spyre.lt %pos, %zero : tensor<1xi64>, tensor<i64> -> tensor<1xi1>
  %size = spyre.full {value = 8 : i64} : tensor<i64>
  %up = spyre.add %pos, %size : tensor<1xi64>, tensor<i64> -> tensor<1xi64>
  %i = spyre.select %neg, %up, %pos : tensor<1xi1>, tensor<1xi64>, tensor<1xi64> -> tensor<1xi64>
  %w = spyre.scatter %cache[%i], %x dim = 2 : tensor<1x2x16x64xf16>, tensor<1xi64>, tensor<1x2x1x64xf16> -> tensor<1x2x16x64xf16>
  func.return %w : tensor<1x2x16x64xf16>
}
