// --address-unit (docs/ktir.md, "Views at absolute addresses"): an address in bytes
// or sticks that is not a whole number of its view's elements is a located error.
// RUN: spyre-opt %s -p 'convert-ktir-to-dataflow{address-unit=byte}' --verify-diagnostics
// RUN: spyre-opt %s -p 'convert-ktir-to-dataflow{address-unit=byte}' --verify-diagnostics 2>&1 | %no-traceback

#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
func.func @k() attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %at = arith.constant 3 : index
  // expected-error @+1 {{'ktdp.construct_memory_view': address 3 (bytes, 3 bytes) is not a whole number of its 2-byte elements}}
  %x = ktdp.construct_memory_view %at, sizes: [64, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x64xf16>
  %t = ktdp.construct_access_tile %x[%c0, %c0] {access_tile_set = #all, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
  %l = ktdp.load %t : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
  ktdp.store %l, %t : tensor<64x64xf16>, !ktdp.access_tile<64x64xindex>
  return
}
