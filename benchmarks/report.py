"""The benchmark's report: the table `vkir bench` prints, and `--compare BASELINE.json`.

Rows are (workload, metric); columns the median per call of each implementation, the time
ratios of vkir to each other one (below 1: vkir is faster), and the work each does per second of
wall time and per CPU-second. On a host shared with other jobs a call's wall time includes the
time it waited for a core; its CPU seconds (every thread of the process: a CPU Vulkan driver's
workers, OpenBLAS's) measure the work it cost, so the per-CPU-second columns are the ones to
compare between runs on a loaded host.

`compare(results, baseline)` flags the vkir rows that got slower than in a baseline written
by `vkir bench --json`: the same workload, implementation, metric and size, compared by CPU
seconds per call where both runs measured them, else by wall time.
"""

from __future__ import annotations

import json

IMPLS = ("vkir", "vkir_mirror", "glsl", "iree", "numpy", "numpy_native")
HEADS = ("vkir", "mirror", "glsl", "iree", "numpy", "numpy*")
TOLERANCE = 0.25   # a row regresses when it costs more than 1.25x the baseline's


def _time(v) -> str:
    if v is None:
        return "-"
    return f"{v * 1e3:.3f} ms" if v >= 1e-3 else f"{v * 1e6:.1f} us"


def _rate(m, cpu: bool) -> str:
    if m is None:
        return "-"
    flops, nbytes = (m.gflops_cpu, m.gbps_cpu) if cpu else (m.gflops, m.gbps)
    if flops is not None:
        return f"{flops:.1f} GFLOP/s"
    if nbytes is not None:
        return f"{nbytes:.2f} GB/s"
    return "-"


def format_table(results) -> str:
    """The table of `results` (Measurements), one row per workload and metric."""
    rows = {}
    for m in results:
        rows.setdefault((m.workload, m.metric), {})[m.impl] = m
    head = ("workload", "metric", *HEADS, "vkir/mirror", "vkir/GLSL", "vkir/IREE", "vkir/numpy",
            "vkir/numpy*", "CPU vkir/numpy", "vkir rate", "vkir per CPU-s", "numpy per CPU-s")
    body = []
    for (workload, metric), got in rows.items():
        v = got.get("vkir")
        ratios = [f"{v.median / got[k].median:.2f}" if v and got.get(k) else "-"
                  for k in IMPLS[1:]]
        n = got.get("numpy")
        cpu = (f"{v.cpu_s / n.cpu_s:.2f}" if v and n and v.cpu_s and n.cpu_s else "-")
        body.append((workload, metric, *(_time(got[k].median) if k in got else "-" for k in IMPLS),
                     *ratios, cpu, _rate(v, False), _rate(v, True), _rate(n, True)))
    widths = [max(len(str(r[i])) for r in (head, *body)) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in (head, *body)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + (
        "\n(medians per call; time ratios below 1: vkir is faster; vkir is the vkir.ops kernel "
        "tuned for the device, mirror the GLSL's algorithm in vkir, glsl the best hand-written "
        "shader; numpy* is numpy in a child process with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE "
        "unset; \"CPU vkir/numpy\" compares process CPU seconds per call, \"per CPU-s\" is the "
        "work per CPU-second)")


def load(path) -> list:
    """The measurements (dicts) of a `vkir bench --json` file."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _key(m: dict) -> tuple:
    return (m["workload"], m["impl"], m["metric"], tuple(m.get("size") or ()),
            bool(m.get("quick")))


def compare(results, baseline, tolerance: float = TOLERANCE) -> tuple:
    """(report lines, number of regressions): each vkir row of `results` (Measurements) that
    `baseline` (dicts from `load`) also has, with its cost per call then and now (CPU seconds
    where both runs have them, else wall or device time) and "REGRESSION" where now exceeds
    then by more than `tolerance`."""
    old = {_key(m): m for m in baseline}
    lines, bad = [], 0
    for m in results:
        if not m.impl.startswith("vkir"):
            continue
        then = old.get(_key(m.__dict__))
        if then is None:
            continue
        use_cpu = m.cpu_s is not None and then.get("cpu_s") is not None
        a, b = (then["cpu_s"], m.cpu_s) if use_cpu else (then["median"], m.median)
        ratio = b / a if a > 0 else float("inf")
        flag = ratio > 1 + tolerance
        bad += flag
        lines.append(f"{m.workload:16s} {m.impl:12s} {m.metric:10s} "
                     f"{'cpu' if use_cpu else 'time':4s} {_time(a):>11s} -> {_time(b):>11s} "
                     f"x{ratio:5.2f}{'  REGRESSION' if flag else ''}")
    return lines, bad
