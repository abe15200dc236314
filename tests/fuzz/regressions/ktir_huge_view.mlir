

func.func @k(%x: index) attributes {grid = [1]} {
  // expected-error @+1 {{strides [1, 64] are not the row-major strides [64, 1] of its pointer's tensor [64, 64] (strided views are not supported)}}
  %v = ktdp.construct_memory_view %x, sizes: [64, 64], strides: [1, 64] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<64x4294967296xf16>
  return
}

