"""MetaSchedule on vkir: `ms.tune_tir` for `vkir.tvm.target()` with vkir's builder and runner
(vkir.tvm.tuning: worker processes that build with vkir and time candidates on the vkir device),
against dlight's default schedule of the same matmul, both run through `tvm.compile` on the
same device and checked against numpy.

    python -m benchmarks.tvm_tuning [--n 256] [--trials 32] [--repeat 20]

Needs the `vkir[tvm]` extra. MetaSchedule's workers import TVM's tensor intrinsics once per
batch of builds (tens of seconds on a busy machine): a run takes minutes.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np


def _timed(ex, args, out, repeat: int) -> float:
    import vkir

    ex["main"](*args, out)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        ex["main"](*args, out)
        vkir.tvm.numpy(out)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--trials", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=20)
    opts = parser.parse_args(argv)
    import tvm
    from tvm import te
    from tvm.s_tir import meta_schedule as ms

    import vkir

    n = opts.n
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    func = te.create_prim_func([A, B, C])
    dev = vkir.device()
    vkir.tvm.install(dev)
    tgt = vkir.tvm.target(dev)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        db = ms.tune_tir(tvm.IRModule({"main": func}), target=tgt, work_dir=work,
                         max_trials_global=opts.trials, num_trials_per_iter=min(16, opts.trials),
                         builder=vkir.tvm.tuning.builder(), runner=vkir.tvm.tuning.runner())
        sch = db.query_schedule(tvm.IRModule({"main": func}), target=tgt, workload_name="main")
    tuning = time.perf_counter() - t0
    if sch is None:
        raise SystemExit("MetaSchedule found no valid schedule")
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    args = [vkir.tvm.tensor(x, device=dev) for x in (a, b)]
    out = vkir.tvm.empty((n, n), "float32", device=dev)
    print(f"device: {dev.info.name}; matmul {n}^3; MetaSchedule: {opts.trials} trials in "
          f"{tuning:.0f} s")
    for name, mod in (("dlight", vkir.tvm.dlight(func, dev)), ("MetaSchedule", sch.mod)):
        ex = tvm.compile(mod, target=tgt)
        ex["main"](*args, out)
        np.testing.assert_allclose(vkir.tvm.numpy(out), a.astype(np.float64) @ b,
                                   rtol=1e-3, atol=1e-3)
        print(f"{name:14} {_timed(ex, args, out, opts.repeat) * 1e3:9.3f} ms")


if __name__ == "__main__":
    main()
