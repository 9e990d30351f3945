"""Software pipelining on a Vulkan device: a tiled matmul whose shared-memory tile copies are
pipelined with stages [0, 0, 1] (double buffered, async stage 0), against the same kernel without
pipelining (copy, barrier, compute, barrier), measured in one run on one device.

    python benchmarks/bench_pipeline.py [--n 256] [--tile 16] [--repeat 10] [--device cpu]

Vulkan has no asynchronous copy, so LowerAsync makes the copies synchronous; what pipelining buys
is synchronisation: the double-buffered loop needs one workgroup barrier per k-tile where the
unpipelined one needs two. Both kernels are checked against numpy before timing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_MATMUL = '''
@T.prim_func
def {name}(A: T.Buffer(({n}, {n}), "float32"), B: T.Buffer(({n}, {n}), "float32"),
           C: T.Buffer(({n}, {n}), "float32")):
    for by in T.thread_binding({groups}, "blockIdx.y"):
        for bx in T.thread_binding({groups}, "blockIdx.x"):
            for ty in T.thread_binding({tile}, "threadIdx.y"):
                for tx in T.thread_binding({tile}, "threadIdx.x"):
                    A_sh = T.alloc_buffer(({tile}, {tile}), "float32", scope="shared")
                    B_sh = T.alloc_buffer(({tile}, {tile}), "float32", scope="shared")
                    acc = T.alloc_buffer((1,), "float32", scope="local")
                    acc[0] = T.float32(0)
                    for ko in T.serial({groups}{annotations}):
                        A_sh[ty, tx] = A[by * {tile} + ty, ko * {tile} + tx]
                        B_sh[ty, tx] = B[ko * {tile} + ty, bx * {tile} + tx]{barrier}
                        for kk in T.serial({tile}):
                            acc[0] = acc[0] + A_sh[ty, kk] * B_sh[kk, tx]{barrier}
                    C[by * {tile} + ty, bx * {tile} + tx] = acc[0]
'''

PIPELINE = (', annotations={"software_pipeline_stage": [0, 0, 1], '
            '"software_pipeline_order": [0, 1, 2], "software_pipeline_async_stages": [0]}')


def matmul_kernels(n: int = 256, tile: int = 16):
    """(pipelined, unpipelined) tiled matmul PrimFuncs for n x n float32 matrices."""
    from vkir import from_script

    assert n % tile == 0, "n must be a multiple of the tile"
    common = dict(n=n, tile=tile, groups=n // tile)
    pipelined = from_script(_MATMUL.format(name="matmul_pipelined", annotations=PIPELINE,
                                           barrier="", **common))
    plain = from_script(_MATMUL.format(
        name="matmul_plain", annotations="",
        barrier="\n" + " " * 24 + "T.barrier()", **common))
    return pipelined, plain


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--tile", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per kernel per round")
    ap.add_argument("--rounds", type=int, default=4, help="interleaved rounds (noise control)")
    ap.add_argument("--device", default=None)
    args = ap.parse_args(argv)

    import statistics

    import numpy as np

    import vkir

    dev = vkir.device(args.device)
    pipelined, plain = matmul_kernels(args.n, args.tile)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((args.n, args.n)).astype("float32")
    b = rng.standard_normal((args.n, args.n)).astype("float32")
    want = a @ b
    A, B = vkir.array(a, device=dev), vkir.array(b, device=dev)
    kernels = {}
    for label, func in (("pipelined [0,0,1]", pipelined), ("unpipelined", plain)):
        k = vkir.build(func, device=dev)
        C = vkir.empty((args.n, args.n), "float32", device=dev)
        k(A, B, C)
        np.testing.assert_allclose(C.numpy(), want, rtol=1e-3, atol=1e-3)
        kernels[label] = (k, C)

    samples = {label: [] for label in kernels}
    ratios = []
    source = None
    for _ in range(args.rounds):  # alternate the kernels so that load changes hit both alike
        medians = {}
        for label, (k, C) in kernels.items():
            p = k.profile(A, B, C, repeat=args.repeat)
            samples[label].extend(p.samples or (p.median,))
            medians[label] = p.median
            source = p.source
        ratios.append(medians["pipelined [0,0,1]"] / medians["unpipelined"])

    flops = 2.0 * args.n ** 3
    tiles = args.n // args.tile
    print(f"matmul {args.n}x{args.n}x{args.n} float32, {args.tile}x{args.tile} tiles "
          f"({tiles} k-tiles), device: {dev.info.name}, {args.rounds} rounds x {args.repeat} runs")
    print(f"{'kernel':<20}{'median ms':>11}{'min ms':>9}{'max ms':>9}{'GFLOP/s':>9}"
          f"{'barriers/workgroup':>20}")
    per_group = {"pipelined [0,0,1]": tiles, "unpipelined": 2 * tiles}
    for label, xs in samples.items():
        med = statistics.median(xs)
        print(f"{label:<20}{med * 1e3:>11.3f}{min(xs) * 1e3:>9.3f}{max(xs) * 1e3:>9.3f}"
              f"{flops / med / 1e9:>9.2f}{per_group[label]:>20}")
    print(f"ratio pipelined/unpipelined device time: median of per-round ratios "
          f"{statistics.median(ratios):.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios)}; "
          f"{source})")
    best = {label: min(xs) for label, xs in samples.items()}
    print(f"ratio of the fastest runs (least disturbed by other load): "
          f"{best['pipelined [0,0,1]'] / best['unpipelined']:.3f}")


if __name__ == "__main__":
    main()
