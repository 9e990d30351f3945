"""EmulateInt64: on devices without int64 (SwiftShader), every int64/uint64 value is a pair of
uint32 words and every 64-bit buffer a uint32x2 one with the same bytes. The output has no 64-bit
integer left, passes both checkers, and computes exactly what the interpreter computes for the
original (wrap-around at 64 bits) on edge values: 0, 1, -1, 2**31, 2**32 - 1, 2**32, 2**63 - 1,
-2**63 and random ones. On the device the kernels run natively where int64 exists and through
the emulation elsewhere; the emulated function itself runs on every driver too."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.analysis import verify_types, verify_well_formed
from vkir.ir import PointerType, walk
from vkir.transform import EmulateInt64
from vkir.transform.emulate_int64 import is_wide

N = 64
EDGES = [0, 1, -1, 2, -2, 2**31, 2**31 - 1, -2**31, 2**32 - 1, 2**32, 2**32 + 1, -2**32,
         2**63 - 1, -2**63, 2**62, 31, 32, 33, 63, 64]


def _operands(seed: int = 0) -> tuple:
    """(a, b) int64 arrays of N elements: the edge values against each other, then random."""
    rng = np.random.default_rng(seed)
    pairs = [(x, y) for x in EDGES for y in EDGES]
    pick = rng.choice(len(pairs), N // 2, replace=False)
    a = [pairs[k][0] for k in pick] + list(rng.integers(-2**63, 2**63 - 1, N // 2, dtype=np.int64))
    b = [pairs[k][1] for k in pick] + list(rng.integers(-2**40, 2**40, N // 2, dtype=np.int64))
    return np.array(a, np.int64), np.array(b, np.int64)


@T.prim_func
def signed_ops(a: T.Buffer((64,), "int64"), b: T.Buffer((64,), "int64"),
               out: T.Buffer((64, 12), "int64"), flags: T.Buffer((64, 6), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        x = a[tx]
        y = b[tx]
        out[tx, 0] = x + y
        out[tx, 1] = x - y
        out[tx, 2] = x * y
        out[tx, 3] = (x & y) | (x ^ T.int64(0x0F0F0F0F0F0F))
        out[tx, 4] = ~x
        out[tx, 5] = T.shift_left(x, y)
        out[tx, 6] = T.shift_right(x, y)
        out[tx, 7] = T.shift_right(x, T.int64(33)) + T.shift_left(y, T.int64(3))
        out[tx, 8] = T.min(x, y) * T.int64(3) - T.max(x, y)
        out[tx, 9] = T.select(x < y, x, y * T.int64(-7))
        out[tx, 10] = -x
        out[tx, 11] = x * T.int64(1000000007) + T.int64(-(2**40))
        flags[tx, 0] = T.cast(x < y, "int32")
        flags[tx, 1] = T.cast(x <= y, "int32")
        flags[tx, 2] = T.cast(x > y, "int32")
        flags[tx, 3] = T.cast(x >= y, "int32")
        flags[tx, 4] = T.cast(x == y, "int32") + 2 * T.cast(x != y, "int32")
        flags[tx, 5] = T.cast(x, "int32")


@T.prim_func
def unsigned_ops(a: T.Buffer((64,), "uint64"), b: T.Buffer((64,), "uint64"),
                 out: T.Buffer((64, 6), "uint64"), flags: T.Buffer((64, 4), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        x = a[tx]
        y = b[tx]
        out[tx, 0] = x + y
        out[tx, 1] = x - y
        out[tx, 2] = x * y
        out[tx, 3] = T.shift_right(x, y)
        out[tx, 4] = T.min(x, y)
        out[tx, 5] = T.max(x, y)
        flags[tx, 0] = T.cast(x < y, "int32")
        flags[tx, 1] = T.cast(x <= y, "int32")
        flags[tx, 2] = T.cast(x > y, "int32")
        flags[tx, 3] = T.cast(x >= y, "int32")


@T.prim_func
def casts(a: T.Buffer((64,), "int64"), i: T.Buffer((64,), "int32"), u: T.Buffer((64,), "uint32"),
          f: T.Buffer((64,), "float32"), wide: T.Buffer((64, 6), "int64"),
          uwide: T.Buffer((64, 2), "uint64"), narrow: T.Buffer((64, 3), "int32"),
          floats: T.Buffer((64, 2), "float32"), unarrow: T.Buffer((64,), "uint32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        wide[tx, 0] = T.cast(i[tx], "int64")
        wide[tx, 1] = T.cast(u[tx], "int64")
        wide[tx, 2] = T.cast(f[tx], "int64")
        wide[tx, 3] = T.cast(f[tx] > T.float32(0), "int64")
        wide[tx, 4] = T.cast(T.cast(a[tx], "uint64"), "int64") + T.int64(1)
        wide[tx, 5] = T.cast(T.cast(a[tx], "int8"), "int64")
        uwide[tx, 0] = T.cast(f[tx], "uint64")
        uwide[tx, 1] = T.cast(i[tx], "uint64")
        narrow[tx, 0] = T.cast(a[tx], "int32")
        narrow[tx, 1] = T.cast(a[tx] != T.int64(0), "int32")
        narrow[tx, 2] = T.cast(T.shift_right(T.cast(a[tx], "uint64"), T.uint64(40)), "int32")
        floats[tx, 0] = T.cast(a[tx], "float32")
        floats[tx, 1] = T.cast(T.cast(a[tx], "uint64"), "float32")
        unarrow[tx] = T.cast(a[tx], "uint32")


@T.prim_func
def loops(a: T.Buffer((64,), "int64"), idx: T.Buffer((64,), "int64"),
          out: T.Buffer((64,), "int64")):
    for tx in T.thread_binding(T.int64(64), "threadIdx.x"):
        acc = T.alloc_buffer((2,), "int64", scope="local")
        acc[T.int64(0)] = T.int64(0)
        acc[T.int64(1)] = T.int64(-1)
        for k in T.serial(T.int64(-3), T.int64(5)):
            acc[0] = acc[0] + a[(tx + k * T.int64(7) + T.int64(64)) % T.int64(64)] * k
            acc[1] = T.max(acc[1], a[idx[tx] & T.int64(63)] - k)
        out[tx] = (acc[0] ^ acc[1]) + acc[0] // T.int64(16) - T.floormod(acc[1], T.int64(1024))


def _floats(seed: int = 0) -> np.ndarray:
    """Floats for the conversions: the int64/uint64 saturation bounds, NaN, infinities, values
    around 2**31 and 2**32, fractions of either sign, and random magnitudes up to 2**70."""
    rng = np.random.default_rng(seed)
    special = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.0**31, -2.0**31, 2.0**31 - 128, 2.0**32,
               2.0**32 - 256, -2.0**32, 2.0**63, -2.0**63, 2.0**64, -2.0**64, 2.0**62 * 3,
               1e19, -1e19, np.nan, np.inf, -np.inf, 123456789.0, -98765432.0]
    rest = rng.standard_normal(N - len(special)) * 2.0 ** rng.integers(0, 70, N - len(special))
    return np.array(special + list(rest), np.float32)


def _arguments(func, seed: int = 0) -> list:
    """Arguments for `func`: operands from _operands, floats from _floats, zeroed outputs."""
    a, b = _operands(seed)
    args = []
    for p in func.params:
        buf = func.buffer_map[p]
        shape = tuple(d.value for d in buf.shape)
        dt = np.dtype(str(buf.dtype))
        name = buf.name
        if name in ("a", "b") and dt.kind in "iu":
            args.append((a if name == "a" else b).view(dt).copy())
        elif name == "idx":
            args.append(b.copy())
        elif name == "i":
            args.append(a.astype(np.int32))
        elif name == "u":
            args.append(b.astype(np.uint32))
        elif name == "f":
            args.append(_floats(seed))
        else:
            args.append(np.zeros(shape, dt))
    return args


FUNCS = [signed_ops, unsigned_ops, casts, loops]


def _words(arr: np.ndarray) -> np.ndarray:
    """The uint32 words of a 64-bit array (what a uint32x2 buffer takes), others as they are."""
    return arr.view(np.uint32) if arr.dtype.itemsize == 8 else arr


@pytest.mark.parametrize("func", FUNCS, ids=lambda f: f.name)
def test_emulated_function_has_no_64bit_integer_and_passes_the_checkers(func):
    after = EmulateInt64()(func)
    verify_types(after)
    verify_well_formed(after)
    for node in walk(after.body):
        dt = getattr(node, "dtype", None)
        assert not is_wide(dt) and not (isinstance(dt, PointerType) and is_wide(dt.element)), node
    assert not any(is_wide(buf.dtype) for buf in after.buffer_map.values())


@pytest.mark.parametrize("func", FUNCS, ids=lambda f: f.name)
def test_emulated_function_computes_what_the_original_does(func):
    after = EmulateInt64()(func)
    for seed in range(3):
        want = _arguments(func, seed)
        got = [a.copy() for a in want]
        vkir.interpret(func, *want)
        vkir.interpret(after, *[_words(g) for g in got])
        for k, (w, g) in enumerate(zip(want, got)):
            np.testing.assert_array_equal(g, w, err_msg=f"{func.name} argument {k}, seed {seed}")


def test_shifts_by_every_amount():
    @T.prim_func
    def shifts(a: T.Buffer((128,), "int64"), s: T.Buffer((128,), "int64"),
               out: T.Buffer((128, 3), "int64")):
        for tx in T.thread_binding(128, "threadIdx.x"):
            out[tx, 0] = T.shift_left(a[tx], s[tx])
            out[tx, 1] = T.shift_right(a[tx], s[tx])
            out[tx, 2] = T.cast(T.shift_right(T.cast(a[tx], "uint64"), T.cast(s[tx], "uint64")),
                                "int64")

    a = np.array([-0x123456789ABCDEF0, 0x7EDCBA9876543210] * 64, np.int64)
    s = np.arange(128, dtype=np.int64)   # 64..127 shift by s mod 64
    want, got = np.zeros((128, 3), np.int64), np.zeros((128, 3), np.int64)
    vkir.interpret(shifts, a, s, want)
    vkir.interpret(EmulateInt64()(shifts), _words(a), _words(s), _words(got))
    np.testing.assert_array_equal(got, want)


def test_int64_to_float32_rounds_to_nearest_even():
    """Ties and sticky bits below the 24 bits that are kept: halfway cases round to even, and a
    set bit far below the halfway point rounds up."""
    values = [2**24 + 1, 2**25 + 2, 2**25 + 6, 2**40 + 2**16, 2**40 + 2**16 + 1, 2**40 + 3 * 2**16,
              2**63 - 1, -2**63, -(2**40 + 2**16 + 1), (2**24 - 1) << 39, ((2**24 - 1) << 39) + 2**38,
              2**32 + 1, 2**56 + 2**32 + 1, 2**33 - 1, -1, 0]
    a = np.array(values * 4, np.int64)

    @T.prim_func
    def to_float(a: T.Buffer((64,), "int64"), out: T.Buffer((64,), "float32")):
        for tx in T.thread_binding(64, "threadIdx.x"):
            out[tx] = T.cast(a[tx], "float32")

    got = np.zeros(64, np.float32)
    vkir.interpret(EmulateInt64()(to_float), _words(a), got)
    np.testing.assert_array_equal(got, a.astype(np.float32))


@pytest.mark.parametrize("body, what", [
    ("for k in T.serial(T.int64(2**32)):\n        out[0] = k", "loop 'k' over"),
    ("out[0] = T.reinterpret(T.float64(1), 'int64')", "reinterpret"),
])
def test_what_is_not_emulated_is_refused_by_name(body, what):
    func = vkir.from_script(f'''
def refused(a: T.Buffer((2,), "int64"), out: T.Buffer((1,), "int64")):
    {body}
''')
    with pytest.raises(vkir.UnsupportedError, match=what):
        EmulateInt64()(func)


def test_the_pipeline_emulates_only_where_the_target_lacks_int64():
    from vkir.lowering import pipeline
    from vkir.target import Target

    names = lambda t: pipeline(t).names
    assert "EmulateInt64" not in names(Target.lavapipe())
    assert "EmulateInt64" in names(Target.vulkan13())
    assert "EmulateInt64" not in names(Target.vulkan13(features={"int64"}))
    assert "EmulateInt64" not in names(Target.interp())


@pytest.mark.device
@pytest.mark.parametrize("func", FUNCS, ids=lambda f: f.name)
def test_int64_kernels_run_on_the_device_like_the_interpreter(device, func):
    """Natively where the device has int64 (lavapipe), through the emulation where it does not
    (SwiftShader); and the emulated function itself on whichever device runs: the same values."""
    want = _arguments(func, 5)
    native, emulated = [a.copy() for a in want], [a.copy() for a in want]
    vkir.interpret(func, *want)
    vkir.build(func, device=device)(*native)
    vkir.build(EmulateInt64()(func), device=device)(*[_words(e) for e in emulated])
    for k, w in enumerate(want):
        np.testing.assert_array_equal(native[k], w, err_msg=f"built {func.name}, argument {k}")
        np.testing.assert_array_equal(emulated[k], w, err_msg=f"emulated {func.name}, argument {k}")


def _symbolic():
    """out[i] = float32(a[i] * (i - n)) over an int64 size n (as TVM's sizes are), built as IR:
    the script's sizes are int32."""
    from vkir import ir
    from vkir.ir import stmt as S

    n, i = ir.Var("n", "int64"), ir.Var("i", "int64")
    a, out = ir.decl_buffer((n,), "int64", "a"), ir.decl_buffer((n,), "float32", "out")
    value = ir.Cast("float32", ir.Mul(ir.BufferLoad(a, (i,)), ir.Sub(i, n)))
    body = S.For(i, ir.IntImm("int64", 0), n, "thread_binding", S.BufferStore(out, value, (i,)),
                 thread="blockIdx.x")
    return ir.PrimFunc((a.data, out.data), body, {a.data: a, out.data: out},
                       {"global_symbol": "symbolic"})


def test_an_int64_size_becomes_an_int32_one_of_the_same_name(device):
    symbolic = _symbolic()
    after = EmulateInt64()(symbolic)
    verify_well_formed(after)
    assert [(v.name, str(v.dtype)) for v in after.size_vars] == [("n", "int32")]
    a = np.array([3, -2**40, 2**33 + 5, 7, -1], np.int64)
    want, got, built = (np.zeros(5, np.float32) for _ in range(3))
    vkir.interpret(symbolic, a, want)
    vkir.interpret(after, _words(a), got)
    vkir.build(symbolic, device=device)(a, built)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(built, want)


@T.prim_func
def scaled(a: T.Buffer((8,), "int64"), out: T.Buffer((8, 2), "int64"), k: T.int64, u: T.uint64):
    for tx in T.thread_binding(8, "threadIdx.x"):
        out[tx, 0] = a[tx] * k - k
        out[tx, 1] = T.cast(T.cast(a[tx], "uint64") // u + u, "int64")


SCALARS = [(-(2**31), 2**32), (2**31, 3), (-1, 2**64 - 1), (2**40 + 5, 2**63 + 7),
           (-2**63, 1), (2**63 - 1, 2**33 - 1), (0, 2**32 + 1)]


def test_a_scalar_int64_parameter_is_two_words():
    """The parameter is two uint32 parameters of its name after the pass: the low word in its
    place, the high word after the others; passed so, any 64-bit value computes as the original
    does."""
    after = EmulateInt64()(scaled)
    assert [(p.name, str(p.dtype)) for p in after.params if p not in after.buffer_map] == \
        [("k", "uint32"), ("u", "uint32"), ("k", "uint32"), ("u", "uint32")]
    a = np.array(EDGES[:8], np.int64)
    for k, u in SCALARS:
        want, got = np.zeros((8, 2), np.int64), np.zeros((8, 2), np.int64)
        vkir.interpret(scaled, a, want, k, u)
        words = [v & 0xFFFFFFFF for v in (k, u)] + [(v >> 32) & 0xFFFFFFFF for v in (k, u)]
        vkir.interpret(after, _words(a), _words(got), *words)
        np.testing.assert_array_equal(got, want, err_msg=f"k={k}, u={u}")


@T.prim_func
def scaled_bytes(b: T.Buffer(("n",), "int8"), k: T.int64, c: T.Buffer((4,), "int64"), u: T.uint64):
    # n is named only by an 8-bit buffer: a hidden size after EmulateInt8, after the high words
    for i in T.serial(n):
        b[i] = T.cast(T.cast(b[i], "int64") * k + T.cast(u >> T.uint64(32), "int64"), "int8")
    for i in T.serial(4):
        c[i] = k + T.cast(u, "int64") * T.cast(i, "int64")


def test_interpret_lowered_passes_a_scalar_int64_as_its_two_words():
    """vkir.testing.interpret_lowered takes the user's arguments: a 64-bit scalar goes in as
    its low word in place and its high word after the other parameters (and before a hidden
    size, bound on the original signature), as a Kernel passes it; values outside the type
    are refused."""
    from vkir.target import Target
    from vkir.testing import interpret_lowered

    after = EmulateInt64()(scaled)
    a = np.array(EDGES[:8], np.int64)
    for k, u in SCALARS:
        want, got = np.zeros((8, 2), np.int64), np.zeros((8, 2), np.int64)
        vkir.interpret(scaled, a, want, k, u)
        interpret_lowered(after, a, got, k, np.uint64(u))
        np.testing.assert_array_equal(got, want, err_msg=f"k={k}, u={u}")
    with pytest.raises(vkir.ArgumentError, match="k = 9223372036854775808 does not fit int64"):
        interpret_lowered(after, a, got, 2**63, 1, original=scaled)
    lowered = vkir.lower(scaled_bytes, Target.vulkan13())   # no int8, no int64
    assert [p.name for p in lowered.params] == ["b", "k", "c", "u", "k", "u"]
    for k, u in SCALARS:
        want = [np.arange(-3, 3, dtype=np.int8), np.zeros(4, np.int64)]
        got = [x.copy() for x in want]
        vkir.interpret(scaled_bytes, want[0], k, want[1], u)
        interpret_lowered(lowered, got[0], k, got[1], u, original=scaled_bytes)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g, w, err_msg=f"k={k}, u={u}")


def test_a_scalar_int64_argument_round_trips_on_the_device(device):
    """Values beyond 2**32 and negative ones reach the kernel whole: natively where the device
    has int64, as two push-constant words where it does not."""
    a = np.array(EDGES[:8], np.int64)
    kernel = vkir.build(scaled, device=device)
    for k, u in SCALARS:
        want, got = np.zeros((8, 2), np.int64), np.zeros((8, 2), np.int64)
        vkir.interpret(scaled, a, want, k, u)
        kernel(a, got, k, u)
        np.testing.assert_array_equal(got, want, err_msg=f"k={k}, u={u}")
    with pytest.raises(vkir.ArgumentError):
        kernel(a, got, 2**63, 1)


BITS = vkir.from_script('''
def bits(a: T.Buffer((16,), "int64"), u: T.Buffer((16,), "uint64"), o: T.Buffer((16, 6), "int64"),
         w: T.Buffer((16,), "int32x2")):
    for i in T.thread_binding(16, "threadIdx.x"):
        o[i, 0] = T.popcount(a[i])
        o[i, 1] = T.clz(a[i])
        o[i, 2] = T.ctz(a[i])
        o[i, 3] = T.fabs(a[i])
        o[i, 4] = T.reinterpret(u[i] + T.uint64(1), "int64")
        o[i, 5] = T.cast(T.clz(u[i]) + T.ctz(u[i]), "int64") + T.reinterpret(w[i], "int64")
''')


def test_bit_counts_abs_and_reinterpret_of_the_same_bits(device):
    """popcount/clz/ctz (64 for 0), wrapping abs, and reinterpret between int64, uint64 and
    int32x2: as the interpreter computes them, emulated and on the device."""
    a = np.array([0, 1, -1, 2**63 - 1, -2**63, 2**32, 2**31, -2**31, 5, -5, 2**40 + 7, -(2**40),
                  3 << 33, 1 << 62, 12345, -12345], np.int64)
    w = np.random.default_rng(0).integers(-2**31, 2**31, (16, 2), dtype=np.int32)
    want, got, built = (np.zeros((16, 6), np.int64) for _ in range(3))
    vkir.interpret(BITS, a, a.view(np.uint64), want, w)
    vkir.interpret(EmulateInt64()(BITS), _words(a), _words(a), _words(got), w)
    vkir.build(BITS, device=device)(a, a.view(np.uint64), built, w)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(built, want)


F64 = vkir.from_script('''
def f64(a: T.Buffer((32,), "int64"), d: T.Buffer((32,), "float64"), wide: T.Buffer((32, 2), "int64"),
        uwide: T.Buffer((32,), "uint64"), back: T.Buffer((32, 2), "float64")):
    for i in T.thread_binding(32, "threadIdx.x"):
        wide[i, 0] = T.cast(d[i], "int64")
        wide[i, 1] = T.cast(T.cast(d[i] * T.float64(-3), "uint64"), "int64")
        uwide[i] = T.cast(d[i], "uint64")
        back[i, 0] = T.cast(a[i], "float64")
        back[i, 1] = T.cast(T.cast(a[i], "uint64"), "float64")
''')


def test_float64_conversions_where_the_device_has_float64(device):
    """A device with float64 but not int64 converts in float64 (no float32 step): fractions
    above 2**31 truncate toward zero, values above 2**53 round once, bounds saturate."""
    d = np.array([0.5, -0.5, 2.0**31 + 0.5, -(2.0**31 + 0.5), 2.0**32 + 0.75, -(2.0**40) - 0.25,
                  2.0**53 + 2, 2.0**63, -2.0**63, 2.0**64, 1e300, -1e300, np.nan, np.inf, -np.inf,
                  4503599627370495.5, -4503599627370495.5, 123456789012.9, 2.0**62 * 3, 1.0] * 2,
                 np.float64)[:32]
    a = np.array([2**53 + 1, -(2**53 + 1), 2**63 - 1, -2**63, 2**54 + 3, 2**62 + 2**10 + 1, -1, 0]
                 * 4, np.int64)
    want = [np.zeros((32, 2), np.int64), np.zeros(32, np.uint64), np.zeros((32, 2), np.float64)]
    vkir.interpret(F64, a, d, *want)
    after = EmulateInt64()(F64)
    got = [np.zeros_like(w) for w in want]
    ints = lambda arrays: [_words(x) if x.dtype.kind in "iu" else x for x in arrays]
    vkir.interpret(after, _words(a), d, *ints(got))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    if "float64" in device.info.features:
        built = [np.zeros_like(w) for w in want]
        vkir.build(after, device=device)(_words(a), d, *ints(built))
        for w, b in zip(want, built):
            np.testing.assert_array_equal(b, w)
