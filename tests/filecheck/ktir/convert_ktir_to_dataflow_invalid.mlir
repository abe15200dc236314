// What convert-ktir-to-dataflow does not support is a located error naming the
// construct (one chunk per construct).

// RUN: spyre-opt %s -p convert-ktir-to-dataflow --split-input-file --verify-diagnostics | filecheck %s
// RUN: spyre-opt %s -p convert-ktir-to-dataflow --split-input-file --verify-diagnostics 2>&1 | %no-traceback

// CHECK: convert_ktir_to_dataflow_invalid.mlir:[[# @LINE + 2]]:1: error: kernel @k needs a value for its scalar argument %n
// expected-error @+1 {{kernel @k needs a value for its scalar argument %n (index)}}
func.func @k(%x: index, %n: index) attributes {grid = [1]} {
  %v = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  return
}

// -----

func.func @k(%x: index) attributes {grid = [1]} {
  // expected-error @+1 {{strides [1, 64] are not the row-major strides [64, 1] of its pointer's tensor [64, 64] (strided views are not supported)}}
  %v = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [1, 64] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  return
}

// -----

func.func @k(%x: index) attributes {grid = [1]} {
  // expected-error @+1 {{views of #ktdp.spyre_memory_space<LX> memory are not supported}}
  %v = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [64, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<LX>
  } : memref<64x64xf16>
  return
}

// -----

func.func @k(%x: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %v = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  // expected-error @+1 {{a non-rectangular set}}
  %t = ktdp.construct_access_tile %v[%c0, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, d1 - d0 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
  %l = ktdp.load %t : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
  return
}

// -----

func.func @k(%x: index) attributes {grid = [4]} {
  %c0 = arith.constant 0 : index
  %tile = ktdp.get_compute_tile_id : index
  %first = arith.cmpi eq, %tile, %c0 : index
  // expected-error @+1 {{an scf.if whose condition differs across tiles is not supported (the card runs the same program on every core; a tile's share of the work is chosen by its addresses), unless it yields nothing and its branch only stores}}
  scf.if %first {
    %v = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
    %t = ktdp.construct_access_tile %v[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
    %l = ktdp.load %t : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
  }
  return
}

// -----

func.func @k(%x: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %v = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  %t = ktdp.construct_access_tile %v[%c0, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
  %l = ktdp.load %t : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
  %d = arith.addf %l, %l : tensor<64x64xf16>
  ktdp.store %d, %t : tensor<64x64xf16>, !ktdp.access_tile<64x64xindex>
  // expected-error @+1 {{pointer %x is loaded after it is stored: an in-place kernel reading what it wrote is not supported by the lowering}}
  %again = ktdp.load %t : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
  return
}

// -----

func.func @k(%x: index, %y: index) attributes {grid = [1]} {
  %a = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  %b = ktdp.construct_memory_view %y, sizes: [64, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  // expected-error @+1 {{'ktdp.construct_distributed_memory_view': partitions whose coordinate sets [(0, 63), (0, 63)] and [(0, 63), (0, 63)] overlap are not supported}}
  %d = ktdp.construct_distributed_memory_view (%a, %b : memref<64x64xf16>, memref<64x64xf16>) : memref<128x64xf16>
  %c0 = arith.constant 0 : index
  %t = ktdp.construct_access_tile %d[%c0, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<128x64xf16> -> !ktdp.access_tile<128x64xindex>
  %l = ktdp.load %t : !ktdp.access_tile<128x64xindex> -> tensor<128x64xf16>
  return
}

// -----

func.func @k(%x: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %v = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  %t = ktdp.construct_access_tile %v[%c0, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
  %l = ktdp.load %t : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
  %z = arith.constant 1.0 : f16
  %init = tensor.splat %z : tensor<64xf16>
  // expected-error @+1 {{'linalg.reduce' with a combiner other than one add/max/min is not supported}}
  %r = linalg.reduce { arith.mulf } ins(%l : tensor<64x64xf16>) outs(%init : tensor<64xf16>) dimensions = [1]
  return
}

// -----

func.func @k(%x: index) attributes {grid = [4]} {
  %tile = ktdp.get_compute_tile_id : index
  %c0 = arith.constant 0 : index
  %v = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  %t = ktdp.construct_access_tile %v[%tile, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<64x64xf16> -> !ktdp.access_tile<1x64xindex>
  %l = ktdp.load %t : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
      -> !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
  ^bb0(%gid: index):
    ktdp.yield_partial %l : tensor<1x64xf16>
  }
  // expected-error @+1 {{consumer_tiles_per_group must be blocks of consecutive tiles covering the grid}}
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = affine_set<(i)[g] : (i == 0)>,
      producer_dependency_per_consumer = affine_set<(p)[c] : (p == 0)>
      : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16>
  return
}

// -----

// expected-error @+1 {{kernel argument %m is memref<64xf16>: KTIR kernels take pointers as index values}}
func.func @k(%m: memref<64xf16>) attributes {grid = [1]} {
  %t = ktdp.get_compute_tile_id : index
  return
}

// -----

func.func @k(%t_ptr: index, %i_ptr: index) attributes {grid = [1]} {
  %t = ktdp.construct_memory_view %t_ptr, sizes: [8, 16, 64], strides: [1024, 64, 1] {coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 15 >= 0, d2 >= 0, -d2 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<8x16x64xf16>
  %i = ktdp.construct_memory_view %i_ptr, sizes: [2], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 1 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2xi32>
  // expected-error @+1 {{only row gathers (an indirect first subscript over leading variables, each other dim one variable plus captured values, the last dim whole) and element gathers (every subscript an index view read at the variables) are supported}}
  %g = ktdp.construct_indirect_access_tile intermediate_variables(%p, %s, %f) %t[ind(%i[%p]), (%s), (%f)] {variables_space_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 31 >= 0)>, variables_space_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>} : memref<8x16x64xf16>, memref<2xi32> -> !ktdp.access_tile<2x4x32xindex>
  %x = ktdp.load %g : !ktdp.access_tile<2x4x32xindex> -> tensor<2x4x32xf16>
  return
}

// -----

// A grid dim of no tiles (or fewer): the kernel runs nowhere.
// CHECK: convert_ktir_to_dataflow_invalid.mlir:[[# @LINE + 2]]:1: error: the kernel's grid [4, 0] must have at least one dim
// expected-error @+1 {{the kernel's grid [4, 0] must have at least one dim, each a positive count of tiles}}
func.func @k(%x: index) attributes {grid = [4, 0]} {
  %t = ktdp.get_compute_tile_id : index
  return
}

// -----

// expected-error @+1 {{the kernel's grid [-2] must have at least one dim, each a positive count of tiles}}
func.func @k(%x: index) attributes {grid = [-2]} {
  %t = ktdp.get_compute_tile_id : index
  return
}

// -----

// expected-error @+1 {{the kernel's grid [] must have at least one dim, each a positive count of tiles}}
func.func @k(%x: index) attributes {grid = []} {
  %t = ktdp.get_compute_tile_id : index
  return
}

// -----

// An element gather reading an index view at the variables transposed: neither form.
func.func @k(%x: index, %r: index, %c: index) attributes {grid = [1]} {
  %t = ktdp.construct_memory_view %x, sizes: [8, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<8x64xf16>
  %rows = ktdp.construct_memory_view %r, sizes: [64, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xi32>
  %cols = ktdp.construct_memory_view %c, sizes: [64, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xi32>
  // expected-error @+1 {{and element gathers (every subscript an index view read at the variables) are supported}}
  %g = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %t[ind(%rows[%k, %m]), ind(%cols[%m, %k])] {variables_space_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x64xf16>, memref<64x64xi32>, memref<64x64xi32> -> !ktdp.access_tile<2x64xindex>
  %v = ktdp.load %g : !ktdp.access_tile<2x64xindex> -> tensor<2x64xf16>
  return
}

// -----

// A scatter through a window of the rows (rows 0 and 1 of each 4x64 page): only whole
// rows are scattered (the rows' other sticks would be overwritten).
func.func @k(%x: index, %r: index, %y: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %t = ktdp.construct_memory_view %x, sizes: [8, 4, 64], strides: [256, 64, 1] {coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<8x4x64xf16>
  %rows = ktdp.construct_memory_view %r, sizes: [2], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 1 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2xi32>
  %src = ktdp.construct_memory_view %y, sizes: [2, 2, 64], strides: [128, 64, 1] {coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x2x64xf16>
  %s = ktdp.construct_access_tile %src[%c0, %c0, %c0] {access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>} : memref<2x2x64xf16> -> !ktdp.access_tile<2x2x64xindex>
  %v = ktdp.load %s : !ktdp.access_tile<2x2x64xindex> -> tensor<2x2x64xf16>
  %g = ktdp.construct_indirect_access_tile intermediate_variables(%m, %j, %d) %t[ind(%rows[%m]), (%j), (%d)] {variables_space_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>} : memref<8x4x64xf16>, memref<2xi32> -> !ktdp.access_tile<2x2x64xindex>
  // expected-error @+1 {{'ktdp.store' through a window of the rows (an indirect tile whose other dims are not whole) is not supported: only whole rows are scattered}}
  ktdp.store %v, %g : tensor<2x2x64xf16>, !ktdp.access_tile<2x2x64xindex>
  return
}

// -----

// An access tile whose set spans rows 1 and 2 typed as one row: the specification's
// shapes disagree, and the set does not hold the type's box from the base (row 0), the
// one mismatch read as ktir-cpu reads it (a warning: test_ktir_run.py).
func.func @k(%x: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %v = ktdp.construct_memory_view %x, sizes: [4, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<4x64xf16>
  // expected-error @+1 {{the set spans [2, 64] but the tile is [1, 64] (KTDP.td: a tile's shape is that of its coordinate set)}}
  %t = ktdp.construct_access_tile %v[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 - 1 >= 0, -d0 + 2 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<4x64xf16> -> !ktdp.access_tile<1x64xindex>
  %y = ktdp.load %t : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
  return
}
