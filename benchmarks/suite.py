"""The benchmark suite behind `vkir bench` (docs/architecture.md, "Benchmarks").

Each workload runs several ways on the same device in one process: "vkir" (the vkir.ops kernel
template, tuned for the device by vkir.autotune), "vkir_mirror" (a T.prim_func from kernels.py with
the same algorithm as the GLSL reference), "glsl" (the hand-written reference from shaders/,
compiled by glslang, dispatched by vkir.runtime), "numpy", and "iree" (IREE's Vulkan backend,
when it is importable; wall time only, measured in a child process: see peers.py). Metrics: device_s (timestamp queries), wall_s (host time per call,
submit + wait included), compile_s (script or GLSL source -> ready pipeline, caches reset) and
latency_s (round trip of a one-invocation dispatch). Results print as a table with time ratios
(vkir/mirror, vkir/GLSL, vkir/IREE, vkir/numpy; below 1 means vkir is faster), and `--json FILE`
writes one JSON object per measurement, each with the workload's "size".

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

from .host_numpy import timed_calls
from .report import format_table  # noqa: F401  (the table `main` prints; fleet_bench's too)

SHADERS = Path(__file__).resolve().parents[1] / "shaders"
WORKLOADS = ("vadd", "map", "sum", "sum_subgroup", "matmul_1024", "matmul_2048", "peak_fma",
             "softmax", "layer_norm", "conv2d",
             "batched_matmul", "cumsum", "sort", "histogram", "latency", "compile", "interop",
             "images")
FULL = {"vadd": 1 << 24, "map": 1 << 24, "sum": 1 << 24, "matmul": 1024, "matmul2048": 2048, "softmax": (4096, 1024),
        "layer_norm": (4096, 1024), "conv2d": (1, 64, 56, 56, 64, 3), "bmm": (16, 256, 256, 256),
        "cumsum": 1 << 24, "sort": 1 << 20, "histogram": 1 << 24}
QUICK = {"vadd": 1 << 16, "map": 1 << 16, "sum": 1 << 16, "matmul": 128, "matmul2048": 256, "softmax": (256, 256),
         "layer_norm": (256, 256), "conv2d": (1, 8, 16, 16, 8, 3), "bmm": (2, 64, 64, 64),
         "cumsum": 1 << 16, "sort": 1 << 12, "histogram": 1 << 16}


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
    size: list | None = None
    quick: bool = False
    cpu_s: float | None = None   # median process CPU seconds per call (every thread)
    gflops_cpu: float | None = None   # work per CPU-second
    gbps_cpu: float | None = None

    def json(self) -> str:
        return json.dumps(self.__dict__)


def _stats(samples):
    return statistics.median(samples), min(samples), max(samples), len(samples)


def mismatch(name, got, want, rtol, atol) -> str | None:
    """Why `got` is not `want` within the tolerances (the largest error), or None."""
    if np.allclose(got, want, rtol=rtol, atol=atol):
        return None
    err = float(np.abs(np.asarray(got, np.float64) - want).max())
    return f"{name}: result differs from numpy (max abs err {err:.3g})"


def wall_samples(fn, repeat, warmup=1):
    """Host seconds of `repeat` calls of `fn`, after `warmup` untimed ones."""
    return timed_calls(fn, repeat, warmup)[0]


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
        self.size = None  # the size of the workload being measured, recorded in every result
        self.notes: list[str] = []   # what the table's columns ran (printed under it)
        from . import peers

        self.iree = peers.available()

    # -- helpers ---------------------------------------------------------------------------
    def add(self, workload, impl, metric, samples, flops=None, nbytes=None, cpu=None):
        """Record a Measurement of `samples` (seconds per call); `cpu`: the process CPU
        seconds of the same calls, for the per-CPU-second rates."""
        med, lo, hi, n = _stats(samples)
        c = statistics.median(cpu) if cpu else None
        per = (lambda work, t: None if work is None or not t else work / t / 1e9)
        m = Measurement(workload, impl, self.dev.info.name, metric, med, lo, hi, n,
                        per(flops, med), per(nbytes, med),
                        None if self.size is None else list(self.size), self.quick,
                        c, per(flops, c), per(nbytes, c))
        self.results.append(m)
        return m

    def glsl(self, name, bindings, push_size, **defines):
        from vkir import runtime
        from vkir.runtime.glsl import compile_glsl

        words = compile_glsl(SHADERS / f"{name}.comp", defines=defines or None)
        return runtime.get_pipeline(self.dev, words, "main", bindings, push_size)

    def host(self, workload, impl, fn, flops=None, nbytes=None):
        """A wall_s row (with CPU seconds) of host calls `fn` (numpy), `self.repeat` of them."""
        wall, cpu = timed_calls(fn, self.repeat)
        return self.add(workload, impl, "wall_s", wall, flops, nbytes, cpu)

    def _timed(self, workload, impls, flops=None, nbytes=None, peers=None):
        """device_s and wall_s of each implementation (`impls`: name -> list of steps, each a
        callable returning a timing), measured in alternation: every round times each
        implementation once, the order rotating from round to round, so that a change of load
        on the machine (a CPU device shares its cores with everything else) falls on all of
        them alike and the ratios compare like with like. A sample times every step of one
        implementation once with timestamp queries (profile with repeat=1) and the host clock
        around all of them. `peers` holds wall samples measured elsewhere (IREE, in its own
        process), recorded as they are."""
        for steps in impls.values():
            for step in steps:
                step()  # warm-up (lavapipe compiles the shader at first use)
        names = list(impls)
        device = {name: [] for name in names}
        wall = {name: [] for name in names}
        cpu = {name: [] for name in names}
        for r in range(self.repeat):
            k = r % len(names)
            for name in names[k:] + names[:k]:
                c0, t0 = time.process_time(), time.perf_counter()
                device[name].append(sum(step().median for step in impls[name]))
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
        for name in names:
            self.add(workload, name, "device_s", device[name], flops, nbytes)
            self.add(workload, name, "wall_s", wall[name], flops, nbytes, cpu[name])
        for name, samples in (peers or {}).items():
            self.add(workload, name, "wall_s", samples, flops, nbytes)

    def glsl_steps(self, pipeline, launches):
        """Steps timing GLSL dispatches; `launches` is a list of (arrays, push bytes, groups),
        run in order and measured together."""
        from vkir import runtime

        return [lambda arrs=arrs, p=p, g=g: runtime.profile(
            self.dev, pipeline, [a.buffer for a in arrs], p, g, repeat=1, warmup=0)
            for arrs, p, g in launches]

    def glsl_matmul(self, A, B, C, m, n, k):
        """Steps timing the GLSL matmul reference (benchmarks/glsl_reference.py: the 8 x 8
        register tile, texel-buffer reads where the device allows them); the shared-memory
        shader of shaders/matmul.comp where the tile does not fit the sizes."""
        from vkir import runtime

        from . import glsl_reference

        if not (m == n == k and glsl_reference.fits(m, n, k)):
            g = (m + 15) // 16, (n + 15) // 16
            return self.glsl_steps(self.glsl("matmul", (0, 1, 2), 12), [
                ([A, B, C], struct.pack("<III", m, n, k), (g[1], g[0], 1))])
        pipe, res, groups, form = glsl_reference.matmul_launch(self.dev, A, B, C, m, n, k)
        self.notes.append(f"matmul GLSL reference: 8x8 register tile, {form} reads")
        return [lambda: runtime.profile(self.dev, pipe, res, b"", groups, repeat=1, warmup=0)]

    def numpy_native(self, workload, child, shape, flops):
        """A "numpy_native" row: numpy's `child` call timed in a child process with the
        OpenBLAS variables unset (benchmarks/host_numpy.py)."""
        from .host_numpy import native_samples

        got = native_samples(child, shape, self.repeat)
        if isinstance(got, str):
            self.notes.append(f"{workload}: {got}")
            return
        self.add(workload, "numpy_native", "wall_s", got["wall"], flops, None, got["cpu"])
        self.notes.append(f"{workload}: numpy* ran {got['blas']}")

    def glsl_vadd(self, A, B, C, n):
        """Steps timing the GLSL vadd reference: the chunk shader of
        benchmarks.access_forms.vadd_launch (texel reads, u64vec4 stores where the device
        allows them: the best hand-written vadd measured); shaders/vadd.comp (grid-stride,
        4 scalar elements per invocation) where n is not a multiple of 1024."""
        from vkir import runtime

        from .access_forms import vadd_launch

        if n % 1024:
            return self.glsl_steps(self.glsl("vadd", (0, 1, 2), 4, WG=256), [
                ([A, B, C], struct.pack("<I", n), ((n + 1023) // 1024, 1, 1))])
        pipe, res, groups, form = vadd_launch(self.dev, A, B, C, n)
        self.notes.append(f"vadd GLSL reference: chunk shader, {form}")
        return [lambda: runtime.profile(self.dev, pipe, res, b"", groups, repeat=1, warmup=0)]

    def glsl_sum(self, X, P, S, n):
        """Steps timing the GLSL sum reference: the first pass of
        benchmarks.access_forms.sum_launch (vkir.ops.sum's form by hand: contiguous runs,
        four vec4 accumulators, texel reads where a view can be made) into P, then
        shaders/sum.comp over the partials into S; shaders/sum.comp for both passes (256
        workgroups, grid-stride) where n does not split into its runs."""
        from vkir import runtime

        from .access_forms import SUM_PARTS, sum_launch

        tree = self.glsl("sum", (0, 1), 4, WG=128)
        if n % (16 * SUM_PARTS):
            return self.glsl_steps(tree, [([X, P], struct.pack("<I", n), (256, 1, 1)),
                                          ([P, S], struct.pack("<I", 256), (1, 1, 1))])
        pipe, res, groups, form = sum_launch(self.dev, X, P, n)
        self.notes.append(f"sum GLSL reference: contiguous runs, 4 vec4 accumulators, {form} "
                          "reads, then shaders/sum.comp over the partials")
        return [lambda: runtime.profile(self.dev, pipe, res, b"", groups, repeat=1, warmup=0),
                *self.glsl_steps(tree, [([P, S], struct.pack("<I", SUM_PARTS), (1, 1, 1))])]

    def vkir_steps(self, kernel, calls):
        """Steps timing vkir kernel calls (`calls`: a list of argument tuples, run in order)."""
        return [lambda a=a: kernel.profile(*a, repeat=1, warmup=0) for a in calls]

    def iree_samples(self, workload, shape, inputs, want, rtol=1e-4, atol=1e-5):
        """{"iree": wall seconds per call} of IREE's Vulkan module for `workload`, measured in a
        child process (see peers.py for why) after checking its result; {} without IREE or
        when its result is wrong (reported, not timed)."""
        if not self.iree:
            return {}
        from . import peers

        got = peers.measure(workload, shape, inputs, want, self.repeat, rtol, atol)
        if isinstance(got, str):
            print(f"  {got}: IREE not measured", flush=True)
            return {}
        return {"iree": got}

    def tuned(self, template, **shape):
        """The kernel of a vkir.ops template, tuned for the device (cached on disk)."""
        return template.build(device=self.dev, **shape)

    def check(self, workload, got, want, rtol=1e-4, atol=1e-5):
        why = mismatch(workload, got, want, rtol, atol)
        if why:
            raise AssertionError(why)

    # -- workloads -------------------------------------------------------------------------
    def vadd(self):
        from . import kernels

        vk, dev, n = self.vkir, self.dev, self.sizes["vadd"]
        self.size = [n]
        a, b = self.rng.random(n, dtype=np.float32), self.rng.random(n, dtype=np.float32)
        A, B = vk.array(a, dev), vk.array(b, dev)
        C0, C1, C2 = (vk.empty(n, "float32", dev) for _ in range(3))
        nbytes = 12 * n
        k = self.tuned(kernels.add, n=n)
        mirror = vk.build(kernels.vadd4, device=dev)
        self._timed("vadd", {
            "vkir": self.vkir_steps(k, [(A, B, C0)]),
            "vkir_mirror": self.vkir_steps(mirror, [(A, B, C1)]),
            "glsl": self.glsl_vadd(A, B, C2, n),
        }, nbytes=nbytes, peers=self.iree_samples("vadd", (n,), [a, b], a + b))
        for name, C in (("vkir", C0), ("vkir_mirror", C1), ("glsl", C2)):
            self.check(f"vadd {name}", C.numpy(), a + b)
        c = np.empty_like(a)
        self.host("vadd", "numpy", lambda: np.add(a, b, out=c), nbytes=nbytes)

    def map(self):  # noqa: A003 - the workload's name
        """`vkir.map(add)` on DeviceArrays ("vkir": the whole call, broadcast checks and views
        included) beside the tuned hand-written vadd (benchmarks.kernels.add, "vkir_mirror")
        and np.add(out=), each a wall_s row with its CPU seconds, sampled in alternation:
        vkir/mirror is what map's automatic launch costs over the hand kernel."""
        from . import kernels

        vk, dev, n = self.vkir, self.dev, self.sizes["map"]
        self.size = [n]
        a, b = self.rng.random(n, dtype=np.float32), self.rng.random(n, dtype=np.float32)
        A, B = vk.array(a, dev), vk.array(b, dev)
        C0, C1 = vk.empty(n, "float32", dev), vk.empty(n, "float32", dev)
        c = np.empty_like(a)
        mapped = vk.map(kernels.add_elements, device=dev)
        hand = self.tuned(kernels.add, n=n)
        calls = {"vkir": lambda: mapped(A, B, out=C0), "vkir_mirror": lambda: hand(A, B, C1),
                 "numpy": lambda: np.add(a, b, out=c)}
        wall = {name: [] for name in calls}
        cpu = {name: [] for name in calls}
        for f in calls.values():
            f()   # warm-up: builds and llvmpipe's compile at the first dispatch
        names = list(calls)
        for r in range(self.repeat):
            k = r % len(names)
            for name in names[k:] + names[:k]:
                w, cp = timed_calls(calls[name], 1, warmup=0)
                wall[name] += w
                cpu[name] += cp
        for name, C in (("vkir", C0), ("vkir_mirror", C1)):
            self.check(f"map {name}", C.numpy(), a + b, rtol=0, atol=0)
        for name in names:
            self.add("map", name, "wall_s", wall[name], nbytes=12 * n, cpu=cpu[name])
        self.notes.append("map: vkir is vkir.map(add) on DeviceArrays, mirror the tuned "
                          "hand-written vadd (benchmarks.kernels.add); wall time only")

    def sum(self):
        from vkir.ops.reduce import final_sum, rows_kernel

        from . import kernels

        vk, dev, n, m = self.vkir, self.dev, self.sizes["sum"], 256
        self.size = [n]
        x = self.rng.random(n, dtype=np.float32)
        want = float(x.astype(np.float64).sum())
        X = vk.array(x, dev)
        k1 = self.tuned(rows_kernel, O=1, R=n, op="sum", with_index=False, scale=1.0)
        parts = k1.func.buffer_map[k1.func.params[1]].shape[1].value
        k2 = final_sum.kernel(dev, O=1, R=parts, op="sum", with_index=False, scale=1.0)
        P0, S0 = vk.empty((1, parts), "float32", dev), vk.empty((1, 1), "float32", dev)
        X2 = vk.api.DeviceArray(X.buffer, (1, n), X.dtype, dev)
        mirror = vk.build(kernels.block_sum, device=dev)
        P, S = vk.empty(m, "float32", dev), vk.empty(1, "float32", dev)
        from .access_forms import SUM_PARTS

        P2, S2 = vk.empty(max(m, SUM_PARTS), "float32", dev), vk.empty(1, "float32", dev)
        steps = self.vkir_steps(k1, [(X2, P0)]) + (self.vkir_steps(k2, [(P0, S0)]) if parts > 1 else [])
        if parts == 1:
            S0 = P0
        self._timed("sum", {
            "vkir": steps,
            "vkir_mirror": self.vkir_steps(mirror, [(X, P), (P, S)]),
            "glsl": self.glsl_sum(X, P2, S2, n),
        }, nbytes=4 * n, peers=self.iree_samples("sum", (n,), [x], np.float32(want), rtol=1e-4))
        self.check("sum vkir", S0.numpy().reshape(-1)[0], want, rtol=1e-5)
        self.check("sum vkir_mirror", S.numpy()[0], want, rtol=1e-5)
        self.check("sum glsl", S2.numpy()[0], want, rtol=1e-5)
        self.host("sum", "numpy", lambda: x.sum(), nbytes=4 * n)

    def _matmul(self, workload, batch, s_m, s_n, s_k):
        from vkir.ops import matmul

        from . import kernels

        vk, dev = self.vkir, self.dev
        lead = () if batch is None else (batch,)
        self.size = [*lead, s_m, s_n, s_k]
        a = self.rng.standard_normal((*lead, s_m, s_k), dtype=np.float32)
        b = self.rng.standard_normal((*lead, s_k, s_n), dtype=np.float32)
        want = a.astype(np.float64) @ b.astype(np.float64)
        A, B = vk.array(a, dev), vk.array(b, dev)
        Cs = [vk.empty((*lead, s_m, s_n), "float32", dev) for _ in range(3)]
        flops = 2.0 * (batch or 1) * s_m * s_n * s_k
        repeat = self.repeat
        if not self.quick:
            self.repeat = min(repeat, 3)  # seconds per run on a CPU device
        try:
            k = self.tuned(matmul.kernel, M=s_m, N=s_n, K=s_k, batch=batch, trans_a=False,
                           trans_b=False, bias=None, activation=None)
            impls = {"vkir": self.vkir_steps(k, [(A, B, Cs[0])])}
            if batch is None and s_m * s_n * s_k <= 1 << 30:   # the naive mirror: ~30 s at 2048
                mirror = vk.build(kernels.matmul, device=dev)
                impls["vkir_mirror"] = self.vkir_steps(mirror, [(A, B, Cs[1])])
            if batch is None:
                impls["glsl"] = self.glsl_matmul(A, B, Cs[2], s_m, s_n, s_k)
            peer = self.iree_samples("matmul" if batch is None else "bmm",
                                     (*lead, s_m, s_n, s_k), [a, b], want, rtol=1e-3, atol=1e-3)
            self._timed(workload, impls, flops=flops, peers=peer)
            for name, C in zip(("vkir", "vkir_mirror", "glsl"), Cs):
                if name in impls:
                    self.check(f"{workload} {name}", C.numpy(), want, rtol=1e-3, atol=1e-3)
            self.host(workload, "numpy", lambda: a @ b, flops=flops)
            self.numpy_native(workload, "matmul" if batch is None else "bmm", self.size, flops)
        finally:
            self.repeat = repeat

    def sum_subgroup(self):
        """The sum's in-workgroup reduction two ways, same grid-stride accumulation and two
        passes each: "vkir" reduces with T.subgroup_add and one barrier
        (vkir.examples.sync.subgroup_sum), "vkir_mirror" with the shared-memory tree of
        block_sum (a barrier per level). The vkir/mirror ratio is subgroup / tree."""
        from vkir.examples.sync import subgroup_sum

        from . import kernels

        vk, dev, n, m = self.vkir, self.dev, self.sizes["sum"], 256
        self.size = [n]
        x = self.rng.random(n, dtype=np.float32)
        want = float(x.astype(np.float64).sum())
        X = vk.array(x, dev)
        sub, tree = vk.build(subgroup_sum, device=dev), vk.build(kernels.block_sum, device=dev)
        P, S = vk.empty(m, "float32", dev), vk.empty(1, "float32", dev)
        P2, S2 = vk.empty(m, "float32", dev), vk.empty(1, "float32", dev)
        self._timed("sum_subgroup", {
            "vkir": self.vkir_steps(sub, [(X, P), (P, S)]),
            "vkir_mirror": self.vkir_steps(tree, [(X, P2), (P2, S2)]),
        }, nbytes=4 * n)
        self.check("sum_subgroup vkir", S.numpy()[0], want, rtol=1e-5)
        self.check("sum_subgroup vkir_mirror", S2.numpy()[0], want, rtol=1e-5)

    def matmul_1024(self):
        s = self.sizes["matmul"]
        self._matmul("matmul_1024", None, s, s, s)

    def matmul_2048(self):
        s = self.sizes["matmul2048"]
        self._matmul("matmul_2048", None, s, s, s)

    def peak_fma(self):
        """The device's arithmetic ceiling: a register-only FMA shader (eight independent vec4
        chains, no memory access in its loop; benchmarks/glsl_reference.py), one "glsl" row
        whose GFLOP per second (and per CPU-second) the matmul rows are fractions of."""
        from vkir import runtime
        from vkir.runtime.glsl import compile_glsl

        from . import glsl_reference

        vk, dev = self.vkir, self.dev
        text, flops = glsl_reference.peak_glsl()
        self.size = [64 * 64]
        pipe = runtime.get_pipeline(dev, compile_glsl(text), "main", (0,), 0)
        out = vk.array(np.ones(4 * 64 * 64, np.float32), dev)
        self._timed("peak_fma", {"glsl": self.glsl_steps(pipe, [([out], b"", (64, 1, 1))])},
                    flops=flops)
        row = next(m for m in reversed(self.results)
                   if m.workload == "peak_fma" and m.metric == "wall_s")
        per_cpu = "" if row.gflops_cpu is None else f", {row.gflops_cpu:.1f} per CPU-second"
        self.notes.append(f"peak_fma (the FMA ceiling): {row.gflops:.1f} GFLOP/s{per_cpu}")

    def batched_matmul(self):
        self._matmul("batched_matmul", *self.sizes["bmm"])

    def _op_rows(self, workload, x, vkir_call, numpy_call, check):
        """wall_s rows for one vkir.ops call on device-resident data and for numpy."""
        X = self.vkir.array(x, self.dev)
        got = vkir_call(X)
        check(got)
        numpy_call(x)   # warm-up
        samples = {}
        for r in range(self.repeat):   # in alternation, as _timed: both see the same load
            pair = (("vkir", lambda: vkir_call(X)), ("numpy", lambda: numpy_call(x)))
            for impl, fn in (pair if r % 2 == 0 else pair[::-1]):
                samples.setdefault(impl, ([], []))
                wall, cpu = timed_calls(fn, 1, warmup=0)
                samples[impl][0].extend(wall)
                samples[impl][1].extend(cpu)
        for impl, (wall, cpu) in samples.items():
            self.add(workload, impl, "wall_s", wall, nbytes=x.nbytes, cpu=cpu)

    def cumsum(self):
        from vkir import ops

        n = self.sizes["cumsum"]
        self.size = [n]
        x = self.rng.standard_normal(n, dtype=np.float32)
        Y = self.vkir.empty(n, "float32", self.dev)
        self._op_rows("cumsum", x, lambda X: ops.cumsum(X, out=Y), np.cumsum, lambda r: self.check(
            "cumsum vkir", r.numpy(), np.cumsum(x, dtype=np.float64), rtol=1e-3, atol=0.05))

    def sort(self):
        from vkir import ops

        n = self.sizes["sort"]
        self.size = [n]
        x = self.rng.standard_normal(n, dtype=np.float32)
        Y = self.vkir.empty(n, "float32", self.dev)
        self._op_rows("sort", x, lambda X: ops.sort(X, out=Y), np.sort, lambda r: self.check(
            "sort vkir", r.numpy(), np.sort(x), rtol=0, atol=0))

    def histogram(self):
        from vkir import ops

        n = self.sizes["histogram"]
        self.size = [n]
        x = self.rng.standard_normal(n, dtype=np.float32)
        self._op_rows("histogram", x, lambda X: ops.histogram(X, 256, range=(-4, 4))[0],
                      lambda a: np.histogram(a, 256, range=(-4, 4)), lambda r: self.check(
                          "histogram vkir", r.numpy(), np.histogram(x, 256, range=(-4, 4))[0],
                          rtol=0, atol=0))

    def softmax(self):
        from vkir.ops.norm import softmax_kernel

        from . import kernels

        vk, dev = self.vkir, self.dev
        rows, cols = self.sizes["softmax"]
        self.size = [rows, cols]
        x = self.rng.standard_normal((rows, cols), dtype=np.float32)

        def np_softmax():
            e = np.exp(x - x.max(axis=1, keepdims=True))
            e /= e.sum(axis=1, keepdims=True)
            return e

        want = np_softmax()
        X = vk.array(x, dev)
        Ys = [vk.empty((rows, cols), "float32", dev) for _ in range(3)]
        nbytes = 8 * rows * cols
        k = self.tuned(softmax_kernel, O=rows, C=cols)
        mirror = vk.build(kernels.softmax, device=dev)
        pipe = self.glsl("softmax", (0, 1), 8, WG=256)
        self._timed("softmax", {
            "vkir": self.vkir_steps(k, [(X, Ys[0])]),
            "vkir_mirror": self.vkir_steps(mirror, [(X, Ys[1])]),
            "glsl": self.glsl_steps(pipe, [([X, Ys[2]], struct.pack("<II", rows, cols),
                                            (rows, 1, 1))]),
        }, nbytes=nbytes, peers=self.iree_samples("softmax", (rows, cols), [x], want, rtol=1e-4,
                                                  atol=1e-6))
        for name, Y in zip(("vkir", "vkir_mirror", "glsl"), Ys):
            self.check(f"softmax {name}", Y.numpy(), want, rtol=1e-4, atol=1e-6)
        self.host("softmax", "numpy", np_softmax, nbytes=nbytes)

    def layer_norm(self):
        from vkir.ops.norm import layer_norm_kernel

        vk, dev = self.vkir, self.dev
        rows, cols = self.sizes["layer_norm"]
        self.size = [rows, cols]
        x = self.rng.standard_normal((rows, cols), dtype=np.float32)
        g = self.rng.standard_normal(cols, dtype=np.float32)
        b = self.rng.standard_normal(cols, dtype=np.float32)

        def np_layer_norm():
            mu = x.mean(axis=1, keepdims=True)
            return (x - mu) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5) * g + b

        want = np_layer_norm()
        X, G, Bt = vk.array(x, dev), vk.array(g, dev), vk.array(b, dev)
        Y = vk.empty((rows, cols), "float32", dev)
        k = self.tuned(layer_norm_kernel, O=rows, C=cols, eps=1e-5)
        nbytes = 8 * rows * cols
        self._timed("layer_norm", {"vkir": self.vkir_steps(k, [(X, G, Bt, Y)])}, nbytes=nbytes)
        self.check("layer_norm vkir", Y.numpy(), want, rtol=1e-3, atol=1e-4)
        self.host("layer_norm", "numpy", np_layer_norm, nbytes=nbytes)

    def conv2d(self):
        from vkir.ops.conv import conv2d_kernel, conv2d_plan, pad_kernel
        from vkir.ops.layout import transpose_kernel

        vk, dev = self.vkir, self.dev
        nb, c, hw, _, o, kk = self.sizes["conv2d"]  # square input, square filters
        self.size = [nb, c, hw, hw, o, kk, kk]
        x = self.rng.standard_normal((nb, c, hw, hw), dtype=np.float32)
        w = self.rng.standard_normal((o, c, kk, kk), dtype=np.float32)
        pad = kk // 2

        def np_conv():  # im2col + BLAS
            xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
            cols = np.lib.stride_tricks.sliding_window_view(xp, (kk, kk), axis=(2, 3))
            return np.einsum("nchwij,ocij->nohw", cols, w, optimize=True)

        want = np_conv()
        X, W = vk.array(x, dev), vk.array(w, dev)
        Y = vk.empty(want.shape, "float32", dev)
        # what vkir.ops.conv2d runs: pad the input (rows to whole tiles), the filters transposed
        # to (C, KH, KW, O) for the window form, then the convolution without bounds tests
        plan = conv2d_plan(nb, c, hw, hw, o, kk, kk, 1, pad)
        hp, wp = plan["conv"]["H"], plan["conv"]["W"]
        XP = vk.empty((nb * c, hp, wp), "float32", dev)
        kp = self.tuned(pad_kernel, **plan["pad"])
        k = self.tuned(conv2d_kernel, **plan["conv"])
        X3 = vk.api.DeviceArray(X.buffer, (nb * c, hw, hw), X.dtype, dev)
        XP4 = vk.api.DeviceArray(XP.buffer, (nb, c, hp, wp), XP.dtype, dev)
        steps = self.vkir_steps(kp, [(X3, XP)])
        if k.config.get("form") == "window":
            kt = self.tuned(transpose_kernel, shape=(o, c * kk * kk), axes=(1, 0))
            WT = vk.empty((c, kk, kk, o), "float32", dev)
            steps += self.vkir_steps(kt, [(vk.api.DeviceArray(W.buffer, (W.size,), W.dtype, dev),
                                           vk.api.DeviceArray(WT.buffer, (W.size,), W.dtype, dev))])
            W = WT
        flops = 2.0 * want.size * c * kk * kk
        self._timed("conv2d", {
            "vkir": steps + self.vkir_steps(k, [(XP4, W, Y)]),
        }, flops=flops, peers=self.iree_samples("conv2d", (nb, c, hw, hw, o, kk, kk, pad), [x, w],
                                                want, rtol=1e-3, atol=1e-3))
        self.check("conv2d vkir", Y.numpy(), want, rtol=1e-3, atol=1e-3)
        self.host("conv2d", "numpy", np_conv, flops=flops)

    def interop(self):
        """numpy and torch data to vkir and back (benchmarks/zero_copy.py)."""
        from .zero_copy import interop

        interop(self)

    def images(self):
        """Images against buffers: shading into rgba8, a sampled blur (benchmarks/image_workloads.py)."""
        from .image_workloads import images

        images(self)

    def latency(self):
        from vkir import runtime

        from . import kernels

        vk, dev = self.vkir, self.dev
        self.size = [1]
        repeat = max(200, self.repeat * 20)
        A = vk.empty(1, "float32", dev)
        k = vk.build(kernels.noop, device=dev)
        pipe = self.glsl("noop", (0,), 0)
        launch = runtime.get_launch(dev, pipe, [A.buffer], b"", (1, 1, 1))
        a = np.zeros(1, np.float32)
        for impl, fn in (("vkir", lambda: k(A)), ("glsl", launch.run),
                         ("numpy", lambda: np.add(a, 0, out=a))):
            wall, cpu = timed_calls(fn, repeat, warmup=20)
            self.add("latency", impl, "latency_s", wall, cpu=cpu)

    def compile(self):
        from vkir import runtime
        from vkir.runtime.glsl import compile_glsl

        from . import kernels

        vk, dev = self.vkir, self.dev
        self.size = [kernels.VADD_SOURCE.count("\n")]  # the cold-compiled source (lines)
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


def main(device=None, workloads=None, repeat=None, json_path=None, quick=False,
         compare_path=None) -> int:
    """Run `workloads` (default all), print the table; `json_path`: write the measurements;
    `compare_path`: a baseline JSON file of an earlier run, whose vkir rows this run is
    compared with (benchmarks/report.py); the exit status is 1 when one regressed."""
    from . import host_numpy, report

    names = workloads or list(WORKLOADS)
    unknown = [w for w in names if w not in WORKLOADS]
    if unknown:
        from vkir.errors import ArgumentError

        raise ArgumentError(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    bench = Bench(device, repeat, quick)
    print(f"device: {bench.dev.info}   repeat: {bench.repeat}{'   (quick sizes)' if quick else ''}")
    print(f"numpy's BLAS: {host_numpy.blas_kernels()}   host sets: {host_numpy.host_setting()}")
    for name in names:
        t0 = time.perf_counter()
        getattr(bench, name)()
        print(f"  {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    print(format_table(bench.results))
    for note in dict.fromkeys(bench.notes):
        print(f"  {note}")
    status = 0
    if compare_path:
        lines, bad = report.compare(bench.results, report.load(compare_path))
        print(f"compared with {compare_path}: {len(lines)} rows, {bad} regression(s)")
        print("\n".join(lines))
        status = int(bad > 0)
    if json_path:
        with open(json_path, "w") as f:
            for m in bench.results:
                f.write(m.json() + "\n")
        print(f"wrote {len(bench.results)} measurements to {json_path}")
    return status
