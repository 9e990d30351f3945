"""Tuning matmul_1024's configs on one device against tuning them on a local two-actor fleet,
in one run: the wall time of the whole tuning and the device time of the config each chose.

    python -m benchmarks.fleet_tuning [--fleet lavapipe,swiftshader] [--size 1024]

The one-device run tunes on this process's device (VKIR_DEVICE); the fleet run starts one Ray
actor per selector and tunes every kind of device in it (vkir.fleet.tuning), candidates built
once here. Each run uses its own empty autotune cache. Needs the `vkir[fleet]` extra.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def _shape(n):
    return dict(M=n, N=n, K=n, batch=None, trans_a=False, trans_b=False, bias=None, activation=None)


def chosen_speed(template, kernel, repeat=10):
    """Median device seconds of `kernel` (the chosen config) on random arrays."""
    from vkir.autotuning import timing_arguments

    return kernel.profile(*timing_arguments(kernel), repeat=repeat, warmup=1).median


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fleet", default="lavapipe,swiftshader", help="device selectors of the fleet")
    ap.add_argument("--size", type=int, default=1024)
    args = ap.parse_args(argv)

    import vkir
    from vkir.ops.linalg import kernel as template

    shape = _shape(args.size)
    rows = []
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as many:
        os.environ["VKIR_CACHE_DIR"] = one
        t0 = time.perf_counter()
        k = template.build(tune=True, **shape)
        rows.append(("one device", vkir.device().info.name, time.perf_counter() - t0, k.config,
                     chosen_speed(template, k)))

        os.environ["VKIR_CACHE_DIR"] = many
        fleet = vkir.fleet.connect(local=tuple(args.fleet.split(",")), env={"VKIR_CACHE_DIR": "0"})
        try:
            t0 = time.perf_counter()
            k = template.build(fleet=fleet, **shape)
            wall = time.perf_counter() - t0
            rows.append((f"fleet ({args.fleet})", vkir.device().info.name, wall, k.config,
                         chosen_speed(template, k)))
            for report in template.fleet_report:
                print(report.table())
        finally:
            fleet.close()
    print(f"\nmatmul {args.size}^3 float32: tuning wall time and the chosen config's device time "
          "on this process's device")
    for how, dev, wall, config, seconds in rows:
        print(f"  {how:32s} tuned in {wall:7.1f} s   chosen {config}  {seconds * 1e3:8.2f} ms  ({dev})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
