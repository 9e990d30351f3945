"""Run sweep cases in child processes, so that a driver that aborts the process on one case
(llvmpipe's "LLVM ERROR: Cannot select", a segfault in a shader compiler) costs that case only.

A sweep module (benchmarks.subgroup_sweep, benchmarks.image_sweep) gives `run_case(case, device)`
-> {"case", "outcome", "detail"} and calls `child(run_case)` when started with `--child`; the
parent calls `sweep(cases, "benchmarks.<module>")`. The child reads case names from stdin and
prints a "start" line before each case and its result after, so the parent knows which case a
crash belongs to; a crash is confirmed by running that case alone in a fresh child, and the
sweep goes on in a new child. `table` counts outcomes per group of cases; `command_line` is
every sweep's `main`.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time

OUTCOMES = ("ok", "mismatch", "crash", "validation", "rejected", "timeout")


def child(run_case) -> None:
    """The child's loop: read case names (one per line) from stdin and print one JSON result per
    line, each after a {"start": case} line. SWEEP_NO_QUIRKS=1: the device as if it had no
    quirks (to see the driver's bugs themselves)."""
    from dataclasses import replace

    import vkir

    device = vkir.device()
    if os.environ.get("SWEEP_NO_QUIRKS"):
        device.info = replace(device.info, quirks=frozenset())
    for line in sys.stdin:
        case = line.strip()
        if not case:
            continue
        print(json.dumps({"start": case}), flush=True)
        print(json.dumps(run_case(case, device)), flush=True)


def _spawn(module: str, todo):
    # the case list and stderr are files, not pipes: more than a pipe holds (thousands of cases,
    # validation messages) would block one side while the other waits on stdout
    cases = tempfile.TemporaryFile("w+")
    cases.write("".join(c + "\n" for c in todo))
    cases.seek(0)
    err = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen([sys.executable, "-m", module, "--child"],
                            stdin=cases, stdout=subprocess.PIPE, stderr=err, text=True)
    cases.close()
    proc.err = err
    return proc


def _stderr_tail(proc, lines: int = 3) -> str:
    proc.err.seek(0)
    return " | ".join(proc.err.read().strip().splitlines()[-lines:])


def sweep(todo, module: str, timeout: float = 120.0, confirm: bool = True):
    """Run the cases `todo` in child processes of `python -m module --child`; the list of their
    results (crash and timeout results made here)."""
    results = []
    todo = list(todo)
    while todo:
        proc = _spawn(module, todo)
        running = None
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], timeout)
            if not ready:
                proc.kill()
                proc.wait()
                results.append({"case": running or todo[0], "outcome": "timeout",
                                "detail": f"no answer within {timeout:g} s"})
                break
            line = proc.stdout.readline()
            if not line:   # the child is gone
                rc = proc.wait()
                tail = _stderr_tail(proc)
                if running is not None:
                    results.append({"case": running, "outcome": "crash",
                                    "detail": f"exit status {rc}: {tail}"})
                elif rc:   # died before its first case: nothing more would run
                    results += [{"case": c, "outcome": "crash",
                                 "detail": f"child exit status {rc}: {tail}"} for c in todo]
                    todo = []
                break
            msg = json.loads(line)
            if "start" in msg:
                running = msg["start"]
                continue
            results.append(msg)
            todo.remove(msg["case"])
            running = None
        proc.stdout.close()
        proc.err.close()
        if results and results[-1]["case"] in todo:
            todo.remove(results[-1]["case"])
    if confirm:   # a crash or timeout again when the case runs alone in a fresh process?
        for r in results:
            if r["outcome"] in ("crash", "timeout"):
                again = sweep([r["case"]], module, timeout, confirm=False)
                r["detail"] += " (alone: " + (again[0]["outcome"] if again else "?") + ")"
    return results


def table(results, group=lambda case: case.split(":")[0], label: str = "op") -> str:
    """Counts per group (`group(case)`, by default the case name's first field) and outcome,
    then every result that is not ok."""
    per = {}
    for r in results:
        per.setdefault(group(r["case"]), dict.fromkeys(OUTCOMES, 0))[r["outcome"]] += 1
    lines = [f"{label:32s}" + "".join(f"{k:>11s}" for k in OUTCOMES)]
    for name, counts in per.items():
        lines.append(f"{name:32s}" + "".join(f"{counts[k]:11d}" for k in OUTCOMES))
    total = {k: sum(c[k] for c in per.values()) for k in OUTCOMES}
    lines.append(f"{'total (' + str(len(results)) + ' cases)':32s}" +
                 "".join(f"{total[k]:11d}" for k in OUTCOMES))
    for r in results:
        if r["outcome"] != "ok":
            lines.append(f"  {r['outcome']:10s} {r['case']}: {r['detail'][:300]}")
    return "\n".join(lines)


def command_line(argv, doc: str, module: str, cases, run_case, source, groups=None) -> None:
    """A sweep's command line: `--only S ...` (cases containing S; "a+b": containing both),
    `--json FILE`, `--no-quirks` (build as if the device had none), `--source CASE` (print
    its script), and with several `groups` ({label: case -> group}) `--by LABEL` for the
    table's rows (the first by default)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--only", nargs="*", default=(),
                        help='cases whose name contains one of these ("a+b": both a and b)')
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--no-quirks", action="store_true",
                        help="build as if the device had no quirks (to see the bugs themselves)")
    parser.add_argument("--source", help="print the script of this case and exit")
    if groups and len(groups) > 1:
        parser.add_argument("--by", choices=tuple(groups), default=next(iter(groups)),
                            help="how the table groups cases")
    args = parser.parse_args(argv)
    if args.child:
        child(run_case)
        return
    if args.source:
        print(source(args.source))
        return
    if args.no_quirks:
        os.environ["SWEEP_NO_QUIRKS"] = "1"
    todo = [c for c in cases()
            if not args.only or any(all(p in c for p in s.split("+")) for s in args.only)]
    t0 = time.perf_counter()
    results = sweep(todo, module)
    print(f"device: {os.environ.get('VKIR_DEVICE', 'default')}, {len(results)} cases in "
          f"{time.perf_counter() - t0:.0f} s")
    if groups:
        label = getattr(args, "by", next(iter(groups)))
        print(table(results, groups[label], label))
    else:
        print(table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
