"""vkir.grad when an output element is stored more than once: only the last store's value leaves
the kernel, so only it gets the seed (vkir.autodiff.overwrites). Exact hand-derived gradients in
the interpreter and on the device, the flag-free code of outputs stored once, and the refusals
where which store is last cannot be told. Also: float64 shared reads refused at vkir.grad."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import UnsupportedError


@T.prim_func
def twice(x: T.Buffer((4,), "float32"), y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        y[i] = T.float32(3) * x[i]
        y[i] = T.float32(5) * x[i]


@T.prim_func
def branch(x: T.Buffer((4,), "float32"), y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        y[i] = T.float32(3) * x[i]
        if x[i] > T.float32(0):
            y[i] = x[i] * x[i]


@T.prim_func
def last_iteration(x: T.Buffer((16,), "float32"), y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        for j in T.serial(4):
            y[i] = T.float32(2) * x[i * 4 + j]


@T.prim_func
def running(x: T.Buffer((16,), "float32"), y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        acc = T.float32(0)
        for j in T.serial(4):       # y[i] is the square of the last partial sum
            acc = acc + x[i * 4 + j]
            y[i] = acc * acc


@T.prim_func
def reset_then_add(x: T.Buffer((4,), "float32"), out: T.Buffer((2,), "float32")):
    for i in T.parallel(1):
        out[0] = x[0] * x[1]          # killed by the next store
        out[0] = T.float32(0)
        for j in T.serial(4):
            T.atomic_add(out[0], x[j] * x[j])
        for j in T.serial(4):
            T.atomic_add(out[1], x[j])   # killed by the store after the loop
        out[1] = T.float32(7) * x[3]


X4 = np.float32([-1.5, -0.5, 0.5, 2.0])
X16 = np.arange(16, dtype=np.float32) - 5
# (kernel, x, output size, d_x for a seed of ones)
CASES = {
    "twice": (twice, X4, 4, np.full(4, 5, np.float32)),
    "branch": (branch, X4, 4, np.where(X4 > 0, 2 * X4, 3).astype(np.float32)),
    "last_iteration": (last_iteration, X16, 4, np.tile(np.float32([0, 0, 0, 2]), 4)),
    "running": (running, X16, 4, np.repeat(2 * X16.reshape(4, 4).sum(1), 4)),
    "reset_then_add": (reset_then_add, X4, 2,
                       2 * X4 + np.float32([0, 0, 0, 7])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_only_the_last_store_gets_the_seed_in_the_interpreter(name):
    func, x, m, want = CASES[name]
    dx = np.zeros(x.size, np.float32)
    vkir.interpret(vkir.grad(func, "x"), x.copy(), np.zeros(m, np.float32),
                   np.ones(m, np.float32), dx)
    np.testing.assert_array_equal(dx, want)


@pytest.mark.device
@pytest.mark.parametrize("name", sorted(CASES))
def test_only_the_last_store_gets_the_seed_on_the_device(name, device):
    func, x, m, want = CASES[name]
    dx = np.zeros(x.size, np.float32)
    vkir.build(vkir.grad(func, "x"), device=device)(x.copy(), np.zeros(m, np.float32),
                                                      np.ones(m, np.float32), dx)
    np.testing.assert_array_equal(dx, want)


@pytest.mark.device
def test_the_tape_differentiates_the_last_store(device):
    k = vkir.build(branch, device=device)
    x, y = vkir.array(X4, device=device), vkir.zeros(4, device=device)
    with vkir.Tape() as tape:
        k(x, y)
    tape.backward(y)
    np.testing.assert_array_equal(tape.grad(x).numpy(), CASES["branch"][3])


def test_outputs_stored_once_need_no_flags():
    @T.prim_func
    def rows(x: T.Buffer((16,), "float32"), y: T.Buffer((16,), "float32")):
        for i in T.parallel(4):
            for j in T.serial(4):       # a different element in every iteration
                y[i * 4 + j] = x[i * 4 + j] * x[i * 4 + j]

    @T.prim_func
    def either(x: T.Buffer((4,), "float32"), y: T.Buffer((4,), "float32")):
        for i in T.parallel(4):
            if x[i] > T.float32(0):     # two stores, never both
                y[i] = x[i]
            else:
                y[i] = -x[i]

    @T.prim_func
    def flat(x: T.Buffer(("n", "m"), "float32"), y: T.Buffer(("n * m",), "float32")):
        for i in T.parallel(n):
            for j in T.serial(m):       # a symbolic stride: i * m is fixed in an invocation
                y[i * m + j] = x[i, j] * x[i, j]

    @T.prim_func
    def stripes(x: T.Buffer((16,), "float32"), y: T.Buffer((16,), "float32")):
        for i in T.parallel(2):
            for j in T.serial(4):       # two index expressions that never meet
                y[i * 8 + 2 * j] = x[i * 8 + 2 * j]
                y[i * 8 + 2 * j + 1] = T.float32(2) * x[i * 8 + 2 * j + 1]

    for func in (rows, either, flat, stripes, twice):
        script = vkir.grad(func, "x").script()
        assert ("_last" in script) == (func is twice), script
    dx = np.zeros(16, np.float32)
    vkir.interpret(vkir.grad(stripes, "x"), X16.copy(), np.zeros(16, np.float32),
                   np.ones(16, np.float32), dx)
    np.testing.assert_array_equal(dx, np.tile(np.float32([1, 2]), 8))
    dx = np.zeros(4, np.float32)
    vkir.interpret(vkir.grad(either, "x"), X4.copy(), np.zeros(4, np.float32),
                   np.ones(4, np.float32), dx)
    np.testing.assert_array_equal(dx, np.sign(X4))


def test_refused_where_the_last_store_cannot_be_told():
    @T.prim_func
    def halves(x: T.Buffer((8,), "float32"), y: T.Buffer((4,), "float32")):
        for i in T.parallel(1):
            for j in T.serial(8):
                y[j // 2] = x[j]

    @T.prim_func
    def outer(x: T.Buffer((16,), "float32"), y: T.Buffer((4,), "float32")):
        for i in T.parallel(1):
            for j in T.serial(4):
                for k in T.serial(4):
                    y[k] = x[j * 4 + k]

    @T.prim_func
    def scatter(x: T.Buffer((4,), "float32"), idx: T.Buffer((4,), "int32"),
                y: T.Buffer((4,), "float32")):
        for i in T.parallel(4):
            y[i] = x[i]
            y[idx[i]] = T.float32(2) * x[i]

    @T.prim_func
    def shifted(x: T.Buffer((16,), "float32"), y: T.Buffer((17,), "float32")):
        for i in T.parallel(1):
            for j in T.serial(16):      # y[j + 1] is stored again as y[j] one iteration later
                y[j] = x[j]
                y[j + 1] = T.float32(2) * x[j]

    @T.prim_func
    def bump(x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "float32")):
        for i in T.parallel(1):
            k = T.alloc_buffer((1,), "int32", scope="local")
            k[0] = 2
            y[k[0] + 1] = x[0]
            k[0] = k[0] + 1
            y[k[0]] = x[1]              # the same element: k[0] changed in between

    @T.prim_func
    def walk_down(x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "float32")):
        for i in T.parallel(1):
            k = T.alloc_buffer((1,), "int32", scope="local")
            k[0] = 4
            for j in T.serial(4):
                k[0] = k[0] - 1
                y[k[0] + j] = x[j]      # y[3] in every iteration

    for func, words in ((halves, "several iterations of a serial loop"),
                        (bump, "which of them is last cannot be told"),
                        (walk_down, "several iterations of a serial loop"),
                        (outer, "several iterations of a serial loop"),
                        (scatter, "which of them is last cannot be told"),
                        (shifted, "across iterations")):
        with pytest.raises(UnsupportedError, match=words) as info:
            vkir.grad(func, "x")
        assert "line" in str(info.value) and "'y'" in str(info.value)


def test_float64_shared_reads_are_refused_at_grad():
    @T.prim_func
    def scale(x: T.Buffer((8,), "float64"), w: T.Buffer((1,), "float64"),
              y: T.Buffer((8,), "float64")):
        for i in T.parallel(8):
            y[i] = x[i] * w[0]

    with pytest.raises(UnsupportedError, match=r"same element of 'w' \(line \d+\).*no float64 "
                                               r"form"):
        vkir.grad(scale, ("x", "w"))
    g = vkir.grad(scale, "x")      # x[i] is each invocation's own: no atomic, allowed
    dx = np.zeros(8)
    vkir.interpret(g, np.ones(8), np.float64([1.5]), np.zeros(8), np.ones(8), dx)
    np.testing.assert_array_equal(dx, np.full(8, 1.5))


def test_equal_indices_under_different_bindings_are_not_one_element():
    """Two sibling loops binding one Var object (what a pass copying a loop could make): y[j]
    in the first and y[j] in the second are one element only within one iteration each, so
    they are not one group (one flag would give the seed to a single iteration)."""
    from vkir.ir import For, SeqStmt, substitute

    @T.prim_func
    def two(x: T.Buffer((4,), "float32"), y: T.Buffer((4,), "float32")):
        for i in T.parallel(1):
            for j in T.serial(4):
                y[j] = x[j]
            for k in T.serial(4):
                y[k] = T.float32(2) * x[k]

    par = two.body
    first, second = par.body.seq
    j = first.loop_var
    second = For(j, second.min, second.extent, second.kind,
                 substitute(second.body, {second.loop_var: j}))
    shared = two.with_body(For(par.loop_var, par.min, par.extent, par.kind,
                               SeqStmt((first, second)), par.thread, par.annotations))
    for func in (two, shared):
        with pytest.raises(UnsupportedError, match="which of them is last cannot be told"):
            vkir.grad(func, "x")
