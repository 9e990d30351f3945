"""Emitted kernels compute what the interpreter computes, on a real Vulkan device (lavapipe in CI).

These tests drive vkir.runtime directly with codegen's dispatch description (bindings, push
constants, grid), so they check the backend's numerics independently of the facade: floor/trunc
division and modulo of negative operands, erf/sigmoid, casts, packed float32x3 buffers, pointer
casts, shared memory with barriers, lane-wise if_then_else. The `device` fixture (tests/conftest.py)
skips only without any Vulkan device and fails a test on any validation-layer message.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from vkir.ir import BufferLoad, BufferStore, Call, DataType, Var, decl_buffer
from vkir.spirv import FEATURES, Target, codegen
from vkir.testing import expect_features, missing_features

import spirv_kernels as K

pytestmark = pytest.mark.device

_PACK = {("int", 32): "i", ("uint", 32): "I", ("int", 64): "q", ("uint", 64): "Q",
         ("float", 32): "f", ("float", 64): "d"}


def _target(dev) -> Target:
    """The device's features and limits, but Vulkan 1.1 / SPIR-V 1.3."""
    return Target.vulkan("vulkan1.1", features=dev.info.features & FEATURES,
                         limits=Target.from_device(dev).limits)


def run_on_device(dev, func, args):
    """Run `func` on `args` (arrays and scalars in parameter order); arrays are updated."""
    from vkir import runtime as rt
    from vkir.interpreter import evaluate

    mod = codegen(func, _target(dev))
    env = {}
    for p, a in zip(func.params, args):
        buf = func.buffer_map.get(p)
        if buf is None:
            env[p] = a
            continue
        shape = list(np.shape(a))
        shape[-1] //= buf.dtype.lanes
        for extent, size in zip(buf.shape, shape):
            if isinstance(extent, Var):
                env[extent] = size
    device_buffers = {}
    for b in mod.bindings:
        if b.param_index not in device_buffers:
            arr = args[b.param_index]
            dbuf = rt.Buffer(dev, max(arr.nbytes, 4))
            dbuf.write(arr)
            device_buffers[b.param_index] = dbuf
    push = bytearray(mod.push_constant_size)
    for pc in mod.push_constants:
        value = env[pc.var]
        value = float(value) if pc.dtype.is_float else int(value)
        struct.pack_into("<" + _PACK[(pc.dtype.code, pc.dtype.bits)], push, pc.offset, value)
    groups = tuple(int(evaluate(g, env)) for g in mod.grid)
    pipe = rt.get_pipeline(dev, mod.words, mod.entry_point,
                           bindings=tuple(b.binding for b in mod.bindings),
                           push_constant_size=mod.push_constant_size)
    rt.dispatch(dev, pipe, [device_buffers[b.param_index] for b in mod.bindings], bytes(push),
                groups)
    for index, dbuf in device_buffers.items():
        dbuf.read(args[index])
    return mod


def differential(dev, func, args, rtol=1e-5, atol=1e-5, outside=None):
    """Interpreter vs device on copies of the same inputs; `outside(expected)` may give a mask
    of the float elements outside the promise on this device (compared as equal)."""
    import vkir

    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    vkir.interpret(func, *expected)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_on_device(dev, func, got)
    for p, e, g in zip(func.params, expected, got):
        if isinstance(e, np.ndarray):
            name = func.buffer_map[p].name
            if e.dtype.kind == "f":
                if outside is not None:
                    g = np.where(outside(e), e, g)
                np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=name)
            else:
                np.testing.assert_array_equal(g, e, err_msg=name)
    return got


RNG = np.random.default_rng(1234)
N = 256


def _nonzero_ints(n, dtype="int32", lo=-50, hi=50):
    v = RNG.integers(lo, hi, n).astype(dtype)
    v[v == 0] = 7
    return v


def test_vadd(device):
    a, b = RNG.random(N, np.float32), RNG.random(N, np.float32)
    c = np.zeros(N, np.float32)
    (_, _, got) = differential(device, K.k_vadd(), [a, b, c])
    np.testing.assert_allclose(got, a + b)


def test_integer_division_and_modulo_with_negative_operands(device):
    a, b = _nonzero_ints(N), _nonzero_ints(N)
    u = RNG.integers(1, 31, N).astype("uint32")
    differential(device, K.k_int_ops(), [a, b, u, np.zeros(N, "int32"), np.zeros(N, "uint32")])


def test_floor_division_exact_values(device):
    """FloorDiv/FloorMod/Div/Mod of every sign combination against Python's own arithmetic."""
    from vkir.ir import Div, FloorDiv, FloorMod, Mod, seq

    n = Var("n")
    a, b = decl_buffer((n,), "int32", "A"), decl_buffer((n,), "int32", "B")
    outs = [decl_buffer((n,), "int32", name) for name in ("FD", "FM", "TD", "TM")]
    ops = (FloorDiv, FloorMod, Div, Mod)
    func = K.kernel("divmod", [a, b, *outs], K.grid1d(n, 64, lambda i: seq(*[
        BufferStore(o, op(BufferLoad(a, (i,)), BufferLoad(b, (i,))), (i,))
        for o, op in zip(outs, ops)])))
    pairs = [(x, y) for x in (-7, -6, -1, 0, 1, 6, 7, -2**31 + 1, 2**31 - 1)
             for y in (-3, -1, 1, 3, 7, -7)]
    av = np.array([p[0] for p in pairs], "int32")
    bv = np.array([p[1] for p in pairs], "int32")
    res = [np.zeros(len(pairs), "int32") for _ in outs]
    run_on_device(device, func, [av, bv, *res])
    for k, (x, y) in enumerate(pairs):
        trunc_q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        assert res[0][k] == x // y, (x, y)
        assert res[1][k] == x % y, (x, y)
        assert res[2][k] == trunc_q, (x, y)
        assert res[3][k] == x - y * trunc_q, (x, y)


def test_vector_floor_ops(device):
    a = RNG.integers(-100, 100, N * 4).astype("int32")
    differential(device, K.k_vector_int_ops(), [a, np.zeros(N * 4, "int32")])


@pytest.mark.parametrize("op,lo,hi,tol", [
    ("erf", -4.0, 4.0, 2e-6), ("sigmoid", -20.0, 20.0, 2e-6), ("rsqrt", 0.01, 100.0, 1e-5),
    ("round", -10.0, 10.0, 0.0), ("exp", -10.0, 10.0, 1e-5), ("tanh", -5.0, 5.0, 1e-5),
    ("log", 0.01, 100.0, 1e-5), ("atanh", -0.9, 0.9, 1e-5), ("trunc", -10.0, 10.0, 0.0),
])
def test_float_math(device, op, lo, hi, tol):
    n = Var("n")
    a, o = decl_buffer((n,), "float32", "A"), decl_buffer((n,), "float32", "O")
    func = K.kernel(op, [a, o], K.grid1d(n, 64, lambda i: BufferStore(
        o, Call("float32", op, (BufferLoad(a, (i,)),)), (i,))))
    x = RNG.uniform(lo, hi, N).astype(np.float32)
    if op == "round":
        x[:8] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, -3.5]  # half to even, like numpy
    out = np.zeros(N, np.float32)
    run_on_device(device, func, [x, out])
    ref = {"erf": np.vectorize(math.erf), "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
           "rsqrt": lambda v: 1 / np.sqrt(v.astype(np.float64)), "round": np.round,
           "exp": np.exp, "tanh": np.tanh, "log": np.log, "atanh": np.arctanh,
           "trunc": np.trunc}[op](x.astype(np.float64))
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


def test_float_divmod(device):
    a = RNG.uniform(-10, 10, N).astype(np.float32)
    differential(device, K.k_float_divmod(), [a, np.zeros(N, np.float32)], atol=1e-4)


def test_casts(device):
    """Every (src, dst) chain of float32 -> src -> dst -> float64, element by element and bit for
    bit, on negative, fractional and out-of-range inputs (float -> int saturates, NaN -> 0)."""
    special = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 127.9, 128.0, -128.0, -129.0, 255.5, 256.0,
               32767.5, -32769.0, 65504.0, 65520.0, 70000.0, -70000.0, 2.0**31, -2.0**31,
               2.0**32, -2.0**32 - 512, 2.0**63, -2.0**63, 2.0**64, 1e30, -1e30, np.inf, -np.inf,
               np.nan, 1e-30, -3e-8]
    rand = RNG.uniform(-1, 1, 96) * 10.0 ** RNG.integers(0, 21, 96)
    a = np.concatenate([special, rand]).astype(np.float32)
    func = K.k_casts()
    columns = func.buffer_map[func.params[1]].shape[1].value
    chains = [(s, d) for s in K.CAST_TYPES for d in K.CAST_TYPES]
    # codegen itself (no lowering): every width must be native
    with expect_features(device, "float64", "int64", "int16", "int8", "float16"):
        out = differential(device, func, [a, np.zeros((len(a), columns), np.float64)],
                           rtol=0, atol=0, outside=_float32_denormals_where_flushed(device))[1]
    if missing_features(device, "float64", "int64", "int16", "int8", "float16"):
        return
    for k, (src, dst) in enumerate(chains):  # the interpreter's definition, from numpy
        want = _numpy_cast(_numpy_cast(a, src), dst).astype(np.float64)
        same = (out[:, k] == want) | (np.isnan(out[:, k]) & np.isnan(want))
        assert same.all(), (src, dst, a[~same][:4], out[~same, k][:4], want[~same][:4])


def _float32_denormals_where_flushed(device):
    """On a device with the "flushes_denormals" quirk (NVIDIA flushes a float32 denormal even in
    a conversion to float64), results that are float32 denormals are outside the promise."""
    if "flushes_denormals" not in device.info.quirks:
        return None
    tiny = float(np.finfo(np.float32).tiny)
    return lambda e: (e != 0) & (np.abs(e) < tiny)


def _numpy_cast(x: np.ndarray, dtype: str) -> np.ndarray:
    """numpy's conversion, saturating float -> int (NaN -> 0), x != 0 for bool."""
    if dtype == "bool":
        return x != 0
    target = np.dtype(dtype)
    if target.kind in "iu" and x.dtype.kind == "f":
        info = np.iinfo(target)
        wide = x.astype(np.float64)
        high, low = wide >= float(info.max) + 1.0, np.trunc(wide) < float(info.min)
        safe = np.where(high | low | np.isnan(wide), 0, wide).astype(target)
        return np.where(high, info.max, np.where(low, info.min, safe)).astype(target)
    with np.errstate(over="ignore"):
        return x.astype(target)


def test_narrow_storage(device):
    a = RNG.integers(0, 3, N).astype("int8")
    b = RNG.uniform(0, 1, N).astype("float16")
    c = np.zeros(N, "uint16")
    d = np.zeros(N, "int64")
    with expect_features(device, "int8", "storage_buffer_8bit", "float16", "int16",
                         "storage_buffer_16bit", "int64"):
        differential(device, K.k_narrow_storage(), [0.5, a, b, c, d], rtol=2e-3, atol=2e-3)


def test_scalar_params(device):
    out = np.zeros(N, np.float64)
    for flag in (True, False):
        with expect_features(device, "int64", "float64"):
            got = differential(device, K.k_scalar_params(), [flag, -5, 2**40, 0.25, 1.5, out])
            assert got[-1][0] == (0.25 + 2**40 - 5 if flag else 1.5)


def test_vec3_and_vec4_buffers(device):
    a3 = RNG.random(N * 3, np.float32)
    got = differential(device, K.k_vec3_buffers(), [a3, np.zeros(N * 3, np.float32)])
    np.testing.assert_allclose(got[1], 2 * a3)
    a4 = RNG.random(N * 4, np.float32)
    differential(device, K.k_vec4_buffers(), [a4, np.zeros(N * 4, np.float32)])


def test_ramps_and_gather(device):
    a = RNG.random(N, np.float32)
    differential(device, K.k_ramp_scalar_buffer(), [a, np.zeros(N, np.float32)])
    a2 = RNG.random(N * 2, np.float32)
    differential(device, K.k_ramp_vector_buffer(), [a2, np.zeros(N * 2, np.float32)])
    ints = RNG.integers(-9, 9, N).astype("int32")
    idx = RNG.integers(0, N, N * 4).astype("int32")
    differential(device, K.k_gather(), [0, ints, idx, np.zeros(N * 4, "int32")])


def test_pointer_cast(device):
    a = RNG.random(N, np.float32)
    got = differential(device, K.k_pointer_cast(), [a, np.zeros(N, np.float32)])
    np.testing.assert_allclose(got[1], a + np.repeat(a[::4], 4))


def test_transpose_2d(device):
    a = RNG.random((20, 37), np.float32)
    got = differential(device, K.k_2d_param(), [a, np.zeros((37, 20), np.float32)])
    np.testing.assert_array_equal(got[1], a.T)


def test_shared_memory_reduction(device):
    a = RNG.random(1000, np.float32)
    got = differential(device, K.k_shared_reduce(), [a, np.zeros(1000, np.float32)], rtol=1e-5)
    np.testing.assert_allclose(got[1][:16], [a[64 * k:64 * k + 64].sum() for k in range(16)],
                               rtol=1e-5)


def test_local_loops_nested_control_async(device):
    differential(device, K.k_local_loops(), [np.zeros(N, "int32")])
    differential(device, K.k_nested_control(), [RNG.integers(-9, 9, 100).astype("int32")])
    differential(device, K.k_async(), [RNG.random(N, np.float32), np.zeros(N, np.float32)])


def test_select_shuffle_if_then_else(device):
    a = RNG.uniform(0.5, 2.0, N * 4).astype(np.float32)
    differential(device, K.k_select_shuffle(), [a, np.zeros(N * 4, np.float32)])


def test_half_vectors(device):
    a = RNG.uniform(-3, 3, N * 4).astype("float16")
    with expect_features(device, "float16", "storage_buffer_16bit", "int8", "storage_buffer_8bit"):
        differential(device, K.k_half_vectors(), [a, np.zeros(N * 4, "int8")])


def test_bool_condition_cast_roundtrip(device):
    """bool <-> int via select and != 0, through an int8 buffer as BoolToInt8 would store it."""
    from vkir.ir import Cast, GT, Not

    n = Var("n")
    a, m = decl_buffer((n,), "float32", "A"), decl_buffer((n,), "int8", "M")
    func = K.kernel("mask", [a, m], K.grid1d(n, 64, lambda i: BufferStore(
        m, Cast("int8", Not(Cast("bool", Cast("int8", GT(BufferLoad(a, (i,)), 0.5))))), (i,))))
    x = RNG.random(N, np.float32)
    out = np.zeros(N, "int8")
    with expect_features(device, "int8", "storage_buffer_8bit"):  # codegen alone: no EmulateInt8
        run_on_device(device, func, [x, out])
        np.testing.assert_array_equal(out, (x <= 0.5).astype("int8"))
    assert DataType.parse("int8").bits == 8


@pytest.mark.parametrize("name", ["vadd", "saxpy", "cast_x4", "block_sum", "local_loops"])
def test_script_kernels(device, name):
    import spirv_scripts as S

    func = getattr(S, name)
    n = 300
    args = []
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None:
            args.append(1.5)
        elif buf.dtype.is_float:
            args.append(RNG.random(n, np.float32))
        else:
            args.append(RNG.integers(-9, 9, n).astype(str(buf.dtype)))
    differential(device, func, args, rtol=1e-5)


def test_narrowing_64_bit_integers_keeps_the_low_bits(device):
    """int64/uint64 scalars and vectors narrowed to every smaller width keep the low bits (codegen
    narrows through the low 32-bit word), including values just produced by a saturating float
    conversion, whose narrowing a GPU compiler once folded into a saturating one."""
    import vkir
    from vkir import T

    @T.prim_func
    def narrow(a: T.Buffer((64,), "float64"), b: T.Buffer((16,), "int64x4"),
               o: T.Buffer((64, 4), "int64"), v: T.Buffer((16, 3), "int32x4")):
        for tx in T.thread_binding(64, "threadIdx.x"):
            u = T.cast(a[tx], "uint64")
            o[tx, 0] = T.cast(T.cast(u, "uint32"), "int64")
            o[tx, 1] = T.cast(T.cast(u, "int16"), "int64")
            o[tx, 2] = T.cast(T.cast(T.cast(a[tx], "int64"), "uint8"), "int64")
            o[tx, 3] = T.cast(T.cast(u, "int32"), "int64")
            if tx < 16:
                v[tx, 0] = T.cast(b[tx], "int32x4")
                v[tx, 1] = T.cast(T.cast(b[tx], "uint16x4"), "int32x4")
                v[tx, 2] = T.reinterpret(T.cast(T.cast(b[tx], "uint64x4"), "uint32x4"), "int32x4")

    rng = np.random.default_rng(5)
    a = np.concatenate([[2.0**32, 2.0**63, 2.0**33 - 1, 2.0**40 + 12345, -1.0, 3e9, 2.0**64],
                        rng.uniform(-2.0**62, 2.0**64, 57)])
    b = rng.integers(-2**63, 2**63 - 1, (16, 4), dtype=np.int64)
    b[0] = [2**32, -(2**32), 2**31, 0x1234_5678_9ABC_DEF0]
    with expect_features(device, "int64", "float64", "int16"):
        got = [a, b, np.zeros((64, 4), np.int64), np.zeros((16, 3, 4), np.int32)]
        vkir.build(narrow, device=device)(*got)
    if missing_features(device, "int64", "float64", "int16"):
        return
    want = [a, b, np.zeros((64, 4), np.int64), np.zeros((16, 3, 4), np.int32)]
    vkir.interpret(narrow, *want)
    assert want[2][0, 0] == 0 and want[3][0, 0, 0] == 0   # 2^32 -> low word 0
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[3], want[3])
