"""Robustness fuzzing of the facade: `vkir.build(f)(...)` with wrong arguments raises ArgumentError
(UnsupportedError where a device limit is the reason) before anything is copied to the device or
recorded, leaves every numpy and device array bit-identical, and a correct call afterwards still
computes what numpy computes. Also `vkir.empty`/`vkir.array`/`Kernel.profile` argument checks.
Examples are derandomized (the same ones on every run)."""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vkir
from vkir.errors import ArgumentError, UnsupportedError

pytestmark = pytest.mark.device

SOURCE = '''
def f(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32"),
      M: T.Buffer(("n", 2), "int32"), V: T.Buffer((2,), "float32x4"), F: T.Buffer((4,), "bool"),
      k: T.int32, x: T.float32):
    for i in T.serial(n):
        B[i] = A[i] * x + T.cast(k + M[i, 0], "float32")
        M[i, 1] = k
    V[0] = V[1] + T.broadcast(x, 4)
    F[0] = k > 0
    F[1] = x > 1.0
'''

_KERNELS = {}


def kernel(device):
    if id(device) not in _KERNELS:
        _KERNELS[id(device)] = vkir.build(vkir.from_script(SOURCE), device=device)
    return _KERNELS[id(device)]


def valid_args(n: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, n).astype(np.float32), np.zeros(n, np.float32),
            rng.integers(-9, 9, (n, 2)).astype(np.int32), rng.uniform(-2, 2, 8).astype(np.float32),
            np.zeros(4, bool), 3, 1.5]


def expected(args) -> list:
    A, B, M, V, F, k, x = (a.copy() if isinstance(a, np.ndarray) else a for a in args)
    B[:] = A * np.float32(x) + (k + M[:, 0]).astype(np.float32)
    V[:4] = V[4:] + np.float32(x)
    M[:, 1] = k
    F[0], F[1] = k > 0, x > 1.0
    return [A, B, M, V, F]


def _readonly(a):
    a = a.copy()
    a.flags.writeable = False
    return a


def _strided(a):
    big = np.zeros(a.shape + (2,), a.dtype)
    big[..., 0] = a
    out = big[..., 0]  # same values, every other element of `big`
    assert not out.flags.c_contiguous
    return out


def _set(i, value):
    return lambda args: args[:i] + [value(args[i]) if callable(value) else value] + args[i + 1:]


# (name, corrupt(args) -> args): every one of these calls is wrong
CORRUPTIONS = [
    ("no arguments", lambda args: []),
    ("one too few", lambda args: args[:-1]),
    ("one too many", lambda args: args + [1]),
    ("A is a list", _set(0, lambda a: np.asarray(a).tolist())),
    ("A is None", _set(0, None)),
    ("A is a scalar", _set(0, 1.0)),
    ("A is float64", _set(0, lambda a: np.asarray(a).astype(np.float64))),
    ("A is int32", _set(0, lambda a: np.asarray(a).astype(np.int32))),
    ("A is big-endian", _set(0, lambda a: np.asarray(a).astype(">f4"))),
    ("A is not contiguous", _set(0, lambda a: _strided(np.asarray(a)))),
    ("B is longer than A", _set(1, lambda b: np.zeros(b.shape[0] + 1, np.float32))),
    ("B is 2-d", _set(1, lambda b: np.zeros((b.shape[0], 1), np.float32))),
    ("B is read-only", _set(1, lambda b: _readonly(np.asarray(b)))),
    ("B is not contiguous", _set(1, lambda b: _strided(np.asarray(b)))),
    ("M has 3 columns", _set(2, lambda m: np.zeros((m.shape[0], 3), np.int32))),
    ("M is 1-d", _set(2, lambda m: np.zeros(m.shape[0] * 2, np.int32))),
    ("M is read-only", _set(2, lambda m: _readonly(np.asarray(m)))),
    ("M is uint32", _set(2, lambda m: np.asarray(m).astype(np.uint32))),
    ("V is not a multiple of 4 lanes", _set(3, np.zeros(7, np.float32))),
    ("V has 3 vectors", _set(3, np.zeros(12, np.float32))),
    ("V is 2-d but not (2, 4)", _set(3, np.zeros((4, 2), np.float32))),   # (2, 4) is its lanes
    ("F is int8", _set(4, np.zeros(4, np.int8))),
    ("V is read-only", _set(3, lambda a: _readonly(np.asarray(a)))),
    ("F is read-only", _set(4, lambda a: _readonly(np.asarray(a)))),
    ("k is 2**31", _set(5, 2**31)),
    ("k is below int32", _set(5, -2**31 - 1)),
    ("k is a float", _set(5, 1.5)),
    ("k is a string", _set(5, "3")),
    ("k is None", _set(5, None)),
    ("k is a bool", _set(5, True)),
    ("k is a 0-d array", _set(5, np.array(3))),
    ("k is np.uint64 2**63", _set(5, np.uint64(2**63))),
    ("x overflows float32", _set(6, 1e39)),
    ("x is a string", _set(6, "1.5")),
    ("x is complex", _set(6, 1j)),
    ("x is a bool", _set(6, False)),
    ("x is a list", _set(6, [1.5])),
]


def _snapshot(args) -> list:
    out = []
    for a in args:
        if isinstance(a, vkir.api.DeviceArray):
            out.append(a.numpy().tobytes())
        elif isinstance(a, np.ndarray):
            out.append(a.tobytes())
        else:
            out.append(None)
    return out


@pytest.fixture
def no_device_work(monkeypatch):
    """Records every copy to a runtime buffer and every launch while a test's bad call runs."""
    from vkir import runtime

    calls = []
    real_write, real_launch = runtime.Buffer.write, runtime.get_launch

    def write(self, data):
        calls.append("Buffer.write")
        return real_write(self, data)

    def get_launch(*args, **kwargs):
        calls.append("get_launch")
        return real_launch(*args, **kwargs)

    class Recorder:
        def __enter__(self):
            calls.clear()
            monkeypatch.setattr(runtime.Buffer, "write", write)
            monkeypatch.setattr(runtime, "get_launch", get_launch)
            return calls

        def __exit__(self, *exc):
            monkeypatch.setattr(runtime.Buffer, "write", real_write)
            monkeypatch.setattr(runtime, "get_launch", real_launch)

    return Recorder()


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(n=st.sampled_from([2, 5]),  # one element is always contiguous
       corruption=st.sampled_from(CORRUPTIONS),
       on_device=st.lists(st.booleans(), min_size=5, max_size=5), seed=st.integers(0, 3))
def test_wrong_calls_raise_before_any_device_work_and_change_nothing(
        device, no_device_work, n, corruption, on_device, seed):
    k = kernel(device)
    name, corrupt = corruption
    good = valid_args(n, seed)
    args = [vkir.array(a, device=device) if isinstance(a, np.ndarray) and d else a
            for a, d in zip(good, on_device + [False, False])]
    bad = corrupt(list(args))
    before = _snapshot(bad)
    with no_device_work as calls:
        with pytest.raises(ArgumentError) as info:
            k(*bad)
        assert not calls, f"{name}: {calls} before the error"
    assert str(info.value).startswith("kernel f"), str(info.value)
    assert _snapshot(bad) == before, f"{name}: an argument changed"
    k(*args)  # the kernel still works
    got = [a.numpy() if isinstance(a, vkir.api.DeviceArray) else a for a in args[:5]]
    for g, w in zip(got, expected(good)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("corruption", CORRUPTIONS, ids=[c[0] for c in CORRUPTIONS])
def test_each_wrong_call_with_numpy_and_with_device_arrays(device, no_device_work, corruption):
    for on_device in ([False] * 5, [True] * 5):
        test_wrong_calls_raise_before_any_device_work_and_change_nothing.hypothesis.inner_test(
            device, no_device_work, 3, corruption, on_device, 1)


def test_corner_case_calls_that_are_valid(device):
    """n = 0 (zero-size arrays, on the device too), NaN and infinities, extreme int32 values,
    numpy scalars, read-only inputs."""
    k = kernel(device)
    for args in ([np.zeros(0, np.float32), np.zeros(0, np.float32), np.zeros((0, 2), np.int32),
                  np.zeros(8, np.float32), np.zeros(4, bool), 1, 1.0],
                 [vkir.array(np.zeros(0, np.float32), device=device),
                  vkir.empty(0, "float32", device=device), vkir.empty((0, 2), "int32", device=device),
                  vkir.empty(2, "float32x4", device=device), vkir.empty(4, "bool", device=device),
                  -1, 2.0]):
        k(*args)
    for x in (float("nan"), float("inf"), -float("inf"), np.float32(3.5), np.float64(1e-40)):
        for kv in (2**31 - 1, -2**31, np.int8(-3), np.uint16(7)):
            good = valid_args(3)
            good[0] = _readonly(good[0])
            good[5], good[6] = kv, x
            args = list(good)
            k(*args)
            for g, w in zip(args, expected(good)):
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_a_device_array_of_another_device_is_refused(device):
    k = kernel(device)
    args = valid_args(2)
    da = vkir.array(args[0], device=device)
    other = types.SimpleNamespace(info=types.SimpleNamespace(name="another device"))
    args[0] = vkir.api.DeviceArray(da.buffer, da.shape, da.dtype, other)
    with pytest.raises(ArgumentError, match="'A' lives on 'another device'"):
        k(*args)


def test_inconsistent_symbolic_sizes_name_the_size(device):
    k = vkir.build(vkir.from_script('''
def g(c: T.int32, A: T.Buffer((c * 2,), "float32"), B: T.Buffer(("m",), "float32")):
    for i in T.serial(T.min(c * 2, m)):
        B[i] = A[i]
'''), device=device)
    with pytest.raises(ArgumentError, match=r"argument 'A' has size 4 in dim 0, expected c \* 2 = 6"):
        k(3, np.zeros(4, np.float32), np.zeros(2, np.float32))
    with pytest.raises(ArgumentError, match="expected c \\* 2 = -2"):
        k(-1, np.zeros(0, np.float32), np.zeros(2, np.float32))
    b = np.zeros(3, np.float32)
    k(2, np.arange(4, dtype=np.float32), b)
    np.testing.assert_array_equal(b, [0, 1, 2])


# ---------------------------------------------------------------------------------------------
# reproducers of the crashes this fuzzing found


def test_float_scalar_beyond_its_type_is_an_argument_error(device):
    """1e39 for a float32 parameter became inf with a numpy RuntimeWarning (an exception under
    -W error) when the push constants were packed; 7e4 does not fit float16 either."""
    k = kernel(device)
    with pytest.raises(ArgumentError, match=r"argument 'x' = 1e\+39 is out of range for float32"):
        k(*valid_args(2)[:6], 1e39)
    with pytest.raises(ArgumentError, match="out of range for float32"):
        k(*valid_args(2)[:6], -np.float64(3.5e38))


def test_zero_dim_vector_buffer_cannot_take_a_short_array(device):
    """A 0-d float32x4 buffer accepted a 0-d float32 array (4 bytes) and the kernel accessed 16
    bytes: reads past the end of the Vulkan buffer. The interpreter refuses it too."""
    k = vkir.build(vkir.from_script('''
def g(A: T.Buffer((), "float32x4"), B: T.Buffer((1,), "float32x4")):
    B[0] = A[()] + T.broadcast(1.0, 4)
'''), device=device)
    a, b = np.array(1.0, np.float32), np.zeros(4, np.float32)
    with pytest.raises(ArgumentError, match="'A' is a 0-d buffer of float32x4 elements"):
        k(a, b)
    assert not b.any()


@pytest.mark.parametrize("repeat, warmup, message", [
    (0, 1, "repeat must be an int >= 1, got 0"), ("5", 1, "repeat must be an int >= 1, got '5'"),
    (2.0, 1, "repeat must be an int >= 1"), (3, -1, "warmup must be an int >= 0, got -1"),
    (3, None, "warmup must be an int >= 0, got None")])
def test_profile_checks_repeat_and_warmup_first(device, no_device_work, repeat, warmup, message):
    """`repeat="5"` was a TypeError from inside the runtime, after the arguments were copied."""
    k = kernel(device)
    with no_device_work as calls:
        with pytest.raises(ArgumentError, match=message):
            k.profile(*valid_args(2), repeat=repeat, warmup=warmup)
        assert not calls


@pytest.mark.parametrize("shape, dtype, message", [
    ((3,), "handle", "hold bool, int, uint or float data, got handle"),
    ((3,), "U4", "hold bool, int, uint or float data"),
    ((3,), np.complex64, "hold bool, int, uint or float data"),
    ((3,), ">f4", "hold bool, int, uint or float data"),
    ((3,), "floatx", "unknown dtype 'floatx'"),
    ("abc", "float32", "shape must be an int or a sequence of ints, got 'abc'"),
    ((2.5,), "float32", "shape must be an int or a sequence of ints"),
    ((True,), "float32", "shape must be an int or a sequence of ints"),
    (None, "float32", "shape must be an int or a sequence of ints"),
    ((-1, 2), "float32", "negative dimension"),
])
def test_empty_refuses_bad_shapes_and_dtypes(device, shape, dtype, message):
    """"handle" was an AssertionError from DataType.numpy_dtype, "abc" a ValueError from int(),
    (2.5,) silently became (2,), and non-numeric numpy dtypes made device arrays of strings."""
    with pytest.raises(ArgumentError, match=message):
        vkir.empty(shape, dtype, device=device)


def test_empty_accepts_ints_and_numpy_ints(device):
    assert vkir.empty(np.int64(3), "int8", device=device).shape == (3,)
    assert vkir.empty((np.int32(2), 0), np.float32, device=device).shape == (2, 0)
    assert vkir.empty((), "float32x4", device=device).shape == (4,)


@pytest.mark.parametrize("layout", ['strides=(8, 1)', 'elem_offset=2', 'elem_offset="off"'])
def test_parameter_buffers_with_a_layout_are_refused_at_build(device, layout):
    """A parameter declared with strides or an elem_offset took a compact array of its logical
    shape, and the kernel indexed past its end (wrong results; out-of-bounds device accesses).
    The interpreter lays such arguments out; the facade refuses them before lowering."""
    func = vkir.from_script(f'''
def g(A: T.Buffer((4, 4), "float32", {layout}), B: T.Buffer((4, 4), "float32")):
    for i, j in T.grid(4, 4):
        B[i, j] = A[i, j]
''')
    with pytest.raises(UnsupportedError, match="parameter buffer 'A' has explicit strides or an "
                                               "elem_offset"):
        vkir.build(func, device=device)


@pytest.mark.parametrize("pointer_casts", [False, True])
def test_odd_kernels_build_and_run_like_the_interpreter(device, pointer_casts):
    """The odd-but-valid kernels of test_fuzz_passes.py: vkir.build refuses with a VkirError
    (UnsupportedError, TransformError...) or the device computes what the interpreter does."""
    from test_fuzz_passes import ODD, _arguments, _run

    built = 0
    for name, src in sorted(ODD.items()):
        func = vkir.from_script(src)
        try:
            k = vkir.build(func, device=device, pointer_casts=pointer_casts)
        except vkir.VkirError as err:
            assert str(err).strip(), name
            continue
        args = _arguments(func)
        try:
            want = _run(func, args)
        except vkir.VkirError:  # out of bounds for these sizes: nothing to compare
            continue
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        k(*got)
        built += 1
        for g, w in zip(got, want):
            if isinstance(w, np.ndarray):
                np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-5,
                                           atol=1e-5, err_msg=name)
    assert built > 30
