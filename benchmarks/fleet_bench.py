"""`vkir bench --fleet ADDRESS`: the benchmark suite on every device of a fleet, one table per
kind of device (Fingerprint). Each device's actor runs the suite's workloads on its own device;
the measurements come back as plain records.

ADDRESS is a Ray cluster address (its `vkir fleet serve` actors), or "local:SEL,SEL" for a
fleet started on this machine with one actor per device selector (e.g. "local:lavapipe,swiftshader").
"""

from __future__ import annotations

__all__ = ["main", "device_results"]


def device_results(device, workloads, repeat, quick) -> list:
    """The suite's Measurements of `workloads` on `device` (what each actor runs)."""
    from . import suite

    bench = suite.Bench(device, repeat, quick)
    for name in workloads:
        getattr(bench, name)()
    return bench.results


def main(address: str, workloads=None, repeat=None, json_path=None, quick=False) -> int:
    """Run the suite on every device of the fleet at `address`; print a table per fingerprint."""
    from vkir.errors import ArgumentError

    from . import suite

    names = workloads or list(suite.WORKLOADS)
    unknown = [w for w in names if w not in suite.WORKLOADS]
    if unknown:
        raise ArgumentError(f"unknown workload(s) {', '.join(unknown)}; choose from "
                            f"{', '.join(suite.WORKLOADS)}")
    from vkir import fleet as fleets

    fleet = fleets.connect(address)
    try:
        results = fleet.apply(device_results, names, repeat, quick)
    finally:
        fleet.close()
    status = 0
    by_kind: dict = {}
    for r in results:
        by_kind.setdefault(r.device, []).append(r)
    for fp, runs in by_kind.items():
        print(f"\n== {fp} ({len(runs)} device(s))")
        for r in runs:
            if not r.ok:
                print(f"  actor pid {r.pid}: {r.error}")
                status = 1
                continue
            print(f"  actor pid {r.pid}: {r.seconds:.1f} s")
            print(suite.format_table(r.value))
    if json_path:
        with open(json_path, "w") as f:
            for r in results:
                for m in r.value or ():
                    f.write(m.json() + "\n")
    return status
