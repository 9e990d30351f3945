"""vkir.grad against central finite differences: random float programs from the fuzz generator
and hand-written kernels (serial loops, branches, mutable scalars, lets, intrinsics, shared
reads through atomics) in the interpreter, the same adjoints on the device, and the refusals."""

import random

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import UnsupportedError
from vkir.script import from_script
from vkir.tools.fuzz.programs import generate


def _fd(func, args, out_index, wrt_index, seed, h, elements=None):
    """d(seed . out) / d(args[wrt_index]) by central differences in the interpreter (for the
    first `elements` elements, default all)."""
    def f(a):
        call = [x.copy() for x in args]
        call[wrt_index] = a
        vkir.interpret(func, *call)
        return float(np.dot(call[out_index].astype(np.float64).ravel(), seed.ravel()))

    x = args[wrt_index]
    g = np.zeros(x.size if elements is None else min(elements, x.size))
    for j in range(g.size):
        e = np.zeros(x.size, x.dtype)
        e[j] = h
        g[j] = (f(x + e.reshape(x.shape)) - f(x - e.reshape(x.shape))) / (2 * h)
    return g


def _programs(count):
    rng = random.Random(7)
    found = []
    while len(found) < count:
        p = generate(rng, dtypes=("float64",), atomics=False, subgroups=False)
        if p.features & {"shared", "vector", "symbolic"} or p.out_dtype != "float64":
            continue
        found.append(p)
    return found


@pytest.mark.parametrize("program", _programs(10), ids=lambda p: str(hash(p.source) % 10000))
def test_fuzz_programs_match_finite_differences(program):
    func = from_script(program.source)
    g = vkir.grad(func, ("A", "B"))
    rng = np.random.default_rng(3)
    n = program.n
    a, b = rng.uniform(0.5, 2, n), rng.uniform(0.5, 2, n)
    seed = rng.uniform(-1, 1, n)
    args = [a, b, np.zeros(n), np.zeros(16, np.int32)]
    da, db = np.zeros(n), np.zeros(n)
    vkir.interpret(g, *args, seed.copy(), da, db)
    for k, got in ((0, da), (1, db)):
        fd1 = _fd(func, args, 2, k, seed, 1e-6, elements=5)
        fd2 = _fd(func, args, 2, k, seed, 5e-7, elements=5)
        got = got[:5]
        smooth = np.abs(fd1 - fd2) <= 1e-5 * (1 + np.abs(fd1))  # away from kinks and jumps
        np.testing.assert_allclose(got[smooth], fd1[smooth], rtol=1e-4, atol=1e-5,
                                   err_msg=program.source)


@T.prim_func
def layer(x: T.Buffer((16,), "float32"), w: T.Buffer((4,), "float32"),
          y: T.Buffer((16,), "float32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            i = bx * 8 + tx
            h = T.tanh(x[i] * w[0] + w[1])
            acc = T.float32(0)
            for k in T.serial(3):
                acc = acc * T.sin(h) + T.exp(w[2] * x[i]) / (T.float32(1) + acc * acc)
            if h > T.float32(0):
                y[i] = T.sqrt(acc * acc + T.float32(1)) + T.max(h, w[3]) * T.log(x[i])
            else:
                y[i] = T.pow(x[i], T.float32(2)) - T.select(acc > h, acc, h)


def _layer_args(rng):
    return [rng.uniform(0.2, 1.5, 16).astype(np.float32),
            rng.uniform(-1, 1, 4).astype(np.float32), np.zeros(16, np.float32)]


def test_hand_written_layer_matches_finite_differences():
    rng = np.random.default_rng(4)
    args = _layer_args(rng)
    seed = rng.uniform(-1, 1, 16).astype(np.float32)
    g = vkir.grad(layer, ("x", "w"))
    assert [p.name for p in g.params] == ["x", "w", "y", "d_y", "d_x", "d_w"]
    dx, dw = np.zeros(16, np.float32), np.full(4, 0.5, np.float32)  # accumulates: +=
    vkir.interpret(g, *[a.copy() for a in args], seed, dx, dw)
    np.testing.assert_allclose(dx, _fd(layer, args, 2, 0, seed, 1e-2), rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(dw - 0.5, _fd(layer, args, 2, 1, seed, 1e-2), rtol=2e-2,
                               atol=5e-2)
    assert "atomic_add(d_w" in g.script() and "atomic_add(d_x" not in g.script()


@pytest.mark.device
def test_adjoint_on_the_device_matches_the_interpreter(device):
    rng = np.random.default_rng(5)
    args = _layer_args(rng)
    seed = rng.uniform(-1, 1, 16).astype(np.float32)
    g = vkir.grad(layer, ("x", "w"))
    want = [np.zeros(16, np.float32), np.zeros(4, np.float32)]
    vkir.interpret(g, *[a.copy() for a in args], seed, *want)
    got = [np.zeros(16, np.float32), np.zeros(4, np.float32)]
    k = vkir.build(g, device=device)   # d_w is shared: float atomic adds, on every device
    k(*[a.copy() for a in args], seed, *got)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-2, atol=2e-3)
    # (SwiftShader's tanh, sin and exp are less exact than the interpreter's: about 1e-3)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-2, atol=2e-3)


def test_refusals_name_the_construct_and_line():
    @T.prim_func
    def barrier(x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "float32")):
        for tx in T.thread_binding(8, "threadIdx.x"):
            s = T.alloc_buffer((8,), "float32", scope="shared")
            s[tx] = x[tx]
            T.barrier()
            y[tx] = s[(tx + 1) % 8]

    @T.prim_func
    def inplace(x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "float32")):
        for tx in T.thread_binding(8, "threadIdx.x"):
            y[tx] = x[tx]
            y[tx] = y[tx] * x[tx]

    @T.prim_func
    def integer(x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "int32")):
        for tx in T.thread_binding(8, "threadIdx.x"):
            y[tx] = T.cast(x[tx], "int32")

    @T.prim_func
    def subgroup(x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "float32")):
        for tx in T.thread_binding(8, "threadIdx.x"):
            y[tx] = T.subgroup_add(x[tx])

    for func, words in ((barrier, "shared memory"), (inplace, "read after being overwritten"),
                        (integer, "integer output"), (subgroup, "subgroup_add")):
        with pytest.raises(UnsupportedError, match=words) as info:
            vkir.grad(func, "x")
        assert "line" in str(info.value)
