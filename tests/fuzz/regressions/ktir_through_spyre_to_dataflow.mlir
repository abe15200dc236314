

// expected-error @+-1 {{kernel argument %m is memref<64xf16>: KTIR kernels take pointers as index values}}
func.func @k(%m: memref<64xf16>) attributes {grid = [1]} {
  %t = ktdp.get_compute_tile_id : index
  return
}
