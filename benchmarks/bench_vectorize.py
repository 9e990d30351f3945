"""Vector-typed storage against scalar access on one device, in one run (a script, not a test).

    .venv/bin/python benchmarks/bench_vectorize.py [--log2n 22] [--repeat 30] [--device cpu]

Workloads: vadd (C = A + B) and scale (B = A * 3) over 2^log2n float32. Each is compiled in
four forms, all with 128 threads per workgroup:
  vector4   4 elements per thread in a T.vectorized(4) loop: VectorTypeRewrite makes the buffers
            float32x4, one OpLoad/OpStore of a vec4 per operand
  unroll4   the same 4 elements per thread through T.unroll(4): 4 scalar accesses per operand
  serial4   the same through T.serial(4): a real loop of scalar accesses
  scalar1   the classic one element per thread (4x as many workgroups)
Every kernel's result is checked against numpy first; then each form's device time (timestamp
queries, --rounds interleaved rounds of --repeat runs) is printed: median and min, the bandwidth
at the median, and both ratios to vector4 (on a busy machine the min ratio is the steadier one).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import vkir  # noqa: E402

THREADS = 128

_BODY = {
    "vadd": ("A: T.Buffer(({n},), \"float32\"), B: T.Buffer(({n},), \"float32\"), "
             "C: T.Buffer(({n},), \"float32\")", "C[{i}] = A[{i}] + B[{i}]"),
    "scale": ("A: T.Buffer(({n},), \"float32\"), B: T.Buffer(({n},), \"float32\")",
              "B[{i}] = A[{i}] * 3.0"),
}


def kernel_source(workload: str, form: str, n: int) -> str:
    """T.prim_func text of `workload` in `form` for n elements (a multiple of 4*THREADS)."""
    params, stmt = _BODY[workload]
    if form == "scalar1":
        loops = [f"for bx in T.thread_binding({n // THREADS}, \"blockIdx.x\"):",
                 f"for tx in T.thread_binding({THREADS}, \"threadIdx.x\"):"]
        index = f"bx * {THREADS} + tx"
    else:
        kind = {"vector4": "vectorized", "unroll4": "unroll", "serial4": "serial"}[form]
        loops = [f"for bx in T.thread_binding({n // (4 * THREADS)}, \"blockIdx.x\"):",
                 f"for tx in T.thread_binding({THREADS}, \"threadIdx.x\"):",
                 f"for v in T.{kind}(4):"]
        index = f"bx * {4 * THREADS} + tx * 4 + v"
    lines = ["@T.prim_func", f"def {workload}_{form}({params.format(n=n)}):"]
    for depth, loop in enumerate(loops, 1):
        lines.append("    " * depth + loop)
    lines.append("    " * (len(loops) + 1) + stmt.format(i=index))
    return "\n".join(lines) + "\n"


def _inputs(workload: str, n: int, rng):
    a = rng.standard_normal(n).astype("float32")
    if workload == "vadd":
        b = rng.standard_normal(n).astype("float32")
        return [a, b, np.zeros(n, "float32")], a + b
    return [a, np.zeros(n, "float32")], a * np.float32(3)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=22)
    parser.add_argument("--repeat", type=int, default=30, help="runs per round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per form")
    parser.add_argument("--device", default=None, help='"cpu"/"lavapipe", "gpu" or an index')
    args = parser.parse_args(argv)

    n = 1 << args.log2n
    assert n % (4 * THREADS) == 0, "2^log2n must be a multiple of 512"
    dev = vkir.device(args.device)
    forms = ("vector4", "unroll4", "serial4", "scalar1")
    rng = np.random.default_rng(0)
    print(f"device: {dev.info.name}   n = 2^{args.log2n} float32   "
          f"{args.rounds} rounds x {args.repeat} runs, median device time")
    rows = []
    for workload in _BODY:
        host, want = _inputs(workload, n, rng)
        kernels = {}
        for form in forms:
            k = vkir.build(vkir.from_script(kernel_source(workload, form, n)), device=dev)
            vec = "OpLoad %v4float" in k.asm
            assert vec == (form == "vector4"), f"{workload}_{form}: vector loads {vec}"
            arrays = [vkir.array(x, device=dev) for x in host]
            k(*arrays)
            np.testing.assert_allclose(arrays[-1].numpy(), want, rtol=1e-6)
            kernels[form] = (k, arrays)
        samples = {form: [] for form in forms}
        for _ in range(args.rounds):
            for form in forms:
                k, arrays = kernels[form]
                samples[form].extend(k.profile(*arrays, repeat=args.repeat).samples)
        nbytes = sum(x.nbytes for x in host)
        base = statistics.median(samples["vector4"])
        base_min = min(samples["vector4"])
        for form in forms:
            t, t_min = statistics.median(samples[form]), min(samples[form])
            rows.append({"workload": workload, "form": form, "median_s": t, "min_s": t_min,
                         "gbps": nbytes / t / 1e9, "ratio_to_vector4": t / base,
                         "min_ratio_to_vector4": t_min / base_min})
    print(f"{'workload':9} {'form':8} {'median ms':>10} {'min ms':>8} {'GB/s':>7} "
          f"{'median / vector4':>17} {'min / vector4':>14}")
    for r in rows:
        print(f"{r['workload']:9} {r['form']:8} {r['median_s'] * 1e3:10.3f} "
              f"{r['min_s'] * 1e3:8.3f} {r['gbps']:7.2f} {r['ratio_to_vector4']:17.2f} "
              f"{r['min_ratio_to_vector4']:14.2f}")
    return rows


if __name__ == "__main__":
    main()
