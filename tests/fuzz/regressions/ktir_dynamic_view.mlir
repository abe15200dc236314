// RUN: spyre-opt %s -p 'convert-ktir-to-dataflow{scalars="BK=128"}' --split-input-file | filecheck %s
// RUN: spyre-opt %s -p 'ktir-to-units{scalars="BK=128"}' --split-input-file | filecheck %s --check-prefix=UNITS

// A grid of 4 tiles becomes a kernel over 4 cores; pointers that are loaded are the
// inputs, the one that is stored the result; access tiles become box loads/stores.
// CHECK-LABEL: func.func @add(%x: tensor<1048576xf16, #spyre.stick<{{.*}}>>, %y: tensor<?xf16, {{.*}}>) -> tensor<?xf16, {{.*}}>
// CHECK: dataflow.kernel @add cores(4) (%x, %y) {plan = #dataflow.ktir_plan<grid = [4]>}
// CHECK: ^bb0(%[[CORE:.*]]: index, %[[X:.*]]: !dataflow.ddr<?xf16, {{.*}}>, %[[Y:.*]]: !dataflow.ddr<?xf16, {{.*}}>, %[[OUT:.*]]: !dataflow.ddr<?xf16, {{.*}}>):
// CHECK: %[[START:.*]] = arith.muli %[[CORE]], %{{.*}} : index
// CHECK: dataflow.load %[[X]][%[[START]]] into %[[A:.*]] : !dataflow.ddr<?xf16, {{.*}}>, !dataflow.lx<3xf16>
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
  } : memref<?xf16>
  %yv = ktdp.construct_memory_view %y, sizes: [512], strides: [1] {
    coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 511 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<?xf16>
  %ov = ktdp.construct_memory_view %out, sizes: [512], strides: [1] {
    coordinate_set = affine_set<(d0) : (d0 >= 0, -d0 + 511 >= 0)>, memory_space = #ktdp.spyre_memory_space<HBM>
  } : memref<?xf16>
  %xt = ktdp.construct_access_tile %xv[%start] {
    access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 127 >= 0)>, access_tile_order = affine_map<(d0) -> (d0)>
  } : memref<?xf16> -> !ktdp.access_tile<128xindex>
  %yt = ktdp.construct_access_tile %yv[%start] {
    access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 127 >= 0)>, access_tile_order = affine_map<(d0) -> (d0)>
  } : memref<?xf16> -> !ktdp.access_tile<128xindex>
  %ot = ktdp.construct_access_tile %ov[%start] {
    access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 127 >= 0)>, access_tile_order = affine_map<(d0) -> (d0)>
  } : memref<?xf16> -> !ktdp.access_tile<128xindex>
  %a = ktdp.load %xt : !ktdp.access_tile<128xindex> -> tensor<128xf16>
  %b = ktdp.load %yt : !ktdp.access_tile<128xindex> -> tensor<128xf16>
  %c = arith.addf %a, %b : tensor<128xf16>
  ktdp.store %c, %ot : tensor<128xf16>, !ktdp.access_tile<128xindex>
  return
}

