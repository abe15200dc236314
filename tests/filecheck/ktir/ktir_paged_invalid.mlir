// What the lowering of paged tiles (ktir_paged.py: floordiv / mod subscripts over
// whole pages) does not take: each a located error naming the construct.
// RUN: spyre-opt %s -p convert-ktir-to-dataflow --split-input-file --verify-diagnostics
// RUN: spyre-opt %s -p convert-ktir-to-dataflow --split-input-file --verify-diagnostics 2>&1 | %no-traceback

// A mod that is not its table dim's extent (rows of two pages at once).
func.func @k(%xp: index, %ip: index, %yp: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %x = ktdp.construct_memory_view %xp, sizes: [6, 2, 4, 64], strides: [512, 256, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 5 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 3 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<6x2x4x64xf16>
  %i = ktdp.construct_memory_view %ip, sizes: [2, 2], strides: [2, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x2xi32>
  %y = ktdp.construct_memory_view %yp, sizes: [2, 8, 2, 64], strides: [1024, 128, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x8x2x64xf16>
  // expected-error @+1 {{with the subscript '(d2 mod 2)' of table dim 2 (a variable or its mod the dim's extent)}}
  %src = ktdp.construct_indirect_access_tile intermediate_variables(%b, %h, %t, %d) %x[ind(%i[%b, %t floordiv 4]), (%h), (%t mod 2), (%d)] {variables_space_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 7 >= 0, d3 >= 0, -d3 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>} : memref<6x2x4x64xf16>, memref<2x2xi32> -> !ktdp.access_tile<2x2x8x64xindex>
  %v = ktdp.load %src : !ktdp.access_tile<2x2x8x64xindex> -> tensor<2x2x8x64xf16>
  %dst = ktdp.construct_access_tile %y[%c0, %c0, %c0, %c0] {access_tile_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>} : memref<2x8x2x64xf16> -> !ktdp.access_tile<2x2x8x64xindex>
  ktdp.store %v, %dst : tensor<2x2x8x64xf16>, !ktdp.access_tile<2x2x8x64xindex>
  return
}

// -----

// A floordiv in a table dim.
func.func @k(%xp: index, %ip: index, %yp: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %x = ktdp.construct_memory_view %xp, sizes: [6, 2, 4, 64], strides: [512, 256, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 5 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 3 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<6x2x4x64xf16>
  %i = ktdp.construct_memory_view %ip, sizes: [2, 2], strides: [2, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x2xi32>
  %y = ktdp.construct_memory_view %yp, sizes: [2, 8, 2, 64], strides: [1024, 128, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x8x2x64xf16>
  // expected-error @+1 {{with the subscript '(d3 floordiv 16)' of table dim 2}}
  %src = ktdp.construct_indirect_access_tile intermediate_variables(%b, %h, %t, %d) %x[ind(%i[%b, %t floordiv 4]), (%h), (%d floordiv 16), (%d)] {variables_space_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 7 >= 0, d3 >= 0, -d3 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>} : memref<6x2x4x64xf16>, memref<2x2xi32> -> !ktdp.access_tile<2x2x8x64xindex>
  %v = ktdp.load %src : !ktdp.access_tile<2x2x8x64xindex> -> tensor<2x2x8x64xf16>
  %dst = ktdp.construct_access_tile %y[%c0, %c0, %c0, %c0] {access_tile_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>} : memref<2x8x2x64xf16> -> !ktdp.access_tile<2x2x8x64xindex>
  ktdp.store %v, %dst : tensor<2x2x8x64xf16>, !ktdp.access_tile<2x2x8x64xindex>
  return
}

// -----

// A variable both in the index and in a table dim.
func.func @k(%xp: index, %ip: index, %yp: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %x = ktdp.construct_memory_view %xp, sizes: [6, 2, 4, 64], strides: [512, 256, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 5 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 3 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<6x2x4x64xf16>
  %i = ktdp.construct_memory_view %ip, sizes: [2, 2], strides: [2, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x2xi32>
  %y = ktdp.construct_memory_view %yp, sizes: [2, 8, 2, 64], strides: [1024, 128, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x8x2x64xf16>
  // expected-error @+1 {{using d0 in the index and in a table dim}}
  %src = ktdp.construct_indirect_access_tile intermediate_variables(%b, %h, %t, %d) %x[ind(%i[%b, %t floordiv 4]), (%b), (%t mod 4), (%d)] {variables_space_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 7 >= 0, d3 >= 0, -d3 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>} : memref<6x2x4x64xf16>, memref<2x2xi32> -> !ktdp.access_tile<2x2x8x64xindex>
  %v = ktdp.load %src : !ktdp.access_tile<2x2x8x64xindex> -> tensor<2x2x8x64xf16>
  %dst = ktdp.construct_access_tile %y[%c0, %c0, %c0, %c0] {access_tile_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>} : memref<2x8x2x64xf16> -> !ktdp.access_tile<2x2x8x64xindex>
  ktdp.store %v, %dst : tensor<2x2x8x64xf16>, !ktdp.access_tile<2x2x8x64xindex>
  return
}

// -----

// The paged load read by tile math, not stored.
func.func @k(%xp: index, %ip: index, %yp: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %x = ktdp.construct_memory_view %xp, sizes: [6, 2, 4, 64], strides: [512, 256, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 5 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 3 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<6x2x4x64xf16>
  %i = ktdp.construct_memory_view %ip, sizes: [2, 2], strides: [2, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x2xi32>
  %y = ktdp.construct_memory_view %yp, sizes: [2, 8, 2, 64], strides: [1024, 128, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x8x2x64xf16>
  %src = ktdp.construct_indirect_access_tile intermediate_variables(%b, %h, %t, %d) %x[ind(%i[%b, %t floordiv 4]), (%h), (%t mod 4), (%d)] {variables_space_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 7 >= 0, d3 >= 0, -d3 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>} : memref<6x2x4x64xf16>, memref<2x2xi32> -> !ktdp.access_tile<2x2x8x64xindex>
  %v = ktdp.load %src : !ktdp.access_tile<2x2x8x64xindex> -> tensor<2x2x8x64xf16>
  %dst = ktdp.construct_access_tile %y[%c0, %c0, %c0, %c0] {access_tile_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>} : memref<2x8x2x64xf16> -> !ktdp.access_tile<2x2x8x64xindex>
  // expected-error @+1 {{'arith.addf' of a paged tile (a load through floordiv / mod subscripts) is not supported: it is streamed page by page, so only a store may take it}}
  %w = arith.addf %v, %v : tensor<2x2x8x64xf16>
  ktdp.store %w, %dst : tensor<2x2x8x64xf16>, !ktdp.access_tile<2x2x8x64xindex>
  return
}

// -----

// A store through a paged tile of a value computed from the load (the pages are
// scattered as a load streams them).
func.func @k(%xp: index, %ip: index, %yp: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %x = ktdp.construct_memory_view %xp, sizes: [6, 2, 4, 64], strides: [512, 256, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 5 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 3 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<6x2x4x64xf16>
  %i = ktdp.construct_memory_view %ip, sizes: [2, 2], strides: [2, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x2xi32>
  %y = ktdp.construct_memory_view %yp, sizes: [2, 8, 2, 64], strides: [1024, 128, 64, 1] {coordinate_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x8x2x64xf16>
  %src = ktdp.construct_indirect_access_tile intermediate_variables(%b, %h, %t, %d) %x[ind(%i[%b, %t floordiv 4]), (%h), (%t mod 4), (%d)] {variables_space_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 7 >= 0, d3 >= 0, -d3 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>} : memref<6x2x4x64xf16>, memref<2x2xi32> -> !ktdp.access_tile<2x2x8x64xindex>
  %dst = ktdp.construct_access_tile %y[%c0, %c0, %c0, %c0] {access_tile_set = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 1 >= 0, d3 >= 0, -d3 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>} : memref<2x8x2x64xf16> -> !ktdp.access_tile<2x2x8x64xindex>
  %u = ktdp.load %dst : !ktdp.access_tile<2x2x8x64xindex> -> tensor<2x2x8x64xf16>
  %v = arith.addf %u, %u : tensor<2x2x8x64xf16>
  // expected-error @+1 {{'ktdp.store' through a paged indirect tile of a tensor other than a load of a rectangular tile read by this store alone is not supported (the pages are scattered as that load streams them)}}
  ktdp.store %v, %src : tensor<2x2x8x64xf16>, !ktdp.access_tile<2x2x8x64xindex>
  return
}
