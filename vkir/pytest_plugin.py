"""vkir's pytest plugin (loaded automatically once vkir is installed: entry point `pytest11`).

Options:
    --vkir-device=SEL     the device tests run on ("cpu"/"lavapipe", "gpu", an index, a name);
                          sets VKIR_DEVICE, so `vkir.device()` and `vkir.build` pick it too
    --vkir-validation     enable the Khronos validation layer (VKIR_VALIDATION=1)

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

Marker:
    @pytest.mark.vkir_device   the test needs a Vulkan device (skipped with the reason without one)
"""

from __future__ import annotations

import inspect
import os
import sys

import numpy as np
import pytest

NO_DEVICE = ("no Vulkan device ({why}): device tests skipped; the tests that need no device "
             "still ran")
# relative and absolute tolerance for floats, by bits: a few units in the last place of results
# that went through a handful of operations, with room for reassociated sums
FLOAT_TOLERANCE = {16: (2e-3, 1e-3), 32: (1e-5, 1e-6), 64: (1e-12, 1e-13)}


def pytest_addoption(parser):
    """The plugin's options: --vkir-device and --vkir-validation."""
    group = parser.getgroup("vkir", "vkir (Vulkan compute)")
    group.addoption("--vkir-device", default=None, metavar="SEL",
                    help="device selector for tests: cpu/lavapipe, gpu, an index or a name "
                         "(sets VKIR_DEVICE)")
    group.addoption("--vkir-validation", action="store_true", default=False,
                    help="enable the Vulkan validation layer; any message fails the test that "
                         "caused it (sets VKIR_VALIDATION=1)")


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


# -- device versus interpreter -------------------------------------------------------------------
def _copy(a):
    from vkir.api import DeviceArray

    if isinstance(a, DeviceArray):
        return a.numpy()
    if isinstance(a, np.ndarray):
        return a.copy()
    return a


def _build(func, device):
    """(kernel, checked): vkir.build(func) with device-side bounds checks where this vkir offers
    them (`checked`), else without."""
    import vkir

    params = inspect.signature(vkir.build).parameters
    if "check_bounds" in params:
        return vkir.build(func, device=device, check_bounds=True), True
    return vkir.build(func, device=device), False


def assert_agree(got, want, name: str, rtol=None, atol=None) -> None:
    """Assert that array `got` equals `want`: exactly for integers and bools, within
    (rtol, atol) for floats (default: FLOAT_TOLERANCE of the dtype)."""
    if got.dtype.kind == "f":
        r, a = FLOAT_TOLERANCE.get(got.dtype.itemsize * 8, FLOAT_TOLERANCE[32])
        np.testing.assert_allclose(got, want, rtol=r if rtol is None else rtol,
                                   atol=a if atol is None else atol, equal_nan=True,
                                   err_msg=f"{name}: the device and the reference differ")
    else:
        np.testing.assert_array_equal(got, want, err_msg=f"{name}: the device and the reference differ")


def check(func, *args, device=None, reference=None, rtol=None, atol=None, **call_options):
    """Run `func` on the device and as the reference on copies of `args`; assert that every
    array agrees; return the device's arrays (one per array argument, in order).

    `func` is a PrimFunc (built with vkir.build; the reference is vkir.interpret) or anything
    callable on arrays, such as a ShaderKernel (then `reference(*copies)` computes the expected
    arrays in place, and `call_options`, e.g. grid= and push=, go to `func`)."""
    import vkir
    from vkir.ir import PrimFunc

    dev = device if device is not None else vkir.device()
    on_device = [_copy(a) for a in args]
    expected = [_copy(a) for a in args]
    if isinstance(func, PrimFunc):
        if reference is not None or call_options:
            raise TypeError("vkir_check: a PrimFunc is checked against the interpreter; "
                            "reference= and call options are for shaders")
        kernel, checked = _build(func, dev)
        # the interpreter computes as this device does: its subgroup size and float behaviour
        info = getattr(dev, "info", None)
        like = dict(subgroup_size=getattr(kernel, "subgroup_size", None)
                    or func.attrs.get("subgroup_size") or getattr(info, "subgroup_size", None) or 32,
                    denormals="flush" if "flushes_denormals" in getattr(info, "quirks", ()) else "preserve")
        if checked:   # an out-of-bounds access is skipped on the device and raises after it
            kernel(*on_device)
            vkir.interpret(func, *expected, **like)
        else:         # the interpreter raises before the device could write out of bounds
            vkir.interpret(func, *expected, **like)
            kernel(*on_device)
        names = [func.buffer_map[p].name if p in func.buffer_map else p.name for p in func.params]
    else:
        if reference is None:
            raise TypeError("vkir_check: give reference=callable computing the expected arrays "
                            f"in place for {func!r} (only a PrimFunc has the interpreter)")
        func(*on_device, **call_options)
        reference(*expected)
        names = [f"argument {i}" for i in range(len(args))]
    out = []
    for name, got, want in zip(names, on_device, expected):
        if isinstance(got, np.ndarray):
            assert_agree(got, np.asarray(want), name, rtol, atol)
            out.append(got)
    return tuple(out)


@pytest.fixture
def vkir_check(vkir_device):
    """vkir_check(func, *args, ...): see `check`; runs on the test's device."""

    def run(func, *args, **options):
        options.setdefault("device", vkir_device)
        return check(func, *args, **options)

    return run
