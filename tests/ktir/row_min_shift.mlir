// Shifts each row of an 8x64 f16 matrix by its minimum, in place, on 2 tiles: the
// minimum is a linalg.reduce whose combiner is written out as compare-and-select.
module {
  func.func @row_min_shift(%m_ptr: index) attributes {grid = [2]} {
    %tile = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %row = arith.muli %tile, %c4 : index
    %m = ktdp.construct_memory_view %m_ptr, sizes: [8, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<8x64xf16>
    %t = ktdp.construct_access_tile %m[%row, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<8x64xf16> -> !ktdp.access_tile<4x64xindex>
    %v = ktdp.load %t : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16>
    %inf = arith.constant 0x7C00 : f16
    %init = tensor.splat %inf : tensor<4xf16>
    %low = linalg.reduce ins(%v : tensor<4x64xf16>) outs(%init : tensor<4xf16>) dimensions = [1]
      (%a: f16, %b: f16) {
        %lt = arith.cmpf olt, %a, %b : f16
        %pick = arith.select %lt, %a, %b : f16
        linalg.yield %pick : f16
      }
    %empty = tensor.empty() : tensor<4x64xf16>
    %lows = linalg.broadcast ins(%low : tensor<4xf16>) outs(%empty : tensor<4x64xf16>) dimensions = [1]
    %shifted = arith.subf %v, %lows : tensor<4x64xf16>
    ktdp.store %shifted, %t : tensor<4x64xf16>, !ktdp.access_tile<4x64xindex>
    return
  }
}
