"""vkir.from_tvm: TVM kernels (TVMScript, TE with dlight's default schedules) lowered by TVM's own
pipeline and imported into vkir IR, which then passes vkir's checker, runs in the interpreter with
races checked, and runs on the device (spirv-val on every module), all against numpy."""

import math
import sys

import numpy as np
import pytest

import vkir
from vkir.errors import UnsupportedError

pytest.importorskip("tvm.runtime")   # not the namespace package tests/tvm makes without TVM
import tvm  # noqa: E402
from tvm import te, topi  # noqa: E402
from tvm.script import tirx as TT  # noqa: E402

RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def dlight_schedule():
    """schedule(func) -> IRModule: TVM's dlight default GPU schedules for vkir's device."""
    return vkir.tvm.dlight



@TT.prim_func(s_tir=True)
def tvm_vadd(A: TT.Buffer((1024,), "float32"), B: TT.Buffer((1024,), "float32"),
             C: TT.Buffer((1024,), "float32")):
    for bx in TT.thread_binding(8, thread="blockIdx.x"):
        for tx in TT.thread_binding(128, thread="threadIdx.x"):
            with TT.sblock("C"):
                vi = TT.axis.spatial(1024, bx * 128 + tx)
                C[vi] = A[vi] + B[vi]


EXPECTED_VADD = '''
@T.prim_func
def vadd_kernel(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"),
                C: T.Buffer((1024,), "float32")):
    for blockIdx_x in T.thread_binding(8, "blockIdx.x"):
        for threadIdx_x in T.thread_binding(128, "threadIdx.x"):
            cse_v1 = blockIdx_x * 128 + threadIdx_x
            C[blockIdx_x * 128 + threadIdx_x] = A[blockIdx_x * 128 + threadIdx_x] + \\
                B[blockIdx_x * 128 + threadIdx_x]
'''


def test_a_tvmscript_kernel_imports_to_the_ir_vkir_would_write(device):
    f = vkir.from_tvm(tvm_vadd)
    vkir.assert_structural_equal(f, vkir.from_script(EXPECTED_VADD))
    a, b = RNG.random((2, 1024), dtype=np.float32)
    c = np.zeros(1024, np.float32)
    vkir.build(f)(a, b, c)
    np.testing.assert_array_equal(c, a + b)


@TT.prim_func(s_tir=True)
def tvm_vadd4(A: TT.Buffer((256,), "float32x4"), B: TT.Buffer((256,), "float32x4"),
              C: TT.Buffer((256,), "float32x4")):
    for bx in TT.thread_binding(4, thread="blockIdx.x"):
        for tx in TT.thread_binding(64, thread="threadIdx.x"):
            with TT.sblock("C"):
                vi = TT.axis.spatial(256, bx * 64 + tx)
                C[vi] = A[vi] + B[vi]


def test_vector_buffers_keep_their_element_type(device):
    f = vkir.from_tvm(tvm_vadd4)
    assert [str(b.dtype) for b in f.buffer_map.values()] == ["float32x4"] * 3
    a, b = RNG.random((2, 256, 4), dtype=np.float32)
    c = np.zeros((256, 4), np.float32)
    vkir.build(f)(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def _matmul(n):
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C]), [(n, n), (n, n), (n, n)], lambda a, b: a @ b


def _row_sum():
    X = te.placeholder((64, 128), "float32", name="X")
    k = te.reduce_axis((0, 128), name="k")
    S = te.compute((64,), lambda i: te.sum(X[i, k], axis=k), name="S")
    return te.create_prim_func([X, S]), [(64, 128), (64,)], lambda x: x.sum(1)


def _sum():
    X = te.placeholder((4096,), "float32", name="X")
    r = te.reduce_axis((0, 4096), name="r")
    S = te.compute((1,), lambda i: te.sum(X[r], axis=r), name="S")
    return te.create_prim_func([X, S]), [(4096,), (1,)], lambda x: x.sum(keepdims=True)


def _softmax():
    X = te.placeholder((64, 128), "float32", name="X")

    def ref(x):
        e = np.exp(x - x.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)
    return te.create_prim_func([X, topi.nn.softmax(X)]), [(64, 128), (64, 128)], ref


def _layer_norm():
    X = te.placeholder((64, 128), "float32", name="X")
    G = te.placeholder((128,), "float32", name="G")
    B = te.placeholder((128,), "float32", name="B")
    Y = topi.nn.layer_norm(X, G, B, axis=[1], epsilon=1e-5)

    def ref(x, g, b):
        mu, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * g + b
    return te.create_prim_func([X, G, B, Y]), [(64, 128), (128,), (128,), (64, 128)], ref


def _gelu16():
    H = te.placeholder((4096,), "float16", name="H")
    half = tvm.tirx.const(0.5, "float16")
    Y = te.compute((4096,), lambda i: H[i] * (te.erf(H[i] * tvm.tirx.const(0.7071, "float16")) +
                                              tvm.tirx.const(1, "float16")) * half, name="Y")

    def ref(h):
        x = h.astype(np.float64)
        return x * (np.vectorize(math.erf)(x * 0.7071) + 1) * 0.5
    return te.create_prim_func([H, Y]), [(4096,), (4096,)], ref


KERNELS = {"matmul_256": lambda: _matmul(256), "row_sum": _row_sum, "sum": _sum,
           "softmax": _softmax, "layer_norm": _layer_norm, "gelu_float16": _gelu16}


@pytest.mark.parametrize("name", list(KERNELS))
def test_dlight_default_schedules_run_correctly(name, device, dlight_schedule):
    func, shapes, ref = KERNELS[name]()
    dtype = np.float16 if name.endswith("float16") else np.float32
    f = vkir.from_tvm(dlight_schedule(func))
    if dtype == np.float16 and "float16" not in device.info.features:
        with pytest.raises(UnsupportedError, match="float16"):
            vkir.build(f)
        return
    assert isinstance(f, vkir.ir.PrimFunc)
    inputs = [RNG.standard_normal(s).astype(dtype) for s in shapes[:-1]]
    want = ref(*[x.astype(np.float64) for x in inputs])
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == np.float16 else dict(rtol=1e-4, atol=1e-4)
    out = np.zeros(shapes[-1], dtype)
    vkir.build(f)(*inputs, out)
    np.testing.assert_allclose(out.astype(np.float64), want, **tol)
    if name != "matmul_256":   # the interpreter checks races too; the matmul is slow there
        ref_out = np.zeros(shapes[-1], dtype)
        vkir.interpret(f, *inputs, ref_out)
        np.testing.assert_allclose(ref_out.astype(np.float64), want, **tol)


def test_symbolic_sizes_are_inferred_at_call_time(device, dlight_schedule):
    n = te.var("n")
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    f = vkir.from_tvm(dlight_schedule(te.create_prim_func([A, B])))
    assert [v.name for v in f.size_vars] == ["n"] and len(f.params) == 2
    k = vkir.build(f)
    for size in (5, 1000, 3001):
        a = RNG.random(size, dtype=np.float32)
        b = np.zeros(size, np.float32)
        k(a, b)
        np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_symbolic_nd_shapes_keep_the_users_names(device, dlight_schedule):
    """TVM flattens (n, m) buffers into one size it names `cse_v1`; the kernel takes the user's
    2-D arrays again, its sizes named n and m as the user named them."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), "float32", name="A")
    B = te.placeholder((n, m), "float32", name="B")
    C = te.compute((n, m), lambda i, j: A[i, j] * B[i, j] + 1.0, name="C")
    f = vkir.from_tvm(dlight_schedule(te.create_prim_func([A, B, C])))
    assert [v.name for v in f.size_vars] == ["n", "m"]
    assert [(f.buffer_map[p].name, [str(d) for d in f.buffer_map[p].shape]) for p in f.params] \
        == [(name, ["n", "m"]) for name in "ABC"]
    X = te.placeholder((n, 128), "float32", name="X")
    r = te.reduce_axis((0, 128), name="r")
    S = te.compute((n,), lambda i: te.sum(X[i, r], axis=r), name="S")
    g = vkir.from_tvm(dlight_schedule(te.create_prim_func([X, S])))
    assert [[str(d) for d in g.buffer_map[p].shape] for p in g.params] == [["n", "128"], ["n"]]
    k, row_sum = vkir.build(f), vkir.build(g)
    for shape in ((3, 5), (17, 64)):
        a, b = RNG.random((2, *shape), dtype=np.float32)
        c = np.zeros(shape, np.float32)
        k(a, b, c)
        np.testing.assert_allclose(c, a * b + 1, rtol=1e-6)
    x = RNG.random((7, 128), dtype=np.float32)
    s = np.zeros(7, np.float32)
    row_sum(x, s)
    np.testing.assert_allclose(s, x.sum(1), rtol=1e-5)


@TT.prim_func(s_tir=True)
def tvm_extern(A: TT.Buffer((64,), "float32")):
    for tx in TT.thread_binding(64, thread="threadIdx.x"):
        with TT.sblock("A"):
            vi = TT.axis.spatial(64, tx)
            A[vi] = TT.call_extern("float32", "my_device_function", A[vi])


@pytest.mark.device
def test_a_construct_without_vkir_meaning_is_named():
    with pytest.raises(UnsupportedError, match="extern function 'my_device_function'") as info:
        vkir.from_tvm(tvm_extern)
    import traceback

    files = [frame.filename for frame in traceback.extract_tb(info.value.__traceback__)]
    assert not any(f.endswith("importer.py") for f in files)   # no frames from inside it


def test_without_tvm_from_tvm_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "tvm", None)
    with pytest.raises(UnsupportedError, match=r"pip install 'vkir\[tvm\]'"):
        vkir.from_tvm(object())


def test_target_has_the_device_limits(device):
    t = vkir.tvm.target(device)
    assert t.kind.name == "vulkan"
    assert int(t.attrs["max_num_threads"]) == device.info.limits.max_workgroup_invocations
    assert bool(t.attrs["supports_float16"]) == ("float16" in device.info.features)


def test_several_device_kernels_give_a_dict_of_runnable_kernels(device, dlight_schedule):
    """A module that lowers to two device kernels (a matmul, then a softmax of its result) gives
    {name: PrimFunc}; run in order on an intermediate array, they compute the composition."""
    X = te.placeholder((64, 128), "float32", name="X")
    W = te.placeholder((128, 32), "float32", name="W")
    k = te.reduce_axis((0, 128), name="k")
    Y = te.compute((64, 32), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    funcs = vkir.from_tvm(dlight_schedule(te.create_prim_func([X, W, topi.nn.softmax(Y)])))
    assert isinstance(funcs, dict) and len(funcs) >= 2
    x = RNG.standard_normal((64, 128)).astype(np.float32)
    w = (RNG.standard_normal((128, 32)) * 0.1).astype(np.float32)
    arrays = {"X": x, "W": w}
    for name, f in funcs.items():   # in the order TVM's host code launches them
        args = []
        for p in f.params:
            buf = f.buffer_map[p]
            base = buf.name.removesuffix("_ptr")
            if base not in arrays:
                shape = tuple(int(d.value) for d in buf.shape)
                arrays[base] = np.zeros(shape, np.float32)
            args.append(arrays[base])
        vkir.build(f)(*args)
    y = x.astype(np.float64) @ w
    e = np.exp(y - y.max(1, keepdims=True))
    out = [a for n, a in arrays.items() if n not in ("X", "W", "Y")]
    np.testing.assert_allclose(out[-1].reshape(64, 32), e / e.sum(1, keepdims=True), atol=1e-5)
