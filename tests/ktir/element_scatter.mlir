// An element scatter (spyre_ir/lowering/ktir_scatter.py), the dual of
// element_gather.mlir: every subscript of the indirect access tile the store goes
// through reads an index view at the variables, so
//   out[rows[m, k], cols[m, k]] = x[m, k] * 2
// for a 16x64 f16 source into a 32x64 f16 table. The (rows, cols) pairs must not
// repeat with different values (a race: spyre-run draws distinct pairs); the table's
// elements no pair names keep the memory's contents.
#src_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#out_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @element_scatter(%x_ptr: index, %rows_ptr: index, %cols_ptr: index,
                             %out_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %x = ktdp.construct_memory_view %x_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = #src_set, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16x64xf16>
    %rows = ktdp.construct_memory_view %rows_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = #src_set, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16x64xi32>
    %cols = ktdp.construct_memory_view %cols_ptr, sizes: [16, 64], strides: [64, 1] {
      coordinate_set = #src_set, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16x64xi32>
    %out = ktdp.construct_memory_view %out_ptr, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = #out_set, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<32x64xf16>
    %src = ktdp.construct_access_tile %x[%c0, %c0] {
      access_tile_set = #src_set, access_tile_order = #id
    } : memref<16x64xf16> -> !ktdp.access_tile<16x64xindex>
    %v = ktdp.load %src : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %e = tensor.empty() : tensor<16x64xf16>
    %y = linalg.add ins(%v, %v : tensor<16x64xf16>, tensor<16x64xf16>)
           outs(%e : tensor<16x64xf16>) -> tensor<16x64xf16>
    %dst = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k)
        %out[ind(%rows[%m, %k]), ind(%cols[%m, %k])] {
      variables_space_set = #src_set, variables_space_order = #id
    } : memref<32x64xf16>, memref<16x64xi32>, memref<16x64xi32> -> !ktdp.access_tile<16x64xindex>
    ktdp.store %y, %dst : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
    return
  }
}
