"""Shared fixtures. Device tests run on the best Vulkan device (lavapipe in CI) with the Khronos
validation layer on (VKIR_VALIDATION=1 unless the environment says otherwise). The device, the
validation checks and the device-versus-interpreter check come from vkir's own pytest plugin
(vkir.pytest_plugin, loaded through its `pytest11` entry point): any message the layer emits
fails the test that caused it, and device tests skip only where no Vulkan device exists at all,
with a reason that says what still ran. Under CI (VKIR_CI=1) any skip fails the run."""

import os

import pytest

pytest_plugins = ["checker_plugin", "pytester"]  # verify_types after every pass (tests/checker_plugin.py)
os.environ.setdefault("VKIR_VALIDATION", "1")
os.environ.setdefault("VKIR_CACHE_DIR", "0")  # tests never write a pipeline cache into $HOME


@pytest.fixture(scope="module")
def _vulkan_device(_vkir_session_device):
    """The opened runtime Device for module-scoped fixtures (skips where no Vulkan device
    exists); opened again when a test of an earlier module shut the runtime down."""
    if _vkir_session_device.closed:
        from vkir.pytest_plugin import open_test_device

        return open_test_device()
    return _vkir_session_device


@pytest.fixture
def device(vkir_device):
    """The opened runtime Device; a validation-layer message during the test fails it."""
    return vkir_device


# the fixtures through which a test gets the Vulkan device (item.fixturenames is transitive, so
# vkir_check, device and _vulkan_device all bring _vkir_session_device)
DEVICE_FIXTURE = "_vkir_session_device"


@pytest.hookimpl(tryfirst=True)   # before `-m` selects by marker
def pytest_collection_modifyitems(config, items):
    """The `device` marker and the device fixtures agree: a test that takes a device fixture is
    a device test (marked here), and one that is not marked may not open a device (guarded by
    `_no_device_without_the_marker`), so `-m device` selects exactly the tests that use one."""
    for item in items:
        if DEVICE_FIXTURE in getattr(item, "fixturenames", ()) and \
                item.get_closest_marker("device") is None:
            item.add_marker(pytest.mark.device)


@pytest.fixture(autouse=True)
def _no_device_without_the_marker(request, monkeypatch):
    """A test without the `device` marker fails if it opens or lists a Vulkan device: the
    SwiftShader pass of `make test` runs only device tests, so such a test would silently run on
    one driver only."""
    if request.node.get_closest_marker("device") is not None:
        yield
        return
    import sys

    runtime = sys.modules.get("vkir.runtime")
    if runtime is None:
        from vkir.errors import DeviceError

        try:
            import vkir.runtime as runtime
        except DeviceError:   # no Vulkan loader: no device can be opened anyway
            yield
            return
    name = request.node.nodeid

    def refuse(*args, **kwargs):
        pytest.fail(f"{name} uses a Vulkan device but is not a device test: take the `device` "
                    "fixture or mark it `@pytest.mark.device`", pytrace=False)

    for module in (runtime, runtime.selection):
        monkeypatch.setattr(module, "open_device", refuse)
    monkeypatch.setattr(runtime, "devices", refuse)
    yield


def skipped_in_ci(session) -> list[str]:
    """Under CI (`VKIR_CI=1`, set by .ci/run) nothing may skip: the node ids of the tests that
    did, so that a device test skipped on lavapipe fails the run (xfails are not skips)."""
    if os.environ.get("VKIR_CI") != "1":
        return []
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    reports = reporter.stats.get("skipped", []) if reporter is not None else []
    return [f"{r.nodeid}: {r.longrepr[2] if isinstance(r.longrepr, tuple) else r.longrepr}"
            for r in reports if not hasattr(r, "wasxfail")]


def pytest_sessionfinish(session, exitstatus):
    """Under CI, any skipped test fails the run (the vkir plugin tears the Vulkan instance down
    inside the session, so leak reports fail it too)."""
    import sys

    skipped = skipped_in_ci(session)
    if skipped:
        print(f"\nVKIR_CI=1: {len(skipped)} test(s) skipped, none may be:\n  " +
              "\n  ".join(skipped[:20]), file=sys.stderr)
        session.exitstatus = 1


@pytest.fixture(scope="session")
def glsl():
    """glsl(name, **defines) -> SPIR-V bytes of shaders/<name>.comp (compiled once per session)."""
    from functools import cache
    from pathlib import Path

    from vkir.runtime.glsl import compile_glsl

    shaders = Path(__file__).resolve().parents[1] / "shaders"

    @cache
    def compile_(name, **defines):
        return compile_glsl(shaders / f"{name}.comp", defines=defines or None)

    return compile_
