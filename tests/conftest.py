"""Shared fixtures. Device tests run on the best Vulkan device (lavapipe in CI) with the Khronos
validation layer on (VKIR_VALIDATION=1 unless the environment says otherwise); any message the
layer emits during a test fails that test. Device tests skip only where no Vulkan device exists at
all, and the skip reason says what still ran."""

import os

import pytest

pytest_plugins = ["checker_plugin"]  # verify_types after every pass (tests/checker_plugin.py)
os.environ.setdefault("VKIR_VALIDATION", "1")
os.environ.setdefault("VKIR_CACHE_DIR", "0")  # tests never write a pipeline cache into $HOME

NO_DEVICE = ("no Vulkan device ({why}): device tests skipped; the pure-Python IR, pass, "
             "interpreter and SPIR-V (SPIRV-Tools validation) tests still ran")


@pytest.fixture(scope="session")
def _vulkan_device():
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
    dev = runtime.open_device()
    runtime.validation_messages()  # start clean
    return dev


@pytest.fixture
def device(_vulkan_device):
    """The opened runtime Device; fails the test if the validation layer said anything."""
    from vkir import runtime

    runtime.validation_messages()
    yield _vulkan_device
    messages = runtime.validation_messages()
    if messages:
        pytest.fail(f"{len(messages)} validation-layer message(s):\n" + "\n".join(messages[:20]),
                    pytrace=False)


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
    """Under CI, any skipped test fails the run. Tear the Vulkan instance down inside the session
    so leak reports fail the run."""
    import sys

    skipped = skipped_in_ci(session)
    if skipped:
        print(f"\nVKIR_CI=1: {len(skipped)} test(s) skipped, none may be:\n  " +
              "\n  ".join(skipped[:20]), file=sys.stderr)
        session.exitstatus = 1
    runtime = sys.modules.get("vkir.runtime")
    if runtime is None or "instance" not in runtime.instance._state:
        return
    left = runtime.shutdown()
    if left and runtime.validation_requested():
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
