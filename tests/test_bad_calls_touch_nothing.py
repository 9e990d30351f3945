"""Beyond tests/test_api.py: a bad call leaves *every* buffer untouched
(numpy arguments included, also ones before the bad argument that the kernel would write),
negative floor division/modulo and chained kernels equal the interpreter's results, and CI's
no-skip rule (tests/conftest.py `skipped_in_ci`, enabled by .ci/run) with the validation layer on."""

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import vkir
from vkir.testing import math_tolerance
from vkir.errors import ArgumentError

from test_api import axpb, floordivmod, vadd  # noqa: E402  (tests/ is on sys.path)

ROOT = Path(__file__).resolve().parents[1]


def _snapshot(args):
    return [a.numpy().copy() if isinstance(a, vkir.api.DeviceArray)
            else a.copy() if isinstance(a, np.ndarray) else None for a in args]


def _assert_untouched(args, before):
    for i, (a, b) in enumerate(zip(args, before)):
        if b is not None:
            got = a.numpy() if isinstance(a, vkir.api.DeviceArray) else a
            np.testing.assert_array_equal(got, b, err_msg=f"argument {i} was modified")


def _calls(device):
    n, rng = 100, np.random.default_rng(3)
    x = lambda: rng.random(n, dtype=np.float32)  # noqa: E731
    y = lambda: np.full(n, 7.0, np.float32)  # noqa: E731  (an output the kernel would write)
    dev = lambda a: vkir.array(a, device)  # noqa: E731
    return {
        "vadd-too-few": (vadd, (x(), x())),
        "vadd-too-many": (vadd, (x(), x(), y(), y())),
        "vadd-dtype-last": (vadd, (x(), x(), np.zeros(n, np.float64))),
        "vadd-dtype-first": (vadd, (np.zeros(n, np.float64), x(), y())),
        "vadd-shape": (vadd, (x(), x(), np.zeros((n, 1), np.float32))),
        "vadd-size-mismatch": (vadd, (dev(x()), x(), np.zeros(n + 1, np.float32))),
        "vadd-device-dtype": (vadd, (dev(x()), dev(x()), dev(np.zeros(n, np.int32)))),
        "axpb-output-before-bad-int": (axpb, (x(), y(), 1.5, 2.0, 1.0)),
        "axpb-output-before-missing-scalar": (axpb, (x(), y(), 50, 2.0)),
        "axpb-device-output-before-bad-float": (axpb, (dev(x()), dev(y()), 50, "2", 1.0)),
        "axpb-buffer-for-scalar": (axpb, (x(), y(), x(), 2.0, 1.0)),
    }


CASES = [
    "vadd-too-few", "vadd-too-many", "vadd-dtype-last", "vadd-dtype-first", "vadd-shape",
    "vadd-size-mismatch", "vadd-device-dtype", "axpb-output-before-bad-int",
    "axpb-output-before-missing-scalar", "axpb-device-output-before-bad-float",
    "axpb-buffer-for-scalar"]


@pytest.mark.parametrize("case", CASES)
def test_wrong_arguments_raise_argument_error_and_touch_no_buffer(device, case):
    func, args = _calls(device)[case]
    k = vkir.build(func, device=device)
    before = _snapshot(args)
    launches = set(device.launches)   # (collecting freed buffers may drop some meanwhile)
    with pytest.raises(ArgumentError):
        k(*args)
    assert not set(device.launches) - launches  # nothing recorded or submitted
    _assert_untouched(args, before)


def test_negative_floor_division_and_modulo_equal_the_interpreter(device):
    rng = np.random.default_rng(11)
    n = 777
    a = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(1, 1000, n).astype(np.int32) * rng.choice([-1, 1], n).astype(np.int32)
    a[:6], b[:6] = [-7, 7, -7, 7, -2**31, -1], [2, -2, -2, 2, 3, 2**31 - 1]
    q, r = np.zeros(n, np.int32), np.zeros(n, np.int32)
    vkir.build(floordivmod, device=device)(a, b, q, r)
    qi, ri = np.zeros(n, np.int32), np.zeros(n, np.int32)
    vkir.interpret(floordivmod, a, b, qi, ri)
    np.testing.assert_array_equal(q, qi)
    np.testing.assert_array_equal(r, ri)
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)


def test_chained_kernels_on_device_arrays_equal_the_interpreter(device):
    n = 3001
    rng = np.random.default_rng(12)
    a, b = rng.standard_normal((2, n)).astype(np.float32)
    add, scale = vkir.build(vadd, device=device), vkir.build(axpb, device=device)
    A, B = vkir.array(a, device), vkir.array(b, device)
    C, D, E = (vkir.zeros(n, "float32", device) for _ in range(3))
    add(A, B, C)
    scale(C, D, n - 5, -1.5, 0.25)
    add(D, C, E)
    c, d, e = (np.zeros(n, np.float32) for _ in range(3))
    vkir.interpret(vadd, a, b, c)
    vkir.interpret(axpb, c, d, n - 5, -1.5, 0.25)
    vkir.interpret(vadd, d, c, e)
    np.testing.assert_array_equal(E.numpy(), e)
    assert np.all(E.numpy()[n - 5:] == c[n - 5:])  # the scalar bound was honoured


def _session_with(reports):
    stats = {"skipped": reports}
    reporter = SimpleNamespace(stats=stats)
    plugins = SimpleNamespace(get_plugin=lambda name: reporter if name == "terminalreporter" else None)
    return SimpleNamespace(config=SimpleNamespace(pluginmanager=plugins))


def test_ci_fails_the_run_on_any_skip(monkeypatch):
    import conftest

    skip = SimpleNamespace(nodeid="tests/x.py::t", longrepr=("x.py", 3, "Skipped: no device"))
    xfail = SimpleNamespace(nodeid="tests/x.py::u", longrepr="", wasxfail="known")
    monkeypatch.setenv("VKIR_CI", "1")
    assert conftest.skipped_in_ci(_session_with([skip, xfail])) == \
        ["tests/x.py::t: Skipped: no device"]
    monkeypatch.delenv("VKIR_CI")
    assert conftest.skipped_in_ci(_session_with([skip])) == []  # outside CI a skip is a skip
    assert "VKIR_CI=1 make test" in (ROOT / ".ci" / "run").read_text()
    assert "tools/run_suite.py" in (ROOT / "Makefile").read_text()   # tests/test_run_suite.py


def test_device_tests_run_with_the_validation_layer(device):
    from vkir import runtime

    if os.environ.get("VKIR_VALIDATION") != "1" and os.environ.get("VKIR_CI") != "1":
        pytest.skip("VKIR_VALIDATION explicitly turned off outside CI")
    # requested means enabled: the instance refuses to start without VK_LAYER_KHRONOS_validation
    assert runtime.validation_requested()


# every math intrinsic of vkir.ir.op against numpy and the interpreter (test_api covers ten)
_F64 = np.float64
# asin/acos: Vulkan only promises atan2's precision (4096 ulp); lavapipe is ~3000 ulp off near 1
MATH = {  # name: (arity, numpy on float64, input range, rtol/atol)
    "acos": (1, np.arccos, (-0.99, 0.99), 1e-3), "acosh": (1, np.arccosh, (1.01, 50), 1e-5),
    "asin": (1, np.arcsin, (-0.99, 0.99), 1e-3), "asinh": (1, np.arcsinh, (-50, 50), 1e-5),
    "atan": (1, np.arctan, (-50, 50), 1e-5), "atanh": (1, np.arctanh, (-0.9, 0.9), 1e-5),
    "cos": (1, np.cos, (-6, 6), 1e-5), "cosh": (1, np.cosh, (-5, 5), 1e-5),
    "ceil": (1, np.ceil, (-9, 9), 0), "erf": (1, None, (-4, 4), 2e-6),
    "exp": (1, np.exp, (-10, 10), 1e-5), "exp2": (1, np.exp2, (-10, 10), 1e-5),
    "fabs": (1, np.abs, (-9, 9), 0), "floor": (1, np.floor, (-9, 9), 0),
    "log": (1, np.log, (0.01, 100), 1e-5), "log2": (1, np.log2, (0.01, 100), 1e-5),
    "round": (1, np.round, (-9, 9), 0), "rsqrt": (1, lambda v: 1 / np.sqrt(v), (0.01, 100), 1e-5),
    "sigmoid": (1, lambda v: 1 / (1 + np.exp(-v)), (-20, 20), 2e-6),
    "sin": (1, np.sin, (-6, 6), 1e-5), "sinh": (1, np.sinh, (-5, 5), 1e-5),
    "sqrt": (1, np.sqrt, (0, 100), 1e-6), "tan": (1, np.tan, (-1.2, 1.2), 1e-5),
    "tanh": (1, np.tanh, (-5, 5), 1e-5), "trunc": (1, np.trunc, (-9, 9), 0),
    "atan2": (2, np.arctan2, (-5, 5), 1e-5), "pow": (2, np.power, (0.1, 4), 1e-5),
    "fmod": (2, np.fmod, (-9, 9), 1e-5), "fma": (3, lambda a, b, c: a * b + c, (-5, 5), 1e-5),
}


def test_every_float_math_intrinsic_is_tested():
    from vkir.ir.op import OPS

    float_math = {op for op, info in OPS.items() if info.kind in ("math_float", "math_abs")}
    assert float_math == set(MATH)


@pytest.mark.parametrize("name", sorted(MATH))
def test_math_intrinsic_matches_numpy_and_interpreter(device, name):
    import math

    arity, fn, (lo, hi), tol = MATH[name]
    if fn is None:
        fn = np.vectorize(math.erf)
    params = ", ".join(f'x{k}: T.Buffer(("n",), "float32")' for k in range(arity))
    call = ", ".join(f"x{k}[i]" for k in range(arity))
    func = vkir.from_script(f'''
@T.prim_func
def math_{name}({params}, y: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                y[i] = T.{name}({call})
''')
    rng = np.random.default_rng(len(name))
    xs = [rng.uniform(lo, hi, 500).astype(np.float32) for _ in range(arity)]
    if name == "round":
        xs[0][:6] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5]  # half to even, like numpy
    if name == "fmod":
        xs[1][np.abs(xs[1]) < 0.5] = 0.5  # keep the divisor away from zero
    y = np.zeros(500, np.float32)
    vkir.build(func, device=device)(*xs, y)
    want = fn(*[x.astype(_F64) for x in xs])
    # no device is more accurate than Vulkan's precision table requires (SwiftShader's sin and
    # cos are off by 2e-4): the bound is the larger of the test's and Vulkan's
    rtol, atol = (max(tol, t) for t in math_tolerance(name))
    np.testing.assert_allclose(y, want, rtol=rtol, atol=atol)
    ref = np.zeros_like(y)
    vkir.interpret(func, *xs, ref)
    np.testing.assert_allclose(y, ref, rtol=max(rtol, 1e-6), atol=max(atol, 1e-6))


@pytest.mark.parametrize("name", ["isnan", "isinf"])
def test_float_class_intrinsics(device, name):
    func = vkir.from_script(f'''
@T.prim_func
def cls_{name}(x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "int32")):
    for tx in T.thread_binding(8, "threadIdx.x"):
        y[tx] = T.if_then_else(T.{name}(x[tx]), 1, 0)
''')
    x = np.array([0, 1, -1, np.inf, -np.inf, np.nan, 3e38, -0.0], np.float32)
    y = np.zeros(8, np.int32)
    vkir.build(func, device=device)(x, y)
    np.testing.assert_array_equal(y, getattr(np, name)(x).astype(np.int32))
    ref = np.zeros_like(y)
    vkir.interpret(func, x, ref)
    np.testing.assert_array_equal(y, ref)


def test_demo_table_has_device_compile_time_device_time_and_check():
    """`vkir demo` prints this table (tests/tools/test_cli.py runs the command itself)."""
    from vkir.tools.demo import format_table

    rows = [{"kernel": "vadd n=8", "device": "llvmpipe", "compile_ms": 2.5, "driver_ms": 1.25,
             "device_ms": 0.25, "check": "ok", "detail": "max err 0.0e+00"}]
    head, rule, line = format_table(rows).splitlines()
    assert [c for c in head.split("  ") if c] == ["kernel", "device", "compile ms", "driver ms",
                                                   "device ms", "check", "detail"]
    assert set(rule) <= {"-", " "}
    assert line.split() == ["vadd", "n=8", "llvmpipe", "2.5", "1.2", "0.250", "ok", "max", "err",
                            "0.0e+00"]


def test_shared_memory_beyond_the_device_limit_is_refused_before_dispatch(device):
    words = device.info.limits.max_shared_memory_bytes // 4 + 1  # one float32 too many
    func = vkir.from_script(f'''
@T.prim_func
def big_shared(a: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        s = T.alloc_buffer(({words},), "float32", scope="shared")
        s[tx] = a[tx]
        T.barrier()
        a[tx] = s[63 - tx]
''')
    launches = set(device.launches)
    with pytest.raises(vkir.UnsupportedError, match="shared"):
        vkir.build(func, device=device)
    assert not set(device.launches) - launches


def test_non_coherent_memory_is_flushed_and_invalidated(device, monkeypatch):
    """Lavapipe's memory is coherent, so pretend it is not: host writes are flushed before the
    dispatch and invalidated before host reads (the validation layer checks the calls)."""
    from vkir.runtime import memory

    calls = []
    for name in ("_flush", "_invalidate"):
        original = getattr(memory.Buffer, name)
        monkeypatch.setattr(memory.Buffer, name,
                            lambda self, _o=original, _n=name: (calls.append(_n), _o(self))[1])
    n = 1000
    a, b = np.random.default_rng(2).random((2, n), dtype=np.float32)
    A, B, C = (vkir.empty(n, "float32", device) for _ in range(3))
    if not all(arr.buffer.host_visible for arr in (A, B, C)):  # device-local: staging copies
        A.write(a)
        B.write(b)
        vkir.build(vadd, device=device)(A, B, C)
        np.testing.assert_array_equal(C.numpy(), a + b)
        return
    for arr in (A, B, C):
        arr.buffer.coherent = False
    A.write(a)
    B.write(b)
    assert calls.count("_flush") >= 2
    vkir.build(vadd, device=device)(A, B, C)
    np.testing.assert_array_equal(C.numpy(), a + b)
    assert "_invalidate" in calls
