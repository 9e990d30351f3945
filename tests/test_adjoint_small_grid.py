"""The adjoint of a dense tanh layer (vkir.grad) is right on the device for every grid size, and
so are atomics in loops that whole rows of a workgroup skip.

llvmpipe before Mesa 25 stops the whole workgroup at the second barrier of a loop that holds a
memory barrier (an atomic's Acquire/Release semantics, or the fences of a compare-exchange loop)
where an 8-lane row of the workgroup runs none of its trips (quirk "memory_barrier_ends_loops",
vkir.quirks). The layer's adjoint adds d_w and d_x with atomics in a serial loop; where n * m left
rows of its 256-wide workgroup out of bounds (n * m = 64, 128, 240, 320...) every row of d_w but
the last stayed zero on Mesa 22.3.6, while n * m = 252, 256 and 508 were right. Codegen gives
atomics Relaxed semantics and drops the fences on such a device."""

from dataclasses import replace

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.autodiff import adjoint_kernels
from vkir.quirks import LAVAPIPE, MEMORY_BARRIER_ENDS_LOOPS, quirks_of
from vkir.spirv import Target, codegen
from vkir.spirv.tools import disassemble


@T.prim_func
def affine_tanh(x: T.Buffer(("n", "k"), "float32"), w: T.Buffer(("k", "m"), "float32"),
                b: T.Buffer(("m",), "float32"), y: T.Buffer(("n", "m"), "float32")):
    for i in T.parallel(n):
        for j in T.parallel(m):
            acc = T.float32(0)
            for p in T.serial(k):
                acc = acc + x[i, p] * w[p, j]
            y[i, j] = T.tanh(acc + b[j])


@T.prim_func
def counts(x: T.Buffer(("n",), "float32"), hits: T.Buffer(("k",), "int32"),
           top: T.Buffer(("k",), "float32"), done: T.Buffer(("n",), "int32")):
    """Every in-bounds invocation adds 1 to hits[q] (an integer atomic) and raises top[q] to its
    x (a float max: a compare-exchange loop between fences) in each trip q, then sets done[i]."""
    for i in T.parallel(n):
        for q in T.serial(k):
            T.atomic_add(hits[q], 1)
            T.atomic_max(top[q], x[i] + T.cast(q, "float32"))
        done[i] = 1


GRAD = vkir.grad(affine_tanh, ("x", "w", "b"))

# (n, k, m): n * m = 4 ... 520, below, at and past one 256-invocation workgroup
SHAPES = [(32, 8, 4), (16, 8, 4), (64, 8, 4), (32, 8, 2), (16, 8, 8), (2, 2, 2), (4, 4, 4),
          (60, 8, 4), (63, 8, 4), (80, 8, 4), (127, 8, 4), (130, 8, 4)]


def _layer(n, k, m, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, k)).astype(np.float32)
    w = rng.uniform(-1, 1, (k, m)).astype(np.float32)
    b = rng.uniform(-1, 1, m).astype(np.float32)
    dy = rng.uniform(-1, 1, (n, m)).astype(np.float32)
    return x, w, b, dy


def _adjoint(run, x, w, b, dy):
    """(d_x, d_w, d_b) from `run` (a Kernel, or vkir.interpret with GRAD bound)."""
    n, k = x.shape
    m = w.shape[1]
    grads = [np.zeros((n, k), np.float32), np.zeros((k, m), np.float32), np.zeros(m, np.float32)]
    run(x.copy(), w.copy(), b.copy(), np.zeros((n, m), np.float32), dy.copy(), *grads)
    return grads


@pytest.fixture(scope="module")
def grad_kernel(_vulkan_device):
    return vkir.build(GRAD, device=_vulkan_device)


@pytest.mark.parametrize("n,k,m", SHAPES, ids=lambda v: str(v))
def test_layer_adjoint_matches_the_interpreter_and_the_formula(grad_kernel, n, k, m):
    x, w, b, dy = _layer(n, k, m)
    want = _adjoint(lambda *a: vkir.interpret(GRAD, *a), x, w, b, dy)
    # the closed form the adjoint computes: g = dy * (1 - y^2), d_x = g w^T, d_w = x^T g
    y = np.tanh(x.astype(np.float64) @ w + b)
    g = dy * (1 - y * y)
    for got, exact in zip(want, (g @ w.T, x.T.astype(np.float64) @ g, g.sum(0))):
        np.testing.assert_allclose(got, exact, rtol=1e-4, atol=1e-5)
    got = _adjoint(grad_kernel, x, w, b, dy)
    for name, g_dev, g_int in zip(("d_x", "d_w", "d_b"), got, want):
        # (SwiftShader's tanh is less exact than the interpreter's: about 1e-3)
        np.testing.assert_allclose(g_dev, g_int, rtol=1e-2, atol=3e-3,
                                   err_msg=f"{name} of n={n} k={k} m={m} (n*m={n * m})")


@pytest.fixture(scope="module")
def gathered(_vulkan_device):
    """The layer's gathered adjoint (vkir.autodiff.adjoint_kernels) built, with its plan."""
    plan = adjoint_kernels(affine_tanh, ("x", "w", "b"))
    return plan, [vkir.build(k, device=_vulkan_device) for k in plan.kernels]


@pytest.mark.parametrize("n,k,m", SHAPES[:6], ids=lambda v: str(v))
def test_gathered_layer_adjoint_matches_for_every_grid(gathered, n, k, m):
    # the gather kernels launch over d_x (n x k), d_w (k x m) and d_b (m): other grid sizes
    # than the layer's, each below, at or past a workgroup for some shape
    plan, kernels = gathered
    x, w, b, dy = _layer(n, k, m)
    want = _adjoint(lambda *a: vkir.interpret(GRAD, *a), x, w, b, dy)

    def run(*args):
        scratch = [np.full(s, np.nan, np.float32) for s in plan.scratch_shapes(args[:4])]
        for kernel in kernels:
            kernel(*args, *scratch)

    got = _adjoint(run, x, w, b, dy)
    for name, g_dev, g_int in zip(("d_x", "d_w", "d_b"), got, want):
        np.testing.assert_allclose(g_dev, g_int, rtol=1e-2, atol=3e-3,
                                   err_msg=f"{name} of n={n} k={k} m={m} (n*m={n * m})")


def _counts(kernel, n, k):
    x = np.arange(n, dtype=np.float32)
    hits, top = np.zeros(k, np.int32), np.full(k, -1.0, np.float32)
    done = np.zeros(n, np.int32)
    kernel(x, hits, top, done)
    return hits, top, done


@pytest.mark.parametrize("n", [4, 32, 240, 248, 249, 256, 300])
def test_atomics_in_a_loop_that_idle_rows_skip_run_every_trip(_vulkan_device, n):
    k = 6
    hits, top, done = _counts(vkir.build(counts, device=_vulkan_device), n, k)
    np.testing.assert_array_equal(hits, np.full(k, n))
    np.testing.assert_array_equal(top, np.arange(k, dtype=np.float32) + (n - 1))
    assert done.all()   # (Mesa 22.3 stopped the invocations inside the loop: none was set)


@pytest.fixture
def unfixed(device, monkeypatch):
    """The device without the memory_barrier_ends_loops workaround; whether it listed it."""
    listed = MEMORY_BARRIER_ENDS_LOOPS in device.info.quirks
    monkeypatch.setattr(device, "info", replace(
        device.info, quirks=device.info.quirks - {MEMORY_BARRIER_ENDS_LOOPS}))
    return device, listed


def test_the_quirk_is_listed_where_barriers_end_loops(unfixed):
    device, listed = unfixed
    hits, _, _ = _counts(vkir.build(counts, device=device), 32, 6)
    assert listed == (not (hits == 32).all()), hits   # [32, 32, 0, 0, 0, 0] on Mesa 22.3


def test_llvmpipe_before_mesa_25_has_the_quirk():
    assert MEMORY_BARRIER_ENDS_LOOPS in LAVAPIPE
    assert MEMORY_BARRIER_ENDS_LOOPS in quirks_of("llvmpipe", "llvmpipe Mesa 22.3.6")
    assert MEMORY_BARRIER_ENDS_LOOPS not in quirks_of("llvmpipe", "llvmpipe Mesa 25.0.7")
    assert MEMORY_BARRIER_ENDS_LOOPS not in quirks_of("SwiftShader Device", "")


def test_atomics_are_relaxed_and_unfenced_only_where_the_quirk_holds():
    quirky = Target.lavapipe()
    plain = replace(quirky, quirks=quirky.quirks - {MEMORY_BARRIER_ENDS_LOOPS})
    fixed, kept = (disassemble(codegen(vkir.lower(counts), t).words) for t in (quirky, plain))
    # %r = OpAtomic* %type %pointer %scope %semantics ...: Relaxed (0) semantics, no fences
    atomics = [ln.split() for ln in fixed.splitlines() if "= OpAtomic" in ln]
    assert len(atomics) == 3 and all(a[6] == "%uint_0" for a in atomics), atomics
    assert "OpMemoryBarrier" not in fixed and "%uint_72" not in fixed
    assert "OpMemoryBarrier" in kept and "%uint_72 = OpConstant %uint 72" in kept
