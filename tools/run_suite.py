"""`make test`'s runner: the whole suite on lavapipe, its device tests on SwiftShader and the
quirk-sensitive, image and golden device tests on a second lavapipe (Mesa 25, whose llvmpipe has
fewer quirks than the system's 22.3), as concurrent pytest sessions so that a 2-core machine keeps
both cores busy.

The lavapipe pass is cut into two shards by test folder (SHARD_A, and every other test); the
SwiftShader pass runs the device tests of the whole tree. Each shard is a complete pytest session
of its own (its own Vulkan instance, validation layer, leak check at exit and CI skip check), so
nothing about a test changes with the split; only the wall time does. Each session's output is
printed whole when it ends; the exit status is the first nonzero one (0 when all pass).

Mesa 25's lavapipe is unpacked into build/mesa25 by .ci/mesa-backports.sh (`make setup`) and
selected by its manifest. A session whose manifest is missing is not run: under CI (VKIR_CI=1)
that fails the suite, elsewhere it is reported as skipped.

Tests marked `full` (the long end-to-end cases: every browser page, torch.compile model and
LLM-sized TVM model beyond one representative of each kind) are deselected, which keeps `make
test` (what CI runs) under 10 minutes on 2 cores; `--full` (`make test-full`) runs them too.
Tests marked `timing` run in neither (they assert wall-clock bounds: `pytest -m timing`).

Usage: python tools/run_suite.py [--serial] [--full] [pytest arguments for every session]
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
# Mesa 25's lavapipe, beside the system's (made by .ci/mesa-backports.sh)
MESA25_ICD = ROOT / "build" / "mesa25" / "lvp_icd.json"
# what runs on it: the tests whose outcome depends on a driver quirk, the image and golden tests
MESA25_TESTS = ("tests/driver", "tests/images", "tests/test_quirk_releases.py",
                "tests/test_int64_compare_quirk.py", "tests/test_broadcast_first_quirk.py",
                "tests/test_subgroup_rows_quirk.py", "tests/test_any_device.py",
                "tests/test_semantics_device.py", "tests/spirv/test_spirv_device_numerics.py",
                "tests/transform/test_split_long_loops.py", "tests/runtime/test_runtime_devices.py",
                "tests/shaders/test_shader_limits.py", "tests/test_golden_images.py",
                "tests/test_golden_fixture.py", "tests/test_render_demo.py",
                "tests/test_golden_pictures.py")


def sessions(extra: list[str], full: bool = False) -> list[tuple[str, dict, list[str]]]:
    """(name, environment additions, pytest arguments) of each session; `full`: with the tests
    marked `full`."""
    lavapipe = {"VKIR_VALIDATION": "1", "VKIR_DEVICE": "lavapipe"}
    swiftshader = {"VKIR_VALIDATION": "1", "VKIR_DEVICE": "swiftshader",
                   "VK_ICD_FILENAMES": SWIFTSHADER_ICD}
    mesa25 = {**lavapipe, "VK_ICD_FILENAMES": str(MESA25_ICD)}
    rest = [f"--ignore={folder}" for folder in SHARD_A]
    every = "not timing" if full else "not timing and not full"
    device = f"device and {every}"
    return [
        ("lavapipe, " + " ".join(SHARD_A), lavapipe, ["-m", every, *SHARD_A, *extra]),
        ("lavapipe, the other tests", lavapipe, ["-m", every, *rest, *extra]),
        ("SwiftShader, device tests", swiftshader, ["-m", device, *extra]),
        ("lavapipe of Mesa 25, quirk, image and golden device tests", mesa25,
         ["-m", device, *MESA25_TESTS, *extra]),
    ]


def missing_driver(env: dict) -> str | None:
    """Why a session cannot run here (the driver manifest it selects does not exist), or None."""
    manifest = env.get("VK_ICD_FILENAMES")
    if manifest and not os.path.isfile(manifest):
        return f"{manifest} does not exist (make setup unpacks it: .ci/mesa-backports.sh)" \
            if manifest == str(MESA25_ICD) else f"{manifest} does not exist"
    return None


def main(argv: list[str]) -> int:
    serial, full = "--serial" in argv, "--full" in argv
    extra = [a for a in argv if a not in ("--serial", "--full")]
    started, running, status = time.monotonic(), [], 0
    for name, env, args in sessions(extra, full):
        why = missing_driver(env)
        if why is not None:
            in_ci = os.environ.get("VKIR_CI") == "1"
            print(f"\n===== {name}: {'FAILED under CI' if in_ci else 'skipped'}: {why} =====",
                  flush=True)
            status = status or int(in_ci)
            continue
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
