// Row softmax of a 256x512 f16 matrix over 8 tiles: each tile walks its 32 rows in
// blocks of 4 (our own kernel, in the style of Triton-Spyre's output).
module {
  func.func @softmax_kernel(%out_ptr: index, %in_ptr: index) attributes {grid = [8]} {
    %tile = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %start = arith.muli %tile, %c32 : index
    %end = arith.addi %start, %c32 : index
    %in = ktdp.construct_memory_view %in_ptr, sizes: [256, 512], strides: [512, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 511 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<256x512xf16>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [256, 512], strides: [512, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 511 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<256x512xf16>
    scf.for %row = %start to %end step %c4 {
      %acc = ktdp.construct_access_tile %in[%row, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 511 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<256x512xf16> -> !ktdp.access_tile<4x512xindex>
      %x = ktdp.load %acc : !ktdp.access_tile<4x512xindex> -> tensor<4x512xf16>
      %ninf = arith.constant 0xFC00 : f16
      %max_init = tensor.splat %ninf : tensor<4xf16>
      %max = linalg.reduce { arith.maxnumf } ins(%x : tensor<4x512xf16>) outs(%max_init : tensor<4xf16>) dimensions = [1]
      %max_b = linalg.broadcast ins(%max : tensor<4xf16>) outs(%x : tensor<4x512xf16>) dimensions = [1]
      %shifted = arith.subf %x, %max_b : tensor<4x512xf16>
      %e = math.exp %shifted : tensor<4x512xf16>
      %zero = arith.constant 0.0 : f16
      %sum_init = tensor.splat %zero : tensor<4xf16>
      %sum = linalg.reduce { arith.addf } ins(%e : tensor<4x512xf16>) outs(%sum_init : tensor<4xf16>) dimensions = [1]
      %sum_b = linalg.broadcast ins(%sum : tensor<4xf16>) outs(%x : tensor<4x512xf16>) dimensions = [1]
      %y = arith.divf %e, %sum_b : tensor<4x512xf16>
      %oacc = ktdp.construct_access_tile %out[%row, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 511 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<256x512xf16> -> !ktdp.access_tile<4x512xindex>
      ktdp.store %y, %oacc : tensor<4x512xf16>, !ktdp.access_tile<4x512xindex>
    }
    return
  }
}
