// Layer norm over rows of a 100x1024 f16 matrix on 8 tiles: 13 rows per tile, the last
// tile has 9 (an uneven split, clamped with arith.select), each row walked in 256-wide
// blocks three times (sum, variance, normalise); per-row mean and rstd are stored too.
// Our own kernel, in the style of Triton-Spyre's output.
module {
  func.func @layer_norm(%X: index, %Y: index, %W: index, %B: index, %Mean: index,
                        %Rstd: index, %eps: f16) attributes {grid = [8]} {
    %tile = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c13 = arith.constant 13 : index
    %c100 = arith.constant 100 : index
    %c256 = arith.constant 256 : index
    %c1024 = arith.constant 1024 : index
    %one = arith.constant 1.0 : f16
    %start = arith.muli %tile, %c13 : index
    %end_raw = arith.addi %start, %c13 : index
    %in_range = arith.cmpi slt, %end_raw, %c100 : index
    %end = arith.select %in_range, %end_raw, %c100 : index
    %x_view = ktdp.construct_memory_view %X, sizes: [100, 1024], strides: [1024, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 99 >= 0, d1 >= 0, -d1 + 1023 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<100x1024xf16>
    %y_view = ktdp.construct_memory_view %Y, sizes: [100, 1024], strides: [1024, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 99 >= 0, d1 >= 0, -d1 + 1023 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<100x1024xf16>
    %w_view = ktdp.construct_memory_view %W, sizes: [1024], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 1023 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<1024xf16>
    %b_view = ktdp.construct_memory_view %B, sizes: [1024], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 1023 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<1024xf16>
    %mean_view = ktdp.construct_memory_view %Mean, sizes: [100], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 99 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<100xf16>
    %rstd_view = ktdp.construct_memory_view %Rstd, sizes: [100], strides: [1] {
      coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 99 >= 0)>,
      memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<100xf16>
    %zero_block = arith.constant dense<0.0> : tensor<1x256xf16>
    %n_i32 = arith.index_cast %c1024 : index to i32
    %n = arith.sitofp %n_i32 : i32 to f16
    %n_t = tensor.splat %n : tensor<1xf16>
    %zero = arith.constant 0.0 : f16
    scf.for %row = %start to %end step %c1 {
      %sum_block = scf.for %col = %c0 to %c1024 step %c256 iter_args(%acc = %zero_block) -> (tensor<1x256xf16>) {
        %t = ktdp.construct_access_tile %x_view[%row, %col] {
          access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
          access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
        } : memref<100x1024xf16> -> !ktdp.access_tile<1x256xindex>
        %a = ktdp.load %t : !ktdp.access_tile<1x256xindex> -> tensor<1x256xf16>
        %next = arith.addf %acc, %a : tensor<1x256xf16>
        scf.yield %next : tensor<1x256xf16>
      }
      %init = tensor.splat %zero : tensor<1xf16>
      %sum = linalg.reduce { arith.addf } ins(%sum_block : tensor<1x256xf16>) outs(%init : tensor<1xf16>) dimensions = [1]
      %mean = arith.divf %sum, %n_t : tensor<1xf16>
      %mean_s = tensor.extract %mean[%c0] : tensor<1xf16>
      %mean_b = tensor.splat %mean_s : tensor<1x256xf16>
      %var_block = scf.for %col = %c0 to %c1024 step %c256 iter_args(%acc = %zero_block) -> (tensor<1x256xf16>) {
        %t = ktdp.construct_access_tile %x_view[%row, %col] {
          access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
          access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
        } : memref<100x1024xf16> -> !ktdp.access_tile<1x256xindex>
        %a = ktdp.load %t : !ktdp.access_tile<1x256xindex> -> tensor<1x256xf16>
        %d = arith.subf %a, %mean_b : tensor<1x256xf16>
        %d2 = arith.mulf %d, %d : tensor<1x256xf16>
        %next = arith.addf %acc, %d2 : tensor<1x256xf16>
        scf.yield %next : tensor<1x256xf16>
      }
      %vsum = linalg.reduce { arith.addf } ins(%var_block : tensor<1x256xf16>) outs(%init : tensor<1xf16>) dimensions = [1]
      %var = arith.divf %vsum, %n_t : tensor<1xf16>
      %eps_t = tensor.splat %eps : tensor<1xf16>
      %var_eps = arith.addf %var, %eps_t : tensor<1xf16>
      %root = math.sqrt %var_eps : tensor<1xf16>
      %one_t = tensor.splat %one : tensor<1xf16>
      %rstd = arith.divf %one_t, %root : tensor<1xf16>
      %rstd_s = tensor.extract %rstd[%c0] : tensor<1xf16>
      %rstd_b = tensor.splat %rstd_s : tensor<1x256xf16>
      %m_acc = ktdp.construct_access_tile %mean_view[%row] {
        access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 >= 0)>,
        access_tile_order = affine_map<(d0) -> (d0)>
      } : memref<100xf16> -> !ktdp.access_tile<1xindex>
      ktdp.store %mean, %m_acc : tensor<1xf16>, !ktdp.access_tile<1xindex>
      %r_acc = ktdp.construct_access_tile %rstd_view[%row] {
        access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 >= 0)>,
        access_tile_order = affine_map<(d0) -> (d0)>
      } : memref<100xf16> -> !ktdp.access_tile<1xindex>
      ktdp.store %rstd, %r_acc : tensor<1xf16>, !ktdp.access_tile<1xindex>
      scf.for %col = %c0 to %c1024 step %c256 {
        %xt = ktdp.construct_access_tile %x_view[%row, %col] {
          access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
          access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
        } : memref<100x1024xf16> -> !ktdp.access_tile<1x256xindex>
        %wt = ktdp.construct_access_tile %w_view[%col] {
          access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>,
          access_tile_order = affine_map<(d0) -> (d0)>
        } : memref<1024xf16> -> !ktdp.access_tile<256xindex>
        %bt = ktdp.construct_access_tile %b_view[%col] {
          access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>,
          access_tile_order = affine_map<(d0) -> (d0)>
        } : memref<1024xf16> -> !ktdp.access_tile<256xindex>
        %x = ktdp.load %xt : !ktdp.access_tile<1x256xindex> -> tensor<1x256xf16>
        %w = ktdp.load %wt : !ktdp.access_tile<256xindex> -> tensor<256xf16>
        %b = ktdp.load %bt : !ktdp.access_tile<256xindex> -> tensor<256xf16>
        %w2 = tensor.expand_shape %w [[0, 1]] output_shape [1, 256] : tensor<256xf16> into tensor<1x256xf16>
        %b2 = tensor.expand_shape %b [[0, 1]] output_shape [1, 256] : tensor<256xf16> into tensor<1x256xf16>
        %xm = arith.subf %x, %mean_b : tensor<1x256xf16>
        %xh = arith.mulf %xm, %rstd_b : tensor<1x256xf16>
        %xw = arith.mulf %xh, %w2 : tensor<1x256xf16>
        %y = arith.addf %xw, %b2 : tensor<1x256xf16>
        %yt = ktdp.construct_access_tile %y_view[%row, %col] {
          access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>,
          access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
        } : memref<100x1024xf16> -> !ktdp.access_tile<1x256xindex>
        ktdp.store %y, %yt : tensor<1x256xf16>, !ktdp.access_tile<1x256xindex>
      }
    }
    return
  }
}
