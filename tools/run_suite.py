"""`make test`'s runner: the whole suite on lavapipe and its device tests on SwiftShader, as
concurrent pytest sessions so that a 2-core machine keeps both cores busy.

The lavapipe pass is cut into two shards by test folder (SHARD_A, and every other test); the
SwiftShader pass runs the device tests of the whole tree. Each shard is a complete pytest session
of its own (its own Vulkan instance, validation layer, leak check at exit and CI skip check), so
nothing about a test changes with the split; only the wall time does. Each session's output is
printed whole when it ends; the exit status is the first nonzero one (0 when all pass).

Usage: python tools/run_suite.py [--serial] [pytest arguments for every session]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWIFTSHADER_ICD = "/usr/lib/chromium/vk_swiftshader_icd.json"
# the folders of the first lavapipe shard: about half of the lavapipe pass's time
SHARD_A = ("tests/tvm", "tests/tvm_parity", "tests/fleet", "tests/ops")


def sessions(extra: list[str]) -> list[tuple[str, dict, list[str]]]:
    """(name, environment additions, pytest arguments) of each session."""
    lavapipe = {"VKIR_VALIDATION": "1", "VKIR_DEVICE": "lavapipe"}
    swiftshader = {"VKIR_VALIDATION": "1", "VKIR_DEVICE": "swiftshader",
                   "VK_ICD_FILENAMES": SWIFTSHADER_ICD}
    rest = [f"--ignore={folder}" for folder in SHARD_A]
    return [
        ("lavapipe, " + " ".join(SHARD_A), lavapipe, ["-m", "not timing", *SHARD_A, *extra]),
        ("lavapipe, the other tests", lavapipe, ["-m", "not timing", *rest, *extra]),
        ("SwiftShader, device tests", swiftshader, ["-m", "device and not timing", *extra]),
    ]


def main(argv: list[str]) -> int:
    serial = "--serial" in argv
    extra = [a for a in argv if a != "--serial"]
    started, running, status = time.monotonic(), [], 0
    for name, env, args in sessions(extra):
        log = tempfile.TemporaryFile(mode="w+")
        proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", *args], cwd=ROOT,
                                env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT)
        running.append((name, proc, log))
        if serial:
            proc.wait()
    for name, proc, log in running:
        code = proc.wait()
        log.seek(0)
        print(f"\n===== {name}: exit {code} after {time.monotonic() - started:.0f} s =====",
              flush=True)
        sys.stdout.write(log.read())
        sys.stdout.flush()
        status = status or code
    print(f"\n===== suite: exit {status}, {time.monotonic() - started:.0f} s =====", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
