// tensor.extract_slice and a store to part of an output (our own kernel, written from
// the KTIR spec), with views at absolute addresses: each of 4 tiles loads rows 2t, 2t+1
// of A (at address 0), squares them, keeps the even columns of row 2t+1 (a strided,
// rank-reducing slice) and stores them to row 2t of C (at address 1024); the odd rows
// of C are not stored and keep what the memory held.
module {
  func.func @square_slice() attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %a_address = arith.constant 0 : index
    %c_address = arith.constant 1024 : index
    %tile = ktdp.get_compute_tile_id : index
    %row = arith.muli %tile, %c2 : index
    %a_view = ktdp.construct_memory_view %a_address, sizes: [8, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<8x64xf16>
    %a_acc = ktdp.construct_access_tile %a_view[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<8x64xf16> -> !ktdp.access_tile<2x64xindex>
    %a = ktdp.load %a_acc : !ktdp.access_tile<2x64xindex> -> tensor<2x64xf16>
    %init = tensor.empty() : tensor<2x64xf16>
    %sq = linalg.mul ins(%a, %a : tensor<2x64xf16>, tensor<2x64xf16>)
          outs(%init : tensor<2x64xf16>) -> tensor<2x64xf16>
    %part = tensor.extract_slice %sq[1, 0] [1, 32] [1, 2] : tensor<2x64xf16> to tensor<32xf16>
    %c_view = ktdp.construct_memory_view %c_address, sizes: [8, 32], strides: [32, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<8x32xf16>
    %c_acc = ktdp.construct_access_tile %c_view[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<8x32xf16> -> !ktdp.access_tile<1x32xindex>
    %part2 = tensor.expand_shape %part [[0, 1]] output_shape [1, 32] : tensor<32xf16> into tensor<1x32xf16>
    ktdp.store %part2, %c_acc : tensor<1x32xf16>, !ktdp.access_tile<1x32xindex>
    return
  }
}
