"""`while`, `break` and `continue` in kernels: the IR they become (a While node, and an exit-state
variable that guards the rest of the iteration), the same results in the interpreter and on the
device, uniform barriers, and clear errors for the loops that cannot take them."""

import numpy as np
import pytest

import vkir
from vkir.errors import ScriptError, WellFormedError
from vkir.ir import stmt as S
from vkir.ir.traversal import walk
from vkir.analysis import verify_well_formed
from vkir.spirv import Target


def _both(func, *args):
    """Run `func` in the interpreter and on the device; both results, as lists of arrays."""
    got = []
    for run in (lambda *x: vkir.interpret(func, *x), vkir.build(func)):
        copies = [a.copy() for a in args]
        run(*copies)
        got.append(copies)
    return got


MANDELBROT = '''
@T.prim_func
def escape(cx: T.Buffer((64,), "float32"), out: T.Buffer((64,), "int32")):
    for i in T.thread_binding(64, "threadIdx.x"):
        x = T.float32(0)
        y = T.float32(0)
        n = 0
        while n < 200:
            if x * x + y * y > T.float32(4):
                break
            t = x * x - y * y + cx[i]
            y = T.float32(2) * x * y + T.float32(0.5)
            x = t
            n += 1
        out[i] = n
'''


def _escape_reference(cx):
    out = np.zeros(cx.shape, np.int32)
    for k, c in enumerate(cx.astype(np.float32)):
        x = y = np.float32(0)
        n = 0
        while n < 200 and not x * x + y * y > 4:
            x, y = x * x - y * y + c, np.float32(2) * x * y + np.float32(0.5)
            n += 1
        out[k] = n
    return out


def test_while_with_break_matches_python(device):
    f = vkir.from_script(MANDELBROT)
    assert any(isinstance(n, S.While) for n in walk(f.body))
    cx = np.linspace(-2.0, 1.0, 64).astype(np.float32)
    want = _escape_reference(cx)
    assert len(set(want.tolist())) > 5   # the invocations leave the loop at many iterations
    for cx_out in _both(f, cx, np.zeros(64, np.int32)):
        np.testing.assert_array_equal(cx_out[1], want)


@pytest.mark.device
def test_a_plain_while_is_one_node_and_prints_back():
    f = vkir.from_script('''
@T.prim_func
def halve(a: T.Buffer((8,), "int32"), steps: T.Buffer((8,), "int32")):
    for i in T.serial(8):
        v = a[i]
        k = 0
        while v > 1:
            v = v // 2
            k += 1
        steps[i] = k
''')
    whiles = [n for n in walk(f.body) if isinstance(n, S.While)]
    assert len(whiles) == 1
    assert "while v[0] > 1:" in f.script()
    vkir.assert_structural_equal(vkir.from_script(f.script()), f)
    a = np.array([0, 1, 2, 3, 8, 9, 1000, 1 << 30], np.int32)
    for _, steps in _both(f, a, np.zeros(8, np.int32)):
        np.testing.assert_array_equal(steps, [0, 0, 1, 1, 3, 3, 9, 30])


def test_break_in_a_serial_loop_stops_it_early(device):
    """`for ... break` becomes a while loop over a counter: the loop stops at the break (the
    interpreter counts the iterations that ran) instead of idling to its end."""
    f = vkir.from_script('''
@T.prim_func
def first_negative(a: T.Buffer((4, 1000), "float32"), at: T.Buffer((4,), "int32"),
                   ran: T.Buffer((4,), "int32")):
    for r in T.thread_binding(4, "threadIdx.x"):
        at[r] = -1
        for j in T.serial(1000):
            ran[r] += 1
            if a[r, j] < T.float32(0):
                at[r] = j
                break
''')
    assert not any(isinstance(n, S.For) and n.kind == "serial" for n in walk(f.body))
    a = np.ones((4, 1000), np.float32)
    a[0, 3] = a[1, 500] = a[1, 600] = a[2, 999] = -1.0
    for _, at, ran in _both(f, a, np.zeros(4, np.int32), np.zeros(4, np.int32)):
        np.testing.assert_array_equal(at, [3, 500, 999, -1])
        np.testing.assert_array_equal(ran, [4, 501, 1000, 1000])


def test_continue_skips_the_rest_of_the_iteration(device):
    f = vkir.from_script('''
@T.prim_func
def odd_sum(a: T.Buffer((16,), "int32"), out: T.Buffer((1,), "int32")):
    s = 0
    for i in T.serial(2, 16):
        if a[i] % 2 == 0:
            continue
        s += a[i]
        if s > 40:
            continue
        s += 100
    out[0] = s
''')
    fors = [n for n in walk(f.body) if isinstance(n, S.For)]
    assert len(fors) == 1 and fors[0].kind == "serial"   # continue alone keeps the loop
    a = np.arange(16, dtype=np.int32) * 3
    want = 0
    for v in a[2:]:
        if v % 2 == 0:
            continue
        want += v
        if want > 40:
            continue
        want += 100
    for _, out in _both(f, a, np.zeros(1, np.int32)):
        assert out[0] == want


@pytest.mark.device
def test_nested_loops_leave_their_own_loop():
    """A break leaves the innermost loop only; a continue after an inner loop continues the
    outer one."""
    f = vkir.from_script('''
@T.prim_func
def pairs(out: T.Buffer((1,), "int32")):
    count = 0
    i = 0
    while i < 6:
        i += 1
        if i == 2:
            continue
        for j in T.serial(10):
            if j >= i:
                break
            if j == 1:
                continue
            count += 10 * i + j
        if i == 5:
            break
    out[0] = count
''')
    want = 0
    i = 0
    while i < 6:
        i += 1
        if i == 2:
            continue
        for j in range(10):
            if j >= i:
                break
            if j == 1:
                continue
            want += 10 * i + j
        if i == 5:
            break
    out = np.zeros(1, np.int32)
    vkir.interpret(f, out)
    assert out[0] == want
    k = vkir.build(f)
    out2 = np.zeros(1, np.int32)
    k(out2)
    assert out2[0] == want


def test_control_flow_modules_pass_spirv_val():
    """Structured loops for while, break and continue (codegen runs spirv-val on each module)."""
    f = vkir.lower(vkir.from_script(MANDELBROT))
    for target in (Target(), Target.vulkan13()):
        module = vkir.spirv.codegen(f, target)
        assert module.words


def test_barrier_in_a_uniform_while_loop_runs(device):
    """A loop whose condition every invocation of the workgroup agrees on may hold a barrier."""
    f = vkir.from_script('''
@T.prim_func
def tree_sum(a: T.Buffer((64,), "float32"), out: T.Buffer((1,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        s = T.alloc_buffer((64,), "float32", scope="shared")
        s[tx] = a[tx]
        T.barrier()
        stride = 32
        while stride > 0:
            if tx < stride:
                s[tx] = s[tx] + s[tx + stride]
            T.barrier()
            stride = stride // 2
        if tx == 0:
            out[0] = s[0]
''')
    verify_well_formed(f)
    a = np.arange(64, dtype=np.float32)
    for _, out in _both(f, a, np.zeros(1, np.float32)):
        assert out[0] == a.sum()


@pytest.mark.parametrize("loop", [
    "while k < tx:\n            T.barrier()\n            k += 1",
    "while k < 4:\n            if tx == 3:\n                break\n            T.barrier()\n"
    "            k += 1",
    "for j in T.serial(4):\n            if k + tx > 5:\n                continue\n"
    "            T.barrier()",
])
def test_a_barrier_under_divergent_loop_control_is_refused(loop):
    """The checker follows thread-dependent values into variables and exit states: a barrier
    that some invocations of the workgroup may skip is an error, before anything runs."""
    f = vkir.from_script(f'''
@T.prim_func
def bad(out: T.Buffer((8,), "int32")):
    for tx in T.thread_binding(8, "threadIdx.x"):
        k = 0
        {loop}
        out[tx] = k
''')
    with pytest.raises(WellFormedError, match="barrier in non-uniform control flow"):
        verify_well_formed(f)


@pytest.mark.parametrize("body, message", [
    ("break", "'break' outside a loop"),
    ("for j in T.unroll(4):\n        if j == 2:\n            break", "only supported in T.serial"),
    ("for j in T.vectorized(4):\n        continue", "only supported in T.serial"),
    ("while a[0]:\n        a[0] = 0", "while condition must be a scalar bool"),
    ("while a[0] > 0:\n        a[0] = 0\n    else:\n        a[0] = 1", "while ... else"),
])
def test_control_flow_mistakes_are_script_errors(body, message):
    with pytest.raises(ScriptError, match=message):
        vkir.from_script(f'''
@T.prim_func
def bad(a: T.Buffer((4,), "int32")):
    {body}
''')


def test_a_while_condition_is_bounds_checked_on_every_evaluation(device):
    """check_bounds=True checks the loads of a while condition before each evaluation, not
    only the first: a scan that runs off the end of its buffer is reported, with its line."""
    f = vkir.from_script('''
@T.prim_func
def scan(a: T.Buffer((8,), "int32"), out: T.Buffer((1,), "int32")):
    k = 0
    while a[k] > 0:
        k += 1
    out[0] = k
''')
    k = vkir.build(f, check_bounds=True)
    out = np.zeros(1, np.int32)
    k(np.array([3, 2, 1, 0, 5, 5, 5, 5], np.int32), out)
    assert out[0] == 3
    with pytest.raises(vkir.OutOfBoundsError,
                       match=r"index 8 is out of bounds(.|\n)*while a\[k\] > 0"):
        k(np.ones(8, np.int32), out)
