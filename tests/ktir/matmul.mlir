// C = A @ B for A 64x512, B 512x1024 (f16) on a 2x4 grid of tiles: tile (m, n) owns
// the 32x256 block of C, walking K in steps of 128 with a loop-carried accumulator.
// Our own kernel, in the style of Triton-Spyre's output.
module {
  func.func @matmul_kernel(%a_ptr: index, %b_ptr: index, %c_ptr: index, %K: index,
                           %BM: index, %BN: index, %BK: index) attributes {grid = [2, 4]} {
    %pid_m, %pid_n = ktdp.get_compute_tile_id : index, index
    %c0 = arith.constant 0 : index
    %a_view = ktdp.construct_memory_view %a_ptr, sizes: [64, 512], strides: [512, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 511 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<64x512xf16>
    %b_view = ktdp.construct_memory_view %b_ptr, sizes: [512, 1024], strides: [1024, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 511 >= 0, d1 >= 0, -d1 + 1023 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<512x1024xf16>
    %c_view = ktdp.construct_memory_view %c_ptr, sizes: [64, 1024], strides: [1024, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 1023 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<64x1024xf16>
    %row = arith.muli %pid_m, %BM : index
    %col = arith.muli %pid_n, %BN : index
    %zero = arith.constant dense<0.0> : tensor<32x256xf16>
    %c = scf.for %k = %c0 to %K step %BK iter_args(%acc = %zero) -> (tensor<32x256xf16>) {
      %a_t = ktdp.construct_access_tile %a_view[%row, %k] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<64x512xf16> -> !ktdp.access_tile<32x128xindex>
      %b_t = ktdp.construct_access_tile %b_view[%k, %col] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<512x1024xf16> -> !ktdp.access_tile<128x256xindex>
      %a = ktdp.load %a_t : !ktdp.access_tile<32x128xindex> -> tensor<32x128xf16>
      %b = ktdp.load %b_t : !ktdp.access_tile<128x256xindex> -> tensor<128x256xf16>
      %empty = tensor.empty() : tensor<32x256xf16>
      %ab = linalg.matmul ins(%a, %b : tensor<32x128xf16>, tensor<128x256xf16>)
                          outs(%empty : tensor<32x256xf16>) -> tensor<32x256xf16>
      %next = arith.addf %acc, %ab : tensor<32x256xf16>
      scf.yield %next : tensor<32x256xf16>
    }
    %c_t = ktdp.construct_access_tile %c_view[%row, %col] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<64x1024xf16> -> !ktdp.access_tile<32x256xindex>
    ktdp.store %c, %c_t : tensor<32x256xf16>, !ktdp.access_tile<32x256xindex>
    return
  }
}
