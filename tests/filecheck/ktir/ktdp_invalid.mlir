// One chunk per verifier rule of the ktdp dialect (spyre_ir/dialects/ktdp*.py), as the
// KTIR specification states them (torch-spyre/ktir-mlir-frontend, KTDP.td and
// KTDPOps.cpp), plus the parse-time rules of its types.

// RUN: spyre-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: spyre-opt %s --split-input-file --verify-diagnostics 2>&1 | %no-traceback

func.func @f() {
  // CHECK: ktdp_invalid.mlir:[[# @LINE + 2]]:3: error: 'ktdp.get_compute_tile_id' must return at least one index
  // expected-error @+1 {{must return at least one index}}
  "ktdp.get_compute_tile_id"() : () -> ()
  func.return
}

// -----

func.func @f(%p: index) {
  // expected-error @+1 {{static_sizes and static_strides must have equal length}}
  %v = ktdp.construct_memory_view %p, sizes: [4, 64], strides: [1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<4x64xf16>
  func.return
}

// -----

func.func @f(%p: index, %n: index) {
  // expected-error @+1 {{number of dynamic size operands does not match}}
  %v = "ktdp.construct_memory_view"(%p, %n) <{operandSegmentSizes = array<i32: 1, 1, 0>, static_sizes = array<i64: 4, 64>, static_strides = array<i64: 64, 1>, coordinate_set = affine_set<(d0, d1) : (d0 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>}> : (index, index) -> memref<4x64xf16>
  func.return
}

// -----

func.func @f(%p: index) {
  // expected-error @+1 {{result memref rank does not match sizes/strides length}}
  %v = ktdp.construct_memory_view %p, sizes: [4, 64], strides: [64, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<256xf16>
  func.return
}

// -----

func.func @f(%p: index) {
  // expected-error @+1 {{coordinate_set must have one dim per view dim}}
  %v = ktdp.construct_memory_view %p, sizes: [4, 64], strides: [64, 1] {
    coordinate_set = affine_set<(d0) : (d0 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<4x64xf16>
  func.return
}

// -----

func.func @f(%a: memref<4x64xf16>, %b: memref<4x64xf32>) {
  // expected-error @+1 {{all input memrefs must have the same element type as the result}}
  %d = ktdp.construct_distributed_memory_view (%a, %b : memref<4x64xf16>, memref<4x64xf32>) : memref<8x64xf16>
  func.return
}

// -----

func.func @f(%a: memref<4x64xf16>, %b: memref<256xf16>) {
  // expected-error @+1 {{all input memrefs must have the same rank as the result}}
  %d = ktdp.construct_distributed_memory_view (%a, %b : memref<4x64xf16>, memref<256xf16>) : memref<8x64xf16>
  func.return
}

// -----

func.func @f(%v: memref<4x64xf16>, %i: index) {
  // expected-error @+1 {{access_tile_set dimensions (2) must match base_map dims (1)}}
  %t = ktdp.construct_access_tile %v[%i] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<4x64xf16> -> !ktdp.access_tile<4x64xindex>
  func.return
}

// -----

func.func @f(%v: memref<4x64xf16>, %i: index) {
  // expected-error @+1 {{access_tile_set has 1 symbols but got 0 symbol operands}}
  %t = ktdp.construct_access_tile %v[%i, %i] {
    access_tile_set = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 >= 0)>,
    access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<4x64xf16> -> !ktdp.access_tile<4x64xindex>
  func.return
}

// -----

func.func @f(%v: memref<4x64xf16>, %i: index) {
  // expected-error @+1 {{access_tile_order must have equal number of inputs (2) and outputs (1)}}
  %t = ktdp.construct_access_tile %v[%i, %i] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0)>
  } : memref<4x64xf16> -> !ktdp.access_tile<4x64xindex>
  func.return
}

// -----

func.func @f(%v: memref<4x64xf16>, %i: index) {
  // expected-error @+1 {{access_tile_order dimensions (1) must match access_tile_set dimensions (2)}}
  %t = ktdp.construct_access_tile %v[%i, %i] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0) -> (d0)>
  } : memref<4x64xf16> -> !ktdp.access_tile<4x64xindex>
  func.return
}

// -----

func.func @f(%v: memref<4x64xf16>, %i: index) {
  // expected-error @+1 {{result type rank (1) must match access_tile_set dimensions (2)}}
  %t = ktdp.construct_access_tile %v[%i, %i] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<4x64xf16> -> !ktdp.access_tile<256xindex>
  func.return
}

// -----

func.func @f(%v: memref<256xf16>, %i: index) {
  // expected-error @+1 {{base has rank 1 but the base coordinate has 2 entries}}
  %t = ktdp.construct_access_tile %v[%i, %i] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<256xf16> -> !ktdp.access_tile<4x64xindex>
  func.return
}

// -----

func.func @f(%v: memref<8x64xf16>, %idx: memref<4xi32>) {
  // expected-error @+1 {{number of subscripts (1) must match base rank (2)}}
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %v[ind(%idx[%m])] {
    variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<8x64xf16>, memref<4xi32> -> !ktdp.access_tile<4x64xindex>
  func.return
}

// -----

func.func @f(%v: memref<8x64xf16>, %idx: memref<4xi32>) {
  // expected-error @+1 {{number of intermediate variables (1) must match variables_space_set dimensions (2)}}
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%m) %v[ind(%idx[%m]), (%m)] {
    variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<8x64xf16>, memref<4xi32> -> !ktdp.access_tile<4x64xindex>
  func.return
}

// -----

func.func @f(%v: memref<8x64xf16>, %idx: memref<4x2xi32>) {
  // expected-error @+1 {{indirect subscript map for dimension 0 produces 1 results, but needs 2}}
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %v[ind(%idx[%m]), (%k)] {
    variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<8x64xf16>, memref<4x2xi32> -> !ktdp.access_tile<4x64xindex>
  func.return
}

// -----

func.func @f(%v: memref<8x64xf16>, %idx: memref<4xi32>) {
  // expected-error @+1 {{direct subscript map for dimension 1 produces 2 results, but needs 1}}
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %v[ind(%idx[%m]), (%k, %m)] {
    variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<8x64xf16>, memref<4xi32> -> !ktdp.access_tile<4x64xindex>
  func.return
}

// -----

func.func @f(%v: memref<8x64xf16>, %idx: memref<4xi32>) {
  // expected-error @+1 {{variables_space_set has 1 symbols but got 0 symbol operands}}
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %v[ind(%idx[%m]), (%k)] {
    variables_space_set = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 >= 0)>,
    variables_space_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<8x64xf16>, memref<4xi32> -> !ktdp.access_tile<4x64xindex>
  func.return
}

// -----

func.func @f(%v: memref<8x64xf16>, %idx: memref<4xi32>) {
  // expected-error @+1 {{variables_space_order dimensions (1) must match variables_space_set dimensions (2)}}
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %v[ind(%idx[%m]), (%k)] {
    variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, variables_space_order = affine_map<(d0) -> (d0)>
  } : memref<8x64xf16>, memref<4xi32> -> !ktdp.access_tile<4x64xindex>
  func.return
}

// -----

func.func @f(%v: memref<8x64xf16>, %idx: memref<4xi32>) {
  // expected-error @+1 {{result type rank (1) must match variables_space_set dimensions (2)}}
  %t = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %v[ind(%idx[%m]), (%k)] {
    variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<8x64xf16>, memref<4xi32> -> !ktdp.access_tile<256xindex>
  func.return
}

// -----

func.func @f(%t: !ktdp.access_tile<4x64xindex>) {
  // expected-error @+1 {{access tile shape must match result tensor shape}}
  %x = ktdp.load %t : !ktdp.access_tile<4x64xindex> -> tensor<4x32xf16>
  func.return
}

// -----

func.func @f(%t: !ktdp.access_tile<4x64xindex>, %x: tensor<64x4xf16>) {
  // expected-error @+1 {{data tile shape must match access tile shape}}
  ktdp.store %x, %t : tensor<64x4xf16>, !ktdp.access_tile<4x64xindex>
  func.return
}

// -----

func.func @f(%p: tensor<1x64xf16>) {
  // expected-error @+1 {{producer_tiles_per_group must be a set over one tile dim with 1 symbol(s)}}
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i) : (i >= 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16>
  func.return
}

// -----

func.func @f(%p: tensor<1x64xf16>) {
  // expected-error @+1 {{region takes one index argument (the group id)}}
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index, %extra: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16>
  func.return
}

// -----

func.func @f(%p: tensor<1x32xf16>) {
  // expected-error @+1 {{region yields (tensor<1x32xf16>) but the partial types are (tensor<1x64xf16>)}}
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x32xf16>
  }
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16>
  func.return
}

// -----

func.func @f(%p: tensor<1x64xf16>) {
  // expected-error @+1 {{result must have exactly one use: the delivery op (has 0)}}
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  func.return
}

// -----

func.func @f(%p: tensor<1x64xf16>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  // expected-error @+1 {{result types must match future partial types}}
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf32>
  func.return
}

// -----

// The same elements in another shape than unit dims apart: the spec's error.
func.func @f(%p: tensor<1x64xf16>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  // expected-error @+1 {{result types must match future partial types (results (tensor<2x32xf16>)}}
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>,
      identity(%p : tensor<1x64xf16>)
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<2x32xf16> {
  ^bb0(%l: tensor<1x64xf16>, %r2: tensor<1x64xf16>):
    ktdp.yield_reduced %l : tensor<1x64xf16>
  }
  func.return
}

// -----

// Unit dims apart but another element type: the spec's error.
func.func @f(%p: tensor<1x64xf16>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  // expected-error @+1 {{result types must match future partial types (results (tensor<64xf32>)}}
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>,
      identity(%p : tensor<1x64xf16>)
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<64xf32> {
  ^bb0(%l: tensor<1x64xf16>, %r2: tensor<1x64xf16>):
    ktdp.yield_reduced %l : tensor<1x64xf16>
  }
  func.return
}

// -----

// Unit dims apart only (ktir-cpu's examples/ktir/ring_reduce.mlir reduces 1x128
// partials to a 128 result): accepted with a located warning naming the spec's rule.
func.func @f(%p: tensor<1x64xf16>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  // CHECK: ktdp_invalid.mlir:[[# @LINE + 2]]:3: warning: 'ktdp.inter_tile_reduce' result types (tensor<64xf16>) differ from the future partial types (tensor<1x64xf16>) by unit dims only: the specification's rule 'result types must match future partial types' rejects this
  // expected-warning @+1 {{by unit dims only: the specification's rule 'result types must match future partial types' rejects this; accepted as torch-spyre/ktir-cpu runs it}}
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>,
      identity(%p : tensor<1x64xf16>)
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<64xf16> {
  ^bb0(%l: tensor<1x64xf16>, %r2: tensor<1x64xf16>):
    ktdp.yield_reduced %l : tensor<1x64xf16>
  }
  func.return
}

// -----

func.func @f(%f: !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>>) {
  // expected-error @+1 {{future must come from ktdp.inter_tile_produce}}
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16>
  func.return
}

// -----

func.func @f(%p: tensor<1x64xf16>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  // expected-error @+1 {{producer_dependency_per_consumer must be a set over one tile dim with 1 or 2 symbol(s)}}
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>,
      producer_dependency_per_consumer = affine_set<(p) : (p == 0)>
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16>
  func.return
}

// -----

func.func @f(%p: tensor<1x64xf16>, %z: tensor<1x64xf32>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  // expected-error @+1 {{identity types must match result types}}
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>,
      identity(%z : tensor<1x64xf32>)
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16> {
  ^bb0(%l: tensor<1x64xf16>, %r2: tensor<1x64xf16>):
    ktdp.yield_reduced %l : tensor<1x64xf16>
  }
  func.return
}

// -----

func.func @f(%p: tensor<1x64xf16>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  // expected-error @+1 {{combiner takes 2N arguments (lhs..., rhs...) of the partial types}}
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>,
      identity(%p : tensor<1x64xf16>)
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16> {
  ^bb0(%l: tensor<1x64xf16>):
    ktdp.yield_reduced %l : tensor<1x64xf16>
  }
  func.return
}

// -----

func.func @f(%p: tensor<1x64xf16>, %q: tensor<1x32xf16>) {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  // expected-error @+1 {{combiner yields (tensor<1x32xf16>) but the partial types are (tensor<1x64xf16>)}}
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0)>,
      identity(%p : tensor<1x64xf16>)
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16> {
  ^bb0(%l: tensor<1x64xf16>, %r2: tensor<1x64xf16>):
    ktdp.yield_reduced %q : tensor<1x32xf16>
  }
  func.return
}

// -----

// expected-error @+1 {{tile_future groups must be a set over one dimension without symbols}}
func.func @f(%f: !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g)[s] : (g == 0)>>) {
  func.return
}

// -----

// expected-error @+1 {{access_tile elements must be index, got f16}}
func.func @f(%t: !ktdp.access_tile<4x64xf16>) {
  func.return
}

// -----

func.func @f(%p: index) {
  %v = ktdp.construct_memory_view %p, sizes: [64], strides: [1] {
    // expected-error @+1 {{core must be >= 0 or -1, got -2}}
    coordinate_set = affine_set<(d0) : (d0 >= 0)>, memory_space = #ktdp.spyre_memory_space<LX, core = -2>
  } : memref<64xf16>
  func.return
}

// -----

func.func @f(%m: !ktdp.runtime_arg<index, upperbound=300>) {
  // expected-error @+1 {{result type (i32) must match runtime_arg underlying type (index) when extracting value}}
  %v = ktdp.runtime_arg_extract value from %m : !ktdp.runtime_arg<index, upperbound=300> -> i32
  func.return
}

// -----

func.func @f(%m: !ktdp.runtime_arg<index, upperbound=300>) {
  // expected-error @+1 {{cannot extract granularity from runtime_arg that doesn't have one}}
  %v = ktdp.runtime_arg_extract granularity from %m : !ktdp.runtime_arg<index, upperbound=300> -> index
  func.return
}

// -----

func.func @f() {
  // expected-error @+1 {{'ktdp.get_compute_tile_id' with a dim returns one index, not 2}}
  %i, %j = ktdp.get_compute_tile_id {dim = 0} : index, index
  func.return
}

// -----

func.func @f() {
  // expected-error @+1 {{'ktdp.get_compute_tile_id' dim must be a non-negative integer}}
  %i = ktdp.get_compute_tile_id {dim = -1} : index
  func.return
}

// -----

func.func @f(%p: tensor<1x64xf16>) {
  // expected-error @+2 {{the partial types (tensor<1x32xf16>) are not those of}}
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == 0)>
      : tensor<1x32xf16> -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%g: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  func.return
}

// -----

func.func @f(%p: tensor<1x64xf16>) {
  // expected-error @+3 {{the op's groups}}
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == 0)>,
      groups = affine_set<(g) : (g == 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g >= 0, -g + 1 >= 0)>> {
  ^bb0(%g: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  func.return
}

// -----

// expected-error @+1 {{tile_future needs `, groups = SET`}}
func.func @f(%f: !ktdp.tile_future<tensor<1x64xf16>>) {
  func.return
}
