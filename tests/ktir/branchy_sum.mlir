// Sums the four 64-wide column blocks of each 4-row slab of a 32x256 f16 matrix on 8
// tiles, with two scf.if: scalar %relu picks whether to clamp at zero after each
// block, and the last block's iteration (a branch on the loop counter) stores.
module {
  func.func @branchy_sum(%x_ptr: index, %out_ptr: index, %relu: index) attributes {grid = [8]} {
    %tile = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %row = arith.muli %tile, %c4 : index
    %x = ktdp.construct_memory_view %x_ptr, sizes: [32, 256], strides: [256, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<32x256xf16>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<32x64xf16>
    %zero = arith.constant 0.0 : f16
    %init = tensor.splat %zero : tensor<4x64xf16>
    %clamp = arith.cmpi eq, %relu, %c1 : index
    %last_col = arith.subi %c256, %c64 : index
    %sum = scf.for %col = %c0 to %c256 step %c64 iter_args(%acc = %init) -> (tensor<4x64xf16>) {
      %t = ktdp.construct_access_tile %x[%row, %col] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<32x256xf16> -> !ktdp.access_tile<4x64xindex>
      %a = ktdp.load %t : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16>
      %b = scf.if %clamp -> (tensor<4x64xf16>) {
        %z = tensor.splat %zero : tensor<4x64xf16>
        %r = arith.maximumf %a, %z : tensor<4x64xf16>
        scf.yield %r : tensor<4x64xf16>
      } else {
        scf.yield %a : tensor<4x64xf16>
      }
      %s = arith.addf %acc, %b : tensor<4x64xf16>
      %is_last = arith.cmpi eq, %col, %last_col : index
      scf.if %is_last {
        %o = ktdp.construct_access_tile %out[%row, %c0] {
          access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
          access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
        } : memref<32x64xf16> -> !ktdp.access_tile<4x64xindex>
        ktdp.store %s, %o : tensor<4x64xf16>, !ktdp.access_tile<4x64xindex>
      }
      scf.yield %s : tensor<4x64xf16>
    }
    return
  }
}
