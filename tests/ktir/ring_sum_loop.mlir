// A loaded tile reduced across tiles on every trip of a loop (our own kernel, written
// from the KTIR spec): each of 4 tiles views its row of x at %x_ptr + %tile * 64, and
// on each of 2 trips adds the sum of all rows to an accumulator;
// tile 0 stores it (twice the sum). The ring reduces in place, so the loaded row must keep
// its value from one trip to the next.
#row = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#ident = affine_map<(d0, d1) -> (d0, d1)>
#block = affine_set<(i)[g] : (i - 4*g >= 0, -i + 4*g + 3 >= 0)>
module {
  func.func @ring_sum_loop(%x_ptr: index, %out_ptr: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f16
    %tile = ktdp.get_compute_tile_id : index
    %offset = arith.muli %tile, %c64 : index
    %at = arith.addi %x_ptr, %offset : index
    %x_view = ktdp.construct_memory_view %at, sizes: [1, 64], strides: [64, 1] {
      coordinate_set = #row, memory_space = #ktdp.spyre_memory_space<HBM>
    } : memref<1x64xf16>
    %x_acc = ktdp.construct_access_tile %x_view[%c0, %c0] {
      access_tile_set = #row, access_tile_order = #ident
    } : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
    %x = ktdp.load %x_acc : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    %empty = tensor.empty() : tensor<1x64xf16>
    %zeros = linalg.fill ins(%zero : f16) outs(%empty : tensor<1x64xf16>) -> tensor<1x64xf16>
    %total = scf.for %trip = %c0 to %c2 step %c1 iter_args(%acc = %zeros) -> (tensor<1x64xf16>) {
      %future = ktdp.inter_tile_produce producer_tiles_per_group = #block
          : tensor<1x64xf16> -> !ktdp.tile_future<tensor<1x64xf16>, groups = affine_set<(g) : (g == 0)>>
      {
        ^bb0(%group: index):
          ktdp.yield_partial %x : tensor<1x64xf16>
      }
      %identity = linalg.fill ins(%zero : f16) outs(%empty : tensor<1x64xf16>) -> tensor<1x64xf16>
      %sum = ktdp.inter_tile_reduce(%future) consumer_tiles_per_group = #block,
          identity(%identity : tensor<1x64xf16>)
          : !ktdp.tile_future<tensor<1x64xf16>, groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16>
      {
        ^bb0(%l: tensor<1x64xf16>, %r: tensor<1x64xf16>):
          %e = tensor.empty() : tensor<1x64xf16>
          %s = linalg.add ins(%l, %r : tensor<1x64xf16>, tensor<1x64xf16>) outs(%e : tensor<1x64xf16>) -> tensor<1x64xf16>
          ktdp.yield_reduced %s : tensor<1x64xf16>
      }
      %next = arith.addf %acc, %sum : tensor<1x64xf16>
      scf.yield %next : tensor<1x64xf16>
    }
    %writer = arith.cmpi eq, %tile, %c0 : index
    scf.if %writer {
      %out_view = ktdp.construct_memory_view %out_ptr, sizes: [1, 64], strides: [64, 1] {
        coordinate_set = #row, memory_space = #ktdp.spyre_memory_space<HBM>
      } : memref<1x64xf16>
      %out_acc = ktdp.construct_access_tile %out_view[%c0, %c0] {
        access_tile_set = #row, access_tile_order = #ident
      } : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
      ktdp.store %total, %out_acc : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
