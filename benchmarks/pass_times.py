"""CPU seconds of each pass of vkir's default pipeline over a set of real kernels: the vkir.ops
templates (matmul, softmax, layer norm, conv2d, row reductions, cumsum, transpose) at a few
shapes, each lowered `--repeat` times in this process with a timing instrument around every
pass. The host may be loaded: compare the passes' shares and ratios within one run.

    python -m benchmarks.pass_times [--repeat N] [--top K]
"""

from __future__ import annotations

import argparse
import time


def kernels() -> list:
    """The PrimFuncs timed: vkir.ops templates at model-like shapes."""
    from vkir.ops import conv2d, cumsum, layer_norm, matmul, softmax, sum, transpose

    return [matmul.kernel(256, 256, 256), matmul.kernel(64, 1000, 512, bias="n"),
            softmax.kernel(128, 1024), layer_norm.kernel(64, 768),
            conv2d.kernel(1, 64, 56, 56, 64, 3, 3, padding=1),
            conv2d.kernel(1, 128, 56, 56, 256, 1, 1, stride=2),
            sum.kernel(64, 4096), cumsum.kernel(16, 1024, 1),
            transpose.kernel((64, 128, 32), (0, 2, 1))]


class PassTimer:
    """A pipeline instrument adding each pass's CPU seconds to `spent` (pass name -> seconds)."""

    def __init__(self):
        self.spent: dict = {}
        self._start = 0.0

    def before(self, p, func) -> None:
        self._start = time.process_time()

    def after(self, p, func) -> None:
        self.spent[p.name] = self.spent.get(p.name, 0.0) + time.process_time() - self._start


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="lowerings of every kernel")
    ap.add_argument("--top", type=int, default=10, help="passes listed, costliest first")
    args = ap.parse_args(argv)

    import vkir

    funcs = kernels()
    timer = PassTimer()
    total0 = time.process_time()
    for _ in range(args.repeat):
        for func in funcs:
            vkir.lower(func, instruments=(timer,))
    total = time.process_time() - total0
    passes = sum(timer.spent.values())
    print(f"{len(funcs)} kernels x {args.repeat}: lower {total:.3f} cpu_s, passes "
          f"{passes:.3f} cpu_s")
    for name, s in sorted(timer.spent.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {name:28s} {s:8.3f} cpu_s  {100 * s / passes:5.1f}%")


if __name__ == "__main__":
    main()
