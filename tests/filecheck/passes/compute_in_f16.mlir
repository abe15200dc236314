// spyre-compute-in-f16 (spyre_ir/passes/compute_in_f16.py): every f32 tensor becomes f16 -
// arguments, results, the function type, constants (values rounded to f16) and casts to
// f32 (now f16 -> f16). Integer and bf16 tensors stay as they are.

// RUN: spyre-opt %s -p spyre-compute-in-f16 | filecheck %s
// RUN: spyre-opt %s -p spyre-compute-in-f16 2>&1 | %no-traceback

// CHECK-LABEL: func.func @main(%x: tensor<4x8xf16>, %i: tensor<4xi32>, %b: tensor<4xbf16>) -> (tensor<4x8xf16>, tensor<4xi32>, tensor<4xbf16>) {
func.func @main(%x: tensor<4x8xf32>, %i: tensor<4xi32>, %b: tensor<4xbf16>) -> (tensor<4x8xf32>, tensor<4xi32>, tensor<4xbf16>) {
  // CHECK-NEXT: %h = spyre.cast %x : tensor<4x8xf16> -> tensor<4x8xf16>
  %h = spyre.cast %x : tensor<4x8xf32> -> tensor<4x8xf16>
  // CHECK-NEXT: %up = spyre.cast %h : tensor<4x8xf16> -> tensor<4x8xf16>
  %up = spyre.cast %h : tensor<4x8xf16> -> tensor<4x8xf32>
  // CHECK-NEXT: %c = spyre.constant dense<[1.000000e+00, 1.000980e+00, 6.550400e+04, 0.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00]> : tensor<8xf16>
  %c = spyre.constant dense<[1.0, 1.001, 65504.0, 0.0, 1.0, 1.0, 1.0, 1.0]> : tensor<8xf32>
  // CHECK-NEXT: %y = spyre.add %up, %c : tensor<4x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
  %y = spyre.add %up, %c : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %y, %i, %b : tensor<4x8xf16>, tensor<4xi32>, tensor<4xbf16>
  func.return %y, %i, %b : tensor<4x8xf32>, tensor<4xi32>, tensor<4xbf16>
}
