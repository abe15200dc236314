// RUN: spyre-opt %s | filecheck %s
// RUN: spyre-opt %s | spyre-opt | filecheck %s
// Every ktdp op, type and attribute parses, verifies and prints back in KTIR syntax.

#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#ident = affine_map<(d0, d1) -> (d0, d1)>
#tiles = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#groups = affine_set<(g) : (g >= 0, -g + 1 >= 0)>

// CHECK-LABEL: func.func @views
// CHECK-SAME: attributes {grid = [8 : i64]}
func.func @views(%x_ptr: index, %idx_ptr: index, %n: index) attributes {grid = [8]} {
  // CHECK: %{{.*}}, %{{.*}} = ktdp.get_compute_tile_id : index, index
  %i, %j = ktdp.get_compute_tile_id : index, index
  // CHECK: ktdp.get_compute_tile_id : index
  %t = ktdp.get_compute_tile_id : index
  %c0 = arith.constant 0 : index
  // CHECK: ktdp.construct_memory_view %x_ptr, sizes: [64, 256], strides: [256, 1] {memory_space = #ktdp.spyre_memory_space<HBM>, coordinate_set = affine_set<(d0, d1) : (d0 >= 0, ((d0 * -1) + 63) >= 0, d1 >= 0, ((d1 * -1) + 255) >= 0)>} : memref<64x256xf16>
  %x = ktdp.construct_memory_view %x_ptr, sizes: [64, 256], strides: [256, 1] {
    coordinate_set = #rows, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<64x256xf16>
  // CHECK: ktdp.construct_memory_view %x_ptr, sizes: [%n, 256], strides: [256, 1] {memory_space = #ktdp.spyre_memory_space<LX, core = 3>, {{.*}}} : memref<?x256xf16>
  %d = ktdp.construct_memory_view %x_ptr, sizes: [%n, 256], strides: [256, 1] {
    coordinate_set = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
    memory_space = #ktdp.spyre_memory_space<LX, core = 3>
  } : memref<?x256xf16>
  // CHECK: memory_space = #ktdp.memory_space<global>
  %g = ktdp.construct_memory_view %idx_ptr, sizes: [4, 8], strides: [8, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  } : memref<4x8xi32>
  // CHECK: ktdp.construct_distributed_memory_view(%x, %x : memref<64x256xf16>, memref<64x256xf16>) : memref<128x256xf16>
  %dist = ktdp.construct_distributed_memory_view (%x, %x : memref<64x256xf16>, memref<64x256xf16>) : memref<128x256xf16>
  // CHECK: ktdp.construct_access_tile %x[%i * 8 + 1, %c0] {access_tile_set = {{.*}}, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x256xf16> -> !ktdp.access_tile<64x256xindex>
  %a = ktdp.construct_access_tile %x[%i * 8 + 1, %c0] {
    access_tile_set = #rows, access_tile_order = #ident
  } : memref<64x256xf16> -> !ktdp.access_tile<64x256xindex>
  // CHECK: ktdp.construct_access_tile %x[%c0, %c0] symbols(%n) {{.*}} -> !ktdp.access_tile<?x256xindex>
  %s = ktdp.construct_access_tile %x[%c0, %c0] symbols(%n) {
    access_tile_set = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
    access_tile_order = #ident
  } : memref<64x256xf16> -> !ktdp.access_tile<?x256xindex>
  // CHECK: ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %x[ind(%g[%m, %k floordiv 32]), (%k + %t)] {variables_space_set = {{.*}}, variables_space_order = {{.*}}} : memref<64x256xf16>, memref<4x8xi32> -> !ktdp.access_tile<4x256xindex>
  %ind = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k)
      %x[ind(%g[%m, %k floordiv 32]), (%k + %t)] {
    variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
    variables_space_order = #ident
  } : memref<64x256xf16>, memref<4x8xi32> -> !ktdp.access_tile<4x256xindex>
  // CHECK: ktdp.load %a : !ktdp.access_tile<64x256xindex> -> tensor<64x256xf16>
  %v = ktdp.load %a : !ktdp.access_tile<64x256xindex> -> tensor<64x256xf16>
  // CHECK: ktdp.store %v, %a : tensor<64x256xf16>, !ktdp.access_tile<64x256xindex>
  ktdp.store %v, %a : tensor<64x256xf16>, !ktdp.access_tile<64x256xindex>
  func.return
}

// CHECK-LABEL: func.func @inter_tile
func.func @inter_tile(%p: tensor<1x64xf16>, %zero: tensor<1x64xf16>) attributes {grid = [8]} {
  // CHECK: ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(d0)[s0] : ((d0 + (s0 * -4)) >= 0, {{.*}})> -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(d0) : (d0 >= 0, ((d0 * -1) + 1) >= 0)>> {
  // CHECK: ktdp.yield_partial %p : tensor<1x64xf16>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #tiles
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = #groups> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  // CHECK: ktdp.inter_tile_reduce (%f) consumer_tiles_per_group = {{.*}}, identity(%zero : tensor<1x64xf16>) : !ktdp.tile_future<(tensor<1x64xf16>), {{.*}}> -> tensor<1x64xf16> {
  // CHECK: ktdp.yield_reduced
  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #tiles,
      identity(%zero : tensor<1x64xf16>)
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = #groups> -> tensor<1x64xf16> {
  ^bb0(%lhs: tensor<1x64xf16>, %rhs: tensor<1x64xf16>):
    %s = arith.addf %lhs, %rhs : tensor<1x64xf16>
    ktdp.yield_reduced %s : tensor<1x64xf16>
  }
  func.return
}

// CHECK-LABEL: func.func @groups_on_the_op
func.func @groups_on_the_op(%p: tensor<1x64xf16>, %zero: tensor<1x64xf16>) attributes {grid = [8]} {
  // ktir-cpu's newer spelling: `groups = SET` on both ops, the future type without
  // them; printed with the groups in the type.
  // CHECK: ktdp.inter_tile_produce producer_tiles_per_group = {{.*}} -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(d0) : (d0 >= 0, ((d0 * -1) + 1) >= 0)>> {
  %f = ktdp.inter_tile_produce
      producer_tiles_per_group = #tiles,
      groups = #groups
      : tensor<1x64xf16> -> !ktdp.tile_future<tensor<1x64xf16>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  // CHECK: ktdp.inter_tile_reduce (%f) consumer_tiles_per_group = {{.*}}, identity(%zero : tensor<1x64xf16>) : !ktdp.tile_future<(tensor<1x64xf16>), groups = {{.*}}> -> tensor<1x64xf16> {
  %r = ktdp.inter_tile_reduce(%f)
      consumer_tiles_per_group = #tiles,
      groups = #groups,
      identity(%zero : tensor<1x64xf16>)
      : !ktdp.tile_future<tensor<1x64xf16>> -> tensor<1x64xf16> {
  ^bb0(%lhs: tensor<1x64xf16>, %rhs: tensor<1x64xf16>):
    %s = arith.addf %lhs, %rhs : tensor<1x64xf16>
    ktdp.yield_reduced %s : tensor<1x64xf16>
  }
  func.return
}

// CHECK-LABEL: func.func @view_without_coordinate_set
func.func @view_without_coordinate_set(%x: index) {
  // A view without coordinate_set covers its whole box.
  // CHECK: ktdp.construct_memory_view %x, sizes: [4, 64], strides: [64, 1] {memory_space = #ktdp.spyre_memory_space<HBM>, coordinate_set = affine_set<(d0, d1) : (d0 >= 0, ((d0 * -1) + 3) >= 0, d1 >= 0, ((d1 * -1) + 63) >= 0)>} : memref<4x64xf16>
  %v = ktdp.construct_memory_view %x, sizes: [4, 64], strides: [64, 1]
      {memory_space = #ktdp.spyre_memory_space<HBM>} : memref<4x64xf16>
  func.return
}

// CHECK-LABEL: func.func @broadcast
func.func @broadcast(%p: tensor<1x64xf16>) attributes {grid = [4]} {
  // The short form `: <(...)>` of the future's type is accepted, as MLIR prints it.
  // CHECK: ktdp.inter_tile_consume (%{{.*}}) consumer_tiles_per_group = {{.*}}, producer_dependency_per_consumer = affine_set<(d0)[s0] : (d0 == 0)> : !ktdp.tile_future<{{.*}}> -> tensor<1x64xf16>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i == 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<1x64xf16>
  }
  %r = ktdp.inter_tile_consume(%f)
      consumer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>,
      producer_dependency_per_consumer = affine_set<(p)[c] : (p == 0)>
      : <(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16>
  func.return
}

// CHECK-LABEL: func.func @runtime_args
func.func @runtime_args(%m: !ktdp.runtime_arg<index, granularity=64, upperbound=4096>) {
  // CHECK: ktdp.runtime_arg_extract value from %m : !ktdp.runtime_arg<index, granularity=64, upperbound=4096> -> index
  %v = ktdp.runtime_arg_extract value from %m : !ktdp.runtime_arg<index, granularity=64, upperbound=4096> -> index
  // CHECK: ktdp.runtime_arg_extract upperbound from %m
  %u = ktdp.runtime_arg_extract upperbound from %m : !ktdp.runtime_arg<index, granularity=64, upperbound=4096> -> index
  func.return
}

// The forms Triton-Spyre's and ktir-cpu's kernels write: one tile id by grid dim, tile
// types without their dialect prefix, an scf.for result type without parentheses, a
// produce naming its partial types and a future of one partial without parentheses.
// They print in the full form.
// CHECK-LABEL: func.func @short_forms
func.func @short_forms(%x_ptr: index) attributes {grid = [2, 2]} {
  // CHECK: ktdp.get_compute_tile_id {dim = 1 : i64} : index
  %j = ktdp.get_compute_tile_id {dim = 1} : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %x = ktdp.construct_memory_view %x_ptr, sizes: [64, 256], strides: [256, 1] {
    coordinate_set = #rows, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<64x256xf16>
  %t = ktdp.construct_access_tile %x[%j, %c0] {access_tile_set = #rows, access_tile_order = #ident}
      : memref<64x256xf16> -> !ktdp.access_tile<64x256xindex>
  // CHECK: ktdp.load %{{.*}} : !ktdp.access_tile<64x256xindex> -> tensor<64x256xf16>
  %v = ktdp.load %t : <64x256xindex> -> tensor<64x256xf16>
  // CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<64x256xf16>) {
  %s = scf.for %k = %c0 to %c2 step %c1 iter_args(%acc = %v) -> tensor<64x256xf16> {
    %n = arith.addf %acc, %v : tensor<64x256xf16>
    scf.yield %n : tensor<64x256xf16>
  }
  // CHECK: ktdp.store %{{.*}}, %{{.*}} : tensor<64x256xf16>, !ktdp.access_tile<64x256xindex>
  ktdp.store %s, %t : tensor<64x256xf16>, <64x256xindex>
  %p = ktdp.load %t : !ktdp.access_tile<64x256xindex> -> tensor<64x256xf16>
  // CHECK: ktdp.inter_tile_produce {{.*}} -> !ktdp.tile_future<(tensor<64x256xf16>), groups = {{.*}}> {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #tiles
      : tensor<64x256xf16> -> !ktdp.tile_future<tensor<64x256xf16>, groups = #groups> {
  ^bb0(%g: index):
    ktdp.yield_partial %p : tensor<64x256xf16>
  }
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #tiles
      : <(tensor<64x256xf16>), groups = #groups> -> tensor<64x256xf16>
  func.return
}
