"""The device computes what the interpreter defines, bit for bit: float floor division, modulo
and fmod (numpy's semantics, also for huge quotients, signed zeros, infinities and NaN) and
shifts by any amount (taken modulo the bit width). Runs on whatever Vulkan device the tests get;
a dtype the device lacks must be refused with UnsupportedError instead.
"""

from __future__ import annotations

import numpy as np
import pytest

import vkir
from vkir.testing import expect_features, missing_features
from vkir import T

pytestmark = pytest.mark.device

# int8/uint8 and int64/uint64 need nothing: without device support they are emulated
# (EmulateInt8, EmulateInt64)
_FEATURE = {"float16": ("float16", "storage_buffer_16bit"), "float64": ("float64",),
            "int16": ("int16", "storage_buffer_16bit"),
            "uint16": ("int16", "storage_buffer_16bit")}


def _supported(device, dtype: str) -> bool:
    return set(_FEATURE.get(dtype, ())) <= device.info.features


def _denormal_free(device, dtype: str, *arrays) -> np.ndarray:
    """Where the device does not promise to preserve denormals (no DenormPreserve for this
    width: SwiftShader flushes some to zero), the elements whose operands or results are
    denormal are outside the bit-for-bit promise (docs/semantics.md); elsewhere everything is."""
    n = len(arrays[0])
    bits = np.dtype(dtype).itemsize * 8
    if bits in device.info.float_controls.denorm_preserve or \
            not any(q in device.info.quirks for q in ("flushes_denormals",)):
        return np.ones(n, bool)
    tiny = np.finfo(dtype).tiny
    keep = np.ones(n, bool)
    for x in arrays:
        keep &= ~((x != 0) & (np.abs(x) < tiny))
    return keep


def _bits_equal(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise: same bit pattern, or both NaN."""
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    return (got.view(u) == want.view(u)) | (np.isnan(got) & np.isnan(want))


def _adversarial(dtype: str, rng, n: int) -> np.ndarray:
    finfo = np.finfo(dtype)
    special = [0.0, -0.0, 1.0, -1.0, 1.1, -1.1, 3.3, 0.5, 7.0, -7.0, 1e9, -1e9, 2.0 ** 24 + 1,
               np.inf, -np.inf, np.nan, float(finfo.max), -float(finfo.max), float(finfo.tiny),
               float(finfo.smallest_subnormal), -float(finfo.smallest_subnormal),
               float(finfo.eps), 1e30, -1e-30]
    with np.errstate(over="ignore"):
        special = np.array(special).astype(dtype)
        scale = 10.0 ** rng.integers(finfo.minexp // 3, finfo.maxexp // 3, n)
        rand = (rng.standard_normal(n) * scale).astype(dtype)
    return np.concatenate([special, rand])


def _divmod_kernel(dtype: str, n: int, lanes: int):
    vt = dtype if lanes == 1 else f"{dtype}x{lanes}"
    m = n // lanes
    return vkir.from_script(f'''
@T.prim_func
def f(a: T.Buffer(({m},), "{vt}"), b: T.Buffer(({m},), "{vt}"), q: T.Buffer(({m},), "{vt}"),
      r: T.Buffer(({m},), "{vt}"), t: T.Buffer(({m},), "{vt}")):
    for bx in T.thread_binding({m // 32}, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            q[bx * 32 + tx] = a[bx * 32 + tx] // b[bx * 32 + tx]
            r[bx * 32 + tx] = a[bx * 32 + tx] % b[bx * 32 + tx]
            t[bx * 32 + tx] = T.fmod(a[bx * 32 + tx], b[bx * 32 + tx])
''')


@pytest.mark.parametrize("dtype, lanes", [("float32", 1), ("float32", 4), ("float64", 1),
                                          ("float16", 2)])
def test_float_floor_division_and_modulo_match_numpy_bit_for_bit(device, dtype, lanes):
    rng = np.random.default_rng(11)
    xs = _adversarial(dtype, rng, 40)
    a, b = np.repeat(xs, len(xs)), np.tile(xs, len(xs))
    n = len(a) // 128 * 128
    a, b = a[:n], b[:n]
    f = _divmod_kernel(dtype, n, lanes)
    if not _supported(device, dtype):
        with pytest.raises(vkir.UnsupportedError):
            vkir.build(f)
        return
    with np.errstate(all="ignore"):
        want = (np.floor_divide(a, b), np.remainder(a, b), np.fmod(a, b))
    interp = [np.zeros(n, dtype) for _ in range(3)]
    vkir.interpret(f, a, b, *interp)
    for precise in (True, False):
        out = [np.zeros(n, dtype) for _ in range(3)]
        vkir.build(f, precise=precise)(a, b, *out)
        for name, got, ref, exp in zip(("//", "%", "fmod"), out, interp, want):
            assert _bits_equal(ref, exp).all(), f"interpreter {name} differs from numpy"
            keep = _denormal_free(device, dtype, a, b, *want)
            bad = np.flatnonzero(~_bits_equal(got, exp) & keep)
            assert bad.size == 0, (f"{dtype}x{lanes} precise={precise}: {a[bad[0]]!r} {name} "
                                   f"{b[bad[0]]!r} = {got[bad[0]]!r} on the device, "
                                   f"{exp[bad[0]]!r} in numpy ({bad.size} differ)")


def test_issue_repro_3_3_and_1e9_modulo_1_1(device):
    f = _divmod_kernel("float32", 32, 1)
    a = np.full(32, 3.3, np.float32)
    a[1] = 1e9
    b = np.full(32, 1.1, np.float32)
    out = [np.zeros(32, np.float32) for _ in range(3)]
    vkir.build(f, precise=True)(a, b, *out)
    assert out[1][0] == np.float32(3.3) % np.float32(1.1) == np.float32(1.0999999)
    assert out[0][0] == 2.0
    assert out[1][1] == np.float32(1e9) % np.float32(1.1) and out[1][1] > 0.4


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16",
                                   "uint32", "uint64"])
def test_shifts_by_every_amount_match_the_interpreter(device, dtype):
    amounts = np.arange(-1, 71)
    n = len(amounts) * 4
    f = vkir.from_script(f'''
@T.prim_func
def f(x: T.Buffer(({n},), "{dtype}"), s: T.Buffer(({n},), "{dtype}"),
      l: T.Buffer(({n},), "{dtype}"), r: T.Buffer(({n},), "{dtype}")):
    for i in T.serial({n}):
        l[i] = x[i] << s[i]
        r[i] = x[i] >> s[i]
''')
    if not _supported(device, dtype):
        with pytest.raises(vkir.UnsupportedError):
            vkir.build(f)
        return
    npdt = np.dtype(dtype)
    with np.errstate(over="ignore"):
        x = np.tile(np.array([1, -7, 0x5A, -128], np.int64), len(amounts)).astype(npdt)
        s = np.repeat(amounts, 4).astype(npdt)
    want = [np.zeros(n, npdt), np.zeros(n, npdt)]
    vkir.interpret(f, x, s, *want)
    got = [np.zeros(n, npdt), np.zeros(n, npdt)]
    vkir.build(f)(x, s, *got)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    bits = npdt.itemsize * 8
    k = s.astype(np.int64) % bits
    assert (want[0][x == 1] == (np.ones(len(amounts), np.uint64) << k[x == 1].astype(np.uint64))
            .astype(npdt)).all()


def test_campaign_findings_division_by_zero_min_max_and_conversions(device):
    """Found by the fuzzing campaign (python -m vkir.tools.fuzz): lavapipe gave 0 for x / 0.0,
    T.min/T.max dropped NaN, int64(float32(x)) came back as x (Mesa folded the round trip).
    Each must be what the interpreter computes."""
    f = vkir.from_script('''
@T.prim_func
def f(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32"), i: T.Buffer((8,), "int64"),
      q: T.Buffer((8,), "float32"), lo: T.Buffer((8,), "float32"), hi: T.Buffer((8,), "float32"),
      j: T.Buffer((8,), "int64"), h: T.Buffer((8,), "float16")):
    for k in T.serial(8):
        q[k] = a[k] / b[k]
        lo[k] = T.min(a[k], b[k])
        hi[k] = T.max(b[k], a[k])
        j[k] = T.cast(T.cast(i[k], "float32"), "int64")
        h[k] = T.cast(a[k], "float16") / T.float16(0.0)
''')
    a = np.array([1.0, -1.0, 0.0, np.nan, np.inf, -0.0, 2.0, np.nan], np.float32)
    b = np.array([0.0, -0.0, 0.0, 1.0, -0.0, 5.0, np.nan, np.nan], np.float32)
    i = np.array([2**62 + 12345, -2**62 - 99, 2**40 + 1, 123456789123, -5, 2**63 - 1, -2**63,
                  2**53 + 1], np.int64)
    make = lambda: [np.zeros(8, np.float32) for _ in range(3)] + [np.zeros(8, np.int64),
                                                                 np.zeros(8, np.float16)]
    want, got = make(), make()
    vkir.interpret(f, a, b, i, *want)
    with expect_features(device, "int64", "float16", "storage_buffer_16bit"):
        vkir.build(f, precise=True)(a, b, i, *got)
    if missing_features(device, "int64", "float16", "storage_buffer_16bit"):
        return
    for name, w, g in zip(("/", "min", "max", "int64(float32)", "f16 / 0"), want, got):
        assert _bits_equal(g, w).all() if w.dtype.kind == "f" else (g == w).all(), (name, g, w)
    assert np.isinf(want[0][0]) and np.isnan(want[1][3]) and want[3][0] == 2**62
