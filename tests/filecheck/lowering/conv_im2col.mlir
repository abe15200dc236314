// RUN: spyre-opt %s -p spyre-stickify,spyre-fuse --split-input-file | filecheck %s
// RUN: spyre-opt %s -p spyre-to-dataflow --split-input-file | filecheck %s --check-prefix=KERNELS

// What lowering/aten_conv.py makes of F.conv2d(x, w, b, stride=2, padding=1) (odd
// channels, 5 and 7: partial sticks) and of a depthwise F.conv2d(x, w, padding=(0, 1),
// dilation=(1, 2), groups=5): pad, channels-last transpose, row indices from iotas, one
// gather of channel rows (the im2col buffer), then one matmul with the bias as its
// epilogue, or a multiply and a sum over the taps.

// CHECK-LABEL: func.func @conv
// CHECK:       dataflow.group @gather_{{[0-9]+}}({{.*}}) {dataflow.kind = "gather", dataflow.row_dims = 2 : i64} : (tensor<143x5xf16{{.*}}>, tensor<30x9xi32{{.*}}>) -> tensor<30x9x5xf16
// CHECK:       dataflow.group @matmul_{{[0-9]+}}({{.*}}, %b1) {dataflow.kind = "matmul"
// CHECK:       spyre.matmul {{.*}} : tensor<30x45xf16{{.*}}>, tensor<45x7xf16{{.*}}> -> tensor<30x7xf16
// CHECK-NEXT:  spyre.add {{.*}} -> tensor<30x7xf16
// KERNELS-LABEL: func.func @conv
// KERNELS:       dataflow.kernel @gather_{{[0-9]+}} cores({{[0-9]+}})
// KERNELS:       dataflow.kernel @matmul_{{[0-9]+}} cores({{[0-9]+}})
builtin.module {
  func.func @conv(%x1: tensor<1x5x9x11xf16>, %w1: tensor<7x5x3x3xf16>, %b1: tensor<7xf16>) -> tensor<1x7x5x6xf16> {
    %0 = spyre.pad %x1 low = [0, 0, 1, 1] high = [0, 0, 1, 1] value = 0.000000e+00 : tensor<1x5x9x11xf16> -> tensor<1x5x11x13xf16>
    %1 = spyre.transpose %0 perm = [0, 2, 3, 1] : tensor<1x5x11x13xf16> -> tensor<1x11x13x5xf16>
    %2 = spyre.iota {dim = 1 : i64, start = 0 : i64, step = 26 : i64} : tensor<1x5x6xi32>
    %3 = spyre.iota {dim = 2 : i64, start = 0 : i64, step = 2 : i64} : tensor<1x5x6xi32>
    %4 = spyre.add %2, %3 : tensor<1x5x6xi32>, tensor<1x5x6xi32> -> tensor<1x5x6xi32>
    %5 = spyre.iota {dim = 0 : i64, start = 0 : i64, step = 13 : i64} : tensor<3x3xi32>
    %6 = spyre.iota {dim = 1 : i64, start = 0 : i64, step = 1 : i64} : tensor<3x3xi32>
    %7 = spyre.add %5, %6 : tensor<3x3xi32>, tensor<3x3xi32> -> tensor<3x3xi32>
    %8 = spyre.reshape %4 : tensor<1x5x6xi32> -> tensor<30x1xi32>
    %9 = spyre.reshape %7 : tensor<3x3xi32> -> tensor<1x9xi32>
    %10 = spyre.add %8, %9 : tensor<30x1xi32>, tensor<1x9xi32> -> tensor<30x9xi32>
    %11 = spyre.reshape %1 : tensor<1x11x13x5xf16> -> tensor<143x5xf16>
    %12 = spyre.gather %11[%10] : tensor<143x5xf16>, tensor<30x9xi32> -> tensor<30x9x5xf16>
    %13 = spyre.reshape %w1 : tensor<7x5x3x3xf16> -> tensor<1x7x5x9xf16>
    %14 = spyre.transpose %13 perm = [0, 3, 2, 1] : tensor<1x7x5x9xf16> -> tensor<1x9x5x7xf16>
    %15 = spyre.reshape %12 : tensor<30x9x5xf16> -> tensor<30x45xf16>
    %16 = spyre.reshape %14 : tensor<1x9x5x7xf16> -> tensor<45x7xf16>
    %17 = spyre.matmul %15, %16 : tensor<30x45xf16>, tensor<45x7xf16> -> tensor<30x7xf16>
    %18 = spyre.add %17, %b1 : tensor<30x7xf16>, tensor<7xf16> -> tensor<30x7xf16>
    %19 = spyre.reshape %18 : tensor<30x7xf16> -> tensor<1x5x6x7xf16>
    %convolution = spyre.transpose %19 perm = [0, 3, 1, 2] : tensor<1x5x6x7xf16> -> tensor<1x7x5x6xf16>
    func.return %convolution : tensor<1x7x5x6xf16>
  }
}

// -----

// CHECK-LABEL: func.func @depthwise
// CHECK:       dataflow.group @gather_{{[0-9]+}}({{.*}}) {dataflow.kind = "gather", dataflow.row_dims = 2 : i64} : (tensor<54x5xf16{{.*}}>, tensor<30x3xi32{{.*}}>) -> tensor<30x3x5xf16
// CHECK:       dataflow.group @rows_{{[0-9]+}}
// CHECK:       spyre.mul {{.*}} : tensor<30x3x5xf16{{.*}}>, tensor<3x5xf16{{.*}}> -> tensor<30x3x5xf16
// CHECK:       spyre.sum {{.*}} dims = [1] : tensor<30x3x5xf16{{.*}}> -> tensor<30x5xf16
// KERNELS-LABEL: func.func @depthwise
// KERNELS:       dataflow.kernel @gather_{{[0-9]+}} cores({{[0-9]+}})
builtin.module {
  func.func @depthwise(%x1: tensor<1x5x6x7xf16>, %w1: tensor<5x1x1x3xf16>) -> tensor<1x5x6x5xf16> {
    %0 = spyre.pad %x1 low = [0, 0, 0, 1] high = [0, 0, 0, 1] value = 0.000000e+00 : tensor<1x5x6x7xf16> -> tensor<1x5x6x9xf16>
    %1 = spyre.transpose %0 perm = [0, 2, 3, 1] : tensor<1x5x6x9xf16> -> tensor<1x6x9x5xf16>
    %2 = spyre.iota {dim = 1 : i64, start = 0 : i64, step = 9 : i64} : tensor<1x6x5xi32>
    %3 = spyre.iota {dim = 2 : i64, start = 0 : i64, step = 1 : i64} : tensor<1x6x5xi32>
    %4 = spyre.add %2, %3 : tensor<1x6x5xi32>, tensor<1x6x5xi32> -> tensor<1x6x5xi32>
    %5 = spyre.iota {dim = 1 : i64, start = 0 : i64, step = 2 : i64} : tensor<1x3xi32>
    %6 = spyre.reshape %4 : tensor<1x6x5xi32> -> tensor<30x1xi32>
    %7 = spyre.add %6, %5 : tensor<30x1xi32>, tensor<1x3xi32> -> tensor<30x3xi32>
    %8 = spyre.reshape %1 : tensor<1x6x9x5xf16> -> tensor<54x5xf16>
    %9 = spyre.gather %8[%7] : tensor<54x5xf16>, tensor<30x3xi32> -> tensor<30x3x5xf16>
    %10 = spyre.reshape %w1 : tensor<5x1x1x3xf16> -> tensor<5x3xf16>
    %11 = spyre.transpose %10 perm = [1, 0] : tensor<5x3xf16> -> tensor<3x5xf16>
    %12 = spyre.mul %9, %11 : tensor<30x3x5xf16>, tensor<3x5xf16> -> tensor<30x3x5xf16>
    %13 = spyre.sum %12 dims = [1] : tensor<30x3x5xf16> -> tensor<30x5xf16>
    %14 = spyre.reshape %13 : tensor<30x5xf16> -> tensor<1x6x5x5xf16>
    %convolution = spyre.transpose %14 perm = [0, 3, 1, 2] : tensor<1x6x5x5xf16> -> tensor<1x5x6x5xf16>
    func.return %convolution : tensor<1x5x6x5xf16>
  }
}
