"""Device limits are checked once: a Kernel when it is built (its bindings, push constants and
workgroup, through its Runtime) and once per call (its grid), a ShaderKernel once when it is
loaded and once per call; the pipeline's creation and the launch's recording trust them and check
nothing again (before, both repeated the binding, push-constant, group-count and buffer-range
checks). vkir.runtime's own entry points, called directly, still check."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.runtime import launch as runtime_launch
from vkir.runtime import limits
from vkir.runtime import pipeline as runtime_pipeline

CHECKS = ("check_bindings", "check_push_constants", "check_workgroup", "check_shader",
          "check_groups", "check_grid", "check_binding_range", "check_storage_range")


@pytest.fixture
def checks(monkeypatch) -> dict:
    """Calls of every limit check from now on, by name, wherever the runtime imported it."""
    counts = {}
    for module in (limits, runtime_pipeline, runtime_launch):
        for name in CHECKS:
            original = getattr(limits, name)
            if not hasattr(module, name):
                continue

            def counting(*args, _name=name, _original=original, **kwargs):
                counts[_name] = counts.get(_name, 0) + 1
                return _original(*args, **kwargs)

            monkeypatch.setattr(module, name, counting)
    return counts


@T.prim_func
def shift_scale(x: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32")):
    # a kernel of this test alone, so its pipeline is created here (not found in the cache)
    for bx in T.thread_binding((n + 31) // 32, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            i = bx * 32 + tx
            if i < n:
                y[i] = x[i] * T.float32(3.25) + T.float32(0.625)


def test_a_kernel_checks_limits_once_per_build_and_once_per_call(device, checks):
    arrays = [(vkir.array(np.arange(n, dtype=np.float32), device=device),
               vkir.zeros((n,), "float32", device=device)) for n in (40, 70, 100)]
    checks.clear()   # the arrays' allocations are checked when they are made
    k = vkir.build(shift_scale, device=device)
    assert checks == {"check_bindings": 1, "check_push_constants": 1, "check_workgroup": 1}
    for calls, (x, y) in enumerate(arrays, 1):   # new sizes: new push bytes, grid and launch
        checks.clear()
        k(x, y)
        assert checks == {"check_grid": 1}
        np.testing.assert_array_equal(y.numpy(), x.numpy() * np.float32(3.25) + np.float32(0.625))


def test_a_recorded_kernel_is_checked_once(device, checks):
    k = vkir.build(shift_scale, device=device)
    x = vkir.array(np.arange(24, dtype=np.float32), device=device)
    y = vkir.zeros((24,), "float32", device=device)
    checks.clear()
    with vkir.sequence():
        k(x, y)
    assert checks == {"check_grid": 1}
    np.testing.assert_array_equal(y.numpy(), x.numpy() * np.float32(3.25) + np.float32(0.625))


SOURCE = """#version 450
layout(local_size_x = 4) in;
layout(std430, binding = 0) buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
void main() { a[gl_GlobalInvocationID.x] = b[gl_GlobalInvocationID.x] * 7.0 - 0.375; }
"""


def test_a_shader_checks_limits_once_per_load_and_once_per_call(device, checks):
    sk = vkir.compile_glsl(SOURCE, device=device)
    assert checks == {"check_shader": 1, "check_bindings": 1}
    for n in (8, 12):
        checks.clear()
        a, b = vkir.zeros((n,), "float32", device=device), vkir.array(
            np.arange(n, dtype=np.float32), device=device)
        checks.clear()
        sk(a, b, grid=n // 4)
        assert checks == {"check_groups": 1, "check_binding_range": 2}
        np.testing.assert_array_equal(a.numpy(), b.numpy() * np.float32(7) - np.float32(0.375))


def test_direct_runtime_users_are_still_checked(device):
    from vkir import runtime

    k = vkir.build(shift_scale, device=device)
    x = vkir.zeros((8,), "float32", device=device)
    cap = device.info.limits.max_workgroup_count[1]
    with pytest.raises(vkir.UnsupportedError, match=rf"{cap + 1} workgroups on axis y exceed "
                                                    r"maxComputeWorkGroupCount\[1\]"):
        runtime.get_launch(device, k.pipeline, [x.buffer, x.buffer], b"\0" * 4, (1, cap + 1, 1))
    too_many = device.info.limits.max_per_stage_storage_buffers + 1
    with pytest.raises(vkir.UnsupportedError, match=f"pipeline 'shift_scale' binds {too_many} "
                                                    "storage buffers"):
        runtime.get_pipeline(device, k.spirv, k.module.entry_point, tuple(range(too_many)))
