// y = x * sigmoid(1.702 x) + bias (bias per column) with one linalg.generic: 8 tiles,
// 16 rows of a 128x256 f16 matrix each; the bias broadcasts along the rows.
#rows = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>
module {
  func.func @gelu_bias(%x_ptr: index, %b_ptr: index, %y_ptr: index) attributes {grid = [8]} {
    %tile = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %row = arith.muli %tile, %c16 : index
    %x = ktdp.construct_memory_view %x_ptr, sizes: [128, 256], strides: [256, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<128x256xf16>
    %b = ktdp.construct_memory_view %b_ptr, sizes: [256], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<256xf16>
    %y = ktdp.construct_memory_view %y_ptr, sizes: [128, 256], strides: [256, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<128x256xf16>
    %xt = ktdp.construct_access_tile %x[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<128x256xf16> -> !ktdp.access_tile<16x256xindex>
    %bt = ktdp.construct_access_tile %b[%c0] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>
    } : memref<256xf16> -> !ktdp.access_tile<256xindex>
    %xs = ktdp.load %xt : !ktdp.access_tile<16x256xindex> -> tensor<16x256xf16>
    %bs = ktdp.load %bt : !ktdp.access_tile<256xindex> -> tensor<256xf16>
    %init = tensor.empty() : tensor<16x256xf16>
    %out = linalg.generic {indexing_maps = [#rows, #cols, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%xs, %bs : tensor<16x256xf16>, tensor<256xf16>) outs(%init : tensor<16x256xf16>) {
    ^bb0(%v: f16, %bias: f16, %o: f16):
      %k = arith.constant 1.702 : f16
      %one = arith.constant 1.0 : f16
      %kv = arith.mulf %v, %k : f16
      %n = arith.negf %kv : f16
      %e = math.exp %n : f16
      %d = arith.addf %one, %e : f16
      %s = arith.divf %v, %d : f16
      %r = arith.addf %s, %bias : f16
      linalg.yield %r : f16
    } -> tensor<16x256xf16>
    %yt = ktdp.construct_access_tile %y[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<128x256xf16> -> !ktdp.access_tile<16x256xindex>
    ktdp.store %out, %yt : tensor<16x256xf16>, !ktdp.access_tile<16x256xindex>
    return
  }
}
