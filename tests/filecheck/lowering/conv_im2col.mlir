// RUN: spyre-opt %s -p spyre-stickify,spyre-fuse --split-input-file | filecheck %s
// RUN: spyre-opt %s -p spyre-to-dataflow --split-input-file | filecheck %s --check-prefix=KERNELS

// What lowering/aten_conv.py makes of F.conv2d(x, w, b, stride=2, padding=1) (odd
// channels, 5 and 7, and widths: partial sticks) and of a depthwise
// F.conv2d(x, w, padding=(0, 1), dilation=(1, 2), groups=5): the im2col buffer (pad,
// one strided slice per tap, stacked) fused into one row kernel over (N, C), then the
// weights times the buffer (the output positions on the stick), or a multiply by the
// tap weights and a sum over the taps.

// CHECK-LABEL: func.func @conv
// CHECK:       dataflow.group @rows_0(%x1) {dataflow.kind = "rows", dataflow.row_dims = 2 : i64}
// CHECK:       spyre.pad
// CHECK-COUNT-9: spyre.slice {{.*}} steps = [1, 1, 2, 2]
// CHECK:       spyre.concat {{.*}} dim = 2
// CHECK:       dataflow.group @matmul_1({{.*}}) {dataflow.kind = "matmul"
// CHECK:       spyre.matmul {{.*}} : tensor<7x45xf16{{.*}}>, tensor<1x45x30xf16{{.*}}> -> tensor<1x7x30xf16
// KERNELS-LABEL: func.func @conv
// KERNELS:       dataflow.kernel @rows_0 cores({{[0-9]+}})
// KERNELS:       dataflow.kernel @matmul_1 cores({{[0-9]+}})
builtin.module {
  func.func @conv(%x1: tensor<1x5x9x11xf16>, %w1: tensor<7x5x3x3xf16>, %b1: tensor<7xf16>) -> tensor<1x7x5x6xf16> {
    %0 = spyre.pad %x1 low = [0, 0, 1, 1] high = [0, 0, 1, 1] value = 0.000000e+00 : tensor<1x5x9x11xf16> -> tensor<1x5x11x13xf16>
    %1 = spyre.slice %0 starts = [0, 0, 0, 0] stops = [1, 5, 9, 11] steps = [1, 1, 2, 2] : tensor<1x5x11x13xf16> -> tensor<1x5x5x6xf16>
    %2 = spyre.reshape %1 : tensor<1x5x5x6xf16> -> tensor<1x5x1x30xf16>
    %3 = spyre.slice %0 starts = [0, 0, 0, 1] stops = [1, 5, 9, 12] steps = [1, 1, 2, 2] : tensor<1x5x11x13xf16> -> tensor<1x5x5x6xf16>
    %4 = spyre.reshape %3 : tensor<1x5x5x6xf16> -> tensor<1x5x1x30xf16>
    %5 = spyre.slice %0 starts = [0, 0, 0, 2] stops = [1, 5, 9, 13] steps = [1, 1, 2, 2] : tensor<1x5x11x13xf16> -> tensor<1x5x5x6xf16>
    %6 = spyre.reshape %5 : tensor<1x5x5x6xf16> -> tensor<1x5x1x30xf16>
    %7 = spyre.slice %0 starts = [0, 0, 1, 0] stops = [1, 5, 10, 11] steps = [1, 1, 2, 2] : tensor<1x5x11x13xf16> -> tensor<1x5x5x6xf16>
    %8 = spyre.reshape %7 : tensor<1x5x5x6xf16> -> tensor<1x5x1x30xf16>
    %9 = spyre.slice %0 starts = [0, 0, 1, 1] stops = [1, 5, 10, 12] steps = [1, 1, 2, 2] : tensor<1x5x11x13xf16> -> tensor<1x5x5x6xf16>
    %10 = spyre.reshape %9 : tensor<1x5x5x6xf16> -> tensor<1x5x1x30xf16>
    %11 = spyre.slice %0 starts = [0, 0, 1, 2] stops = [1, 5, 10, 13] steps = [1, 1, 2, 2] : tensor<1x5x11x13xf16> -> tensor<1x5x5x6xf16>
    %12 = spyre.reshape %11 : tensor<1x5x5x6xf16> -> tensor<1x5x1x30xf16>
    %13 = spyre.slice %0 starts = [0, 0, 2, 0] stops = [1, 5, 11, 11] steps = [1, 1, 2, 2] : tensor<1x5x11x13xf16> -> tensor<1x5x5x6xf16>
    %14 = spyre.reshape %13 : tensor<1x5x5x6xf16> -> tensor<1x5x1x30xf16>
    %15 = spyre.slice %0 starts = [0, 0, 2, 1] stops = [1, 5, 11, 12] steps = [1, 1, 2, 2] : tensor<1x5x11x13xf16> -> tensor<1x5x5x6xf16>
    %16 = spyre.reshape %15 : tensor<1x5x5x6xf16> -> tensor<1x5x1x30xf16>
    %17 = spyre.slice %0 starts = [0, 0, 2, 2] stops = [1, 5, 11, 13] steps = [1, 1, 2, 2] : tensor<1x5x11x13xf16> -> tensor<1x5x5x6xf16>
    %18 = spyre.reshape %17 : tensor<1x5x5x6xf16> -> tensor<1x5x1x30xf16>
    %19 = spyre.concat %2, %4, %6, %8, %10, %12, %14, %16, %18 dim = 2 : tensor<1x5x1x30xf16>, tensor<1x5x1x30xf16>, tensor<1x5x1x30xf16>, tensor<1x5x1x30xf16>, tensor<1x5x1x30xf16>, tensor<1x5x1x30xf16>, tensor<1x5x1x30xf16>, tensor<1x5x1x30xf16>, tensor<1x5x1x30xf16> -> tensor<1x5x9x30xf16>
    %20 = spyre.reshape %w1 : tensor<7x5x3x3xf16> -> tensor<7x45xf16>
    %21 = spyre.reshape %19 : tensor<1x5x9x30xf16> -> tensor<1x45x30xf16>
    %22 = spyre.matmul %20, %21 : tensor<7x45xf16>, tensor<1x45x30xf16> -> tensor<1x7x30xf16>
    %23 = spyre.reshape %b1 : tensor<7xf16> -> tensor<7x1xf16>
    %24 = spyre.add %22, %23 : tensor<1x7x30xf16>, tensor<7x1xf16> -> tensor<1x7x30xf16>
    %convolution = spyre.reshape %24 : tensor<1x7x30xf16> -> tensor<1x7x5x6xf16>
    func.return %convolution : tensor<1x7x5x6xf16>
  }
}

// -----

// CHECK-LABEL: func.func @depthwise
// CHECK-COUNT-3: spyre.slice {{.*}} steps = [1, 1, 1, 1]
// CHECK:       spyre.mul {{.*}} : tensor<1x5x3x30xf16{{.*}}>, tensor<5x3x1xf16{{.*}}> -> tensor<1x5x3x30xf16
// CHECK:       spyre.sum {{.*}} dims = [2] : tensor<1x5x3x30xf16{{.*}}> -> tensor<1x5x30xf16
// KERNELS-LABEL: func.func @depthwise
// KERNELS-NOT:   spyre.matmul
builtin.module {
  func.func @depthwise(%x1: tensor<1x5x6x7xf16>, %w1: tensor<5x1x1x3xf16>) -> tensor<1x5x6x5xf16> {
    %0 = spyre.pad %x1 low = [0, 0, 0, 1] high = [0, 0, 0, 1] value = 0.000000e+00 : tensor<1x5x6x7xf16> -> tensor<1x5x6x9xf16>
    %1 = spyre.slice %0 starts = [0, 0, 0, 0] stops = [1, 5, 6, 5] steps = [1, 1, 1, 1] : tensor<1x5x6x9xf16> -> tensor<1x5x6x5xf16>
    %2 = spyre.reshape %1 : tensor<1x5x6x5xf16> -> tensor<1x5x1x30xf16>
    %3 = spyre.slice %0 starts = [0, 0, 0, 2] stops = [1, 5, 6, 7] steps = [1, 1, 1, 1] : tensor<1x5x6x9xf16> -> tensor<1x5x6x5xf16>
    %4 = spyre.reshape %3 : tensor<1x5x6x5xf16> -> tensor<1x5x1x30xf16>
    %5 = spyre.slice %0 starts = [0, 0, 0, 4] stops = [1, 5, 6, 9] steps = [1, 1, 1, 1] : tensor<1x5x6x9xf16> -> tensor<1x5x6x5xf16>
    %6 = spyre.reshape %5 : tensor<1x5x6x5xf16> -> tensor<1x5x1x30xf16>
    %7 = spyre.concat %2, %4, %6 dim = 2 : tensor<1x5x1x30xf16>, tensor<1x5x1x30xf16>, tensor<1x5x1x30xf16> -> tensor<1x5x3x30xf16>
    %8 = spyre.reshape %w1 : tensor<5x1x1x3xf16> -> tensor<5x3x1xf16>
    %9 = spyre.mul %7, %8 : tensor<1x5x3x30xf16>, tensor<5x3x1xf16> -> tensor<1x5x3x30xf16>
    %10 = spyre.sum %9 dims = [2] : tensor<1x5x3x30xf16> -> tensor<1x5x30xf16>
    %convolution = spyre.reshape %10 : tensor<1x5x30xf16> -> tensor<1x5x6x5xf16>
    func.return %convolution : tensor<1x5x6x5xf16>
  }
}
