// spyre-decompose-long-rows runs a topk whose row does not fit half of LX in two rounds:
// the row as chunks (a view, the chunk a divisor of the row), the first k of each, then
// the first k of those candidates; argsort adds each chunk's start and picks the
// winners' positions with a one-hot sum. A row that fits, or a full sort, is left alone.

// RUN: spyre-opt %s -p 'spyre-decompose-long-rows{lx-bytes=65536}' | filecheck %s

// CHECK-LABEL: func.func @topk(
func.func @topk(%x: tensor<3x20000xf16>) -> (tensor<3x5xf16>, tensor<3x5xi64>) {
  // CHECK:      %[[CHUNKS:.*]] = spyre.reshape %x : tensor<3x20000xf16> -> tensor<3x25x800xf16>
  // CHECK-NEXT: %[[TOP:.*]] = spyre.sort %[[CHUNKS]] dim = -1 k = 5 descending : tensor<3x25x800xf16> -> tensor<3x25x5xf16>
  // CHECK-NEXT: %[[CANDIDATES:.*]] = spyre.reshape %[[TOP]] : tensor<3x25x5xf16> -> tensor<3x125xf16>
  // CHECK-NEXT: %{{.*}} = spyre.sort %[[CANDIDATES]] dim = -1 k = 5 descending : tensor<3x125xf16> -> tensor<3x5xf16>
  %v = spyre.sort %x dim = -1 k = 5 descending : tensor<3x20000xf16> -> tensor<3x5xf16>
  // CHECK:      spyre.iota {dim = 0 : i64, start = 0 : i64, step = 800 : i64} : tensor<25x1xi64>
  // CHECK:      spyre.argsort %{{.*}} dim = -1 k = 5 descending : tensor<3x125xf16> -> tensor<3x5xi64>
  // CHECK:      spyre.eq %{{.*}}, %{{.*}} : tensor<3x5x1xi64>, tensor<125xi64> -> tensor<3x5x125xi1>
  // CHECK:      spyre.sum %{{.*}} dims = [2] : tensor<3x5x125xi64> -> tensor<3x5xi64>
  %i = spyre.argsort %x dim = -1 k = 5 descending : tensor<3x20000xf16> -> tensor<3x5xi64>
  // CHECK:      spyre.sort %x dim = -1 : tensor<3x20000xf16> -> tensor<3x20000xf16>
  %s = spyre.sort %x dim = -1 : tensor<3x20000xf16> -> tensor<3x20000xf16>
  // CHECK:      spyre.sort %y dim = -1 k = 2 : tensor<8x64xf16> -> tensor<8x2xf16>
  %y = spyre.full {value = 0.0 : f64} : tensor<8x64xf16>
  %t = spyre.sort %y dim = -1 k = 2 : tensor<8x64xf16> -> tensor<8x2xf16>
  func.return %v, %i : tensor<3x5xf16>, tensor<3x5xi64>
}
