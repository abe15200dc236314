"""One convolution on the simulated card, compiled with torch.compile(backend="spyre").

Prints the simulated time of every kernel the convolution became (lowering/aten_conv.py:
the im2col buffer, the matmul, the output's layout), their sum, and two references from
spyre_ir/cost_model.py: the convolution's roofline (its flops at the fp16 peak or its
minimal bytes - input, weights, output - at the LPDDR5 bandwidth) and the bound of the
im2col form itself (the buffer's and the matmul's bytes at the sustained rates).

    python bench/conv.py [N C H W O K [stride groups]] [--json FILE]
    # default 1 64 56 56 64 3 1 1
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F

import spyre_ir.runtime.backend  # noqa: F401  (registers the backend)
from spyre_ir import cost_model
from spyre_ir.hardware import DEFAULT_CONFIG
from spyre_ir.runtime import telemetry


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", nargs="*", type=int, metavar="N C H W O K [stride groups]",
                        help="the convolution (default 1 64 56 56 64 3 1 1)")  # fmt: skip
    parser.add_argument("--json", help="also write the figures there")
    args = parser.parse_args(argv)
    values = args.shape or [1, 64, 56, 56, 64, 3]
    if len(values) not in (6, 7, 8):
        parser.error("give N C H W O K, optionally followed by the stride and the groups")
    n, c, h, w, o, k = values[:6]
    stride, groups = (values[6:8] + [1, 1])[:2] if len(values) > 6 else (1, 1)
    pad = k // 2
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, c, h, w, generator=g).half()
    weight = (torch.randn(o, c // groups, k, k, generator=g) * (c * k * k // groups) ** -0.5).half()

    def conv(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, weight, stride=stride, padding=pad, groups=groups)

    f = torch.compile(conv, backend="spyre", dynamic=False, options={"strict": True})
    start = time.perf_counter()
    y = f(x, weight)
    print(f"first call (compile + simulate): {time.perf_counter() - start:.1f} s wall")
    ref = conv(x.float(), weight.float())
    print(f"max |card - f32 eager| = {(y.float() - ref).abs().max().item():.4f} "
          f"(max |output| {ref.abs().max().item():.2f})")  # fmt: skip
    with telemetry.recording() as rec:
        f(x, weight)
    report = rec.launches[0].report
    for kernel in report["kernels"]:
        print(f"  {kernel['name']:>12} cores {kernel['cores']:>2}  {kernel['simulated_us']:7.1f} us"
              f"  (roofline {kernel['roofline_us']:6.1f} us, {kernel['bottleneck']})")  # fmt: skip
    shape = cost_model.ConvShape(n, c, h, w, o, k, k, (stride, stride), (pad, pad),
                                 groups=groups)  # fmt: skip
    ideal = cost_model.conv_roofline_seconds(shape, 2, DEFAULT_CONFIG) * 1e6
    form = cost_model.conv_im2col_bound_seconds(shape, 2, DEFAULT_CONFIG) * 1e6
    total = report["simulated_us"]
    print(
        f"conv {n}x{c}x{h}x{w}, {k}x{k}, {o} out, stride {stride}, groups {groups}: "
        f"{total:.1f} us simulated; {shape.flops() / 1e6:.0f} MFLOP"
    )
    print(f"  roofline of the convolution: {ideal:.1f} us ({ideal / total:.1%} of it)")
    print(f"  bound of the im2col form:    {form:.1f} us ({form / total:.1%} of it)")
    if args.json:
        figures = {"conv": values, "simulated_us": total, "roofline_us": ideal,
                   "im2col_bound_us": form,
                   "kernels": [{"name": k["name"], "simulated_us": k["simulated_us"]}
                               for k in report["kernels"]]}  # fmt: skip
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
