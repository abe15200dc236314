// A distributed view over HBM and the LX of two cores (docs/ktir.md; ktir_local.py,
// ktir_distributed.py): our own kernel, in the manner of ktir-cpu's
// distributed-view-copy.mlir. The 96x64 global view A is rows 0..31 in HBM (at 0),
// rows 32..47 in core 0's LX, column-major (strides [1, 16]: element (i, j) at
// i + 16 j), and rows 48..95 in core 1's LX; both tiles copy all of A to B (at 8192):
// B = [hbm; lx0 transposed back; lx1].
#hbm_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#lx0_set = affine_set<(d0, d1) : (d0 - 32 >= 0, -d0 + 47 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#lx1_set = affine_set<(d0, d1) : (d0 - 48 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 95 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @lx_partitions() attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %hbm_at = arith.constant 0 : index
    %lx0_at = arith.constant 0 : index
    %lx1_at = arith.constant 1024 : index
    %b_at = arith.constant 8192 : index
    %hbm = ktdp.construct_memory_view %hbm_at, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = #hbm_set, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<32x64xf16>
    %lx0 = ktdp.construct_memory_view %lx0_at, sizes: [16, 64], strides: [1, 16] {
      coordinate_set = #lx0_set, memory_space = #ktdp.spyre_memory_space<LX, core = 0>
    } : memref<16x64xf16>
    %lx1 = ktdp.construct_memory_view %lx1_at, sizes: [48, 64], strides: [64, 1] {
      coordinate_set = #lx1_set, memory_space = #ktdp.spyre_memory_space<LX, core = 1>
    } : memref<48x64xf16>
    %a = ktdp.construct_distributed_memory_view
      (%hbm, %lx0, %lx1 : memref<32x64xf16>, memref<16x64xf16>, memref<48x64xf16>)
      : memref<96x64xf16>
    %b = ktdp.construct_memory_view %b_at, sizes: [96, 64], strides: [64, 1] {
      coordinate_set = #all, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<96x64xf16>
    %at = ktdp.construct_access_tile %a[%c0, %c0] {
      access_tile_set = #all, access_tile_order = #id
    } : memref<96x64xf16> -> !ktdp.access_tile<96x64xindex>
    %bt = ktdp.construct_access_tile %b[%c0, %c0] {
      access_tile_set = #all, access_tile_order = #id
    } : memref<96x64xf16> -> !ktdp.access_tile<96x64xindex>
    %x = ktdp.load %at : !ktdp.access_tile<96x64xindex> -> tensor<96x64xf16>
    ktdp.store %x, %bt : tensor<96x64xf16>, !ktdp.access_tile<96x64xindex>
    return
  }
}
