// Writes twice the transpose of a 64x128 f16 matrix (linalg.transpose on one tile).
module {
  func.func @transpose_scale(%a_ptr: index, %out_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %a = ktdp.construct_memory_view %a_ptr, sizes: [64, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<64x128xf16>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [128, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<128x64xf16>
    %ta = ktdp.construct_access_tile %a[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<64x128xf16> -> !ktdp.access_tile<64x128xindex>
    %v = ktdp.load %ta : !ktdp.access_tile<64x128xindex> -> tensor<64x128xf16>
    %empty = tensor.empty() : tensor<128x64xf16>
    %t = linalg.transpose ins(%v : tensor<64x128xf16>) outs(%empty : tensor<128x64xf16>) permutation = [1, 0]
    %two = arith.constant 2.0 : f16
    %twos = tensor.splat %two : tensor<128x64xf16>
    %y = arith.mulf %t, %twos : tensor<128x64xf16>
    %to = ktdp.construct_access_tile %out[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<128x64xf16> -> !ktdp.access_tile<128x64xindex>
    ktdp.store %y, %to : tensor<128x64xf16>, !ktdp.access_tile<128x64xindex>
    return
  }
}
