// Views that alias (docs/ktir.md, "Views that alias"): our own kernel. Its i32 view
// %words (64 rows of 64, bytes 0..16383) and its f16 view %halves (128 rows of 64,
// also from byte 0) share memory: rows 2r and 2r + 1 of %halves are the bytes of row r
// of %words. Tile t copies rows 32t..32t+31 of %words to %saved and of %src to rows
// 64t..64t+31 of %halves (within the bytes of its own rows of %words), loading before
// it stores; no tile touches the other's bytes. The copies do not race, so the kernel
// means what it says although its views overlap (spyre-run draws the shared bytes
// once; --check compares).
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#all2 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @alias_copy() attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %words_at = arith.constant 0 : index
    %halves_at = arith.constant 0 : index
    %src_at = arith.constant 16384 : index
    %saved_at = arith.constant 32768 : index
    %t = ktdp.get_compute_tile_id : index
    %row = arith.muli %t, %c32 : index
    %hrow = arith.muli %t, %c64 : index
    %words = ktdp.construct_memory_view %words_at, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<64x64xi32>
    %halves = ktdp.construct_memory_view %halves_at, sizes: [128, 64], strides: [64, 1] {
      coordinate_set = #all2, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<128x64xf16>
    %src = ktdp.construct_memory_view %src_at, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<64x64xf16>
    %saved = ktdp.construct_memory_view %saved_at, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<64x64xi32>
    %words_tile = ktdp.construct_access_tile %words[%row, %c0] {
      access_tile_set = #rows, access_tile_order = #id
    } : memref<64x64xi32> -> !ktdp.access_tile<32x64xindex>
    %src_tile = ktdp.construct_access_tile %src[%row, %c0] {
      access_tile_set = #rows, access_tile_order = #id
    } : memref<64x64xf16> -> !ktdp.access_tile<32x64xindex>
    %w = ktdp.load %words_tile : !ktdp.access_tile<32x64xindex> -> tensor<32x64xi32>
    %x = ktdp.load %src_tile : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
    %saved_tile = ktdp.construct_access_tile %saved[%row, %c0] {
      access_tile_set = #rows, access_tile_order = #id
    } : memref<64x64xi32> -> !ktdp.access_tile<32x64xindex>
    ktdp.store %w, %saved_tile : tensor<32x64xi32>, !ktdp.access_tile<32x64xindex>
    %halves_tile = ktdp.construct_access_tile %halves[%hrow, %c0] {
      access_tile_set = #rows, access_tile_order = #id
    } : memref<128x64xf16> -> !ktdp.access_tile<32x64xindex>
    ktdp.store %x, %halves_tile : tensor<32x64xf16>, !ktdp.access_tile<32x64xindex>
    return
  }
}
