"""The benchmark suite behind `vkir bench` (DESIGN section 8).

Each workload runs several ways on the same device in one process: the vkir kernel (a T.prim_func
from kernels.py), the hand-written GLSL reference from shaders/ (compiled by glslang, dispatched by
vkir.runtime) and numpy. Metrics: device_s (timestamp queries), wall_s (host time per call,
submit + wait included), compile_s (script or GLSL source -> ready pipeline, caches reset) and
latency_s (round trip of a one-invocation dispatch). Results print as a table with the ratios
vkir/GLSL and vkir/numpy, and `--json FILE` writes one JSON object per measurement.

The vkir and GLSL device times of a workload are sampled in alternation (`Bench._timed`): on a CPU
device that shares two cores with other processes, timing all vkir runs and then all GLSL runs
let a change of load between the two blocks decide the ratio (the same kernels measured 0.6x to
1.8x of each other from run to run).
"""

from __future__ import annotations

import json
import statistics
import struct
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SHADERS = Path(__file__).resolve().parents[1] / "shaders"
WORKLOADS = ("vadd", "sum", "matmul_1024", "softmax", "latency", "compile")
FULL = {"vadd": 1 << 24, "sum": 1 << 24, "matmul": 1024, "softmax": (4096, 1024)}
QUICK = {"vadd": 1 << 16, "sum": 1 << 16, "matmul": 128, "softmax": (256, 256)}


@dataclass
class Measurement:
    workload: str
    impl: str
    device: str
    metric: str
    median: float
    min: float
    max: float
    n: int
    gflops: float | None = None
    gbps: float | None = None

    def json(self) -> str:
        return json.dumps(self.__dict__)


def _stats(samples):
    return statistics.median(samples), min(samples), max(samples), len(samples)


def wall_samples(fn, repeat, warmup=1):
    """Host seconds of `repeat` calls of `fn`, after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return samples


class Bench:
    """Runs workloads on one device and collects Measurements."""

    def __init__(self, device=None, repeat=None, quick=False):
        import vkir

        self.vkir = vkir
        self.dev = vkir.device(device)
        self.quick = quick
        self.sizes = QUICK if quick else FULL
        self.repeat = repeat or (5 if quick else 20)
        self.results: list[Measurement] = []
        self.rng = np.random.default_rng(0)

    # -- helpers ---------------------------------------------------------------------------
    def add(self, workload, impl, metric, samples, flops=None, nbytes=None):
        med, lo, hi, n = _stats(samples)
        m = Measurement(workload, impl, self.dev.info.name, metric, med, lo, hi, n,
                        None if flops is None else flops / med / 1e9,
                        None if nbytes is None else nbytes / med / 1e9)
        self.results.append(m)
        return m

    def glsl(self, name, bindings, push_size, **defines):
        from vkir import runtime
        from vkir.runtime.glsl import compile_glsl

        words = compile_glsl(SHADERS / f"{name}.comp", defines=defines or None)
        return runtime.get_pipeline(self.dev, words, "main", bindings, push_size)

    def _timed(self, workload, impls, flops=None, nbytes=None):
        """device_s and wall_s of each implementation (`impls`: name -> list of steps, each a
        callable returning a timing), measured in alternation: every round times each
        implementation once, the order rotating from round to round, so that a change of load
        on the machine (a CPU device shares its cores with everything else) falls on all of
        them alike and the ratios compare like with like. A sample times every step of one
        implementation once with timestamp queries (profile with repeat=1) and the host clock
        around all of them."""
        for steps in impls.values():
            for step in steps:
                step()  # warm-up (lavapipe compiles the shader at first use)
        names = list(impls)
        device = {name: [] for name in names}
        wall = {name: [] for name in names}
        for r in range(self.repeat):
            k = r % len(names)
            for name in names[k:] + names[:k]:
                t0 = time.perf_counter()
                device[name].append(sum(step().median for step in impls[name]))
                wall[name].append(time.perf_counter() - t0)
        for name in names:
            self.add(workload, name, "device_s", device[name], flops, nbytes)
            self.add(workload, name, "wall_s", wall[name], flops, nbytes)

    def glsl_steps(self, pipeline, launches):
        """Steps timing GLSL dispatches; `launches` is a list of (arrays, push bytes, groups),
        run in order and measured together."""
        from vkir import runtime

        return [lambda arrs=arrs, p=p, g=g: runtime.profile(
            self.dev, pipeline, [a.buffer for a in arrs], p, g, repeat=1, warmup=0)
            for arrs, p, g in launches]

    def vkir_steps(self, kernel, calls):
        """Steps timing vkir kernel calls (`calls`: a list of argument tuples, run in order)."""
        return [lambda a=a: kernel.profile(*a, repeat=1, warmup=0) for a in calls]

    def check(self, workload, got, want, rtol=1e-4, atol=1e-5):
        if not np.allclose(got, want, rtol=rtol, atol=atol):
            err = float(np.abs(np.asarray(got, np.float64) - want).max())
            raise AssertionError(f"{workload}: result differs from numpy (max abs err {err:.3g})")

    # -- workloads -------------------------------------------------------------------------
    def vadd(self):
        from . import kernels

        vk, dev, n = self.vkir, self.dev, self.sizes["vadd"]
        a, b = self.rng.random(n, dtype=np.float32), self.rng.random(n, dtype=np.float32)
        A, B = vk.array(a, dev), vk.array(b, dev)
        C1, C2 = vk.empty(n, "float32", dev), vk.empty(n, "float32", dev)
        nbytes = 12 * n
        k = vk.build(kernels.vadd4, device=dev)
        pipe = self.glsl("vadd", (0, 1, 2), 4, WG=256)
        self._timed("vadd", {
            "vkir": self.vkir_steps(k, [(A, B, C1)]),
            "glsl": self.glsl_steps(pipe, [([A, B, C2], struct.pack("<I", n),
                                            ((n + 1023) // 1024, 1, 1))]),
        }, nbytes=nbytes)
        self.check("vadd vkir", C1.numpy(), a + b)
        self.check("vadd glsl", C2.numpy(), a + b)
        c = np.empty_like(a)
        self.add("vadd", "numpy", "wall_s", wall_samples(lambda: np.add(a, b, out=c), self.repeat), nbytes=nbytes)

    def sum(self):
        from . import kernels

        vk, dev, n, m = self.vkir, self.dev, self.sizes["sum"], 256
        x = self.rng.random(n, dtype=np.float32)
        want = float(x.astype(np.float64).sum())
        X = vk.array(x, dev)
        P, S = vk.empty(m, "float32", dev), vk.empty(1, "float32", dev)
        k = vk.build(kernels.block_sum, device=dev)
        pipe = self.glsl("sum", (0, 1), 4, WG=128)
        P2, S2 = vk.empty(m, "float32", dev), vk.empty(1, "float32", dev)
        self._timed("sum", {
            "vkir": self.vkir_steps(k, [(X, P), (P, S)]),
            "glsl": self.glsl_steps(pipe, [([X, P2], struct.pack("<I", n), (m, 1, 1)),
                                           ([P2, S2], struct.pack("<I", m), (1, 1, 1))]),
        }, nbytes=4 * n)
        self.check("sum vkir", S.numpy()[0], want, rtol=1e-5)
        self.check("sum glsl", S2.numpy()[0], want, rtol=1e-5)
        self.add("sum", "numpy", "wall_s", wall_samples(lambda: x.sum(), self.repeat), nbytes=4 * n)

    def matmul_1024(self):
        from . import kernels

        vk, dev, s = self.vkir, self.dev, self.sizes["matmul"]
        a = self.rng.standard_normal((s, s), dtype=np.float32)
        b = self.rng.standard_normal((s, s), dtype=np.float32)
        want = a.astype(np.float64) @ b.astype(np.float64)
        A, B = vk.array(a, dev), vk.array(b, dev)
        C1, C2 = vk.empty((s, s), "float32", dev), vk.empty((s, s), "float32", dev)
        flops = 2.0 * s ** 3
        repeat = self.repeat
        if not self.quick:
            self.repeat = min(repeat, 3)  # seconds per run on a CPU device
        try:
            k = vk.build(kernels.matmul, device=dev)
            pipe = self.glsl("matmul", (0, 1, 2), 12)
            g = (s + 15) // 16
            self._timed("matmul_1024", {
                "vkir": self.vkir_steps(k, [(A, B, C1)]),
                "glsl": self.glsl_steps(pipe, [([A, B, C2], struct.pack("<III", s, s, s),
                                                (g, g, 1))]),
            }, flops=flops)
            self.check("matmul vkir", C1.numpy(), want, rtol=1e-3, atol=1e-3)
            self.check("matmul glsl", C2.numpy(), want, rtol=1e-3, atol=1e-3)
            self.add("matmul_1024", "numpy", "wall_s", wall_samples(lambda: a @ b, self.repeat), flops=flops)
        finally:
            self.repeat = repeat

    def softmax(self):
        from . import kernels

        vk, dev = self.vkir, self.dev
        rows, cols = self.sizes["softmax"]
        x = self.rng.standard_normal((rows, cols), dtype=np.float32)

        def np_softmax():
            e = np.exp(x - x.max(axis=1, keepdims=True))
            e /= e.sum(axis=1, keepdims=True)
            return e

        want = np_softmax()
        X = vk.array(x, dev)
        Y1, Y2 = vk.empty((rows, cols), "float32", dev), vk.empty((rows, cols), "float32", dev)
        nbytes = 8 * rows * cols
        k = vk.build(kernels.softmax, device=dev)
        pipe = self.glsl("softmax", (0, 1), 8, WG=256)
        self._timed("softmax", {
            "vkir": self.vkir_steps(k, [(X, Y1)]),
            "glsl": self.glsl_steps(pipe, [([X, Y2], struct.pack("<II", rows, cols),
                                            (rows, 1, 1))]),
        }, nbytes=nbytes)
        self.check("softmax vkir", Y1.numpy(), want, rtol=1e-4, atol=1e-6)
        self.check("softmax glsl", Y2.numpy(), want, rtol=1e-4, atol=1e-6)
        self.add("softmax", "numpy", "wall_s", wall_samples(np_softmax, self.repeat), nbytes=nbytes)

    def latency(self):
        from vkir import runtime

        from . import kernels

        vk, dev = self.vkir, self.dev
        repeat = max(200, self.repeat * 20)
        A = vk.empty(1, "float32", dev)
        k = vk.build(kernels.noop, device=dev)
        self.add("latency", "vkir", "latency_s", wall_samples(lambda: k(A), repeat, warmup=20))
        pipe = self.glsl("noop", (0,), 0)
        launch = runtime.get_launch(dev, pipe, [A.buffer], b"", (1, 1, 1))
        self.add("latency", "glsl", "latency_s", wall_samples(launch.run, repeat, warmup=20))
        a = np.zeros(1, np.float32)
        self.add("latency", "numpy", "latency_s", wall_samples(lambda: np.add(a, 0, out=a), repeat, warmup=20))

    def compile(self):
        from vkir import runtime
        from vkir.runtime.glsl import compile_glsl

        from . import kernels

        vk, dev = self.vkir, self.dev
        repeat = max(5, self.repeat)

        def vkir_cold():
            dev.reset_pipeline_cache()
            t0 = time.perf_counter()
            vk.build(vk.from_script(kernels.VADD_SOURCE), device=dev)
            return time.perf_counter() - t0

        def glsl_cold():
            dev.reset_pipeline_cache()
            t0 = time.perf_counter()
            words = compile_glsl(SHADERS / "vadd.comp", defines={"WG": 64})
            runtime.get_pipeline(dev, words, "main", (0, 1, 2), 4)
            return time.perf_counter() - t0

        vkir_cold()  # first use in the process imports the compiler: not part of compile time
        self.add("compile", "vkir", "compile_s", [vkir_cold() for _ in range(repeat)])
        self.add("compile", "glsl", "compile_s", [glsl_cold() for _ in range(repeat)])


def format_table(results: list[Measurement]) -> str:
    rows = {}
    for m in results:
        rows.setdefault((m.workload, m.metric), {})[m.impl] = m
    head = ("workload", "metric", "vkir", "glsl", "numpy", "vkir/GLSL", "vkir/numpy", "vkir rate")
    body = []

    def fmt(m):
        if m is None:
            return "-"
        v = m.median
        return f"{v * 1e3:.3f} ms" if v >= 1e-3 else f"{v * 1e6:.1f} us"

    for (workload, metric), impls in rows.items():
        v, g, n = impls.get("vkir"), impls.get("glsl"), impls.get("numpy")
        rate = ""
        if v is not None and v.gflops is not None:
            rate = f"{v.gflops:.1f} GFLOP/s"
        elif v is not None and v.gbps is not None:
            rate = f"{v.gbps:.1f} GB/s"
        body.append((workload, metric, fmt(v), fmt(g), fmt(n),
                     f"{v.median / g.median:.2f}" if v and g else "-",
                     f"{v.median / n.median:.2f}" if v and n else "-", rate))
    widths = [max(len(str(r[i])) for r in (head, *body)) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in (head, *body)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(device=None, workloads=None, repeat=None, json_path=None, quick=False) -> int:
    names = workloads or list(WORKLOADS)
    unknown = [w for w in names if w not in WORKLOADS]
    if unknown:
        from vkir.errors import ArgumentError

        raise ArgumentError(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    bench = Bench(device, repeat, quick)
    print(f"device: {bench.dev.info}   repeat: {bench.repeat}{'   (quick sizes)' if quick else ''}")
    for name in names:
        t0 = time.perf_counter()
        getattr(bench, name)()
        print(f"  {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    print(format_table(bench.results))
    if json_path:
        with open(json_path, "w") as f:
            for m in bench.results:
                f.write(m.json() + "\n")
        print(f"wrote {len(bench.results)} measurements to {json_path}")
    return 0
