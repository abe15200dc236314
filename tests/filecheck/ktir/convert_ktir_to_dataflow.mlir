// RUN: spyre-opt %s -p 'convert-ktir-to-dataflow{scalars="BK=128"}' --split-input-file | filecheck %s
// RUN: spyre-opt %s -p 'ktir-to-units{scalars="BK=128"}' --split-input-file | filecheck %s --check-prefix=UNITS

// A grid of 4 tiles becomes a kernel over 4 cores; pointers that are loaded are the
// inputs, the one that is stored the result; access tiles become box loads/stores.
// CHECK-LABEL: func.func @add(%x: tensor<512xf16, #spyre.stick<{{.*}}>>, %y: tensor<512xf16, {{.*}}>) -> tensor<512xf16, {{.*}}>
// CHECK: dataflow.kernel @add cores(4) (%x, %y) {plan = #dataflow.ktir_plan<grid = [4]>}
// CHECK: ^bb0(%[[CORE:.*]]: index, %[[X:.*]]: !dataflow.ddr<512xf16, {{.*}}>, %[[Y:.*]]: !dataflow.ddr<512xf16, {{.*}}>, %[[OUT:.*]]: !dataflow.ddr<512xf16, {{.*}}>):
// CHECK: %[[START:.*]] = arith.muli %[[CORE]], %{{.*}} : index
// CHECK: dataflow.load %[[X]][%[[START]]] into %[[A:.*]] : !dataflow.ddr<512xf16, {{.*}}>, !dataflow.lx<128xf16>
// CHECK: dataflow.load %[[Y]][%[[START]]] into %[[B:.*]] :
// CHECK: dataflow.compute "spyre.add" on "pe"(%[[A]], %[[B]]) -> (%[[C:.*]]) :
// CHECK: dataflow.store %[[C]] into %[[OUT]][%[[START]]] :
// CHECK: dataflow.end
// UNITS-LABEL: func.func @add
// UNITS: core.program @add cores(4)
func.func @add(%x: index, %y: index, %out: index) attributes {grid = [4]} {
  %t = ktdp.get_compute_tile_id : index
  %c128 = arith.constant 128 : index
  %start = arith.muli %t, %c128 : index
  %xv = ktdp.construct_memory_view %x, sizes: [512], strides: [1] {
    coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 511 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<512xf16>
  %yv = ktdp.construct_memory_view %y, sizes: [512], strides: [1] {
    coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 511 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<512xf16>
  %ov = ktdp.construct_memory_view %out, sizes: [512], strides: [1] {
    coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 511 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<512xf16>
  %xt = ktdp.construct_access_tile %xv[%start] {
    access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 127 >= 0)>, access_tile_order = affine_map<(d0) -> (d0)>
  } : memref<512xf16> -> !ktdp.access_tile<128xindex>
  %yt = ktdp.construct_access_tile %yv[%start] {
    access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 127 >= 0)>, access_tile_order = affine_map<(d0) -> (d0)>
  } : memref<512xf16> -> !ktdp.access_tile<128xindex>
  %ot = ktdp.construct_access_tile %ov[%start] {
    access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 127 >= 0)>, access_tile_order = affine_map<(d0) -> (d0)>
  } : memref<512xf16> -> !ktdp.access_tile<128xindex>
  %a = ktdp.load %xt : !ktdp.access_tile<128xindex> -> tensor<128xf16>
  %b = ktdp.load %yt : !ktdp.access_tile<128xindex> -> tensor<128xf16>
  %c = arith.addf %a, %b : tensor<128xf16>
  ktdp.store %c, %ot : tensor<128xf16>, !ktdp.access_tile<128xindex>
  return
}

// -----

// A K loop with a loop-carried accumulator: the scalar step comes from the `scalars`
// option, the accumulator lives in one LX buffer (zeroed before the loop) that the
// add updates in place; the grid's two dims are the core id's remainder and quotient.
// A row statistic (one element per row) gets one stick per element: a trailing 1.
// CHECK-LABEL: func.func @mm
// CHECK-SAME: -> (tensor<64x256xf16, {{.*}}>, tensor<64x1xf16, {{.*}}>)
// CHECK: dataflow.kernel @mm cores(4)
// CHECK: %[[ACC:.*]] = dataflow.alloc_lx : !dataflow.lx<32x128xf16>
// CHECK: %[[M:.*]] = arith.remui %{{.*}}, %{{.*}} : index
// CHECK: dataflow.compute "spyre.full" on "pe"() -> (%[[ACC]]) {attrs = {value = 0.000000e+00 : f64}}
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: dataflow.load %{{.*}}[%{{.*}}, %[[K]]] into %[[A:.*]] : {{.*}}, !dataflow.lx<32x64xf16>
// CHECK: dataflow.load %{{.*}}[%[[K]], %{{.*}}] into %[[B:.*]] : {{.*}}, !dataflow.lx<64x128xf16>
// CHECK: dataflow.compute "spyre.matmul" on "pe"(%[[A]], %[[B]]) -> (%[[P:.*]]) :
// CHECK: dataflow.compute "spyre.add" on "pe"(%[[ACC]], %[[P]]) -> (%[[ACC]]) :
// CHECK: }
// CHECK: dataflow.store %[[ACC]] into
// CHECK: dataflow.compute "spyre.sum" on "sfp"(%[[ACC]]) -> (%[[S:.*]]) {attrs = {dims = array<i64: 1>, keepdim}} : (!dataflow.lx<32x128xf16>) -> !dataflow.lx<32x1xf16>
// CHECK: dataflow.store %[[S]] into %{{.*}}[%{{.*}}, %{{.*}}] : !dataflow.lx<32x1xf16>, !dataflow.ddr<64x1xf16, {{.*}}>
func.func @mm(%a: index, %b: index, %c: index, %rowsum: index, %BK: index) attributes {grid = [2, 2]} {
  %m, %n = ktdp.get_compute_tile_id : index, index
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %row = arith.muli %m, %c32 : index
  %col = arith.muli %n, %c128 : index
  %av = ktdp.construct_memory_view %a, sizes: [64, 256], strides: [256, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<64x256xf16>
  %bv = ktdp.construct_memory_view %b, sizes: [256, 256], strides: [256, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<256x256xf16>
  %cv = ktdp.construct_memory_view %c, sizes: [64, 256], strides: [256, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<64x256xf16>
  %sv = ktdp.construct_memory_view %rowsum, sizes: [64], strides: [1] {
    coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<64xf16>
  %zero = arith.constant dense<0.0> : tensor<32x128xf16>
  %acc = scf.for %k = %c0 to %c256 step %BK iter_args(%it = %zero) -> (tensor<32x128xf16>) {
    %at = ktdp.construct_access_tile %av[%row, %k] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<64x256xf16> -> !ktdp.access_tile<32x64xindex>
    %bt = ktdp.construct_access_tile %bv[%k, %col] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 127 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<256x256xf16> -> !ktdp.access_tile<64x128xindex>
    %x = ktdp.load %at : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
    %y = ktdp.load %bt : !ktdp.access_tile<64x128xindex> -> tensor<64x128xf16>
    %e = tensor.empty() : tensor<32x128xf16>
    %p = linalg.matmul ins(%x, %y : tensor<32x64xf16>, tensor<64x128xf16>) outs(%e : tensor<32x128xf16>) -> tensor<32x128xf16>
    %next = arith.addf %it, %p : tensor<32x128xf16>
    scf.yield %next : tensor<32x128xf16>
  }
  %ct = ktdp.construct_access_tile %cv[%row, %col] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 127 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<64x256xf16> -> !ktdp.access_tile<32x128xindex>
  ktdp.store %acc, %ct : tensor<32x128xf16>, !ktdp.access_tile<32x128xindex>
  %f0 = arith.constant 0.0 : f16
  %init = tensor.splat %f0 : tensor<32xf16>
  %s = linalg.reduce { arith.addf } ins(%acc : tensor<32x128xf16>) outs(%init : tensor<32xf16>) dimensions = [1]
  %st = ktdp.construct_access_tile %sv[%row] {
    access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>, access_tile_order = affine_map<(d0) -> (d0)>
  } : memref<64xf16> -> !ktdp.access_tile<32xindex>
  ktdp.store %s, %st : tensor<32xf16>, !ktdp.access_tile<32xindex>
  return
}

// -----

// An indirect tile whose dim after the indirect one is a window (slots 2..5 of 8):
// whole rows gathered, the window's sticks picked by an LX gather at iota positions.
// CHECK-LABEL: func.func @rows
// CHECK: dataflow.gather %{{.*}}[%{{.*}}] into %[[ROWS:.*]] : {{.*}}, !dataflow.lx<1xi32>, !dataflow.lx<1x8x64xf16>
// CHECK: dataflow.compute "spyre.reshape" on "ls"(%[[ROWS]]) -> (%[[FLAT:.*]]) : (!dataflow.lx<1x8x64xf16>) -> !dataflow.lx<8x64xf16>
// CHECK: dataflow.compute "spyre.iota" on "pe"() -> (%[[P0:.*]]) offsets[{{.*}}] {attrs = {dim = 0 : i64, start = 0 : i64, step = 8 : i64}}
// CHECK: dataflow.compute "spyre.iota" on "pe"() -> (%[[P1:.*]]) offsets[%{{.*}}, %[[AT:.*]]] {attrs = {dim = 1 : i64, start = 0 : i64, step = 1 : i64}}
// CHECK: dataflow.compute "spyre.add" on "pe"(%[[P0]], %[[P1]]) -> (%[[POS:.*]]) :
// CHECK: dataflow.compute "spyre.gather" on "ls"(%[[FLAT]], %[[POS]]) -> (%[[PICKED:.*]]) : (!dataflow.lx<8x64xf16>, !dataflow.lx<1x4xi32>) -> !dataflow.lx<1x4x64xf16>
// CHECK: dataflow.store %[[PICKED]] into
func.func @rows(%t_ptr: index, %i_ptr: index, %o_ptr: index) attributes {grid = [2]} {
  %c = ktdp.get_compute_tile_id : index
  %c0 = arith.constant 0 : index
  %t = ktdp.construct_memory_view %t_ptr, sizes: [6, 8, 64], strides: [512, 64, 1] {coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 5 >= 0, d1 >= 0, -d1 + 7 >= 0, d2 >= 0, -d2 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<6x8x64xf16>
  %i = ktdp.construct_memory_view %i_ptr, sizes: [2], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 1 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2xi32>
  %o = ktdp.construct_memory_view %o_ptr, sizes: [2, 4, 64], strides: [256, 64, 1] {coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<2x4x64xf16>
  %g = ktdp.construct_indirect_access_tile intermediate_variables(%p, %s, %f) %t[ind(%i[%c + %p]), (%s + 2), (%f)] {variables_space_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 63 >= 0)>, variables_space_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>} : memref<6x8x64xf16>, memref<2xi32> -> !ktdp.access_tile<1x4x64xindex>
  %x = ktdp.load %g : !ktdp.access_tile<1x4x64xindex> -> tensor<1x4x64xf16>
  %a = ktdp.construct_access_tile %o[%c, %c0, %c0] {access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>} : memref<2x4x64xf16> -> !ktdp.access_tile<1x4x64xindex>
  ktdp.store %x, %a : tensor<1x4x64xf16>, !ktdp.access_tile<1x4x64xindex>
  return
}

// -----

// linalg.index in a generic's body: an iota tile of the body's shape; the tile id it
// is compared with becomes a one-element tile (an iota started at it).
// CHECK-LABEL: func.func @positions
// CHECK: dataflow.compute "spyre.iota" on "pe"() -> (%[[COL:.*]]) {attrs = {dim = 1 : i64, start = 0 : i64, step = 1 : i64}} : () -> !dataflow.lx<8x64xi32>
// CHECK: dataflow.compute "spyre.iota" on "pe"() -> (%[[AT:.*]]) offsets[%{{.*}}] {attrs = {dim = 0 : i64, start = 0 : i64, step = 1 : i64}} : () -> !dataflow.lx<1xi32>
// CHECK: dataflow.compute "spyre.le" on "{{.*}}"(%[[COL]], %[[AT]]) -> (%[[KEEP:.*]]) : (!dataflow.lx<8x64xi32>, !dataflow.lx<1xi32>) -> !dataflow.lx<8x64xi1>
// CHECK: dataflow.compute "spyre.select" on "{{.*}}"(%[[KEEP]], %{{.*}}, %{{.*}})
func.func @positions(%x_ptr: index, %y_ptr: index) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %t = ktdp.get_compute_tile_id : index
  %zero = arith.constant 0.0 : f16
  %xv = ktdp.construct_memory_view %x_ptr, sizes: [8, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<8x64xf16>
  %yv = ktdp.construct_memory_view %y_ptr, sizes: [16, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<16x64xf16>
  %xa = ktdp.construct_access_tile %xv[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<8x64xf16> -> !ktdp.access_tile<8x64xindex>
  %x = ktdp.load %xa : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
  %e = tensor.empty() : tensor<8x64xf16>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x64xf16>) outs(%e : tensor<8x64xf16>) {
  ^bb0(%v : f16, %o : f16):
    %c = linalg.index 1 : index
    %keep = arith.cmpi ule, %c, %t : index
    %w = arith.select %keep, %v, %zero : f16
    linalg.yield %w : f16
  } -> tensor<8x64xf16>
  %row = arith.muli %t, %c0 : index
  %ya = ktdp.construct_access_tile %yv[%row, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<16x64xf16> -> !ktdp.access_tile<8x64xindex>
  ktdp.store %y, %ya : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
  return
}

// -----

// The exp of a softmax is summed, then divided by the sum: the division, its last
// reader on the same unit, writes the exp's buffer.
// CHECK-LABEL: func.func @divide_in_place
// CHECK: dataflow.compute "spyre.exp" on "sfp"(%{{.*}}) -> (%[[E:[0-9]+]]) :
// CHECK: dataflow.compute "spyre.sum" on "sfp"(%[[E]]) -> (%[[S:[0-9]+]])
// CHECK: dataflow.compute "spyre.div" on "sfp"(%[[E]], %[[S]]) -> (%[[E]]) :
func.func @divide_in_place(%x_ptr: index, %y_ptr: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f16
  %xv = ktdp.construct_memory_view %x_ptr, sizes: [1, 256], strides: [256, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<1x256xf16>
  %yv = ktdp.construct_memory_view %y_ptr, sizes: [1, 256], strides: [256, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<1x256xf16>
  %xa = ktdp.construct_access_tile %xv[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<1x256xf16> -> !ktdp.access_tile<1x256xindex>
  %x = ktdp.load %xa : !ktdp.access_tile<1x256xindex> -> tensor<1x256xf16>
  %e = math.exp %x : tensor<1x256xf16>
  %init = tensor.splat %zero : tensor<1xf16>
  %s = linalg.reduce { arith.addf } ins(%e : tensor<1x256xf16>) outs(%init : tensor<1xf16>) dimensions = [1]
  %ss = tensor.extract %s[%c0] : tensor<1xf16>
  %sb = tensor.splat %ss : tensor<1x256xf16>
  %y = arith.divf %e, %sb : tensor<1x256xf16>
  %ya = ktdp.construct_access_tile %yv[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<1x256xf16> -> !ktdp.access_tile<1x256xindex>
  ktdp.store %y, %ya : tensor<1x256xf16>, !ktdp.access_tile<1x256xindex>
  return
}

// -----

// A 1-D weight tile read as 1x256 (tensor.expand_shape adding a unit dim) is the
// loaded buffer itself: the multiply takes it as it is, no reshape moves it. A value
// with another reader keeps its reshape (here %e1, which the second exp then
// overwrites in place: an alias would change %e too); its last one needs none.
// CHECK-LABEL: func.func @scale_rows
// CHECK: dataflow.load %{{.*}} into %[[W:[0-9]+]] : !dataflow.ddr<256xf16, {{.*}}>, !dataflow.lx<256xf16>
// CHECK-NOT: spyre.reshape
// CHECK: dataflow.compute "spyre.mul" on "pe"(%{{.*}}, %[[W]]) -> (%{{.*}}) : (!dataflow.lx<1x256xf16>, !dataflow.lx<256xf16>) -> !dataflow.lx<1x256xf16>
// CHECK: dataflow.compute "spyre.exp" on "sfp"(%{{.*}}) -> (%[[E:[0-9]+]]) : (!dataflow.lx<256xf16>) -> !dataflow.lx<256xf16>
// CHECK-NEXT: dataflow.compute "spyre.reshape" on "ls"(%[[E]])
// CHECK: dataflow.compute "spyre.exp" on "sfp"(%[[E]]) -> (%[[E2:[0-9]+]])
// CHECK-NOT: spyre.reshape
// CHECK: dataflow.compute "spyre.add" on "pe"(%{{.*}}, %[[E2]])
func.func @scale_rows(%x_ptr: index, %w_ptr: index, %y_ptr: index, %z_ptr: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %xv = ktdp.construct_memory_view %x_ptr, sizes: [1, 256], strides: [256, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<1x256xf16>
  %wv = ktdp.construct_memory_view %w_ptr, sizes: [256], strides: [1] {coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<256xf16>
  %yv = ktdp.construct_memory_view %y_ptr, sizes: [1, 256], strides: [256, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<1x256xf16>
  %zv = ktdp.construct_memory_view %z_ptr, sizes: [1, 256], strides: [256, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<1x256xf16>
  %xa = ktdp.construct_access_tile %xv[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<1x256xf16> -> !ktdp.access_tile<1x256xindex>
  %wa = ktdp.construct_access_tile %wv[%c0] {access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>, access_tile_order = affine_map<(d0) -> (d0)>} : memref<256xf16> -> !ktdp.access_tile<256xindex>
  %x = ktdp.load %xa : !ktdp.access_tile<1x256xindex> -> tensor<1x256xf16>
  %w1 = ktdp.load %wa : !ktdp.access_tile<256xindex> -> tensor<256xf16>
  %w = tensor.expand_shape %w1 [[0, 1]] output_shape [1, 256] : tensor<256xf16> into tensor<1x256xf16>
  %y = arith.mulf %x, %w : tensor<1x256xf16>
  %ya = ktdp.construct_access_tile %yv[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<1x256xf16> -> !ktdp.access_tile<1x256xindex>
  ktdp.store %y, %ya : tensor<1x256xf16>, !ktdp.access_tile<1x256xindex>
  %u1 = ktdp.load %wa : !ktdp.access_tile<256xindex> -> tensor<256xf16>
  %e1 = math.exp %u1 : tensor<256xf16>
  %e = tensor.expand_shape %e1 [[0, 1]] output_shape [1, 256] : tensor<256xf16> into tensor<1x256xf16>
  %z = arith.addf %e, %x : tensor<1x256xf16>
  %e2 = math.exp %e1 : tensor<256xf16>
  %e3 = tensor.expand_shape %e2 [[0, 1]] output_shape [1, 256] : tensor<256xf16> into tensor<1x256xf16>
  %z2 = arith.addf %z, %e3 : tensor<1x256xf16>
  %za = ktdp.construct_access_tile %zv[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 255 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<1x256xf16> -> !ktdp.access_tile<1x256xindex>
  ktdp.store %z2, %za : tensor<1x256xf16>, !ktdp.access_tile<1x256xindex>
  return
}
