"""numpy as the benchmark's host reference, measured two ways, and the BLAS kernel it runs.

Why two ways: a host environment may set OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE (for old
OpenBLAS builds); OpenBLAS then runs the kernel those name (on the project's Zen 5 host: its
Haswell AVX2 kernel, about half the speed per core of the SkylakeX AVX-512 kernel it picks by
itself). The "numpy" rows time numpy as the host environment runs it, in the benchmark's own
process; the "numpy_native" rows time the same call in a child process started with both
variables unset (OpenBLAS reads them once, when it loads, so only a new process can change
them). Neither is changed for tests or CI; the report names the kernel of each
(`blas_kernels`, from threadpoolctl when it is installed).

`python -m vkir.benchmarks.host_numpy WORKLOAD SHAPE REPEAT` is the child: it makes the inputs,
times `repeat` calls after one untimed one, and prints {"wall": [...], "cpu": [...],
"blas": ...} as one JSON line (cpu: process CPU seconds per call, OpenBLAS's threads
included).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np

BLAS_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
CHILD_WORKLOADS = ("matmul", "bmm")


def blas_kernels() -> str:
    """The BLAS libraries numpy loaded, each as "internal_api architecture, N threads" (from
    threadpoolctl), or why they cannot be named."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl is not installed)"
    got = [f"{i.get('internal_api')} {i.get('version') or ''} {i.get('architecture') or '?'}, "
           f"{i.get('num_threads')} threads"
           for i in threadpool_info() if i.get("user_api") == "blas"]
    return "; ".join(" ".join(g.split()) for g in got) or "no BLAS loaded"


def host_setting() -> str:
    """The OpenBLAS variables the host environment sets ("none" when neither is set)."""
    return ", ".join(f"{k}={os.environ[k]}" for k in BLAS_VARIABLES if k in os.environ) or "none"


def native_environment() -> dict:
    """This process's environment without the OpenBLAS variables."""
    return {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES}


def timed_calls(fn, repeat: int, warmup: int = 1) -> tuple:
    """(wall seconds, process CPU seconds) of each of `repeat` calls of `fn`, after `warmup`
    untimed ones. CPU seconds count every thread of the process (a CPU Vulkan driver's worker
    threads, OpenBLAS's), so on a host shared with other jobs they measure the work a call
    costs where wall time measures how long it waited for the cores as well."""
    for _ in range(warmup):
        fn()
    wall, cpu = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def interleaved(calls: dict, repeat: int, rounds: int) -> dict:
    """{name: (median wall s, median CPU s)} per call of each of `calls` (name -> function),
    over `rounds` rounds that time each `repeat` times, the order rotating from round to round so
    that a change of load on the host falls on all of them alike; one warm-up call each first
    (a CPU driver compiles at the first dispatch)."""
    import statistics

    names = list(calls)
    wall = {k: [] for k in names}
    cpu = {k: [] for k in names}
    for f in calls.values():
        f()
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            w, c = timed_calls(calls[name], repeat, warmup=0)
            wall[name] += w
            cpu[name] += c
    return {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in names}


def _call(workload: str, shape):
    """The numpy call of a child workload on inputs made from a fixed seed."""
    if workload not in CHILD_WORKLOADS:
        raise ValueError(f"no numpy child workload {workload!r}; choose from {CHILD_WORKLOADS}")
    rng = np.random.default_rng(0)
    *lead, m, n, k = shape
    a = rng.standard_normal((*lead, m, k), dtype=np.float32)
    b = rng.standard_normal((*lead, k, n), dtype=np.float32)
    return lambda: a @ b


def native_samples(workload: str, shape, repeat: int, timeout: float = 600.0):
    """{"wall": [...], "cpu": [...], "blas": str} of numpy's `workload` (matmul: shape (M, N,
    K); bmm: (batch, M, N, K)) timed in a child process with the OpenBLAS variables unset, or a
    string saying why it could not be measured."""
    cmd = [sys.executable, "-m", "vkir.benchmarks.host_numpy", workload,
           ",".join(str(s) for s in shape), str(repeat)]
    try:
        out = subprocess.run(cmd, env=native_environment(), capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"numpy child process gave no answer within {timeout:g} s"
    if out.returncode:
        tail = " | ".join(out.stderr.strip().splitlines()[-2:])
        return f"numpy child process failed (exit status {out.returncode}): {tail}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    workload, shape, repeat = argv if argv is not None else sys.argv[1:]
    fn = _call(workload, tuple(int(s) for s in shape.split(",")))
    wall, cpu = timed_calls(fn, int(repeat))
    print(json.dumps({"wall": wall, "cpu": cpu, "blas": blas_kernels()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
