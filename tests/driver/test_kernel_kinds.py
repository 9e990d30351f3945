"""Every kind of kernel behind one dispatch path: vkir.build's device kernel, its bounds-checked
form, the interpreter backend (device="interp") and a shader kernel from GLSL. Each is called,
launched and profiled with the same arguments and results; `dispatch_spec` and `vkir.sequence()`
record the device kinds and refuse the interpreter backend by name (it has no device dispatch)."""

from pathlib import Path

import numpy as np
import pytest

import vkir
from vkir.errors import UnsupportedError

SCALE = vkir.from_script('''
@T.prim_func
def scale(a: T.Buffer((256,), "float32"), b: T.Buffer((256,), "float32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            b[bx * 64 + tx] = a[bx * 64 + tx] * T.float32(3)
''')

GLSL = Path(__file__).resolve().parents[2] / "shaders"


class _Shader:
    """A shader kernel (shaders/scale.comp) called like the others: (a, b)."""

    def __init__(self, device):
        self.kernel = vkir.compile_glsl(GLSL / "scale.comp", device=device)

    def args(self, a, b):
        return self.kernel, (a, b), {"grid": (4,), "push": {"n": 256, "alpha": 3.0, "beta": 0.0}}


def _kinds(device):
    return {
        "device": (vkir.build(SCALE, device=device), {}),
        "bounds_checked": (vkir.build(SCALE, device=device, check_bounds=True), {}),
        "interp": (vkir.build(SCALE, device="interp"), {}),
    }


@pytest.fixture
def inputs():
    a = np.arange(256, dtype=np.float32)
    return a, a * 3


@pytest.mark.parametrize("kind", ["device", "bounds_checked", "interp", "shader"])
def test_call_launch_and_profile(kind, device, inputs):
    a, want = inputs
    if kind == "shader":
        shader = _Shader(device)

        def call(x, y, method=None):
            k, args, kw = shader.args(x, y)
            return (getattr(k, method) if method else k)(*args, **kw)
    else:
        kernel, _ = _kinds(device)[kind]

        def call(x, y, method=None):
            return (getattr(kernel, method) if method else kernel)(x, y)
    b = np.zeros(256, np.float32)
    call(a, b)
    np.testing.assert_array_equal(b, want)
    b = np.zeros(256, np.float32)
    handle = call(a, b, "launch")
    handle.wait()
    np.testing.assert_array_equal(b, want)
    b = np.zeros(256, np.float32)
    if kind == "shader":
        k, args, kw = shader.args(a, b)
        timing = k.profile(*args, repeat=2, **kw)
    else:
        timing = kernel.profile(a, b, repeat=2)
    assert timing.n == 2 and timing.median >= 0
    np.testing.assert_array_equal(b, want)


@pytest.mark.parametrize("kind", ["device", "bounds_checked", "shader"])
def test_device_kinds_record_into_a_sequence(kind, device, inputs):
    a, want = inputs
    da, db = vkir.array(a, device=device), vkir.zeros(256, "float32", device=device)
    if kind == "shader":
        k, args, kw = _Shader(device).args(da, db)
    else:
        k, args, kw = _kinds(device)[kind][0], (da, db), {}
    spec = k.dispatch_spec(*args, **kw)
    assert spec is not None
    with vkir.sequence(device=device) as seq:
        k(*args, **kw)
    seq.wait(timeout=30)
    np.testing.assert_array_equal(db.numpy(), want)


def test_the_interpreter_backend_refuses_device_recording_by_name(device, inputs):
    a, _ = inputs
    kernel = vkir.build(SCALE, device="interp")
    da, db = vkir.array(a, device=device), vkir.zeros(256, "float32", device=device)
    with pytest.raises(UnsupportedError, match="interp backend: it has no device dispatch"):
        kernel.dispatch_spec(da, db)
    with pytest.raises(UnsupportedError, match="inside vkir.sequence"):
        with vkir.sequence(device=device):
            kernel(da, db)
