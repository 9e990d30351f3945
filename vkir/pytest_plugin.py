"""vkir's pytest plugin (loaded automatically once vkir is installed: entry point `pytest11`).

Options:
    --vkir-device=SEL     the device tests run on ("cpu"/"lavapipe", "gpu", an index, a name);
                          sets VKIR_DEVICE, so `vkir.device()` and `vkir.build` pick it too
    --vkir-validation     enable the Khronos validation layer (VKIR_VALIDATION=1)
    --vkir-bless          vkir_golden writes (or updates) the golden images instead of failing
    --vkir-fleet=ADDRESS  vkir_check also checks on every device of a Ray fleet (vkir.fleet: a
                          cluster address, or local:SEL,SEL for actors on this machine) and fails
                          with one line per device that disagrees

With validation on (the option or VKIR_VALIDATION=1), any message the layer emits fails the test
that was running when it came, in the phase it came in (setup, call or teardown), and the Vulkan
instance is torn down inside the session so that leaks reported then fail the run.

Fixtures:
    vkir_device           the opened device; the test is skipped, with the reason, where no
                          Vulkan device exists
    vkir_check            vkir_check(func, *args) builds `func` (with bounds checks where vkir.build
                          offers them), runs it on the device and in the interpreter on copies of
                          `args`, and asserts that the arrays agree: exactly for integers and
                          bools, to rounding for floats; returns the device's arrays
    vkir_golden           vkir_golden(image, **options) compares a picture with the golden
                          `<test file's folder>/golden/<test name>.png` (.npy for float images)
                          through vkir.testing.assert_image_matches (options: max_diff,
                          max_fraction, mean; name= for a second picture in one test); on failure
                          the actual, golden and diff images go to the test's tmp_path

Marker:
    @pytest.mark.vkir_device   the test needs a Vulkan device (skipped with the reason without one)
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from vkir.device_check import FLOAT_TOLERANCE, assert_agree, check  # noqa: F401 (re-exported)

NO_DEVICE = ("no Vulkan device ({why}): device tests skipped; the tests that need no device "
             "still ran")


def pytest_addoption(parser):
    """The plugin's options: --vkir-device and --vkir-validation."""
    group = parser.getgroup("vkir", "vkir (Vulkan compute)")
    group.addoption("--vkir-device", default=None, metavar="SEL",
                    help="device selector for tests: cpu/lavapipe, gpu, an index or a name "
                         "(sets VKIR_DEVICE)")
    group.addoption("--vkir-fleet", default=None, metavar="ADDRESS",
                    help="vkir_check also runs on every device of this Ray fleet (a cluster "
                         "address, or local:SEL,SEL)")
    group.addoption("--vkir-validation", action="store_true", default=False,
                    help="enable the Vulkan validation layer; any message fails the test that "
                         "caused it (sets VKIR_VALIDATION=1)")
    group.addoption("--vkir-bless", action="store_true", default=False,
                    help="vkir_golden writes the golden images from this run (new ones, and those "
                         "that no longer match) instead of comparing")


def pytest_configure(config):
    """Register the vkir_device marker and apply the options."""
    config.addinivalue_line("markers", "vkir_device: the test needs a Vulkan device (skipped with "
                                       "the reason where none exists)")
    if config.getoption("--vkir-validation", default=False):
        os.environ["VKIR_VALIDATION"] = "1"
    selector = config.getoption("--vkir-device", default=None)
    if selector:
        os.environ["VKIR_DEVICE"] = selector


# -- the device ----------------------------------------------------------------------------------
def open_test_device():
    """The device tests use (VKIR_DEVICE or the best one), or pytest.skip with the reason."""
    from vkir import config
    from vkir.errors import DeviceError

    try:
        from vkir import runtime
    except DeviceError as exc:  # vkir.runtime raises it when libvulkan is missing
        pytest.skip(NO_DEVICE.format(why=str(exc)))
    try:
        infos = runtime.devices()
    except DeviceError as exc:
        pytest.skip(NO_DEVICE.format(why=str(exc)))
    if not infos:
        pytest.skip(NO_DEVICE.format(why="the loader reports none"))
    return runtime.open_device(config.device_selector())


@pytest.fixture(scope="session")
def _vkir_session_device():
    return open_test_device()


@pytest.fixture
def vkir_device(_vkir_session_device):
    """The opened vkir device (skips with the reason where no Vulkan device exists); opened
    again when an earlier test shut the runtime down (vkir.runtime.shutdown closes devices)."""
    if _vkir_session_device.closed:
        return open_test_device()
    return _vkir_session_device


def pytest_runtest_setup(item):
    """Open the device (or skip, with the reason) for tests marked vkir_device."""
    if item.get_closest_marker("vkir_device") is not None:
        open_test_device()   # opened once per process; skips with the reason without a device


# -- validation messages fail the test that caused them ------------------------------------------
def _take_messages() -> list:
    runtime = sys.modules.get("vkir.runtime")
    if runtime is None or not runtime.validation_requested() or "instance" not in runtime.instance._state:
        return []
    return runtime.validation_messages()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Fail the test during which the validation layer printed messages."""
    outcome = yield
    report = outcome.get_result()
    messages = _take_messages()
    if not messages:
        return
    text = (f"{len(messages)} Vulkan validation-layer message(s) during {report.when}:\n"
            + "\n".join(messages[:20]))
    if report.outcome == "failed":
        report.sections.append(("vkir validation", text))
        return
    report.outcome = "failed"
    report.longrepr = text


def pytest_sessionfinish(session, exitstatus):
    """Tear the Vulkan instance down inside the session, so that objects still alive (leaks)
    are reported by the validation layer and fail the run."""
    runtime = sys.modules.get("vkir.runtime")
    if runtime is None or "instance" not in runtime.instance._state:
        return
    left = runtime.shutdown()
    if left and runtime.validation_requested():
        session.exitstatus = 1


@pytest.fixture(scope="session")
def vkir_fleet(request):
    """The fleet --vkir-fleet names (connected once per session), else None."""
    address = request.config.getoption("--vkir-fleet", default=None)
    if not address:
        yield None
        return
    from vkir import fleet as fleets

    fleet = fleets.connect(address)
    yield fleet
    fleet.close()


@pytest.fixture
def vkir_check(vkir_device, vkir_fleet):
    """vkir_check(func, *args, ...): see `check`; runs on the test's device, and with
    --vkir-fleet on every device of the fleet too (PrimFuncs only)."""

    def run(func, *args, **options):
        options.setdefault("device", vkir_device)
        out = check(func, *args, **options)
        if vkir_fleet is not None:
            fleet_check(vkir_fleet, func, args, options)
        return out

    return run


def fleet_check(fleet, func, args, options) -> None:
    """Assert that `func` agrees with the interpreter on every device of `fleet`: a failure
    lists each device that disagreed or could not run it, by fingerprint."""
    from vkir.ir import PrimFunc

    if not isinstance(func, PrimFunc):
        raise TypeError("vkir_check on a fleet checks PrimFuncs (a shader has no interpreter "
                        "reference to send)")
    tolerances = {k: options[k] for k in ("rtol", "atol") if k in options}
    results = fleet.check(func, *args, **tolerances)
    bad = [r for r in results if not r.ok]
    if bad:
        from vkir.fleet import format_results

        pytest.fail(f"{func.name}: {len(bad)} fleet device(s) disagree:\n" + "\n".join(
            f"  {r.device} (actor pid {r.pid}): {r.error}" for r in bad)
            + "\n" + format_results(results), pytrace=False)


# -- golden images -------------------------------------------------------------------------------
_BLESSED = pytest.StashKey[list]()


def golden_stem(node, name: str | None = None) -> str:
    """The golden file's name without suffix for test `node`: its name within the file (the
    class too, for a method; parametrized ids included) made filename-safe, then `.name`."""
    test = node.nodeid.split("::", 1)[-1]
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", test).strip("_.")
    if name is not None:
        stem += "." + re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.")
    return stem


@pytest.fixture
def vkir_golden(request):
    """vkir_golden(image, *, name=None, **options): compare `image` (a numpy array, DeviceArray
    or DeviceImage) with the test's golden image (see the module docstring); with --vkir-bless,
    write it instead. Returns the ImageComparison (None when a golden was written)."""
    from vkir.golden_images import (as_image, assert_image_matches, golden_suffix,
                                    save_image)

    used = set()
    bless = request.config.getoption("--vkir-bless", default=False)

    def compare(image, *, name=None, **options):
        a = as_image(image, "vkir_golden")
        stem = golden_stem(request.node, name)
        if stem in used:
            pytest.fail(f"vkir_golden: {request.node.nodeid} compared a second image with golden "
                        f"{stem!r}; give each picture its own name= ", pytrace=False)
        used.add(stem)
        path = Path(request.path).parent / "golden" / (stem + golden_suffix(a))
        out_dir = request.getfixturevalue("tmp_path")
        stored = a[:, :, 0] if a.shape[2] == 1 else a
        if bless:
            if path.is_file():
                try:
                    return assert_image_matches(a, path, out_dir=out_dir, name=stem, **options)
                except AssertionError:
                    pass     # differs: written again below
            save_image(path, stored)
            request.config.stash.setdefault(_BLESSED, []).append(str(path))
            return None
        if not path.is_file():
            actual = save_image(out_dir / f"{stem}.actual{golden_suffix(a)}", stored)
            pytest.fail(f"no golden image {path} (this run's image is {actual}): run "
                        f"`pytest --vkir-bless {request.node.nodeid}` to write it, look at it, "
                        f"and commit it", pytrace=False)
        return assert_image_matches(a, path, out_dir=out_dir, name=stem, **options)

    return compare


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Name the golden images that --vkir-bless wrote (to review and commit)."""
    blessed = config.stash.get(_BLESSED, [])
    if blessed:
        terminalreporter.write_sep("-", f"vkir: {len(blessed)} golden image(s) written "
                                        f"(--vkir-bless); review and commit them")
        for path in blessed:
            terminalreporter.write_line(path)
