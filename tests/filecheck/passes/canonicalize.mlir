// The spyre canonicalization patterns (spyre_ir/passes/spyre_canonicalization.py), run by
// xDSL's `canonicalize` pass, which also removes the ops left dead. A second run changes
// nothing (the patterns reach a fixed point in one).

// RUN: spyre-opt %s -p canonicalize | filecheck %s
// RUN: spyre-opt %s -p canonicalize | spyre-opt -p canonicalize | filecheck %s
// RUN: spyre-opt %s -p canonicalize 2>&1 | %no-traceback


// reshape(reshape(x)) is one reshape of x.
// CHECK-LABEL: func.func @reshape_chain(
// CHECK-NEXT:    %0 = spyre.reshape %x : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %0 : tensor<4x6xf32>
// CHECK-NEXT:  }
func.func @reshape_chain(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = spyre.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = spyre.reshape %0 : tensor<6x4xf32> -> tensor<24xf32>
  %2 = spyre.reshape %1 : tensor<24xf32> -> tensor<4x6xf32>
  func.return %2 : tensor<4x6xf32>
}

// A reshape chain back to x's own type is x.
// CHECK-LABEL: func.func @reshape_chain_back(
// CHECK-NEXT:    func.return %x : tensor<2x3x4xf32>
// CHECK-NEXT:  }
func.func @reshape_chain_back(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = spyre.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  %1 = spyre.reshape %0 : tensor<24xf32> -> tensor<2x3x4xf32>
  func.return %1 : tensor<2x3x4xf32>
}

// A reshape to the same type is its input.
// CHECK-LABEL: func.func @reshape_same_type(
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>
// CHECK-NEXT:  }
func.func @reshape_same_type(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = spyre.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// The outer reshape reads x directly; the inner one stays for its other user.
// CHECK-LABEL: func.func @reshape_shared_inner(
// CHECK-NEXT:    %0 = spyre.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
// CHECK-NEXT:    %1 = spyre.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %0, %1 : tensor<6xf32>, tensor<3x2xf32>
// CHECK-NEXT:  }
func.func @reshape_shared_inner(%x: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<3x2xf32>) {
  %0 = spyre.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %1 = spyre.reshape %0 : tensor<6xf32> -> tensor<3x2xf32>
  func.return %0, %1 : tensor<6xf32>, tensor<3x2xf32>
}

// Two transposes compose: p[j] = p1[p2[j]] = [1, 2, 0].
// CHECK-LABEL: func.func @transpose_chain(
// CHECK-NEXT:    %0 = spyre.transpose %x perm = [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
// CHECK-NEXT:    func.return %0 : tensor<3x4x2xf32>
// CHECK-NEXT:  }
func.func @transpose_chain(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %0 = spyre.transpose %x perm = [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = spyre.transpose %0 perm = [0, 2, 1] : tensor<3x2x4xf32> -> tensor<3x4x2xf32>
  func.return %1 : tensor<3x4x2xf32>
}

// A transpose followed by its inverse is x.
// CHECK-LABEL: func.func @transpose_inverse(
// CHECK-NEXT:    func.return %x : tensor<2x3x4xf32>
// CHECK-NEXT:  }
func.func @transpose_inverse(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = spyre.transpose %x perm = [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = spyre.transpose %0 perm = [2, 0, 1] : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  func.return %1 : tensor<2x3x4xf32>
}

// The identity permutation is no transpose.
// CHECK-LABEL: func.func @transpose_identity(
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>
// CHECK-NEXT:  }
func.func @transpose_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = spyre.transpose %x perm = [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// A cast to the input's type is the input.
// CHECK-LABEL: func.func @cast_same_type(
// CHECK-NEXT:    func.return %x : tensor<4xf32>
// CHECK-NEXT:  }
func.func @cast_same_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = spyre.cast %x : tensor<4xf32> -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// f16 -> f32 is exact, so f16 -> f32 -> f16 is x.
// CHECK-LABEL: func.func @cast_f16_f32_f16(
// CHECK-NEXT:    func.return %x : tensor<4xf16>
// CHECK-NEXT:  }
func.func @cast_f16_f32_f16(%x: tensor<4xf16>) -> tensor<4xf16> {
  %0 = spyre.cast %x : tensor<4xf16> -> tensor<4xf32>
  %1 = spyre.cast %0 : tensor<4xf32> -> tensor<4xf16>
  func.return %1 : tensor<4xf16>
}

// f32 -> f16 rounds: f32 -> f16 -> f32 is not x.
// CHECK-LABEL: func.func @cast_f32_f16_f32_stays(
// CHECK-NEXT:    %0 = spyre.cast %x : tensor<4xf32> -> tensor<4xf16>
// CHECK-NEXT:    %1 = spyre.cast %0 : tensor<4xf16> -> tensor<4xf32>
// CHECK-NEXT:    func.return %1 : tensor<4xf32>
// CHECK-NEXT:  }
func.func @cast_f32_f16_f32_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = spyre.cast %x : tensor<4xf32> -> tensor<4xf16>
  %1 = spyre.cast %0 : tensor<4xf16> -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// f32 -> bf16 rounds, so bf16 -> f16 would double-round: kept.
// CHECK-LABEL: func.func @cast_f32_bf16_f16_stays(
// CHECK-NEXT:    %0 = spyre.cast %x : tensor<4xf32> -> tensor<4xbf16>
// CHECK-NEXT:    %1 = spyre.cast %0 : tensor<4xbf16> -> tensor<4xf16>
// CHECK-NEXT:    func.return %1 : tensor<4xf16>
// CHECK-NEXT:  }
func.func @cast_f32_bf16_f16_stays(%x: tensor<4xf32>) -> tensor<4xf16> {
  %0 = spyre.cast %x : tensor<4xf32> -> tensor<4xbf16>
  %1 = spyre.cast %0 : tensor<4xbf16> -> tensor<4xf16>
  func.return %1 : tensor<4xf16>
}

// An exact inner cast folds into the outer one.
// CHECK-LABEL: func.func @cast_f16_f32_bf16(
// CHECK-NEXT:    %0 = spyre.cast %x : tensor<4xf16> -> tensor<4xbf16>
// CHECK-NEXT:    func.return %0 : tensor<4xbf16>
// CHECK-NEXT:  }
func.func @cast_f16_f32_bf16(%x: tensor<4xf16>) -> tensor<4xbf16> {
  %0 = spyre.cast %x : tensor<4xf16> -> tensor<4xf32>
  %1 = spyre.cast %0 : tensor<4xf32> -> tensor<4xbf16>
  func.return %1 : tensor<4xbf16>
}

// i32 -> i64 is exact.
// CHECK-LABEL: func.func @cast_i32_i64_i32(
// CHECK-NEXT:    func.return %x : tensor<4xi32>
// CHECK-NEXT:  }
func.func @cast_i32_i64_i32(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = spyre.cast %x : tensor<4xi32> -> tensor<4xi64>
  %1 = spyre.cast %0 : tensor<4xi64> -> tensor<4xi32>
  func.return %1 : tensor<4xi32>
}

// i1 -> f32 is exact (0.0 / 1.0), and f32 -> i1 is `!= 0`.
// CHECK-LABEL: func.func @cast_i1_f32_i1(
// CHECK-NEXT:    func.return %x : tensor<4xi1>
// CHECK-NEXT:  }
func.func @cast_i1_f32_i1(%x: tensor<4xi1>) -> tensor<4xi1> {
  %0 = spyre.cast %x : tensor<4xi1> -> tensor<4xf32>
  %1 = spyre.cast %0 : tensor<4xf32> -> tensor<4xi1>
  func.return %1 : tensor<4xi1>
}

// i32 -> f32 loses integers above 2^24: kept.
// CHECK-LABEL: func.func @cast_i32_f32_i32_stays(
// CHECK-NEXT:    %0 = spyre.cast %x : tensor<4xi32> -> tensor<4xf32>
// CHECK-NEXT:    %1 = spyre.cast %0 : tensor<4xf32> -> tensor<4xi32>
// CHECK-NEXT:    func.return %1 : tensor<4xi32>
// CHECK-NEXT:  }
func.func @cast_i32_f32_i32_stays(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = spyre.cast %x : tensor<4xi32> -> tensor<4xf32>
  %1 = spyre.cast %0 : tensor<4xf32> -> tensor<4xi32>
  func.return %1 : tensor<4xi32>
}

// x * 1 and 1 * x, with 1 a rank-0 `spyre.full` or a splat `spyre.constant`.
// CHECK-LABEL: func.func @mul_one(
// CHECK-NEXT:    func.return %x, %x, %x : tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>
// CHECK-NEXT:  }
func.func @mul_one(%x: tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>) {
  %one = spyre.full {value = 1.0 : f64} : tensor<f16>
  %0 = spyre.mul %x, %one : tensor<4x8xf16>, tensor<f16> -> tensor<4x8xf16>
  %1 = spyre.mul %one, %x : tensor<f16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %ones = spyre.constant dense<1.0> : tensor<8xf16>
  %2 = spyre.mul %x, %ones : tensor<4x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
  func.return %0, %1, %2 : tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>
}

// Integer 1, and i1 `true` (stored as -1 by the dense attribute).
// CHECK-LABEL: func.func @mul_one_int(
// CHECK-NEXT:    func.return %x, %p : tensor<4xi32>, tensor<4xi1>
// CHECK-NEXT:  }
func.func @mul_one_int(%x: tensor<4xi32>, %p: tensor<4xi1>) -> (tensor<4xi32>, tensor<4xi1>) {
  %one = spyre.full {value = 1 : i64} : tensor<4xi32>
  %0 = spyre.mul %one, %x : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %true = spyre.constant dense<true> : tensor<4xi1>
  %1 = spyre.mul %p, %true : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  func.return %0, %1 : tensor<4xi32>, tensor<4xi1>
}

// The 1 broadcasts x to a bigger shape: the mul stays.
// CHECK-LABEL: func.func @mul_one_broadcasts_stays(
// CHECK-NEXT:    %one = spyre.full {value = 1.000000e+00 : f64} : tensor<4x8xf32>
// CHECK-NEXT:    %0 = spyre.mul %x, %one : tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %0 : tensor<4x8xf32>
// CHECK-NEXT:  }
func.func @mul_one_broadcasts_stays(%x: tensor<8xf32>) -> tensor<4x8xf32> {
  %one = spyre.full {value = 1.0 : f64} : tensor<4x8xf32>
  %0 = spyre.mul %x, %one : tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// Not a splat of 1: nothing to fold.
// CHECK-LABEL: func.func @mul_not_one_stays(
// CHECK-NEXT:    %c = spyre.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %0 = spyre.mul %x, %c : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
// CHECK-NEXT:    %two = spyre.full {value = 2.000000e+00 : f64} : tensor<f32>
// CHECK-NEXT:    %1 = spyre.mul %x, %two : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
// CHECK-NEXT:    func.return %0, %1 : tensor<2xf32>, tensor<2xf32>
// CHECK-NEXT:  }
func.func @mul_not_one_stays(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %c = spyre.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = spyre.mul %x, %c : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %two = spyre.full {value = 2.0 : f64} : tensor<f32>
  %1 = spyre.mul %x, %two : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  func.return %0, %1 : tensor<2xf32>, tensor<2xf32>
}

// x / 1 folds; 1 / x does not.
// CHECK-LABEL: func.func @div_one(
// CHECK-NEXT:    %one = spyre.full {value = 1.000000e+00 : f64} : tensor<f32>
// CHECK-NEXT:    %0 = spyre.div %one, %x : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %x, %0 : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT:  }
func.func @div_one(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %one = spyre.full {value = 1.0 : f64} : tensor<f32>
  %0 = spyre.div %x, %one : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %1 = spyre.div %one, %x : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  func.return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// x + 0 and 0 + x on integers.
// CHECK-LABEL: func.func @add_zero_int(
// CHECK-NEXT:    func.return %x, %x : tensor<4xi64>, tensor<4xi64>
// CHECK-NEXT:  }
func.func @add_zero_int(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %zero = spyre.full {value = 0 : i64} : tensor<i64>
  %0 = spyre.add %x, %zero : tensor<4xi64>, tensor<i64> -> tensor<4xi64>
  %1 = spyre.add %zero, %x : tensor<i64>, tensor<4xi64> -> tensor<4xi64>
  func.return %0, %1 : tensor<4xi64>, tensor<4xi64>
}

// On floats only -0.0 is the identity of add: x + 0.0 maps -0.0 to +0.0.
// CHECK-LABEL: func.func @add_zero_float(
// CHECK-NEXT:    %pzero = spyre.full {value = 0.000000e+00 : f64} : tensor<f32>
// CHECK-NEXT:    %0 = spyre.add %x, %pzero : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %x, %x, %0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT:  }
func.func @add_zero_float(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %nzero = spyre.full {value = -0.0 : f64} : tensor<f32>
  %0 = spyre.add %x, %nzero : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %1 = spyre.add %nzero, %x : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  %pzero = spyre.full {value = 0.0 : f64} : tensor<f32>
  %2 = spyre.add %x, %pzero : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  func.return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// x - (+0.0) is x for every float (and x - 0 for ints); 0 - x and x - (-0.0) are not.
// CHECK-LABEL: func.func @sub_zero(
// CHECK-NEXT:    %pzero = spyre.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %0 = spyre.sub %pzero, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    %nzero = spyre.full {value = -0.000000e+00 : f64} : tensor<f32>
// CHECK-NEXT:    %1 = spyre.sub %x, %nzero : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %x, %0, %1, %i : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
// CHECK-NEXT:  }
func.func @sub_zero(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %pzero = spyre.constant dense<0.0> : tensor<4xf32>
  %0 = spyre.sub %x, %pzero : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = spyre.sub %pzero, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %nzero = spyre.full {value = -0.0 : f64} : tensor<f32>
  %2 = spyre.sub %x, %nzero : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %izero = spyre.full {value = 0 : i64} : tensor<i32>
  %3 = spyre.sub %i, %izero : tensor<4xi32>, tensor<i32> -> tensor<4xi32>
  func.return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}

// A broadcast to the input's own shape is the input.
// CHECK-LABEL: func.func @broadcast_same_type(
// CHECK-NEXT:    func.return %x : tensor<4x8xf32>
// CHECK-NEXT:  }
func.func @broadcast_same_type(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = spyre.broadcast_to %x : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// broadcast_to(broadcast_to(x)) is one broadcast_to of x.
// CHECK-LABEL: func.func @broadcast_chain(
// CHECK-NEXT:    %0 = spyre.broadcast_to %x : tensor<8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    func.return %0 : tensor<2x4x8xf32>
// CHECK-NEXT:  }
func.func @broadcast_chain(%x: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %0 = spyre.broadcast_to %x : tensor<8xf32> -> tensor<1x4x8xf32>
  %1 = spyre.broadcast_to %0 : tensor<1x4x8xf32> -> tensor<2x4x8xf32>
  func.return %1 : tensor<2x4x8xf32>
}
