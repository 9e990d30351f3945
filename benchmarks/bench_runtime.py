"""Whole-program runtime costs, measured in one process on one device (a script, not a test).

    python benchmarks/bench_runtime.py [--device SEL] [--rounds R]

1. A chain of 100 saxpy steps (y = a * x + y) on 2^16 (and 2^10) float32: 100 separate kernel
   calls (each one submit + wait) against one sequence (recorded once, replayed with
   `seq.run().wait()`), and against recording it anew every time; with the device time of the
   dispatches themselves (timestamps), which no way of submitting them can go below.
2. 10,000 allocations and frees of 4 KiB arrays (`vkir.empty(1024)`, dropped at once):
   sub-allocated against one VkDeviceMemory each (`device.suballoc_max_bytes = 0`).
3. Dispatch latency of a one-invocation kernel: `k(A)` against a raw `vulkan`-package
   vkQueueSubmit + vkWaitForFences + vkResetFences of the same pre-recorded command buffer.
Every figure is the median of R interleaved rounds; ratios compare figures of this run only.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vkir import T  # noqa: E402


@T.prim_func
def saxpy(x: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32"), a: T.float32):
    for bx in T.thread_binding((n + 255) // 256, "blockIdx.x"):
        for tx in T.thread_binding(256, "threadIdx.x"):
            i = bx * 256 + tx
            if i < n:
                y[i] = a * x[i] + y[i]


def _median_of_rounds(fns: dict, rounds: int) -> dict:
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
    return {name: statistics.median(v) for name, v in samples.items()}


def bench_chain(dev, rounds: int, steps: int = 100, n: int = 1 << 16):
    import numpy as np

    import vkir

    k = vkir.build(saxpy, device=dev)
    X = vkir.array(np.ones(n, np.float32), device=dev)
    Y = vkir.zeros(n, device=dev)

    def separate():
        for _ in range(steps):
            k(X, Y, 0.5)

    with vkir.sequence(device=dev) as seq:
        for _ in range(steps):
            k(X, Y, 0.5)
    seq.wait()

    def replay():
        seq.run().wait()

    def record_and_run():
        with vkir.sequence(device=dev) as s:
            for _ in range(steps):
                k(X, Y, 0.5)
        s.wait()

    separate()
    t = _median_of_rounds({"separate": separate, "replay": replay, "record": record_and_run}, rounds)
    print(f"chain of {steps} saxpy dispatches on {n} float32 (median of {rounds} rounds):")
    print(f"  {steps} separate calls           {t['separate'] * 1e3:8.2f} ms")
    print(f"  one sequence, replayed        {t['replay'] * 1e3:8.2f} ms   "
          f"{t['separate'] / t['replay']:5.1f}x fewer seconds")
    print(f"  one sequence, recorded + run  {t['record'] * 1e3:8.2f} ms   "
          f"{t['separate'] / t['record']:5.1f}x fewer seconds")
    device = seq.profile().total   # the dispatches alone, from timestamps: the floor
    print(f"  device time of the {steps} dispatches (timestamps): {device * 1e3:8.2f} ms; "
          f"overhead per dispatch: separate {(t['separate'] - device) / steps * 1e6:6.1f} us, "
          f"sequence {(t['replay'] - device) / steps * 1e6:6.1f} us")
    print(f"  barriers in the sequence: {seq.barriers} (each step reads the previous y)")
    return t


def bench_alloc(dev, rounds: int, count: int = 10_000):
    import vkir

    saved = dev.suballoc_max_bytes

    def churn(limit):
        def run():
            dev.suballoc_max_bytes = limit
            try:
                for _ in range(count):
                    a = vkir.empty(1024, "float32", device=dev)
                    del a
                dev.collect()
            finally:
                dev.suballoc_max_bytes = saved
        return run

    gc.collect()
    t = _median_of_rounds({"sub": churn(None), "dedicated": churn(0)}, rounds)
    print(f"{count} allocations + frees of 4 KiB arrays (median of {rounds} rounds):")
    print(f"  one VkDeviceMemory each       {t['dedicated'] * 1e3:8.1f} ms  "
          f"({t['dedicated'] / count * 1e6:6.1f} us per array)")
    print(f"  sub-allocated                 {t['sub'] * 1e3:8.1f} ms  "
          f"({t['sub'] / count * 1e6:6.1f} us per array)   {t['dedicated'] / t['sub']:5.1f}x faster")
    return t


def bench_latency(dev, rounds: int, repeat: int = 300):
    import vkir
    from benchmarks import kernels
    from benchmarks.bench_latency import raw_submits
    from vkir import runtime

    A = vkir.empty(1, "float32", dev)
    k = vkir.build(kernels.noop, device=dev)
    k(A)
    launch = runtime.get_launch(dev, k.pipeline, [A.buffer], b"", (1, 1, 1))
    wrapper_once, lib_once, destroy_fence = raw_submits(dev, launch)

    def raw_wrappers():
        for _ in range(repeat):
            wrapper_once()

    def raw_lib():
        for _ in range(repeat):
            lib_once()

    def kernel_call():
        for _ in range(repeat):
            k(A)

    def launch_wait():
        for _ in range(repeat):
            k.launch(A).wait()

    t = _median_of_rounds({"wrappers": raw_wrappers, "lib": raw_lib, "call": kernel_call,
                           "launch": launch_wait}, rounds)
    destroy_fence()
    base = t["wrappers"]
    print(f"dispatch latency, one invocation (median of {rounds} rounds of {repeat}):")
    for name, label in (("wrappers", "raw vulkan (wrappers)"), ("lib", "raw vulkan (cffi lib)"),
                        ("call", "vkir kernel call k(A)"), ("launch", "k.launch(A).wait()")):
        print(f"  {label:<28} {t[name] / repeat * 1e6:8.1f} us   {t[name] / base:5.2f}x of raw wrappers")
    return t


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)

    import vkir

    dev = vkir.device(args.device)
    print(f"device: {dev.info}")
    bench_chain(dev, args.rounds)
    bench_chain(dev, args.rounds, n=1 << 10)
    bench_alloc(dev, max(3, args.rounds // 2))
    bench_latency(dev, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
