// Sums the two 64-wide halves of each 16x128 block of a 32x512 f16 matrix on a 2x4
// grid, each tile asking its grid position one dim at a time (`{dim = N}`), the loop's
// result type written without parentheses and the tiles' types in their short form.
module {
  func.func @block_sums(%x_ptr: index, %out_ptr: index) attributes {grid = [2, 4]} {
    %r = ktdp.get_compute_tile_id {dim = 0} : index
    %c = ktdp.get_compute_tile_id {dim = 1} : index
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %row = arith.muli %r, %c16 : index
    %col = arith.muli %c, %c128 : index
    %out_col = arith.muli %c, %c64 : index
    %x = ktdp.construct_memory_view %x_ptr, sizes: [32, 512], strides: [512, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 511 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<32x512xf16>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [32, 256], strides: [256, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<32x256xf16>
    %zero = arith.constant dense<0.0> : tensor<16x64xf16>
    %sum = scf.for %k = %c0 to %c128 step %c64 iter_args(%acc = %zero) -> tensor<16x64xf16> {
      %at = arith.addi %col, %k : index
      %t = ktdp.construct_access_tile %x[%row, %at] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<32x512xf16> -> !ktdp.access_tile<16x64xindex>
      %a = ktdp.load %t : <16x64xindex> -> tensor<16x64xf16>
      %next = arith.addf %acc, %a : tensor<16x64xf16>
      scf.yield %next : tensor<16x64xf16>
    }
    %o = ktdp.construct_access_tile %out[%row, %out_col] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<32x256xf16> -> !ktdp.access_tile<16x64xindex>
    ktdp.store %sum, %o : tensor<16x64xf16>, <16x64xindex>
    return
  }
}
