// Online softmax statistics over column blocks, causally masked by position: for
// each of a tile's 8 rows, M = running max and L = running sum of exp(x - M) over the
// columns c <= row + shift of 4 blocks of 32 (the rescale alpha = exp(M_old - M_new)
// reads the old max after the new one is made). 2 tiles; tile t's rows start at 8t.
// The mask uses linalg.index with the tile id, the loop counter and a scalar.
module {
  func.func @online_softmax_rows(%x_ptr: index, %m_ptr: index, %l_ptr: index, %shift: index)
      attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %t = ktdp.get_compute_tile_id : index
    %row0 = arith.muli %t, %c8 : index
    %bits = arith.constant 0xFF800000 : i32
    %ninf = arith.bitcast %bits : i32 to f32
    %zero = arith.constant 0.0 : f32
    %x_view = ktdp.construct_memory_view %x_ptr, sizes: [16, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16x128xf32>
    %m_view = ktdp.construct_memory_view %m_ptr, sizes: [16], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16xf32>
    %l_view = ktdp.construct_memory_view %l_ptr, sizes: [16], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<16xf32>
    %m_init = tensor.splat %ninf : tensor<8xf32>
    %l_init = tensor.splat %zero : tensor<8xf32>
    %m_end, %l_end = scf.for %j = %c0 to %c4 step %c1
        iter_args(%m = %m_init, %l = %l_init) -> (tensor<8xf32>, tensor<8xf32>) {
      %col0 = arith.muli %j, %c32 : index
      %x_acc = ktdp.construct_access_tile %x_view[%row0, %col0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<16x128xf32> -> !ktdp.access_tile<8x32xindex>
      %x = ktdp.load %x_acc : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf32>
      %e = tensor.empty() : tensor<8x32xf32>
      %s = linalg.generic {
          indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
          iterator_types = ["parallel", "parallel"]}
          ins(%x : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
        ^bb0(%v : f32, %o : f32):
          %r = linalg.index 0 : index
          %c = linalg.index 1 : index
          %row = arith.addi %row0, %r : index
          %last = arith.addi %row, %shift : index
          %col = arith.addi %col0, %c : index
          %keep = arith.cmpi ule, %col, %last : index
          %w = arith.select %keep, %v, %ninf : f32
          linalg.yield %w : f32
      } -> tensor<8x32xf32>
      %rmax_init = tensor.splat %ninf : tensor<8xf32>
      %rmax = linalg.reduce { arith.maximumf } ins(%s : tensor<8x32xf32>)
          outs(%rmax_init : tensor<8xf32>) dimensions = [1]
      %e8 = tensor.empty() : tensor<8xf32>
      %m_new = linalg.generic {
          indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                           affine_map<(d0) -> (d0)>],
          iterator_types = ["parallel"]}
          ins(%m, %rmax : tensor<8xf32>, tensor<8xf32>) outs(%e8 : tensor<8xf32>) {
        ^bb0(%a : f32, %b : f32, %o : f32):
          %mx = arith.maximumf %a, %b : f32
          linalg.yield %mx : f32
      } -> tensor<8xf32>
      %p = linalg.generic {
          indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>,
                           affine_map<(d0, d1) -> (d0, d1)>],
          iterator_types = ["parallel", "parallel"]}
          ins(%s, %m_new : tensor<8x32xf32>, tensor<8xf32>) outs(%e : tensor<8x32xf32>) {
        ^bb0(%a : f32, %b : f32, %o : f32):
          %d = arith.subf %a, %b : f32
          %ex = math.exp %d : f32
          linalg.yield %ex : f32
      } -> tensor<8x32xf32>
      %psum = linalg.reduce { arith.addf } ins(%p : tensor<8x32xf32>)
          outs(%l_init : tensor<8xf32>) dimensions = [1]
      %l_new = linalg.generic {
          indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                           affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                           affine_map<(d0) -> (d0)>],
          iterator_types = ["parallel"]}
          ins(%m, %m_new, %l, %psum : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
          outs(%e8 : tensor<8xf32>) {
        ^bb0(%mo : f32, %mn : f32, %lo : f32, %ps : f32, %o : f32):
          %d = arith.subf %mo, %mn : f32
          %alpha = math.exp %d : f32
          %scaled = arith.mulf %lo, %alpha : f32
          %sum = arith.addf %scaled, %ps : f32
          linalg.yield %sum : f32
      } -> tensor<8xf32>
      scf.yield %m_new, %l_new : tensor<8xf32>, tensor<8xf32>
    }
    %m_acc = ktdp.construct_access_tile %m_view[%row0] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>
    } : memref<16xf32> -> !ktdp.access_tile<8xindex>
    ktdp.store %m_end, %m_acc : tensor<8xf32>, !ktdp.access_tile<8xindex>
    %l_acc = ktdp.construct_access_tile %l_view[%row0] {
      access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>,
      access_tile_order = affine_map<(d0) -> (d0)>
    } : memref<16xf32> -> !ktdp.access_tile<8xindex>
    ktdp.store %l_end, %l_acc : tensor<8xf32>, !ktdp.access_tile<8xindex>
    return
  }
}
