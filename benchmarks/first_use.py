"""What a new user waits for on llvmpipe's loop limit: symbolic sizes against constant ones, and
the former workaround (every loop of unknown length unrolled 64 times) against call-time variants.

    python -m benchmarks.first_use [--repeat N]

Part 1, in this process: device time (median of `Kernel.profile`) of the demo's grid-stride sum
and tiled matmul with symbolic sizes, against the same kernels with the sizes written as
constants. Part 2, each case in a fresh process with the driver's shader cache off
(MESA_SHADER_CACHE_DISABLE=true) and an empty vkir cache: wall time of `vkir.build` plus the first
call, for the constant-size kernel, the symbolic one, and the symbolic one compiled the former way
(SplitLongLoops on every loop whose length is unknown). Prints one table per part.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

SUM_SIZES = {"n": 1 << 20, "m": 64}
MATMUL_SIZES = {"M": 256, "N": 256, "K": 256}

CHILD = r"""
import json, sys, time
import numpy as np
import vkir
from benchmarks.first_use import case_kernel, case_arguments, former_pipeline
name, mode = sys.argv[1], sys.argv[2]
dev = vkir.device()
func = case_kernel(name, constant=(mode == "constant"))
args = case_arguments(name)
t0 = time.perf_counter()
k = vkir.build(func, device=dev)
if mode == "former":
    from vkir.runtime import get_launch
    buffers, push, groups, _, _ = k._prepare(args)
    get_launch(dev, former_pipeline(k), buffers, push, groups).run()
else:
    k(*args)
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""


def case_kernel(name: str, constant: bool):
    """The demo kernel `name` ("sum" or "matmul"), its sizes symbolic or written as constants."""
    import vkir
    from vkir.examples import demo_kernels as demo

    func = {"sum": demo.block_sum, "matmul": demo.matmul}[name]
    if not constant:
        return func
    sizes = SUM_SIZES if name == "sum" else MATMUL_SIZES
    text = func.script()   # shapes name the sizes as strings, the body as names (from `env`)
    for var, value in sizes.items():
        text = text.replace(f'"{var}"', str(value))
    return vkir.from_script(text, env=dict(sizes))


def case_arguments(name: str) -> list:
    """numpy arguments of the case (fixed seed)."""
    import numpy as np

    rng = np.random.default_rng(0)
    if name == "sum":
        return [rng.random(SUM_SIZES["n"], dtype=np.float32), np.zeros(SUM_SIZES["m"], np.float32)]
    M, N, K = (MATMUL_SIZES[k] for k in "MNK")
    return [rng.random((M, K), dtype=np.float32), rng.random((K, N), dtype=np.float32),
            np.zeros((M, N), np.float32)]


def former_pipeline(kernel):
    """The kernel compiled as the former workaround did: every splittable loop whose length the
    compiler could not bound below 16384 split into chunks of 64 unrolled iterations."""
    from vkir.driver.loop_budget import Split, loops_for_call

    loops = frozenset(lp.var for lp in loops_for_call(kernel.ir, {})
                      if lp.splittable and (lp.trips is None or lp.trips > 16384))
    return kernel._compile_variant(Split(64, loops, 0))


def device_times(repeat: int) -> list:
    """Rows (kernel, symbolic ms, constant ms, ratio) of median device times in this process."""
    import vkir

    rows = []
    for name in ("sum", "matmul"):
        times = {}
        for constant in (False, True):
            k = vkir.build(case_kernel(name, constant))
            args = [vkir.array(a) for a in case_arguments(name)]
            k(*args)
            times[constant] = k.profile(*args, repeat=repeat).median * 1e3
        rows.append((name, times[False], times[True], times[False] / times[True]))
    return rows


def first_use(name: str, mode: str) -> float:
    """Seconds of build + first call of case `name` in a fresh process on a cold driver cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, MESA_SHADER_CACHE_DISABLE="true", VKIR_CACHE_DIR=cache)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        out = subprocess.run([sys.executable, "-c", CHILD, name, mode], env=env, check=True,
                             capture_output=True, text=True, timeout=900).stdout
    return json.loads(out.splitlines()[-1])["seconds"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20, help="profiled runs per kernel")
    ap.add_argument("--skip-former", action="store_true",
                    help="leave out the former workaround (its first call can take minutes)")
    args = ap.parse_args(argv)
    print("device time, same process (median ms)")
    print("kernel  symbolic  constant  symbolic/constant")
    for name, sym, const, ratio in device_times(args.repeat):
        print(f"{name:<7} {sym:>8.3f}  {const:>8.3f}  {ratio:>6.2f}x")
    print("\nbuild + first call, fresh process, cold driver cache (s)")
    modes = ("constant", "symbolic") + (() if args.skip_former else ("former",))
    print("kernel  " + "  ".join(f"{m:>9}" for m in modes))
    for name in ("sum", "matmul"):
        print(f"{name:<7} " + "  ".join(f"{first_use(name, m):>9.2f}" for m in modes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
