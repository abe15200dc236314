// What the address-space model (spyre_ir/lowering/ktir_address.py) does not support
// is a located error naming the construct (one chunk per construct).

// RUN: spyre-opt %s -p convert-ktir-to-dataflow --split-input-file --verify-diagnostics
// RUN: spyre-opt %s -p convert-ktir-to-dataflow --split-input-file --verify-diagnostics 2>&1 | %no-traceback

// Views of two element types overlapping in a tile's own memory: aliasing is
// modelled in HBM only (views that alias there share memory, docs/ktir.md).
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @k() attributes {grid = [2]} {
  %x_at = arith.constant 0 : index
  %i_at = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %x = ktdp.construct_memory_view %x_at, sizes: [8, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<ct_local>} : memref<8x64xf16>
  // expected-error @+1 {{this i32 view at element 64 (bytes 256..2303) overlaps the f16 view at element 0 (bytes 0..1023) in local memory: aliasing views of two element types are supported in HBM only}}
  %i = ktdp.construct_memory_view %i_at, sizes: [8, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<ct_local>} : memref<8x64xi32>
  %xt = ktdp.construct_access_tile %x[%c0, %c0] {access_tile_set = #all, access_tile_order = #id} : memref<8x64xf16> -> !ktdp.access_tile<8x64xindex>
  %it = ktdp.construct_access_tile %i[%c0, %c0] {access_tile_set = #all, access_tile_order = #id} : memref<8x64xi32> -> !ktdp.access_tile<8x64xindex>
  %a = ktdp.load %xt : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
  %b = ktdp.load %it : !ktdp.access_tile<8x64xindex> -> tensor<8x64xi32>
  return
}

// -----

#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
func.func @k() attributes {grid = [1]} {
  %at = arith.constant 4096 : index
  %c0 = arith.constant 0 : index
  %v = arith.constant 1.0 : f16
  // Another core's LX at an absolute address is read as that core's data: not stored.
  // expected-error @+1 {{a store to #ktdp.spyre_memory_space<LX, core = 1> memory at an absolute address is not supported}}
  %x = ktdp.construct_memory_view %at, sizes: [64, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<LX, core = 1>} : memref<64x64xf16>
  %t = ktdp.construct_access_tile %x[%c0, %c0] {access_tile_set = #all, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
  %s = tensor.splat %v : tensor<64x64xf16>
  ktdp.store %s, %t : tensor<64x64xf16>, !ktdp.access_tile<64x64xindex>
  return
}

// -----

#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
func.func @k() attributes {grid = [1]} {
  %at = arith.constant 0 : index
  %c0 = arith.constant 0 : index
  %v = arith.constant 1.0 : f16
  // A tile's own memory at an absolute address is read as its input: not stored.
  // expected-error @+1 {{a store to #ktdp.memory_space<ct_local> memory at an absolute address is not supported}}
  %x = ktdp.construct_memory_view %at, sizes: [64, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<ct_local>} : memref<64x64xf16>
  %t = ktdp.construct_access_tile %x[%c0, %c0] {access_tile_set = #all, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
  %s = tensor.splat %v : tensor<64x64xf16>
  ktdp.store %s, %t : tensor<64x64xf16>, !ktdp.access_tile<64x64xindex>
  return
}

// -----

#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
func.func @k() attributes {grid = [4]} {
  %t = ktdp.get_compute_tile_id : index
  // expected-error @+1 {{the address must be a pointer argument of the kernel}}
  %x = ktdp.construct_memory_view %t, sizes: [64, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  return
}

// -----

func.func @k(%n: index) attributes {grid = [1]} {
  %at = arith.constant 0 : index
  // expected-error @+1 {{at an absolute address with sizes or strides that are not constants is not supported}}
  %x = ktdp.construct_memory_view %at, sizes: [64, %n], strides: [%n, 1] {coordinate_set = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + s0 - 1 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x?xf16>
  return
}
