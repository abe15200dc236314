// A causal mask by position: out[r, c] = x[r, c] where c <= r + shift, else -inf
// (`linalg.index` in a generic's body, a per-tile scalar, -inf as `arith.bitcast`
// bits): 2 tiles of 8 rows x 64 columns, tile t's rows start at 8t.
module {
  func.func @causal_rows(%x_ptr: index, %y_ptr: index, %shift: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %t = ktdp.get_compute_tile_id : index
    %row0 = arith.muli %t, %c8 : index
    %bits = arith.constant 0xFF800000 : i32
    %ninf = arith.bitcast %bits : i32 to f32
    %x_view = ktdp.construct_memory_view %x_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16x64xf32>
    %y_view = ktdp.construct_memory_view %y_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16x64xf32>
    %x_acc = ktdp.construct_access_tile %x_view[%row0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf32> -> !ktdp.access_tile<8x64xindex>
    %x = ktdp.load %x_acc : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf32>
    %e = tensor.empty() : tensor<8x64xf32>
    %y = linalg.generic {
        indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
        iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
      ^bb0(%v : f32, %o : f32):
        %r = linalg.index 0 : index
        %c = linalg.index 1 : index
        %row = arith.addi %row0, %r : index
        %last = arith.addi %row, %shift : index
        %keep = arith.cmpi ule, %c, %last : index
        %w = arith.select %keep, %v, %ninf : f32
        linalg.yield %w : f32
    } -> tensor<8x64xf32>
    %y_acc = ktdp.construct_access_tile %y_view[%row0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<16x64xf32> -> !ktdp.access_tile<8x64xindex>
    ktdp.store %y, %y_acc : tensor<8x64xf32>, !ktdp.access_tile<8x64xindex>
    return
  }
}
