"""Cold-process build time with the disk compile cache: the first `vkir.build` of a kernel in a
new process that has built it before (in an earlier process).

    python -m benchmarks.cold_build [--runs N] [--cache-dir DIR]

Each run is a fresh `python` process that imports vkir, opens the default device, parses the vadd
kernel and then times `vkir.build` alone (what a user waits for at the first call site). The first
process fills the cache (a miss); the next ones hit it. Bytecode caching is on in the children (as
after an ordinary install), whatever PYTHONDONTWRITEBYTECODE says here. Prints the miss and the hit times (median
of the hits) in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import time
import vkir
from vkir.tools.demo import VADD_SOURCE
dev = vkir.device()
f = vkir.from_script(VADD_SOURCE)
t0 = time.perf_counter()
k = vkir.build(f, device=dev)
t1 = time.perf_counter()
print(f"{(t1 - t0) * 1e3:.3f} {int(k._compiled.cached)}")
"""


def run_child(cache_dir: str) -> tuple:
    env = dict(os.environ, VKIR_CACHE_DIR=cache_dir)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from their .pyc
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), out[1] == "1"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="processes that hit the cache")
    ap.add_argument("--cache-dir", default=None, help="cache directory (default: a new temporary one)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache_dir or tmp
        miss, cached = run_child(cache)
        hits = [run_child(cache) for _ in range(args.runs)]
    assert all(c for _, c in hits), "a later process missed the cache"
    times = [t for t, _ in hits]
    print(f"first process (miss, fills the cache): {miss:.1f} ms" + (" (already cached)" if cached else ""))
    print(f"new process, cached kernel: median {statistics.median(times):.1f} ms, "
          f"min {min(times):.1f} ms, max {max(times):.1f} ms over {len(times)} processes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
