// A row scatter (spyre_ir/lowering/ktir_scatter.py), the dual of a row gather: each
// of 4 tiles scales its 4 rows of x and writes them to the rows of the table that
// the index view names,
//   out[idx[4 t + m], k] = x[4 t + m, k] * 0.5
// Rows of 32 halves are half a stick each. The indices must not repeat (spyre-run
// draws distinct ones); the table rows none names keep the memory's contents.
#row_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @row_scatter(%x_ptr: index, %idx_ptr: index, %out_ptr: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %half = arith.constant 0.5 : f16
    %t = ktdp.get_compute_tile_id : index
    %first = arith.muli %t, %c4 : index
    %x = ktdp.construct_memory_view %x_ptr, sizes: [16, 32], strides: [32, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16x32xf16>
    %idx = ktdp.construct_memory_view %idx_ptr, sizes: [16], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16xi32>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [64, 32], strides: [32, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<64x32xf16>
    %src = ktdp.construct_access_tile %x[%first, %c0] {
      access_tile_set = #row_set, access_tile_order = #id
    } : memref<16x32xf16> -> !ktdp.access_tile<4x32xindex>
    %v = ktdp.load %src : !ktdp.access_tile<4x32xindex> -> tensor<4x32xf16>
    %s = tensor.splat %half : tensor<4x32xf16>
    %e = tensor.empty() : tensor<4x32xf16>
    %y = linalg.mul ins(%v, %s : tensor<4x32xf16>, tensor<4x32xf16>)
           outs(%e : tensor<4x32xf16>) -> tensor<4x32xf16>
    %dst = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k)
        %out[ind(%idx[%first + %m]), (%k)] {
      variables_space_set = #row_set, variables_space_order = #id
    } : memref<64x32xf16>, memref<16xi32> -> !ktdp.access_tile<4x32xindex>
    ktdp.store %y, %dst : tensor<4x32xf16>, !ktdp.access_tile<4x32xindex>
    return
  }
}
