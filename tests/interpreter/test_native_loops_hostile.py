"""Native C loops against hostile inputs: bool bytes other than 0 and 1, loop ranges at the edge
of their type (past INT32_MAX, uint64 past 2**63), nests too long to finish before Ctrl-C, and
nested vector lets (the C source grows linearly). Python and C give one answer."""

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import vkir
from vkir.errors import ArgumentError, TypeCheckError
from vkir.interpreter import interpret, native_loops
from vkir.interpreter.loop_to_c import translate
from vkir.ir import expr as E
from vkir.ir import stmt as S

pytestmark = pytest.mark.skipif(native_loops.c_compiler() is None, reason="needs a C compiler")


@pytest.fixture
def runs(monkeypatch, tmp_path):
    """The results of NativeLoop.run during the test (True: C ran the loop to its end)."""
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    seen = []
    original = native_loops.NativeLoop.run

    def run(self, *args):
        result = original(self, *args)
        seen.append(result)
        return result
    monkeypatch.setattr(native_loops.NativeLoop, "run", run)
    return seen


def _both(monkeypatch, func, *args):
    """`func` interpreted in Python only, then with every translatable loop in C: the arrays."""
    results = []
    for mode in ("0", "1"):
        monkeypatch.setenv("VKIR_NATIVE_LOOPS", mode)
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        interpret(func, *copies)
        results.append([a for a in copies if isinstance(a, np.ndarray)])
    return results


# -- bool bytes ---------------------------------------------------------------------------------

BOOLS = vkir.from_script('''
@T.prim_func
def bools(a: T.Buffer((8,), "bool"), out: T.Buffer((8, 6), "int32"), copy: T.Buffer((8,), "bool")):
    for i in T.serial(8):
        x = a[i]
        y = a[(i + 1) % 8]
        out[i, 0] = T.cast(x, "int32")
        out[i, 1] = T.cast(not x, "int32")
        out[i, 2] = T.cast(x == y, "int32")
        out[i, 3] = T.select(x, 5, 7)
        out[i, 4] = T.cast(x and y, "int32") + T.cast(x != y, "int32") * 2
        out[i, 5] = T.if_then_else(x, 1, 0) + T.cast(T.cast(x, "uint8"), "int32") * 10
        copy[i] = x
''')


def test_bool_bytes_other_than_0_and_1_are_true_in_c_as_in_python(monkeypatch, runs):
    """A bool buffer whose bytes are 2 or 255 (numpy's view of other bytes): every operation
    takes them as True, and a copy stores 1, in Python and in C alike."""
    raw = np.array([0, 1, 2, 255, 2, 4, 1, 0], np.uint8)
    truth = raw != 0
    python, native = _both(monkeypatch, BOOLS, raw.view(np.bool_),
                           np.zeros((8, 6), np.int32), np.zeros(8, np.bool_))
    assert runs == [True]
    nxt = np.roll(truth, -1)
    expected = np.stack([truth, ~truth, truth == nxt, np.where(truth, 5, 7),
                         (truth & nxt) + (truth != nxt) * 2, truth * 11], axis=1)
    np.testing.assert_array_equal(python[1], expected)
    np.testing.assert_array_equal(native[1], expected)
    for result in (python, native):
        np.testing.assert_array_equal(result[2].view(np.uint8), truth.astype(np.uint8))


def test_bool_values_defined_outside_the_loop_are_truth_in_c(monkeypatch, runs):
    func = vkir.from_script('''
@T.prim_func
def outside(a: T.Buffer((4,), "bool"), out: T.Buffer((4, 4), "int32")):
    for tx in T.thread_binding(4, "threadIdx.x"):
        x = a[tx]
        for i in T.serial(4):
            out[tx, i] = T.cast(x, "int32") * 3 + T.cast(x == (i % 2 == 1), "int32")
''')
    raw = np.array([2, 0, 129, 1], np.uint8)
    python, native = _both(monkeypatch, func, raw.view(np.bool_), np.zeros((4, 4), np.int32))
    assert runs == [True]
    truth = (raw != 0)[:, None]
    expected = truth * 3 + (truth == (np.arange(4) % 2 == 1)[None, :])
    np.testing.assert_array_equal(python[1], expected)
    np.testing.assert_array_equal(native[1], expected)


# -- loop ranges --------------------------------------------------------------------------------

PAST_INT32 = vkir.from_script('''
@T.prim_func
def past_int32(out: T.Buffer((1,), "int32"), n: T.int32):
    for i in T.serial(n, n + 20):
        out[0] = out[0] + 1
''')

FROM_DATA = vkir.from_script('''
@T.prim_func
def from_data(a: T.Buffer((2,), "int32"), out: T.Buffer((2,), "int32")):
    for r in T.serial(2):
        for i in T.serial(a[r], a[r] + 20):
            out[r] = out[r] + 1
''')

UNREACHED = vkir.from_script('''
@T.prim_func
def unreached(out: T.Buffer((1,), "int32"), n: T.int32):
    if n < 0:
        for i in T.serial(n, n + 20):
            out[0] = out[0] + 1
''')


@pytest.mark.parametrize("mode", ["0", "1"])
def test_a_loop_past_int32_max_is_an_argument_error(monkeypatch, runs, mode):
    """One answer in Python and C: an ArgumentError naming the loop, its range and its line,
    raised before the loop runs (never an OverflowError, never a wrapped or shortened loop)."""
    monkeypatch.setenv("VKIR_NATIVE_LOOPS", mode)
    out = np.zeros(1, np.int32)
    with pytest.raises(ArgumentError, match=r"loop i \(int32\) would run from 2147483640 to "
                       r"2147483659: its end, min \+ extent = 2147483660, passes the int32 "
                       r"maximum 2147483647 at <script>:4:5\n.*for i in T.serial\(n, n \+ 20\)"):
        interpret(PAST_INT32, out, 2147483640)
    # the end is a value of the type too (devices compare with it): the last value cannot be
    # the maximum
    with pytest.raises(ArgumentError, match=r"min \+ extent = 2147483648"):
        interpret(PAST_INT32, out, 2147483628)
    assert out[0] == 0
    interpret(PAST_INT32, out, 2147483627)   # the last range that fits
    assert out[0] == 20


@pytest.mark.parametrize("mode", ["0", "1"])
def test_a_loop_past_int32_max_from_data_is_an_argument_error(monkeypatch, runs, mode):
    """Bounds read from a buffer: the interpreter refuses the loop when it starts, in Python
    and in C (an inner loop in C fails, and Python reports it)."""
    monkeypatch.setenv("VKIR_NATIVE_LOOPS", mode)
    with pytest.raises(ArgumentError, match=r"loop i \(int32\) would run from 2147483640 to "
                       r"2147483659: its end.*at <script>:5:9"):
        interpret(FROM_DATA, np.array([0, 2147483640], np.int32), np.zeros(2, np.int32))
    out = np.zeros(2, np.int32)
    interpret(FROM_DATA, np.array([-5, 2147483627], np.int32), out)
    np.testing.assert_array_equal(out, [20, 20])


def test_a_loop_of_known_bounds_is_checked_even_where_it_is_not_reached(monkeypatch):
    """Bounds fixed by the scalars are checked before the run, as a Kernel checks them before
    its dispatch: one answer whatever the branches do."""
    monkeypatch.setenv("VKIR_NATIVE_LOOPS", "0")
    out = np.zeros(1, np.int32)
    interpret(UNREACHED, out, -2 ** 31 + 4)
    assert out[0] == 20
    with pytest.raises(ArgumentError, match="loop i .* would run from 2147483640"):
        interpret(UNREACHED, out, 2147483640)


def test_a_constant_loop_range_past_its_type_is_refused_by_the_checker():
    func = vkir.from_script('''
@T.prim_func
def constant(out: T.Buffer((1,), "int32")):
    for i in T.serial(2147483600, 2147483647):
        out[0] = out[0] + 1
''')
    loop = func.body
    bad = dataclasses.replace(func, body=dataclasses.replace(
        loop, min=E.IntImm("int32", 2147483640), extent=E.IntImm("int32", 20)))
    with pytest.raises(TypeCheckError, match=r"rule 6.*loop i would run from 2147483640 to "
                       r"2147483659: its end, min \+ extent = 2147483660, passes the int32 "
                       r"maximum"):
        interpret(bad, np.zeros(1, np.int32))
    out = np.zeros(1, np.int32)
    interpret(func, out)   # ends at the maximum: fits
    assert out[0] == 47


UINT64 = vkir.from_script('''
@T.prim_func
def high(out: T.Buffer((4,), "uint64"), lo: T.uint64):
    for r in T.serial(2):
        for i in T.serial(lo, lo + T.uint64(5)):
            out[0] = out[0] + (i >> T.uint64(60))
            out[1] = out[1] ^ i
    for i in T.serial(lo, lo + T.uint64(3)):
        out[2] = out[2] + (i - lo)
        out[3] = i
''')


def test_uint64_loop_values_past_2_63_run_in_c_as_in_python(monkeypatch, runs):
    lo = 2 ** 63 + 5
    python, native = _both(monkeypatch, UINT64, np.zeros(4, np.uint64), lo)
    assert runs and all(runs)
    values = [lo + j for j in range(5)]
    expected = [2 * sum(v >> 60 for v in values), 0, 3, lo + 2]
    assert python[0].tolist() == expected and native[0].tolist() == expected
    # the top of the type: the end (min + extent) is 2**64 - 1, one more is an error
    top = 2 ** 64 - 6
    python, native = _both(monkeypatch, UINT64, np.zeros(4, np.uint64), top)
    assert python[0].tolist() == native[0].tolist()
    assert native[0][3] == top + 2
    monkeypatch.setenv("VKIR_NATIVE_LOOPS", "1")
    with pytest.raises(ArgumentError, match=r"loop i \(uint64\) would run from "
                       rf"{2 ** 64 - 5} to {2 ** 64 - 1}: its end, min \+ extent = {2 ** 64}"):
        interpret(UINT64, np.zeros(4, np.uint64), 2 ** 64 - 5)


def test_int64_loops_at_both_ends_of_the_type_run_in_c_as_in_python(monkeypatch, runs):
    func = vkir.from_script('''
@T.prim_func
def ends(out: T.Buffer((2,), "int64"), lo: T.int64, n: T.int64):
    for r in T.serial(T.int64(3)):
        for i in T.serial(lo, lo + n):
            out[0] = out[0] + (i & T.int64(7))
            out[1] = i
''')
    for lo in (-2 ** 63, 2 ** 63 - 10):
        python, native = _both(monkeypatch, func, np.zeros(2, np.int64), lo, 9)
        assert python[0].tolist() == native[0].tolist()
        assert native[0][1] == lo + 8


# -- pausing inside nests -----------------------------------------------------------------------

NEST = vkir.from_script('''
@T.prim_func
def nest(a: T.Buffer((16,), "int32"), out: T.Buffer((16, 3), "int32")):
    for tx in T.thread_binding(16, "threadIdx.x"):
        s = a[tx]
        for i in T.serial(a[tx] % 5 + 2):
            t = s * 3 + i
            acc = T.alloc_buffer((2,), "int32", scope="local")
            acc[1] = t
            if i % 2 == 0:
                for j in T.serial(i + 1):
                    acc[0] = acc[0] + j * t
                    k = 0
                    while k < j:
                        k += 1
                        acc[1] = acc[1] ^ k
            else:
                acc[0] = acc[0] - t
            for j in T.serial(3):
                out[tx, j] = out[tx, j] + acc[j % 2] + s
''')


@pytest.mark.parametrize("steps", [1, 2, 3, 5, 40])
def test_a_nest_paused_at_any_level_resumes_exactly(monkeypatch, runs, steps):
    """With a tiny budget C pauses inside inner loops, while loops, branches and lets, and
    resumes each time at the iteration where it stopped: the result is Python's."""
    monkeypatch.setattr(native_loops, "STEPS", steps)
    a = np.arange(16, dtype=np.int32) * 7 - 20
    python, native = _both(monkeypatch, NEST, a, np.zeros((16, 3), np.int32))
    assert runs == [True]
    np.testing.assert_array_equal(python[1], native[1])


_INTERRUPTED = textwrap.dedent('''
    import os, sys
    import numpy as np
    import vkir
    from vkir.interpreter import interpret, native_loops
    func = vkir.from_script("""
    @T.prim_func
    def spin(out: T.Buffer((16,), "int64"), n: T.int64):
        for i in T.serial(T.int64(4)):
            for j in T.serial(n):
    """ + "".join(f"""
                out[{m}] = (out[{m}] * T.int64(31) + j) % T.int64({1000003 + m})"""
        for m in range(16)))
    interpret(func, np.zeros(16, np.int64), 10)   # compiled before the long run
    original = native_loops.NativeLoop.run
    def run(self, *args):
        print("in C", flush=True)
        return original(self, *args)
    native_loops.NativeLoop.run = run
    try:
        interpret(func, np.zeros(16, np.int64), 2 ** 40)   # days
    except KeyboardInterrupt:
        print("interrupted", flush=True)
''')


def test_ctrl_c_interrupts_a_nest_whose_inner_loop_runs_for_hours(tmp_path):
    """SIGINT reaches a native loop nest between two calls into C, however long its inner loop
    (each iteration of which is slow: 2**31 of them take minutes): the child stops long before
    the parent's timeout."""
    env = dict(os.environ, VKIR_NATIVE_LOOPS="1", VKIR_CACHE_DIR=str(tmp_path))
    child = subprocess.Popen([sys.executable, "-c", _INTERRUPTED], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline() == "in C\n"
        time.sleep(1)   # into the long call
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert out == "interrupted\n", err


# -- source size --------------------------------------------------------------------------------

def _nested_lets(depth: int, lanes: int = 4):
    """A loop whose store's value is `depth` lets of float32 vectors nested in each other's
    values: let v_d = (let v_(d-1) = ... in ...) in v_d * v_d + 0.5."""
    a = vkir.from_script(f'''
@T.prim_func
def lets(a: T.Buffer((64,), "float32x{lanes}"), out: T.Buffer((64,), "float32x{lanes}")):
    for i in T.serial(64):
        out[i] = a[i]
''')
    loop = a.body
    value = loop.body.value
    for d in range(depth):
        v = E.Var(f"v{d}", f"float32x{lanes}")
        value = E.Let(v, value, E.Add(E.Mul(v, v), E.Broadcast(E.FloatImm("float32", 0.5),
                                                                lanes)))
    return dataclasses.replace(a, body=dataclasses.replace(
        loop, body=dataclasses.replace(loop.body, value=value)))


def test_nested_vector_lets_give_c_source_linear_in_their_depth():
    sizes = {depth: len(translate(_nested_lets(depth).body).source) for depth in (8, 16)}
    assert sizes[8] < 50_000 and sizes[16] < 50_000, sizes
    assert sizes[16] < 2.5 * sizes[8], sizes


def test_nested_vector_lets_in_c_are_the_interpreters(monkeypatch, runs):
    func = _nested_lets(6)
    a = (np.arange(256, dtype=np.float32) / 256).reshape(64, 4)
    python, native = _both(monkeypatch, func, a, np.zeros((64, 4), np.float32))
    assert runs == [True]
    np.testing.assert_array_equal(python[1], native[1])
