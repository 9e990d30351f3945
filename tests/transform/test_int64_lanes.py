"""int64/uint64 vectors where the device has no int64: vectorized loops over 64-bit data (ramp
accesses of scalar buffers, and int64x2 element buffers from VectorTypeRewrite) compute lane by
lane in word pairs, exactly as the interpreter computes the scalar loop, and keep the bytes of
every buffer; natively on lavapipe and emulated on SwiftShader with the same results."""

import numpy as np
import pytest

import vkir
from vkir.analysis import verify_types, verify_well_formed
from vkir.ir import PointerType, walk
from vkir.target import Target
from vkir.transform import EmulateInt64
from vkir.transform.emulate_int64 import is_wide

N = 256
EDGES = [0, 1, -1, 2**31, -2**31, 2**32 - 1, 2**32, 2**63 - 1, -2**63, 7, -7, 2**40 + 3]


def _kernel(width: int):
    """A loop vectorized by `width` over int64/uint64 data: arithmetic, division, comparisons,
    casts from the lane index and to float32, shifts, selects, min/max."""
    return vkir.from_script(f'''
def lanes{width}(a: T.Buffer(({N},), "int64"), b: T.Buffer(({N},), "int64"),
                 c: T.Buffer(({N},), "int64"), u: T.Buffer(({N},), "uint64"),
                 flags: T.Buffer(({N},), "int32"), f: T.Buffer(({N},), "float32")):
    for bx in T.thread_binding({N // 8 // width}, "blockIdx.x"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            for v in T.vectorized({width}):
                i = (bx * 8 + tx) * {width} + v
                c[i] = a[i] * b[i] + T.cast(i, "int64") - a[i] // b[i] + T.max(a[i], b[i] ^ T.int64(5))
                u[i] = T.shift_right(T.cast(a[i], "uint64"), T.cast(b[i] & T.int64(63), "uint64")) + T.cast(a[i], "uint64") % T.cast(b[i], "uint64")
                flags[i] = T.cast(a[i] < b[i], "int32") + 2 * T.cast(T.cast(a[i], "uint64") >= T.cast(b[i], "uint64"), "int32")
                f[i] = T.cast(T.select(a[i] > T.int64(0), a[i], T.min(a[i], b[i]) - T.int64(1)), "float32")
''')


def _elements(width: int):
    """Aligned accesses only: VectorTypeRewrite makes int64x`width` element buffers."""
    at = f"(bx * 8 + tx) * {width} + v"
    return vkir.from_script(f'''
def elements{width}(a: T.Buffer(({N},), "int64"), b: T.Buffer(({N},), "int64"),
                    c: T.Buffer(({N},), "int64"), flags: T.Buffer(({N},), "int32")):
    for bx in T.thread_binding({N // 8 // width}, "blockIdx.x"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            for v in T.vectorized({width}):
                c[{at}] = a[{at}] * b[{at}] - a[{at}] % b[{at}] + T.shift_left(a[{at}], b[{at}])
                flags[{at}] = T.cast(a[{at}] < b[{at}], "int32") - T.cast(a[{at}] == b[{at}], "int32")
''')


KERNELS = [_kernel(2), _kernel(4), _elements(2), _elements(4)]


def _arguments(func, seed: int) -> list:
    """a and b: random 64-bit values, divisors of every magnitude, edge values, some zero
    divisors; the outputs zeroed."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-2**63, 2**63 - 1, N, dtype=np.int64)
    b = rng.integers(-2**63, 2**63 - 1, N, dtype=np.int64) >> rng.integers(0, 63, N)
    a[:len(EDGES)], b[-len(EDGES):] = EDGES, EDGES
    b[::17] = 0
    out = {"a": a, "b": b}
    return [out[p.name] if p.name in out else
            np.zeros(N, str(func.buffer_map[p].dtype)) for p in func.params]


def _words(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint32) if x.dtype.itemsize == 8 else x


def _vectorized(func):
    """`func` lowered for a Vulkan device with int64: its 64-bit vectors are there."""
    return vkir.lower(func, Target.vulkan13(features={"int64"}))


@pytest.mark.parametrize("func", KERNELS, ids=lambda f: f.name)
def test_vector_lanes_are_emulated_exactly(func):
    vectorized = _vectorized(func)
    kinds = {str(n.dtype) for n in walk(vectorized.body) if is_wide(getattr(n, "dtype", None))}
    kinds |= {str(b.dtype) for b in vectorized.buffer_map.values()}
    assert kinds & {"int64x2", "int64x4"}, "the test needs 64-bit vectors to emulate"
    after = EmulateInt64()(vectorized)
    verify_types(after)
    verify_well_formed(after)
    for node in walk(after.body):
        dt = getattr(node, "dtype", None)
        assert not is_wide(dt) and not (isinstance(dt, PointerType) and is_wide(dt.element)), node
    for seed in range(2):
        want = _arguments(func, seed)
        got = [x.copy() for x in want]
        vkir.interpret(func, *want)
        vkir.interpret(after, *[_words(g) for g in got])
        for k, (w, g) in enumerate(zip(want, got)):
            np.testing.assert_array_equal(g, w, err_msg=f"{func.name} argument {k}, seed {seed}")


def test_a_vector_element_buffer_keeps_its_bytes():
    """An int64x2 (int64x4) element buffer becomes a pair buffer of 2 (4) times the elements
    (uint32x2: the bytes the host passes); the int32 vector buffer stays as it is."""
    for func, width in ((KERNELS[2], 2), (KERNELS[3], 4)):
        vectorized = _vectorized(func)
        assert str(vectorized.buffer_map[vectorized.params[0]].dtype) == f"int64x{width}"
        after = EmulateInt64()(vectorized)
        shapes = {b.name: (str(b.dtype), tuple(int(d.value) for d in b.shape))
                  for b in after.buffer_map.values()}
        assert shapes == {"a": ("uint32x2", (N,)), "b": ("uint32x2", (N,)),
                          "c": ("uint32x2", (N,)), "flags": (f"int32x{width}", (N // width,))}


@pytest.mark.device
@pytest.mark.parametrize("func", KERNELS, ids=lambda f: f.name)
def test_vector_kernels_on_the_device_match_the_interpreter(device, func):
    """Natively where the device has int64, emulated lane by lane where not; the emulated
    function itself on either. Zero divisors are where native results may differ (a device's
    own division by zero is undefined), so those lanes are compared only where emulated."""
    want = _arguments(func, 3)
    vkir.interpret(func, *want)
    built = [x.copy() for x in want]
    vkir.build(func, device=device)(*built)
    emulated = [x.copy() for x in want]
    vkir.build(EmulateInt64()(_vectorized(func)), device=device)(*[_words(e) for e in emulated])
    defined = want[1] != 0
    native = "int64" in device.info.features
    for k, w in enumerate(want):
        np.testing.assert_array_equal(emulated[k], w, err_msg=f"emulated {func.name}, arg {k}")
        rows = defined if native else slice(None)
        np.testing.assert_array_equal(built[k][rows], w[rows], err_msg=f"built {func.name}, arg {k}")


LETS = vkir.from_script(f'''
def lets(a: T.Buffer(({N},), "int64"), f: T.Buffer(({N},), "float32"), c: T.Buffer(({N},), "int64")):
    for bx in T.thread_binding({N // 32}, "blockIdx.x"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            for v in T.vectorized(4):
                c[(bx * 8 + tx) * 4 + v] = T.cast(T.let(y := T.let(x := f[(bx * 8 + tx) * 4 + v] * T.float32(3), T.select(x > T.float32(0), x, T.float32(0) - x)) + T.float32(1), y * T.float32(2)), "int64") + a[(bx * 8 + tx) * 4 + v]
''')


def test_lets_inside_lanes_are_bound_once_per_lane(device):
    """float32x4 lets (one inside another's value) inside an int64x4 expression are evaluated
    in every lane's copy under names of their own (the IR binds a variable once)."""
    after = EmulateInt64()(_vectorized(LETS))
    verify_well_formed(after)
    a = np.arange(N, dtype=np.int64) * (2**33 + 1) - 2**40
    f = np.linspace(-1e6, 1e6, N).astype(np.float32)
    want, got, built = (np.zeros(N, np.int64) for _ in range(3))
    vkir.interpret(LETS, a, f, want)
    vkir.interpret(after, _words(a), f, _words(got))
    vkir.build(LETS, device=device)(a, f, built)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(built, want)


WIDE_VIEWS = vkir.from_script(f'''
def wide_views(a: T.Buffer(({N},), "float32"), b: T.Buffer(({N},), "float32"),
               c: T.Buffer(({N},), "float32"), d: T.Buffer(({N // 4},), "uint64")):
    aw = T.decl_buffer(({N // 8},), "uint64x4", data=a.data)
    bw = T.decl_buffer(({N // 8},), "uint64x4", data=b.data)
    cw = T.decl_buffer(({N // 8},), "uint64x4", data=c.data)
    for bx in T.thread_binding({N // 64}, "blockIdx.x"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            i = bx * 8 + tx
            x = aw[i]
            y = bw[i]
            lo = T.reinterpret(T.shuffle([x], [0, 1]), "float32x4") + T.reinterpret(T.shuffle([y], [0, 1]), "float32x4")
            hi = T.reinterpret(T.shuffle([x], [2, 3]), "float32x4") * T.reinterpret(T.shuffle([y], [3, 2]), "float32x4")
            cw[i] = T.shuffle([T.reinterpret(lo, "uint64x2"), T.reinterpret(hi, "uint64x2")], [0, 1, 2, 3])
            d[2 * i] = T.shuffle([x], [3]) + T.shuffle([y], [1])
            d[2 * i + 1] = T.shuffle([T.reinterpret(T.reinterpret(T.shuffle([x], [1, 2]), "int32x4") ^ T.reinterpret(T.shuffle([y], [0, 3]), "int32x4"), "uint64x2")], [0])
''')


def _wide_views_data():
    """a and b: random float32 (their bits random words); c and d zeroed; numpy's results."""
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal(N).astype(np.float32) * 1e3 for _ in range(2))
    f4, u4, w8 = (lambda x: x.reshape(-1, 8)), (lambda x: x.view(np.uint64).reshape(-1, 4)), \
        (lambda x: x.view(np.int32).reshape(-1, 8))
    c = np.concatenate([f4(a)[:, :4] + f4(b)[:, :4],
                        f4(a)[:, 4:] * f4(b)[:, [6, 7, 4, 5]]], axis=1).reshape(-1)
    d = np.empty((N // 8, 2), np.uint64)
    d[:, 0] = u4(a)[:, 3] + u4(b)[:, 1]
    d[:, 1] = (w8(a)[:, 2:4] ^ w8(b)[:, 0:2]).copy().view(np.uint64)[:, 0]
    return a, b, c, d.reshape(-1)


def test_pointer_cast_vector_views_and_lane_changing_reinterprets():
    """uint64x4 views of float32 buffers (the wide loads and stores of benchmarks.kernels' add,
    vkir.mapping's flat kernels and vkir.ops.reduce's rows): shuffles of their lanes, and
    reinterprets that change the lane count (uint64x2 <-> float32x4, int32x4), taken lane by
    lane from the word pairs, keep every bit (the interpreter's and numpy's results)."""
    after = EmulateInt64()(WIDE_VIEWS)
    verify_types(after)
    verify_well_formed(after)
    assert not any(is_wide(getattr(n, "dtype", None)) for n in walk(after.body))
    a, b, c, d = _wide_views_data()
    for func, words in ((WIDE_VIEWS, lambda x: x), (after, _words)):
        got_c, got_d = np.zeros(N, np.float32), np.zeros(N // 4, np.uint64)
        vkir.interpret(func, a, b, got_c, words(got_d))
        np.testing.assert_array_equal(got_c, c, err_msg=func.name)
        np.testing.assert_array_equal(got_d, d, err_msg=func.name)


@pytest.mark.device
def test_pointer_cast_vector_views_on_the_device(device):
    """Natively where the device has int64, emulated where not: numpy's results exactly."""
    a, b, c, d = _wide_views_data()
    got_c, got_d = np.zeros(N, np.float32), np.zeros(N // 4, np.uint64)
    vkir.build(WIDE_VIEWS, device=device)(a, b, got_c, got_d)
    np.testing.assert_array_equal(got_c, c)
    np.testing.assert_array_equal(got_d, d)


FLOAT_VIEW = vkir.from_script(f'''
def float_view(a: T.Buffer(({N // 2},), "uint64"), c: T.Buffer(({N},), "float32")):
    af = T.decl_buffer(({N // 4},), "float32x4", data=a.data)
    for bx in T.thread_binding({N // 32}, "blockIdx.x"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            i = bx * 8 + tx
            c[T.ramp(i * 4, 1, 4)] = af[i] * T.broadcast(T.float32(2), 4) + T.broadcast(T.cast(a[2 * i] >> T.uint64(40), "float32"), 4)
''')


def test_a_view_of_64bit_memory_keeps_its_bytes(device):
    """A float32x4 view of a uint64 buffer (the pointer cast the other way) reads the same
    bytes once that buffer is one of word pairs: the interpreter's and numpy's results, in the
    interpreter and on the device (natively or emulated)."""
    a = np.random.default_rng(6).standard_normal(N).astype(np.float32)
    words = a.view(np.uint64)
    want = a * np.float32(2) + np.repeat((words[::2] >> np.uint64(40)).astype(np.float32), 4)
    after = EmulateInt64()(FLOAT_VIEW)
    verify_well_formed(after)
    for run in (lambda c: vkir.interpret(FLOAT_VIEW, words, c),
                lambda c: vkir.interpret(after, _words(words), c),
                lambda c: vkir.build(FLOAT_VIEW, device=device)(words, c)):
        got = np.zeros(N, np.float32)
        run(got)
        np.testing.assert_array_equal(got, want)
