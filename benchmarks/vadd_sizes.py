"""vadd bandwidth per size: where the fall after 2^20 elements comes from.

    python -m vkir.benchmarks.vadd_sizes [--min 16] [--max 24] [--repeat 9] [--rounds 3]

For each size 2^min .. 2^max float32, c = a + b on DeviceArrays, timed per call in wall seconds
and in process CPU seconds (every thread: llvmpipe's workers included), each implementation
once per round in rotating order (interleaved, so the host's load falls on all alike):

  numpy         np.add(a, b, out=c) on numpy arrays
  numpy-on-vk   np.add on the DeviceArrays' own memory (host_view): is the memory the cause?
  parallel      `for i in T.parallel(n)` (vkir's automatic launch, symbolic n: on llvmpipe 16
                results per invocation as float32x4, rgba32f texel reads)
  block64       the README's kernel: 64 invocations per workgroup, one element each
  map           vkir.map of an add device function (its flat kernel: 16 results per invocation)
  tuned         benchmarks.kernels.add as `vkir bench` tunes it for the device

Bytes moved are 12 per element; GB/s of wall time and GB per CPU-second are printed side by
side: on a loaded host wall time also counts the time a dispatch waits for a core.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from vkir.examples.demo_kernels import vadd as block64_vadd

from .host_numpy import interleaved

NAMES = ("numpy", "numpy-on-vk", "parallel", "block64", "map", "tuned")
PARALLEL = '''
@T.prim_func
def vadd(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32"),
         c: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        c[i] = a[i] + b[i]
'''


def implementations(vkir, dev, n: int, tuned: bool = True) -> tuple:
    """({name: call}, check) for size `n`: each call runs one c = a + b; `check()` raises
    when a vkir result is not numpy's."""
    from . import kernels

    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    A, B = vkir.array(a, dev), vkir.array(b, dev)
    outs = {name: vkir.empty(n, "float32", dev)
            for name in ("parallel", "block64", "map", "tuned")}
    va, vb, vc = A.host_view(), B.host_view(), vkir.empty(n, "float32", dev).host_view()
    par = vkir.build(vkir.from_script(PARALLEL), device=dev)
    blk = vkir.build(block64_vadd, device=dev)   # README's vadd: 64-wide workgroups
    mapped = vkir.map(kernels.add_elements, device=dev)
    calls = {"numpy": lambda: np.add(a, b, out=c),
             "parallel": lambda: par(A, B, outs["parallel"]),
             "block64": lambda: blk(A, B, outs["block64"]),
             "map": lambda: mapped(A, B, out=outs["map"])}
    if va is not None and vc is not None:
        calls["numpy-on-vk"] = lambda: np.add(va, vb, out=vc)
    if tuned:
        k = kernels.add.build(device=dev, n=n)
        calls["tuned"] = lambda: k(A, B, outs["tuned"])
    else:
        del outs["tuned"]

    def check():
        for name, out in outs.items():
            if not np.array_equal(out.numpy(), a + b):
                raise AssertionError(f"vadd {name} at n={n}: result differs from numpy")

    return calls, check


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min", type=int, default=16)
    ap.add_argument("--max", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default=None)
    ap.add_argument("--no-tuned", action="store_true", help="skip the autotuned kernel")
    args = ap.parse_args(argv)
    import vkir

    dev = vkir.device(args.device)
    print(f"device: {dev.info}")
    print("size   " + "".join(f"{name:>26s}" for name in NAMES))
    print("       " + "".join(f"{'GB/s wall, per CPU-s':>26s}" for _ in NAMES))
    for lg in range(args.min, args.max + 1):
        n = 1 << lg
        calls, check = implementations(vkir, dev, n, tuned=not args.no_tuned)
        got = interleaved(calls, args.repeat, args.rounds)
        check()
        cells = []
        for name in NAMES:
            if name not in got:
                cells.append(f"{'-':>26s}")
                continue
            w, c = got[name]
            cells.append(f"{12 * n / w / 1e9:13.2f},{12 * n / max(c, 1e-9) / 1e9:12.2f}")
        print(f"2^{lg:<4d} " + "".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
