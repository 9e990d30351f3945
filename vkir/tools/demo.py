"""`vkir demo`: build and run a few example kernels on the default device and check them.

Vector add (symbolic size), a shared-memory tree reduction with barriers (two passes of the same
kernel), the same sum with subgroup reductions (`T.subgroup_add`, vkir.examples.sync), and a
tiled matmul through shared memory. Each is checked against numpy; the table shows
the device, compile time (script -> ready pipeline), device time (timestamp queries) and the check.
Then it renders a picture (vkir.tools.demo_picture: a ray-marched scene, checked against the
interpreter) and prints where the PNG went.
"""

from __future__ import annotations

import time

import numpy as np

from vkir import T

from vkir.examples.demo_kernels import VADD_SOURCE, block_sum, matmul, vadd  # noqa: F401
from vkir.examples.sync import subgroup_sum

__all__ = ["vadd", "block_sum", "matmul", "run", "format_table", "main"]


@T.prim_func
def _warm_up(x: T.Buffer((64,), "float32")):
    """A kernel of the demo's own, built first to load the compiler (not in the table)."""
    for i in T.parallel(64):
        x[i] = x[i] * T.float32(2)


def _row(name, dev, kernel, device_seconds, ok, detail):
    return {"kernel": name, "device": dev.info.name, "compile_ms": kernel.compile_seconds * 1e3,
            # the driver's compile: pipeline creation, plus what its first dispatch took beyond
            # the kernel's own run (llvmpipe compiles there)
            "driver_ms": (kernel.pipeline_seconds
                          + max(0.0, (kernel.first_run_seconds or 0.0) - device_seconds)) * 1e3,
            "device_ms": device_seconds * 1e3, "check": "ok" if ok else "MISMATCH", "detail": detail}


def run(device=None, seed: int = 0) -> list[dict]:
    """Build and run the demo kernels; one result row per kernel."""
    import vkir

    dev = vkir.device(device)
    rng = np.random.default_rng(seed)
    rows = []
    # the first build in a process imports the compiler and loads the SPIR-V grammar: do it once
    # up front (reported apart), on a kernel of its own, so the table shows each kernel's own
    # cold compile time without resetting the device's pipelines (other kernels of this process
    # keep theirs)
    t0 = time.perf_counter()
    vkir.build(_warm_up, device=dev)
    startup = time.perf_counter() - t0

    n = 100_000
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    k = vkir.build(vadd, device=dev)
    A, B, C = vkir.array(a, dev), vkir.array(b, dev), vkir.empty(n, "float32", dev)
    k(A, B, C)
    err = float(np.abs(C.numpy() - (a + b)).max())
    rows.append(_row(f"vadd n={n}", dev, k, k.profile(A, B, C, repeat=10).median,
                     err == 0.0, f"max err {err:.1e}"))

    n, m = 1 << 20, 64
    x = rng.random(n, dtype=np.float32)
    k = vkir.build(block_sum, device=dev)
    X, P, S = vkir.array(x, dev), vkir.empty(m, "float32", dev), vkir.empty(1, "float32", dev)
    k(X, P)          # m partial sums
    k(P, S)          # the same kernel again on the partials, one workgroup
    total, want = float(S.numpy()[0]), float(x.astype(np.float64).sum())
    t = k.profile(X, P, repeat=10).median + k.profile(P, S, repeat=10).median
    rows.append(_row("sum n=2^20", dev, k, t, abs(total - want) <= 1e-5 * want,
                     f"rel err {abs(total - want) / want:.1e}"))

    k = vkir.build(subgroup_sum, device=dev)
    P2, S2 = vkir.empty(m, "float32", dev), vkir.empty(1, "float32", dev)
    k(X, P2)         # m partial sums: subgroup_add, then the subgroups' sums
    k(P2, S2)
    total = float(S2.numpy()[0])
    t = k.profile(X, P2, repeat=10).median + k.profile(P2, S2, repeat=10).median
    rows.append(_row(f"sum n=2^20 subgroup_add (subgroup size {dev.info.subgroup_size})", dev,
                     k, t, abs(total - want) <= 1e-5 * want,
                     f"rel err {abs(total - want) / want:.1e}"))

    M = N = K = 128
    a, b = rng.standard_normal((M, K), dtype=np.float32), rng.standard_normal((K, N), dtype=np.float32)
    k = vkir.build(matmul, device=dev)
    A, B, C = vkir.array(a, dev), vkir.array(b, dev), vkir.empty((M, N), "float32", dev)
    k(A, B, C)
    got, want = C.numpy(), a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.abs(got - want).max())
    rows.append(_row(f"matmul {M}x{N}x{K}", dev, k, k.profile(A, B, C, repeat=5).median,
                     bool(np.allclose(got, want, rtol=1e-4, atol=1e-3)), f"max err {err:.1e}"))
    rows[0]["startup_ms"] = startup * 1e3
    return rows


def format_table(rows: list[dict]) -> str:
    """The result rows as a text table, one headed column per field."""
    head = ("kernel", "device", "compile ms", "driver ms", "device ms", "check", "detail")
    body = [(r["kernel"], r["device"], f"{r['compile_ms']:.1f}", f"{r.get('driver_ms', 0.0):.1f}",
             f"{r['device_ms']:.3f}", r["check"], r["detail"]) for r in rows]
    widths = [max(len(str(x[i])) for x in (head, *body)) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip() for line in (head, *body)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(device=None, out=None, size=None) -> int:
    """Run the demo on `device`, print the table, render the picture (`size`: (width, height))
    into folder `out` and print its path; the exit status is 0 when every kernel matches numpy
    and the picture matches the interpreter."""
    from . import demo_picture

    t0 = time.perf_counter()
    rows = run(device)
    print(format_table(rows))
    print(f"(compile = script -> lowered -> SPIR-V -> validated -> ready pipeline; driver = the "
          f"driver's own compile: pipeline creation plus what the first dispatch took beyond the "
          f"run, where llvmpipe compiles; the compiler's one-time start-up took "
          f"{rows[0]['startup_ms']:.0f} ms more)")
    print(f"\n{sum(r['check'] == 'ok' for r in rows)}/{len(rows)} kernels match numpy "
          f"({time.perf_counter() - t0:.1f} s)\n")
    t1 = time.perf_counter()
    picture = demo_picture.render(device, out=out, size=size or demo_picture.SIZE)
    print(demo_picture.report(picture) + f" ({time.perf_counter() - t1:.1f} s)")
    return 0 if all(r["check"] == "ok" for r in rows) and picture["ok"] else 1
