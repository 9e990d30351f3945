"""Dispatch round-trip latency and cold compile time (a script, not a timed test).

    python benchmarks/bench_latency.py [--repeat N] [--rounds R]

Latency of a one-invocation no-op dispatch (median of R interleaved rounds of N runs) as:
  raw vulkan (wrappers)  vkQueueSubmit + vkWaitForFences + vkResetFences through the `vulkan`
                         package's Python wrappers on a pre-recorded command buffer (the baseline)
  raw vulkan (cffi lib)  the same three calls straight into the loader (the floor)
  runtime Launch.run     vkir.runtime's pre-recorded launch
  vkir kernel call       `kernel(A)` on a device array (argument checks + launch lookup + run)
Cold compile: T.prim_func source text -> ready pipeline for vector add (pipeline caches reset), and
to the end of the first dispatch (lavapipe JIT-compiles at first use).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def raw_submits(dev, launch):
    """`(raw_wrappers, raw_lib, destroy_fence)`: two functions that submit `launch`'s command
    buffer once and wait on a fence with no vkir code in between, through the `vulkan` package's
    wrappers and through its cffi `lib` directly (the baselines vkir's dispatch latency is
    measured against), and the function that frees their fence."""
    import vulkan as vk

    from vkir.runtime._vk import ffi, lib

    fence = vk.vkCreateFence(dev.handle, vk.VkFenceCreateInfo(), None)
    submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[launch.cmd])
    fence_ptr = ffi.new("VkFence*", fence)
    submit_ptr = ffi.addressof(submit)
    u64 = 0xFFFFFFFFFFFFFFFF

    def raw_wrappers():
        vk.vkQueueSubmit(dev.queue, 1, [submit], fence)
        vk.vkWaitForFences(dev.handle, 1, [fence], vk.VK_TRUE, u64)
        vk.vkResetFences(dev.handle, 1, [fence])

    def raw_lib():
        lib.vkQueueSubmit(dev.queue, 1, submit_ptr, fence)
        lib.vkWaitForFences(dev.handle, 1, fence_ptr, 1, u64)
        lib.vkResetFences(dev.handle, 1, fence_ptr)

    return raw_wrappers, raw_lib, lambda: vk.vkDestroyFence(dev.handle, fence, None)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--device", default=None)
    args = ap.parse_args(argv)

    import vkir
    from benchmarks import kernels
    from benchmarks.suite import wall_samples
    from vkir import runtime

    dev = vkir.device(args.device)
    A = vkir.empty(1, "float32", dev)
    k = vkir.build(kernels.noop, device=dev)
    k(A)
    launch = runtime.get_launch(dev, k.pipeline, [A.buffer], b"", (1, 1, 1))

    raw_wrappers, raw_lib, destroy_fence = raw_submits(dev, launch)

    fns = {"raw vulkan (wrappers)": raw_wrappers, "raw vulkan (cffi lib)": raw_lib,
           "runtime Launch.run": launch.run, "vkir kernel call": lambda: k(A)}
    # interleaved rounds: lavapipe's thread wake-up latency drifts over seconds
    rounds = {name: [] for name in fns}
    for _ in range(args.rounds):
        for name, fn in fns.items():
            rounds[name].append(statistics.median(wall_samples(fn, args.repeat, warmup=20)))
    rows = [(name, statistics.median(v)) for name, v in rounds.items()]
    base = rows[0][1]
    print(f"device: {dev.info}")
    print(f"dispatch round trip, 1 invocation, median over {args.rounds} interleaved rounds of "
          f"{args.repeat} runs:")
    for name, t in rows:
        print(f"  {name:<24} {t * 1e6:8.1f} us   {t / base:5.2f}x of raw wrappers")
    destroy_fence()

    # cold compile: script text -> ready pipeline
    def cold(first_dispatch):
        dev.reset_pipeline_cache()
        t0 = time.perf_counter()
        kern = vkir.build(vkir.from_script(kernels.VADD_SOURCE), device=dev)
        if first_dispatch:
            x = vkir.empty(1024, "float32", dev)
            kern(x, x, x)
        return time.perf_counter() - t0

    cold(False)  # the first build in a process also imports the compiler
    to_pipeline = statistics.median(cold(False) for _ in range(20))
    to_dispatch = statistics.median(cold(True) for _ in range(20))
    print("cold compile of vector add (script text, caches reset), median of 20:")
    print(f"  script -> ready pipeline        {to_pipeline * 1e3:7.2f} ms")
    print(f"  script -> first dispatch done   {to_dispatch * 1e3:7.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
