"""vkir's pytest plugin (loaded automatically once vkir is installed: entry point `pytest11`).

Options:
    --vkir-device=SEL     the device tests run on ("cpu"/"lavapipe", "gpu", an index, a name);
                          sets VKIR_DEVICE, so `vkir.device()` and `vkir.build` pick it too
    --vkir-validation     enable the Khronos validation layer (VKIR_VALIDATION=1)
    --vkir-bless          vkir_golden writes (or updates) the generic golden images instead of
                          failing
    --vkir-bless-device   the same, as this device's baselines (golden/<test>@<device-key>.png)
    --vkir-report=DIR     writes DIR/index.html, a static triage page of every image comparison
                          of the run (vkir.golden_report)
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
    vkir_golden           vkir_golden(image, **options) compares a picture with the test's
                          approved images in `<test file's folder>/golden/` (this device's
                          baseline `<test>@<device-key>.png`, the generic `<test>.png` (.npy for
                          float images), the images of `<test>/`; any one matching passes)
                          through vkir.testing.assert_image_matches (options: max_diff,
                          max_fraction, mean, edges, ssim, flip; name= for a second picture in
                          one test); on failure the actual, golden and diff images go to the
                          test's tmp_path and the message names the device; every comparison is
                          recorded in golden/.cache/runs/ (vkir.golden_baselines)

When a session has device tests, the header names the Vulkan device, its driver and driver
version, and its device key.

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
    """The plugin's options: --vkir-device, --vkir-fleet, --vkir-validation, --vkir-bless,
    --vkir-bless-device and --vkir-report."""
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
    group.addoption("--vkir-bless-device", action="store_true", default=False,
                    help="like --vkir-bless, but writes this device's baselines "
                         "(golden/<test>@<device-key>.png)")
    group.addoption("--vkir-report", default=None, metavar="DIR",
                    help="write DIR/index.html: every image comparison of the run, failures "
                         "first, with actual, golden and diff pictures and the bless commands")


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
_REPORT = pytest.StashKey[list]()
_DEVICE = pytest.StashKey[object]()


def session_device(config):
    """The DeviceLabel of the device this session's tests run on (vkir.golden_baselines), looked
    up once per session."""
    from vkir.golden_baselines import current_device

    if _DEVICE not in config.stash:
        config.stash[_DEVICE] = current_device()
    return config.stash[_DEVICE]


_DEVICE_MARKERS = ("vkir_device", "device")


def pytest_report_collectionfinish(config, start_path, items):
    """The header's device line: where a collected test uses a device, the Vulkan device, its
    driver and driver version, and its device key (sessions without one create no instance)."""
    if not any(m in getattr(item, "fixturenames", ()) or item.get_closest_marker(m) is not None
               for item in items for m in ("_vkir_session_device", *_DEVICE_MARKERS)):
        return []
    label = session_device(config)
    return [f"vkir device: {label.description} (device key {label.key})"]


def golden_stem(node, name: str | None = None) -> str:
    """The golden file's name without suffix for test `node`: its name within the file (the
    class too, for a method; parametrized ids included) made filename-safe, then `.name`."""
    test = node.nodeid.split("::", 1)[-1]
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", test).strip("_.")
    if name is not None:
        stem += "." + re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.")
    return stem


def bless_commands(nodeid: str) -> tuple[str, str]:
    """The commands that bless test `nodeid`'s pictures as generic goldens and as this device's
    baselines (with the environment variables that select this session's device)."""
    import shlex

    env = " ".join(f"{k}={shlex.quote(os.environ[k])}" for k in ("VKIR_DEVICE", "VK_ICD_FILENAMES")
                   if os.environ.get(k))
    prefix = env + " " if env else ""
    return (f"{prefix}pytest --vkir-bless {shlex.quote(nodeid)}",
            f"{prefix}pytest --vkir-bless-device {shlex.quote(nodeid)}")


def _best(a, candidates, options):
    """The first approved image that `a` matches (with its ImageComparison), else None."""
    from vkir.golden_images import as_image, judge

    for path in candidates:
        g = as_image(path, str(path))
        if g.shape == a.shape and g.dtype == a.dtype:
            result, problems = judge(a, g, **options)
            if not problems:
                return path, result
    return None


@pytest.fixture
def vkir_golden(request):
    """vkir_golden(image, *, name=None, **options): compare `image` (a numpy array, DeviceArray
    or DeviceImage) with the test's approved images (see the module docstring); with
    --vkir-bless or --vkir-bless-device, write the golden or this device's baseline where none
    matches. Returns the ImageComparison (None when an image was written)."""
    from vkir.golden_baselines import approved_images, baseline_path, record_run
    from vkir.golden_images import as_image, golden_suffix, save_image

    config = request.config
    used = set()
    bless = config.getoption("--vkir-bless", default=False)
    bless_device = config.getoption("--vkir-bless-device", default=False)
    reporting = config.getoption("--vkir-report", default=None) is not None
    nodeid = request.node.nodeid
    commands = bless_commands(nodeid)

    def note(status, stem, a, path, result=None, problems=(), options=None):
        if not reporting:
            return
        from vkir.golden_images import channel_tolerance
        from vkir.golden_report import ReportEntry

        g = as_image(path, str(path)) if path is not None else None
        options = options or {}
        config.stash.setdefault(_REPORT, []).append(ReportEntry(
            nodeid, stem, status, a, g, None if path is None else str(path), result,
            list(problems), dict(options),
            channel_tolerance(options.get("max_diff"), a.shape[2], a.dtype),
            str(session_device(config)),
            *commands))

    def compare(image, *, name=None, **options):
        a = as_image(image, "vkir_golden")
        device = session_device(config)     # looked up at the first comparison of the session
        stem = golden_stem(request.node, name)
        if stem in used:
            pytest.fail(f"vkir_golden: {nodeid} compared a second image with golden "
                        f"{stem!r}; give each picture its own name= ", pytrace=False)
        used.add(stem)
        folder = Path(request.path).parent / "golden"
        suffix = golden_suffix(a)
        candidates = approved_images(folder, stem, suffix, device.key)
        out_dir = request.getfixturevalue("tmp_path")
        stored = a[:, :, 0] if a.shape[2] == 1 else a
        found = _best(a, candidates, options)
        if found is not None:
            record_run(folder, stem, device.key, nodeid, found[0])
            note("passed", stem, a, found[0], found[1], options=options)
            return found[1]
        if bless or bless_device:
            path = baseline_path(folder, stem, suffix, device.key if bless_device else None)
            save_image(path, stored)
            config.stash.setdefault(_BLESSED, []).append(str(path))
            record_run(folder, stem, device.key, nodeid, path)
            note("blessed", stem, a, path, options=options)
            return None
        if not candidates:
            actual = save_image(out_dir / f"{stem}.actual{suffix}", stored)
            note("missing", stem, a, None, problems=["no approved image"], options=options)
            pytest.fail(f"no golden image {baseline_path(folder, stem, suffix)} (this run's "
                        f"image is {actual}; device: {device}): run `pytest --vkir-bless "
                        f"{nodeid}` to write it, look at it, and commit it", pytrace=False)
        record_run(folder, stem, device.key, nodeid, None)
        _fail(a, candidates, folder, out_dir, stem, options, note, device)

    def _fail(a, candidates, folder, out_dir, stem, options, note, device):
        from vkir.golden_images import assert_image_matches, judge

        first = candidates[0]
        tried = "" if len(candidates) == 1 else (
            "\n  approved images tried (none matched): "
            + ", ".join(str(p.relative_to(folder)) for p in candidates))
        try:
            assert_image_matches(a, first, out_dir=out_dir, name=stem, device=device, **options)
        except AssertionError as exc:
            g = as_image(first, str(first))
            result, problems = ((None, [str(exc).split(";")[0]]) if g.shape != a.shape or
                                g.dtype != a.dtype else judge(a, g, **options))
            note("failed", stem, a, first, result, problems, options)
            raise AssertionError(f"{exc}\n  compared with: {first}{tried}\n  to approve this "
                                 f"picture: {commands[0]} (generic golden) or {commands[1]} "
                                 f"(this device's baseline)") from None
        raise AssertionError(f"vkir_golden: {stem} matched {first} on a second look")

    return compare


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Name the golden images that --vkir-bless wrote (to review and commit), and the triage
    page --vkir-report wrote."""
    blessed = config.stash.get(_BLESSED, [])
    if blessed:
        terminalreporter.write_sep("-", f"vkir: {len(blessed)} golden image(s) written "
                                        f"(--vkir-bless); review and commit them")
        for path in blessed:
            terminalreporter.write_line(path)
    folder = config.getoption("--vkir-report", default=None)
    if folder is not None:
        from vkir.golden_report import write_report

        entries = config.stash.get(_REPORT, [])
        device = str(config.stash[_DEVICE]) if _DEVICE in config.stash else "no device used"
        page = write_report(folder, entries, device)
        terminalreporter.write_line(f"vkir: triage page of {len(entries)} image comparison(s): "
                                    f"{page}")
