"""End-to-end tests of the facade: script -> lower -> SPIR-V -> pipeline -> dispatch on the device
(lavapipe in CI, with the validation layer on), compared with numpy and with vkir.interpret."""

import numpy as np
import pytest

import vkir
from vkir.testing import math_tolerance
from vkir import T
from vkir.tools.demo import block_sum, vadd
from vkir.errors import ArgumentError, UnsupportedError


@T.prim_func
def axpb(x: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32"), k: T.int32,
         alpha: T.float32, beta: T.float32):
    # y[i] = alpha * x[i] + beta for i < k (an int32 and two float32 scalars)
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < k and i < n:
                y[i] = alpha * x[i] + beta


@T.prim_func
def iscale(x: T.Buffer(("n",), "int32"), y: T.Buffer(("n",), "int32"), s: T.int32):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                y[i] = x[i] * s + 1


@T.prim_func
def floordivmod(a: T.Buffer(("n",), "int32"), b: T.Buffer(("n",), "int32"),
                q: T.Buffer(("n",), "int32"), r: T.Buffer(("n",), "int32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                q[i] = a[i] // b[i]
                r[i] = a[i] % b[i]


@T.prim_func
def matmul(A: T.Buffer(("M", "K"), "float32"), B: T.Buffer(("K", "N"), "float32"),
           C: T.Buffer(("M", "N"), "float32")):
    for by in T.thread_binding((M + 7) // 8, "blockIdx.y"):
        for bx in T.thread_binding((N + 7) // 8, "blockIdx.x"):
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(8, "threadIdx.x"):
                    row = by * 8 + ty
                    col = bx * 8 + tx
                    if row < M and col < N:
                        acc = T.alloc_buffer((1,), "float32", scope="local")
                        acc[0] = T.float32(0)
                        for k in T.serial(K):
                            acc[0] = acc[0] + A[row, k] * B[k, col]
                        C[row, col] = acc[0]


@T.prim_func
def too_wide(a: T.Buffer((4096,), "float32")):
    for tx in T.thread_binding(4096, "threadIdx.x"):
        a[tx] = T.float32(1)


def _rng(seed=0):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("n", [1, 63, 64, 1000, 1 << 16])
def test_vadd_symbolic_sizes(device, n):
    k = vkir.build(vadd, device=device)
    a, b = _rng(n).random(n, dtype=np.float32), _rng(n + 1).random(n, dtype=np.float32)
    c = np.full(n, -1.0, np.float32)
    k(a, b, c)                                      # numpy arguments: copied in and back
    np.testing.assert_array_equal(c, a + b)
    A, B, C = vkir.array(a, device), vkir.array(b, device), vkir.empty(n, "float32", device)
    k(A, B, C)                                      # device arrays: nothing copied
    np.testing.assert_array_equal(C.numpy(), a + b)
    ref = np.zeros(n, np.float32)
    vkir.interpret(vadd, a, b, ref)
    np.testing.assert_array_equal(C.numpy(), ref)


def test_kernel_exposes_spirv_asm_ir(device):
    k = vkir.build(vadd, device=device)
    assert k.spirv[:4] == b"\x03\x02\x23\x07"       # SPIR-V magic, little-endian
    assert "OpEntryPoint GLCompute" in k.asm and "OpDecorate" in k.asm
    vkir.spirv.validate(k.spirv, k.target.env)
    assert isinstance(k.ir, vkir.ir.PrimFunc) and 0 < k.compile_seconds < 10
    assert vkir.build(vadd, device=device).pipeline is k.pipeline   # cached per device + SPIR-V


def test_scalar_arguments_int32_and_float32(device):
    n = 200
    x = _rng().standard_normal(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    vkir.build(axpb, device=device)(x, y, 150, 2.5, -0.75)
    want = np.zeros(n, np.float32)
    want[:150] = np.float32(2.5) * x[:150] + np.float32(-0.75)
    np.testing.assert_array_equal(y, want)
    ref = np.zeros(n, np.float32)
    vkir.interpret(axpb, x, ref, 150, 2.5, -0.75)
    np.testing.assert_array_equal(y, ref)

    xi = _rng().integers(-1000, 1000, n).astype(np.int32)
    yi = np.zeros(n, np.int32)
    vkir.build(iscale, device=device)(xi, yi, -7)
    np.testing.assert_array_equal(yi, xi * -7 + 1)


def test_negative_floor_division_and_modulo(device):
    rng = _rng(5)
    n = 4000
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(1, 50, n).astype(np.int32) * rng.choice([-1, 1], n).astype(np.int32)
    a[:4], b[:4] = [-7, 7, -7, 7], [2, -2, -2, 2]
    q, r = np.zeros(n, np.int32), np.zeros(n, np.int32)
    vkir.build(floordivmod, device=device)(a, b, q, r)
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)


def test_shared_memory_reduction_with_barriers(device):
    n, m = 100_003, 16
    x = _rng(2).random(n, dtype=np.float32)
    k = vkir.build(block_sum, device=device)
    X, P, S = vkir.array(x, device), vkir.empty(m, "float32", device), vkir.empty(1, "float32", device)
    k(X, P)
    k(P, S)                                          # chained on device arrays
    assert float(S.numpy()[0]) == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-5)
    ref = np.zeros(m, np.float32)
    vkir.interpret(block_sum, x, ref)
    np.testing.assert_allclose(P.numpy(), ref, rtol=1e-6)


def test_chained_kernels_on_device_arrays(device):
    n = 5000
    a, b = _rng(1).random(n, dtype=np.float32), _rng(2).random(n, dtype=np.float32)
    add = vkir.build(vadd, device=device)
    scale = vkir.build(axpb, device=device)
    A, B = vkir.array(a, device), vkir.array(b, device)
    C, D, E = (vkir.empty(n, "float32", device) for _ in range(3))
    add(A, B, C)                 # C = a + b
    scale(C, D, n, 2.0, 1.0)     # D = 2C + 1
    add(D, C, E)                 # E = D + C
    c = a + b
    d = np.float32(2.0) * c + np.float32(1.0)
    np.testing.assert_array_equal(E.numpy(), d + c)


def test_matmul_matches_numpy_and_interpreter(device):
    M, N, K = 19, 23, 31
    a = _rng(3).standard_normal((M, K)).astype(np.float32)
    b = _rng(4).standard_normal((K, N)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    vkir.build(matmul, device=device)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    ref = np.zeros((M, N), np.float32)
    vkir.interpret(matmul, a, b, ref)
    np.testing.assert_allclose(c, ref, rtol=1e-6, atol=1e-6)


MATH = {  # name: (numpy function, input range, rtol, atol)
    "exp": (np.exp, (-5, 5), 1e-5, 1e-6), "log": (np.log, (0.01, 100), 1e-5, 1e-6),
    "sqrt": (np.sqrt, (0, 100), 1e-6, 1e-7), "tanh": (np.tanh, (-5, 5), 1e-5, 1e-5),
    "sin": (np.sin, (-6, 6), 1e-5, 1e-5), "cos": (np.cos, (-6, 6), 1e-5, 1e-5),
    "fabs": (np.abs, (-5, 5), 0, 0), "floor": (np.floor, (-5, 5), 0, 0),
    "ceil": (np.ceil, (-5, 5), 0, 0), "rsqrt": (lambda v: 1 / np.sqrt(v), (0.01, 100), 1e-5, 1e-7),
}


@pytest.mark.parametrize("name", sorted(MATH))
def test_math_functions(device, name):
    fn, (lo, hi), rtol, atol = MATH[name]
    func = vkir.from_script(f'''
@T.prim_func
def math_{name}(x: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                y[i] = T.{name}(x[i])
''')
    x = _rng(7).uniform(lo, hi, 1000).astype(np.float32)
    y = np.zeros_like(x)
    vkir.build(func, device=device)(x, y)
    rtol, atol = max(rtol, math_tolerance(name)[0]), max(atol, math_tolerance(name)[1])  # Vulkan's bounds
    np.testing.assert_allclose(y, fn(x.astype(np.float64)), rtol=rtol, atol=atol)
    ref = np.zeros_like(x)
    vkir.interpret(func, x, ref)
    np.testing.assert_allclose(y, ref, rtol=max(rtol, 1e-6), atol=atol)


def test_pow(device):
    func = vkir.from_script('''
@T.prim_func
def powk(x: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                y[i] = T.pow(x[i], T.float32(1.5))
''')
    x = _rng(8).uniform(0.1, 10, 500).astype(np.float32)
    y = np.zeros_like(x)
    vkir.build(func, device=device)(x, y)
    np.testing.assert_allclose(y, x.astype(np.float64) ** 1.5, rtol=1e-5)


def _untouched(arrays, snapshots):
    for arr, snap in zip(arrays, snapshots):
        got = arr.numpy() if isinstance(arr, vkir.api.DeviceArray) else arr
        np.testing.assert_array_equal(got, snap)


@pytest.mark.parametrize("case", ["count", "dtype", "shape", "mismatch", "scalar", "contiguity", "kind"])
def test_bad_arguments_raise_and_touch_nothing(device, case):
    k = vkir.build(vadd, device=device)
    n = 100
    a = _rng().random(n, dtype=np.float32)
    A = vkir.array(a, device)
    B = vkir.array(a * 2, device)
    c = np.full(n, 7.0, np.float32)
    C = vkir.array(c, device)
    bad = {
        "count": (A, B),
        "dtype": (A, B, np.zeros(n, np.float64)),
        "shape": (A, B, np.zeros((n, 1), np.float32)),
        "mismatch": (A, B, np.zeros(n + 1, np.float32)),
        "scalar": (A, B, 3.0),
        "contiguity": (A, np.zeros(2 * n, np.float32)[::2], C),
        "kind": (A, B, [0.0] * n),
    }[case]
    before = [A.numpy(), B.numpy(), C.numpy(), c.copy()]
    launches = set(device.launches)   # (collecting freed buffers may drop some meanwhile)
    with pytest.raises(ArgumentError):
        k(*bad)
    _untouched([A, B, C, c], before)
    assert not set(device.launches) - launches   # nothing was recorded
    with pytest.raises(ArgumentError):
        vkir.build(axpb, device=device)(A, C, 1.5, 1.0, 1.0)   # float for an int32 scalar
    _untouched([A, B, C, c], before)


def test_launches_are_reused_for_the_same_device_arrays(device):
    k = vkir.build(vadd, device=device)
    n = 256
    A, B, C = (vkir.array(np.ones(n, np.float32), device) for _ in range(3))
    k(A, B, C)
    cached = dict(device.launches)
    k(A, B, C)
    assert dict(device.launches) == cached       # same arguments: the recorded launch ran again
    k(B, A, C)
    assert len(device.launches) == len(cached) + 1


def test_profile(device):
    n = 1 << 14
    k = vkir.build(vadd, device=device)
    A, B, C = (vkir.array(np.ones(n, np.float32), device) for _ in range(3))
    p = k.profile(A, B, C, repeat=5)
    assert p.n == 5 and 0 < p.min <= p.median <= p.max < 1
    np.testing.assert_array_equal(C.numpy(), 2 * np.ones(n, np.float32))


def test_limits_checked_before_dispatch(device):
    limits = device.info.limits
    if limits.max_workgroup_invocations < 4096:
        with pytest.raises(UnsupportedError):
            vkir.build(too_wide, device=device)
    # one more invocation than this device takes, whatever the device
    n = max(limits.max_workgroup_invocations, limits.max_workgroup_size[0]) + 1
    wider = vkir.from_script(f'''
@T.prim_func
def wider(a: T.Buffer(({n},), "float32")):
    for tx in T.thread_binding({n}, "threadIdx.x"):
        a[tx] = T.float32(1)
''')
    with pytest.raises(UnsupportedError):
        vkir.build(wider, device=device)


def test_arrays(device):
    x = _rng().integers(-5, 5, (3, 4)).astype(np.int16)
    X = vkir.array(x, device)
    assert X.shape == (3, 4) and X.dtype == np.int16 and X.device is device
    np.testing.assert_array_equal(X.numpy(), x)
    flags = np.array([True, False, True])
    F = vkir.array(flags, device)                 # bool is stored as int8 bytes
    assert F.nbytes == 3 and F.numpy().dtype == np.bool_
    np.testing.assert_array_equal(F.numpy(), flags)
    E = vkir.empty((2, 5), "float32", device)     # uninitialized, as numpy.empty
    assert E.shape == (2, 5) and E.numpy().shape == (2, 5)
    Z = vkir.zeros((2, 5), "float32", device)
    assert Z.shape == (2, 5) and not Z.numpy().any()
    assert vkir.empty(0, "int32", device).numpy().shape == (0,)
    with pytest.raises(ArgumentError):
        vkir.array(np.array(["a"]), device)
    assert [d.name for d in vkir.devices()][device.info.index] == device.info.name
    assert vkir.device(device.info.index) is device


def test_empty_arrays_dispatch_nothing(device, monkeypatch):
    """n = 0 (numpy or device arrays) launches a grid of zero workgroups and leaves the empty
    outputs empty; one element launches one workgroup, so the recorder sees every call."""
    k = vkir.build(vadd, device=device)
    grids = []
    real = type(k)._prepare
    monkeypatch.setattr(type(k), "_prepare", lambda self, *a, **kw:
                        (lambda got: grids.append(tuple(got[2])) or got)(real(self, *a, **kw)))
    a = np.zeros(0, np.float32)
    out = a.copy()
    k(a, a.copy(), out)
    A = vkir.array(a, device)
    C = vkir.empty(0, "float32", device)
    k(A, A, C)
    assert len(grids) == 2 and all(np.prod(g) == 0 for g in grids), grids
    assert out.shape == (0,) and C.numpy().shape == (0,)
    one = np.ones(1, np.float32)
    k(one, one, out := np.zeros(1, np.float32))
    assert np.prod(grids[-1]) == 1 and out[0] == 2.0


def test_profile_falls_back_to_wall_time(device, monkeypatch):
    monkeypatch.setattr(device, "timestamp_bits", 0)   # a queue without timestamps
    k = vkir.build(vadd, device=device)
    A = vkir.array(np.ones(64, np.float32), device)
    p = k.profile(A, A, vkir.empty(64, "float32", device), repeat=3)
    assert p.source == "wall" and p.n == 3 and p.min > 0


def test_repeated_calls_take_the_fast_path_correctly(device):
    k = vkir.build(vadd, device=device)
    n = 300
    A, B = vkir.array(np.ones(n, np.float32), device), vkir.array(np.ones(n, np.float32), device)
    C = vkir.empty(n, "float32", device)
    k(A, B, C)
    A.write(np.full(n, 5.0, np.float32))          # same arrays, new contents: read at run time
    k(A, B, C)
    np.testing.assert_array_equal(C.numpy(), np.full(n, 6.0, np.float32))
    del A
    A2 = vkir.array(np.full(n, 2.0, np.float32), device)   # a new array never hits the old entry
    k(A2, B, C)
    np.testing.assert_array_equal(C.numpy(), np.full(n, 3.0, np.float32))
    with pytest.raises(ArgumentError):
        k(A2, B, vkir.empty(n + 1, "float32", device))


def test_grid_beyond_the_per_dimension_count_is_folded(device):
    """A 1-D grid wider than maxComputeWorkGroupCount[0] runs as rows of workgroups; blockIdx.x
    is the same, and the workgroups past the grid do nothing."""
    k = vkir.build(vadd, device=device)
    assert k.module.folds_grid
    blocks = device.info.limits.max_workgroup_count[0] + 1
    n = 64 * blocks + 5                   # (n + 63) // 64 workgroups: two more than one row
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.full(n, -1, np.float32)
    k(a, b, c)
    np.testing.assert_array_equal(c, a + b)
