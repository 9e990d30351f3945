"""vkir.autodiff.staged.adjoint_kernels: adjoints whose shared reads are gathered over the
gradient's index space instead of added with atomics. Gradients exact against numpy in float64
in the interpreter (a gathered float64 read needs no float64 atomic), the float32 kernels on the
device against the same, no `atomic_add` where every map inverts, and atomics kept (and named in
`atomic`) where one does not."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.autodiff.staged import adjoint_kernels
from vkir.errors import UnsupportedError
from vkir.script import from_script

DENSE = '''
@T.prim_func
def dense(x: T.Buffer(("n", 5), "{dt}"), w: T.Buffer((5, 3), "{dt}"), b: T.Buffer((3,), "{dt}"),
          y: T.Buffer(("n", 3), "{dt}")):
    for i in T.parallel(n):
        for j in T.parallel(3):
            acc = b[j]
            for k in T.serial(5):
                acc += x[i, k] * w[k, j]
            y[i, j] = T.tanh(acc)
'''

BIAS_AFTER = '''
@T.prim_func
def dense_b(x: T.Buffer((6, 4), "{dt}"), w: T.Buffer((4, 3), "{dt}"), b: T.Buffer((3,), "{dt}"),
            y: T.Buffer((6, 3), "{dt}")):
    for i in T.parallel(6):
        for j in T.parallel(3):
            acc = T.{dt}(0)
            for k in T.serial(4):
                if x[i, k] > T.{dt}(-0.5):
                    acc += x[i, k] * w[k, j]
            y[i, j] = T.tanh(acc + b[j])
'''


def run(ak, args, interpret=True, device=None):
    """Run every kernel of `ak` on numpy arrays `args` (f's, seeds, grads) in order."""
    n = len(ak.func.params)
    dtype = args[0].dtype
    scratch = [np.full(s, np.nan, dtype) for s in ak.scratch_shapes(args[:n])]
    for k in ak.kernels:
        if interpret:
            vkir.interpret(k, *args, *scratch)
        else:
            vkir.build(k, device=device)(*args, *scratch)


def _dense_data(n, dtype, rng, k=5, m=3):
    x = rng.uniform(-1, 1, (n, k)).astype(dtype)
    w = rng.uniform(-0.7, 0.7, (k, m)).astype(dtype)
    b = rng.uniform(-0.5, 0.5, m).astype(dtype)
    seed = rng.uniform(-1, 1, (n, m)).astype(dtype)
    return x, w, b, seed


def _dense_want(x, w, b, seed, mask=None):
    x64 = np.asarray(x, np.float64)
    xm = x64 if mask is None else np.where(mask, x64, 0)
    d_pre = seed * (1 - np.tanh(xm @ w + b) ** 2)
    return (d_pre @ np.asarray(w, np.float64).T) * (1 if mask is None else mask), \
        xm.T @ d_pre, d_pre.sum(axis=0)


def test_dense_layer_gathers_every_gradient_without_atomics():
    ak = adjoint_kernels(from_script(DENSE.format(dt="float32")), ("x", "w", "b"))
    assert ak.gathered == ("x", "w", "b") and ak.atomic == ()
    # d_w and d_b have few elements (15, 3), each read by every row (n, known at run time):
    # each element's sum is cut into 32 chunks over the rows, which a last kernel adds up
    assert [k.name for k in ak.kernels] == ["dense_grad", "dense_grad_b", "dense_grad_b_sum",
                                            "dense_grad_x", "dense_grad_w", "dense_grad_w_sum"]
    for k in ak.kernels:
        assert "atomic_add" not in k.script()
    w_kernel = next(k for k in ak.kernels if k.name == "dense_grad_w")
    assert "for chunk in T.parallel(32)" in w_kernel.script()
    x_kernel = next(k for k in ak.kernels if k.name == "dense_grad_x")
    assert "for j in T.serial(3)" in x_kernel.script()   # one element of d_x per invocation
    # d_pre (the seed of acc) and the partial sums of d_b and d_w
    assert ak.scratch_shapes((np.zeros((7, 5)),)) == [(7, 3), (3, 32), (15, 32)]


def test_float64_dense_layer_is_exact_in_the_interpreter():
    f = from_script(DENSE.format(dt="float64"))
    with pytest.raises(UnsupportedError, match="float32 only"):
        vkir.grad(f, ("x", "w", "b"))        # one kernel: would need float64 atomics
    ak = adjoint_kernels(f, ("x", "w", "b"))  # gathered: none needed
    x, w, b, seed = _dense_data(9, np.float64, np.random.default_rng(0))
    grads = [np.zeros_like(a) for a in (x, w, b)]
    run(ak, [x, w, b, np.zeros((9, 3)), seed, *grads])
    for got, want in zip(grads, _dense_want(x, w, b, seed)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_a_branch_in_the_loop_and_a_bias_read_beside_a_local():
    # b[j] is read in tanh(acc + b[j]): its derivative needs acc, so the first kernel leaves
    # each invocation's contribution in scratch and b's gather sums it
    f = from_script(BIAS_AFTER.format(dt="float64"))
    ak = adjoint_kernels(f, ("x", "w", "b"))
    assert ak.gathered == ("x", "w", "b")
    x, w, b, seed = _dense_data(6, np.float64, np.random.default_rng(1), k=4)
    grads = [np.zeros_like(a) for a in (x, w, b)]
    run(ak, [x, w, b, np.zeros((6, 3)), seed, *grads])
    for got, want in zip(grads, _dense_want(x, w, b, seed, mask=x > -0.5)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@T.prim_func
def stencil(x: T.Buffer((65,), "float32"), y: T.Buffer((64,), "float32")):
    for i in T.parallel(64):
        y[i] = x[i] * x[i + 1]


def test_reads_at_two_offsets_are_shared_and_gathered():
    script = vkir.grad(stencil, "x").script()
    assert "T.atomic_add(d_x[i]" in script and "T.atomic_add(d_x[i + 1]" in script
    ak = adjoint_kernels(stencil, "x")
    assert ak.gathered == ("x",) and all("atomic_add" not in k.script() for k in ak.kernels)
    rng = np.random.default_rng(2)
    x, seed = rng.uniform(-1, 1, 65).astype(np.float32), rng.uniform(-1, 1, 64).astype(np.float32)
    for form in ("one kernel", "gathered"):
        dx = np.zeros(65, np.float32)
        if form == "one kernel":
            vkir.interpret(vkir.grad(stencil, "x"), x, np.zeros(64, np.float32), seed, dx)
        else:
            run(ak, [x, np.zeros(64, np.float32), seed, dx])
        want = np.zeros(65)
        want[:64] += seed * x[1:]
        want[1:] += seed * x[:64]
        np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-7)


@T.prim_func
def flat(x: T.Buffer((32,), "float32"), w: T.Buffer((4,), "float32"),
         y: T.Buffer((8,), "float32")):
    for i in T.parallel(8):
        acc = T.float32(0)
        for k in T.serial(4):
            acc += x[i * 4 + k] * w[k]
        y[i] = acc


@T.prim_func
def outer(x: T.Buffer((6,), "float32"), w: T.Buffer((5,), "float32"),
          y: T.Buffer((6, 5), "float32")):
    for i in T.parallel(6):
        for j in T.parallel(5):
            y[i, j] = x[i] * T.exp(w[j])


def test_flat_indices_and_output_seeds():
    rng = np.random.default_rng(3)
    ak = adjoint_kernels(flat, ("x", "w"))
    assert ak.gathered == ("w",) and ak.scratch_shapes((None,)) == [(8,)]
    x, w, seed = (rng.uniform(-1, 1, s).astype(np.float32) for s in (32, 4, 8))
    dx, dw = np.zeros(32, np.float32), np.zeros(4, np.float32)
    run(ak, [x, w, np.zeros(8, np.float32), seed, dx, dw])
    np.testing.assert_allclose(dx, (seed[:, None] * w).reshape(-1), rtol=1e-6)
    np.testing.assert_allclose(dw, (seed[:, None] * x.reshape(8, 4)).sum(0), rtol=1e-5)
    ak = adjoint_kernels(outer, ("x", "w"))
    assert ak.gathered == ("x", "w") and ak.scratch == ()   # the seed is d_y itself
    x, w, seed = (rng.uniform(-1, 1, s).astype(np.float32) for s in (6, 5, (6, 5)))
    dx, dw = np.zeros(6, np.float32), np.zeros(5, np.float32)
    run(ak, [x, w, np.zeros((6, 5), np.float32), seed, dx, dw])
    np.testing.assert_allclose(dx, (seed * np.exp(w)).sum(1), rtol=1e-5)
    np.testing.assert_allclose(dw, (seed * x[:, None] * np.exp(w)).sum(0), rtol=1e-5)


@T.prim_func
def lookup(idx: T.Buffer((16,), "int32"), w: T.Buffer((4,), "float32"),
           v: T.Buffer((4,), "float32"), y: T.Buffer((16,), "float32")):
    for i in T.parallel(16):
        y[i] = w[idx[i]] * v[i % 4]


def test_a_data_dependent_index_keeps_its_atomic_add():
    ak = adjoint_kernels(lookup, ("w", "v"))
    assert ak.atomic == ("w", "v") and ak.gathered == ()
    assert "T.atomic_add(d_w[idx[i]]" in ak.kernels[0].script()
    rng = np.random.default_rng(4)
    idx = rng.integers(0, 4, 16).astype(np.int32)
    w, v, seed = (rng.uniform(-1, 1, s).astype(np.float32) for s in (4, 4, 16))
    dw, dv = np.zeros(4, np.float32), np.zeros(4, np.float32)
    run(ak, [idx, w, v, np.zeros(16, np.float32), seed, dw, dv])
    np.testing.assert_allclose(dw, np.bincount(idx, seed * v[np.arange(16) % 4], 4), rtol=1e-5)


def test_dense_layer_on_the_device(device):
    f = from_script(DENSE.format(dt="float32"))
    ak = adjoint_kernels(f, ("x", "w", "b"))
    x, w, b, seed = _dense_data(300, np.float32, np.random.default_rng(5))
    grads = [np.zeros_like(a) for a in (x, w, b)]
    run(ak, [x, w, b, np.zeros((300, 3), np.float32), seed, *grads], interpret=False,
        device=device)
    for got, want in zip(grads, _dense_want(x, w, b, seed)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_tape_runs_the_gathered_adjoint(device):
    f = from_script(DENSE.format(dt="float32"))
    k = vkir.build(f, device=device)
    x, w, b, seed = _dense_data(200, np.float32, np.random.default_rng(6))
    X, W, B = (vkir.array(a, device) for a in (x, w, b))
    Y = vkir.zeros((200, 3), "float32", device)
    with vkir.Tape() as tape:
        k(X, W, B, Y)
    tape.backward({Y: seed})
    for arr, want in zip((X, W, B), _dense_want(x, w, b, seed)):
        np.testing.assert_allclose(tape.grad(arr).numpy(), want, rtol=1e-4, atol=1e-5)
    # planned on the function as written: the built kernel's grid binding of its T.parallel
    # loops (i = linear // 3, j = linear % 3) would hide the index maps and keep atomics
    from vkir.autodiff.recording import _ADJOINTS

    wrt, adjoint = _ADJOINTS[k]
    assert k.source is f and k.func is not f
    assert adjoint.plan.gathered == ("x", "w", "b") and adjoint.plan.atomic == ()


@T.prim_func
def scaled(x: T.Buffer(("n",), "float32"), w: T.Buffer((2,), "float32"),
           y: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        y[i] = x[i] * w[0] + T.float32(0.5) * w[1]


@pytest.mark.parametrize("n", [1, 31, 100])
def test_two_weights_read_by_every_invocation_are_summed_in_chunks(n):
    ak = adjoint_kernels(scaled, ("x", "w"))
    assert ak.gathered == ("w",) and len(ak.kernels) == 3   # first, chunks, their sum
    rng = np.random.default_rng(n)
    x, w, seed = (rng.uniform(-1, 1, s).astype(np.float32) for s in (n, 2, n))
    dx, dw = np.zeros(n, np.float32), np.full(2, 0.25, np.float32)   # (added into)
    run(ak, [x, w, np.zeros(n, np.float32), seed, dx, dw])
    np.testing.assert_allclose(dw, [0.25 + (seed * x).sum(), 0.25 + 0.5 * seed.sum()],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, seed * w[0], rtol=1e-6)


def test_built_adjoint_takes_torch_tensors(device):
    torch = pytest.importorskip("torch")
    f = from_script(DENSE.format(dt="float32"))
    adjoint = adjoint_kernels(f, ("w", "b")).build(device)
    x, w, b, seed = _dense_data(50, np.float32, np.random.default_rng(7))
    dw, db = torch.zeros(5, 3), torch.zeros(3)
    for _ in range(2):   # the second call reuses the scratch buffers: the same sums again
        adjoint(*(torch.from_numpy(a) for a in (x, w, b, np.zeros((50, 3), np.float32), seed)),
                dw, db)
    _, want_w, want_b = _dense_want(x, w, b, seed)
    np.testing.assert_allclose(dw.numpy(), 2 * want_w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(db.numpy(), 2 * want_b, rtol=1e-4, atol=1e-5)


def test_the_atomic_adds_kept_run_on_the_device(device):
    # SwiftShader has no float atomics: vkir adds with a compare-exchange loop there
    adjoint = adjoint_kernels(lookup, ("w", "v")).build(device)
    rng = np.random.default_rng(8)
    idx = rng.integers(0, 4, 16).astype(np.int32)
    w, v, seed = (rng.uniform(-1, 1, s).astype(np.float32) for s in (4, 4, 16))
    dw, dv = np.zeros(4, np.float32), np.zeros(4, np.float32)
    adjoint(idx, w, v, np.zeros(16, np.float32), seed, dw, dv)
    np.testing.assert_allclose(dw, np.bincount(idx, seed * v[np.arange(16) % 4], 4), rtol=1e-5)
    np.testing.assert_allclose(dv, np.bincount(np.arange(16) % 4, seed * w[idx], 4), rtol=1e-5)
