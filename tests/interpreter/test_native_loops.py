"""Long interpreter loops run as compiled C (vkir/interpreter/native_loops.py): the same results,
bit for bit, as the Python interpreter, the same errors, and C only where it is exact."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import vkir
from vkir.interpreter import DataRaceError, OutOfBoundsError, interpret, native_loops
from vkir.interpreter.loop_to_c import NotTranslatable, translate
from vkir.ir import stmt as S
from vkir.ir.traversal import walk

pytestmark = pytest.mark.skipif(native_loops.c_compiler() is None, reason="needs a C compiler")


@pytest.fixture
def runs(monkeypatch, tmp_path):
    """The results of NativeLoop.run during the test (True: C ran the loop, False: Python goes
    on with it, "restart": the interpretation starts again in Python)."""
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    seen = []
    original = native_loops.NativeLoop.run

    def run(self, *args):
        try:
            result = original(self, *args)
        except native_loops.NativeRestart:
            seen.append("restart")
            raise
        seen.append(result)
        return result
    monkeypatch.setattr(native_loops.NativeLoop, "run", run)
    return seen


def _both(monkeypatch, func, *arrays, **kwargs):
    """Interpret `func` in Python only, then with every translatable loop in C; the outputs."""
    results = []
    for mode in ("0", "1"):
        monkeypatch.setenv("VKIR_NATIVE_LOOPS", mode)
        copies = [a.copy() for a in arrays]
        interpret(func, *copies, **kwargs)
        results.append(copies)
    return results


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    """Equal bit for bit, except that any NaN equals any NaN."""
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        return np.array_equal(nan, np.isnan(y)) and \
            np.array_equal(x[~nan].view(np.uint8), y[~nan].view(np.uint8))
    return np.array_equal(x.view(np.uint8), y.view(np.uint8))


def _edge_values(dtype: str, n: int, seed: int) -> np.ndarray:
    npdt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if npdt.kind == "f":
        with np.errstate(over="ignore"):   # float16 takes the large ones as infinities
            special = np.array([0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e30, -3e9, 2.5,
                                -2.5, 1e-40, 65536.5, 6e-8], np.float64).astype(npdt)
        values = rng.standard_normal(n).astype(npdt) * npdt.type(100)
    else:
        info = np.iinfo(npdt)
        special = np.array([0, 1, info.max, info.min, info.max - 1, 7, 2]
                           + ([-1, -7, -2] if npdt.kind == "i" else [3, 5, 9]), npdt)
        values = rng.integers(info.min, info.max, n, dtype=npdt, endpoint=True)
    pick = rng.random(n) < 0.5
    values[pick] = rng.choice(special, int(pick.sum()))
    return values


def _recurrence(dtype: str, expression: str, n: int = 40):
    return vkir.from_script(f'''
@T.prim_func
def recurrence(a: T.Buffer(({n},), "{dtype}"), b: T.Buffer(({n},), "{dtype}"),
               out: T.Buffer(({n},), "{dtype}")):
    acc = T.alloc_buffer((1,), "{dtype}", scope="local")
    acc[0] = a[0]
    for i in T.serial({n}):
        x = acc[0]
        y = a[i]
        z = b[i]
        acc[0] = {expression}
        out[i] = acc[0]
''')


INT_EXPRESSIONS = ["x + y * z", "x - y", "T.truncdiv(x, y) + T.truncmod(z, y)", "x // y + z % y",
                   "T.min(x, y) ^ T.max(z, x)", "(x & y) | (z << y) | (x >> z)",
                   "T.select(x < y, x * z, y - z)", "T.if_then_else(y != z, x // z, x)"]
FLOAT_EXPRESSIONS = ["x * y + z", "x / y - z", "T.min(x, y) + T.max(z, x)", "T.truncmod(x, y)",
                     "T.select(x <= y, T.sqrt(T.fabs(z)), T.floor(x) - T.ceil(y))",
                     "T.round(y) + T.trunc(z)", "T.if_then_else(T.isnan(x), y, x * z)",
                     "x // y + z % x"]


_INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"]
ARITHMETIC = [(t, x) for t in _INT_TYPES for x in INT_EXPRESSIONS] + \
    [(t, x) for t in ("float16", "float32", "float64") for x in FLOAT_EXPRESSIONS]


@pytest.mark.parametrize("dtype, expression", ARITHMETIC)
def test_arithmetic_is_the_interpreters(monkeypatch, runs, dtype, expression):
    func = _recurrence(dtype, expression)
    a, b = _edge_values(dtype, 40, 1), _edge_values(dtype, 40, 2)
    python, native = _both(monkeypatch, func, a, b, np.zeros(40, dtype))
    assert runs and all(runs)
    assert _same(python[2], native[2]), (python[2], native[2])


@pytest.mark.parametrize("target", ["int8", "uint8", "int32", "uint32", "int64", "uint64",
                                    "bool", "float16", "float64"])
def test_casts_from_float_saturate_as_in_python(monkeypatch, runs, target):
    func = vkir.from_script(f'''
@T.prim_func
def casts(a: T.Buffer((13,), "float32"), out: T.Buffer((13,), "{target}")):
    for i in T.serial(13):
        out[i] = T.cast(a[i] * T.float32(3), "{target}")
''')
    a = np.array([0.0, -0.0, 0.7, -0.7, 1e30, -1e30, np.nan, np.inf, -np.inf, 127.9, -128.9,
                  3e9, -3e9], np.float32)
    python, native = _both(monkeypatch, func, a, np.zeros(13, target))
    assert all(runs)
    assert _same(python[1], native[1])


_OPS = {"int32": ["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>"],
        "float32": ["+", "-", "*", "/", "//", "%"]}
_CALLS = {"int32": ["T.truncdiv", "T.truncmod", "T.min", "T.max"],
          "float32": ["T.truncmod", "T.min", "T.max"]}


@st.composite
def _expressions(draw, dtype: str, depth: int = 3):
    base = dtype.split("x")[0]
    leaves = ["x", "y", "z"]
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(leaves))
    kind = draw(st.integers(0, 4 if base != dtype else 3))
    a = draw(_expressions(dtype, depth - 1))
    b = draw(_expressions(dtype, depth - 1))
    if kind == 0:
        return f"{draw(st.sampled_from(_CALLS[base]))}({a}, {b})"
    if kind == 1:
        c = draw(_expressions(dtype, depth - 1))
        return f"T.select({a} < {b}, {c}, {a})"
    if kind == 4:
        lanes = draw(st.lists(st.integers(0, 7), min_size=4, max_size=4))
        return f"T.shuffle([{a}, {b}], {lanes})"
    return f"({a} {draw(st.sampled_from(_OPS[base]))} {b})"


@settings(max_examples=int(os.environ.get("NATIVE_EXAMPLES", 25)), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), dtype=st.sampled_from(["int32", "float32", "int32x4", "float32x4"]))
def test_random_recurrences_are_the_interpreters(monkeypatch, tmp_path, data, dtype):
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    expression = data.draw(_expressions(dtype))
    func = _recurrence(dtype, expression, 24)
    seed = data.draw(st.integers(0, 1000))
    base, lanes = dtype.split("x")[0], (int(dtype.split("x")[1]) if "x" in dtype else 1)
    shape = (24, lanes) if lanes > 1 else (24,)
    a = _edge_values(base, 24 * lanes, seed).reshape(shape)
    b = _edge_values(base, 24 * lanes, seed + 1).reshape(shape)
    python, native = _both(monkeypatch, func, a, b, np.zeros(shape, base))
    assert _same(python[2], native[2]), expression


WHILE_BREAK = '''
@T.prim_func
def collatz(start: T.Buffer((64,), "int32"), steps: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        n = start[tx]
        count = 0
        while n != 1:
            if count >= 500:
                break
            if n % 2 == 0:
                n = n // 2
                continue
            n = 3 * n + 1
            count += 1
        steps[tx] = count
'''


def test_while_with_break_and_continue_runs_in_c_per_invocation(monkeypatch, runs):
    func = vkir.from_script(WHILE_BREAK)
    start = np.arange(1, 65, dtype=np.int32) * 7
    python, native = _both(monkeypatch, func, start, np.zeros(64, np.int32))
    assert True in runs    # races are checked; the loop reads only what nothing writes
    want = []
    for s in start:
        n, count = int(s), 0
        while n != 1 and count < 500:
            if n % 2 == 0:
                n //= 2
                continue
            n, count = 3 * n + 1, count + 1
        want.append(count)
    np.testing.assert_array_equal(python[1], want)
    np.testing.assert_array_equal(native[1], want)


def test_long_loop_goes_to_c_by_itself(monkeypatch, runs):
    """Unset, the interpreter hands a loop over once it runs long (the benchmark's loop of 64
    invocations, 20000 iterations each)."""
    from benchmarks.interpreter import WIDE_LOOP

    monkeypatch.delenv("VKIR_NATIVE_LOOPS", raising=False)
    func = vkir.from_script(WIDE_LOOP.replace("200000", "20000"))
    a = np.random.default_rng(0).standard_normal(1024).astype(np.float32)
    out = np.zeros(64, np.float32)
    interpret(func, a, out)
    assert runs == [True]
    s = np.zeros(64, np.float32)
    for i in range(20000):
        s = s * np.float32(0.5) + a[(i + np.arange(64)) % 1024]
    np.testing.assert_array_equal(out, s)


def test_out_of_bounds_in_c_is_reported_by_python_exactly(monkeypatch, runs):
    func = vkir.from_script('''
@T.prim_func
def overrun(a: T.Buffer((100,), "float32"), out: T.Buffer((100,), "float32")):
    s = T.float32(0)
    for i in T.serial(101):
        s = s + a[i]
        out[i % 100] = s
''')
    errors, outputs = [], []
    for mode in ("0", "1"):
        monkeypatch.setenv("VKIR_NATIVE_LOOPS", mode)
        out = np.zeros(100, np.float32)
        with pytest.raises(OutOfBoundsError) as info:
            interpret(func, np.ones(100, np.float32), out)
        errors.append(str(info.value))
        outputs.append(out)
    assert runs == ["restart"]   # C stopped at the overrun after writing `out`: Python ran
    assert errors[0] == errors[1] and "index 100" in errors[0]
    np.testing.assert_array_equal(outputs[0], outputs[1])
    np.testing.assert_array_equal(outputs[1], np.arange(1, 101, dtype=np.float32))


def test_racy_reads_in_c_are_reported_as_python_reports_them(monkeypatch, runs):
    """C logs the reads the race checker tracks; a race among them sends the loop back to
    Python, which reports it exactly."""
    func = vkir.from_script('''
@T.prim_func
def racy(out: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        buf = T.alloc_buffer((64,), "int32", scope="shared")
        buf[tx] = tx
        s = 0
        for i in T.serial(64):
            s = s + buf[(tx + i) % 64]
        out[tx] = s
''')
    messages = []
    for mode in ("0", "1"):
        monkeypatch.setenv("VKIR_NATIVE_LOOPS", mode)
        with pytest.raises(DataRaceError) as info:
            interpret(func, np.zeros(64, np.int32))
        messages.append(str(info.value))
    assert runs == ["restart"]   # the race checker found the race among C's reads
    assert messages[0] == messages[1]


def test_race_free_reads_of_tracked_memory_run_in_c(monkeypatch, runs):
    func = vkir.from_script('''
@T.prim_func
def ordered(out: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        buf = T.alloc_buffer((64,), "int32", scope="shared")
        buf[tx] = tx * 3
        T.barrier()
        s = 0
        for i in T.serial(640):
            s = s * 7 + buf[(tx + i) % 64]
        out[tx] = s
''')
    python, native = _both(monkeypatch, func, np.zeros(64, np.int32))
    assert runs == [True]
    np.testing.assert_array_equal(python[0], native[0])


def test_the_read_log_is_handed_over_at_pauses(monkeypatch, runs):
    """A loop whose reads fill half the log pauses, hands them over and goes on."""
    monkeypatch.setattr(native_loops, "LOG_ENTRIES", 64)
    test_race_free_reads_of_tracked_memory_run_in_c(monkeypatch, runs)


ROWS = '''
@T.prim_func
def rows(out: T.Buffer((4, 64), "int32"), n: T.int32):
    for tx in T.thread_binding(4, "threadIdx.x"):
        for i in T.serial(n):
            out[(tx + i // 64) % 4, i % 64] = tx * i
'''


def test_global_stores_of_several_invocations_run_in_c_under_the_race_checker(monkeypatch,
                                                                                runs):
    """Several invocations writing global memory in C: their writes are logged and handed to
    the race checker; without it, such loops stay in Python (a race would go unseen)."""
    func = vkir.from_script(ROWS)
    python, native = _both(monkeypatch, func, np.zeros((4, 64), np.int32), n=64)
    assert runs == [True]
    np.testing.assert_array_equal(native[0], np.arange(4)[:, None] * np.arange(64))
    np.testing.assert_array_equal(python[0], native[0])
    runs.clear()
    _both(monkeypatch, func, np.zeros((4, 64), np.int32), n=64, check_races=False)
    assert runs == [False]


def test_racy_writes_in_c_are_reported_as_python_reports_them(monkeypatch, runs):
    """Invocations writing one element in C (65 iterations reach the next row) race; the run
    starts again in Python, which reports the race exactly, and the arrays are as it leaves
    them."""
    func = vkir.from_script(ROWS)
    outcomes = []
    for mode in ("0", "1"):
        monkeypatch.setenv("VKIR_NATIVE_LOOPS", mode)
        out = np.zeros((4, 64), np.int32)
        with pytest.raises(DataRaceError) as info:
            interpret(func, out, 65)
        outcomes.append((str(info.value), out))
    assert runs == ["restart"]   # C finished; the race showed when its writes were handed over
    assert outcomes[0][0] == outcomes[1][0]
    np.testing.assert_array_equal(outcomes[0][1], outcomes[1][1])


def test_out_of_bounds_after_global_writes_in_c_is_reported_as_python_reports_it(monkeypatch,
                                                                                   runs):
    func = vkir.from_script('''
@T.prim_func
def overrun(a: T.Buffer((8,), "int32"), out: T.Buffer((4, 8), "int32")):
    for tx in T.thread_binding(4, "threadIdx.x"):
        for i in T.serial(8):
            out[tx, i] = a[i + tx]
''')
    outcomes = []
    for mode in ("0", "1"):
        monkeypatch.setenv("VKIR_NATIVE_LOOPS", mode)
        out = np.zeros((4, 8), np.int32)
        with pytest.raises(OutOfBoundsError) as info:
            interpret(func, np.arange(8, dtype=np.int32), out)
        outcomes.append((str(info.value), out))
    assert runs == ["restart"]   # C stopped at the overrun; the run started again in Python
    assert outcomes[0][0] == outcomes[1][0] and "invocation" in outcomes[0][0]
    np.testing.assert_array_equal(outcomes[0][1], outcomes[1][1])


def test_loops_with_barriers_bit_casts_or_atomics_are_not_translated():
    func = vkir.from_script('''
@T.prim_func
def kinds(a: T.Buffer((64,), "float32"), c: T.Buffer((1,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        for i in T.serial(4):
            T.barrier()
        for j in T.serial(4):
            a[tx] = T.reinterpret(T.reinterpret(a[tx], "int32") + 1, "float32")
        for k in T.serial(4):
            T.atomic_add(c[0], 1)
''')
    loops = [n for n in walk(func.body) if isinstance(n, S.For) and n.kind == "serial"]
    assert len(loops) == 3
    for loop in loops:
        with pytest.raises(NotTranslatable):
            translate(loop)


VECTORS = '''
@T.prim_func
def vectors(a: T.Buffer((64,), "float32x4"), b: T.Buffer((256,), "int32"),
            out: T.Buffer((8,), "float32x4"), idx: T.Buffer((8, 4), "int32")):
    for tx in T.thread_binding(8, "threadIdx.x"):
        acc = T.alloc_buffer((2,), "float32x4", scope="local")
        ids = T.alloc_buffer((4,), "int32", scope="local")
        for i in T.serial(8):
            v = a[tx * 8 + i]
            w = T.shuffle([v, acc[0]], [3, 2, 5, 4])
            acc[0] = T.max(acc[0], v) + w * T.broadcast(T.float32(0.5), 4)
            acc[1] = T.select(v < acc[0], v, acc[1] - v)
            ids[T.ramp(0, 1, 4)] = ids[T.ramp(0, 1, 4)] + b[T.ramp(tx * 32 + i * 4, 1, 4)]
        out[tx] = acc[0] + acc[1]
        idx[tx, T.ramp(0, 1, 4)] = ids[T.ramp(0, 1, 4)] // T.broadcast(3, 4)
'''


def test_vector_loops_are_the_interpreters(monkeypatch, runs):
    """Vectors become one C value per lane: loads and stores of vector elements and vector
    indices, ramps, broadcasts, shuffles, selects and lane-wise arithmetic."""
    func = vkir.from_script(VECTORS)
    a = _edge_values("float32", 256, 5).reshape(64, 4)
    b = _edge_values("int32", 256, 6)
    python, native = _both(monkeypatch, func, a, b, np.zeros((8, 4), np.float32),
                           np.zeros((8, 4), np.int32))
    assert runs == [True]
    assert _same(python[2], native[2]) and _same(python[3], native[3])


def test_without_a_c_compiler_loops_stay_in_python(monkeypatch, runs):
    monkeypatch.delenv("VKIR_NATIVE_LOOPS", raising=False)
    monkeypatch.setattr(native_loops, "c_compiler", lambda: None)
    assert native_loops.mode() == "never"
    func = _recurrence("int32", "x + y", 10000)
    a = np.ones(10000, np.int32)
    out = np.zeros(10000, np.int32)
    interpret(func, a, a.copy(), out)
    assert runs == []
    np.testing.assert_array_equal(out, np.arange(2, 10002))


def test_compiled_loops_are_kept_in_the_cache_directory(monkeypatch, runs, tmp_path):
    func = _recurrence("int32", "x * 3 + y - z // 7", 50)
    monkeypatch.setenv("VKIR_NATIVE_LOOPS", "1")
    interpret(func, np.ones(50, np.int32), np.ones(50, np.int32), np.zeros(50, np.int32))
    assert runs == [True]
    assert list((tmp_path / "native-loops").glob("loop-*.so"))


def test_c_pauses_and_resumes_where_it_stopped(monkeypatch, runs):
    """C hands control back every STEPS iterations and goes on where it stopped: for loops of
    different lengths per invocation and for while loops, the results are unchanged."""
    monkeypatch.setattr(native_loops, "STEPS", 7)
    func = vkir.from_script('''
@T.prim_func
def uneven(n: T.Buffer((16,), "int32"), out: T.Buffer((16, 2), "int32")):
    for tx in T.thread_binding(16, "threadIdx.x"):
        s = 0
        for i in T.serial(n[tx]):
            s = s * 3 + i
        k = 0
        while k < n[tx] * 2:
            k += 1
        out[tx, 0] = s
        out[tx, 1] = k
''')
    n = np.arange(16, dtype=np.int32) * 5
    python, native = _both(monkeypatch, func, n, np.zeros((16, 2), np.int32))
    assert runs.count(True) == 2
    np.testing.assert_array_equal(python[1], native[1])
    np.testing.assert_array_equal(native[1][:, 1], n * 2)


ENDLESS = '''
@T.prim_func
def endless(out: T.Buffer((1,), "int32")):
    k = 0
    while k >= 0:
        k = (k + 1) % 1000
    out[0] = k
'''

ENDLESS_INSIDE = '''
@T.prim_func
def endless_inside(out: T.Buffer((1,), "int32")):
    for i in T.serial(10):
        k = 0
        while k >= 0:
            k = (k + 1) % 1000
        out[0] = k
'''


@pytest.mark.parametrize("source", [ENDLESS, ENDLESS_INSIDE])
def test_an_endless_loop_in_c_still_hears_signals(monkeypatch, runs, source):
    """A kernel whose loop never ends can be interrupted (Ctrl-C, an alarm) in C as in Python:
    C pauses after a budget of iterations of all its loop levels, inner ones included."""
    import signal

    func = vkir.from_script(source)
    monkeypatch.setenv("VKIR_NATIVE_LOOPS", "1")

    class Alarm(Exception):
        pass

    def ring(signum, frame):
        raise Alarm()

    old = signal.signal(signal.SIGALRM, ring)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(Alarm):
            interpret(func, np.zeros(1, np.int32))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    # interrupted inside run, between two calls into C: run never returned
    assert runs == []


# per type: leaves, the forms of a node (over operands {a} and {b}, an int index {i}), operators
_PROGRAM_EXPRESSIONS = {
    "int32": (["3", "-7", "100000"],
              ["a[({i}) % 16]", "sh[({i}) % 8]", "T.min({a}, {b})", "T.truncdiv({a}, {b})",
               "T.truncmod({a}, {b})", "T.cast(g * T.float32(0.5), \"int32\")"],
              ["+", "-", "*", "//", "%", "&", "^"]),
    "float32": (["g", "T.float32(1.5)", "T.float32(-0.0)"],
                ["f[({i}) % 16]", "T.cast({i}, \"float32\")",
                 "T.select({a} < {b}, {a}, T.max({a}, {b}))"],
                ["+", "-", "*", "/"]),
}


@st.composite
def _program_expr(draw, dtype, names, depth=2):
    leaves, forms, operators = _PROGRAM_EXPRESSIONS[dtype]
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from((names if dtype == "int32" else []) + leaves))
    a, b = draw(_program_expr(dtype, names, depth - 1)), draw(_program_expr(dtype, names,
                                                                              depth - 1))
    if draw(st.booleans()):
        i = draw(_program_expr("int32", names, 1))
        return draw(st.sampled_from(forms)).format(a=a, b=b, i=i)
    return f"({a} {draw(st.sampled_from(operators))} {b})"


def _int_expr(names, depth=2):
    return _program_expr("int32", names, depth)


def _float_expr(names, depth=2):
    return _program_expr("float32", names, depth)


@st.composite
def _statements(draw, names, indent, depth, in_loop):
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 6 if depth else 2))
        pad = " " * indent
        if kind == 6:   # a global write: the invocation's own row, or now and then a racy one
            row = draw(st.sampled_from(["tx", "tx", "tx", "(x % 4 + 4) % 4"]))
            lines.append(f"{pad}w[{row}, ({draw(_int_expr(names, 1))}) % 8] = "
                         f"{draw(_int_expr(names))}")
        elif kind == 0:
            lines.append(f"{pad}{draw(st.sampled_from(['x', 'y']))} = {draw(_int_expr(names))}")
        elif kind == 1:
            lines.append(f"{pad}g = {draw(_float_expr(names))}")
        elif kind == 2 and in_loop:
            lines.append(f"{pad}if {draw(_int_expr(names, 1))} > 5:")
            lines.append(f"{pad}    {draw(st.sampled_from(['break', 'continue']))}")
        elif kind in (3, 4):
            var = f"i{depth}"
            extent = draw(st.sampled_from(["6", "y % 7", "x % 5", "tx + 3"]))
            lines.append(f"{pad}for {var} in T.serial({extent}):")
            lines += draw(_statements(names + [var], indent + 4, depth - 1, True))
        elif kind == 5:
            lines.append(f"{pad}if {draw(_int_expr(names, 1))} < {draw(_int_expr(names, 1))}:")
            lines += draw(_statements(names, indent + 4, depth - 1, in_loop))
            lines.append(f"{pad}else:")
            lines += draw(_statements(names, indent + 4, depth - 1, in_loop))
        else:
            lines.append(f"{pad}x = x + 1")
    return lines


@settings(max_examples=int(os.environ.get("NATIVE_EXAMPLES", 30)), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_random_programs_in_c_are_the_interpreters(monkeypatch, tmp_path, data):
    """Random nests of loops, branches, breaks, reads (some out of bounds, some of shared memory
    the race checker tracks) and global writes (some racing) over variables of four
    invocations: the same outputs, or the same error and the same arrays, with every loop in
    C."""
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    body = data.draw(_statements(["x", "y", "tx"], 8, 3, False))
    source = "\n".join([
        "@T.prim_func",
        "def prog(a: T.Buffer((16,), \"int32\"), f: T.Buffer((16,), \"float32\"),",
        "         out: T.Buffer((4,), \"int32\"), fout: T.Buffer((4,), \"float32\"),",
        "         w: T.Buffer((4, 8), \"int32\")):",
        "    for tx in T.thread_binding(4, \"threadIdx.x\"):",
        "        sh = T.alloc_buffer((8,), \"int32\", scope=\"shared\")",
        "        sh[tx * 2] = a[tx] * 5", "        T.barrier()",
        "        x = a[tx]", "        y = tx", "        g = f[tx]",
        *body, "        out[tx] = x + y", "        fout[tx] = g"])
    func = vkir.from_script(source)
    seed = data.draw(st.integers(0, 100))
    a = _edge_values("int32", 16, seed) % 50
    f = _edge_values("float32", 16, seed)
    outcomes = []
    for mode in ("0", "1"):
        monkeypatch.setenv("VKIR_NATIVE_LOOPS", mode)
        out, fout, w = np.zeros(4, np.int32), np.zeros(4, np.float32), np.zeros((4, 8), np.int32)
        try:
            interpret(func, a, f, out, fout, w)
            error = None
        except (OutOfBoundsError, DataRaceError) as err:
            error = f"{type(err).__name__}: {err}"
        outcomes.append((error, out, fout, w))
    (e0, *arrays0), (e1, *arrays1) = outcomes
    assert e0 == e1, source
    assert all(_same(x, y) for x, y in zip(arrays0, arrays1)), source


TILED = '''
@T.prim_func
def tiled(a: T.Buffer((64, 64), "float32"), out: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(16, "threadIdx.x"):
            tile = T.alloc_buffer((16, 64), "float32", scope="shared")
            for j in T.serial(64):
                tile[tx, j] = a[bx * 16 + tx, j]
            T.barrier()
            s = T.float32(0)
            for j in T.serial(64 * 16):
                s = s + tile[(tx + j // 64) % 16, j % 64] * T.float32(0.25)
            out[bx * 16 + tx] = s
'''


@pytest.mark.parametrize("check_races", [True, False])
def test_reads_of_shared_memory_per_workgroup(monkeypatch, runs, check_races):
    """Workgroups interpreted together read their own row of shared memory in C too; with races
    checked, C logs those reads and hands them to the race checker."""
    func = vkir.from_script(TILED)
    a = _edge_values("float32", 64 * 64, 9).reshape(64, 64)
    python, native = _both(monkeypatch, func, a, np.zeros(64, np.float32),
                           check_races=check_races)
    assert _same(python[1], native[1])
    assert True in runs


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_floor_division_of_every_pair_of_special_values(monkeypatch, runs, dtype):
    """numpy's floor division and remainder of floats (signed zeros, infinities, NaN, tiny and
    huge operands) hold in C for every pair."""
    with np.errstate(over="ignore"):
        special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.25, -7.25, 1e-40, 6e-8,
                            1e30, -1e30, np.inf, -np.inf, np.nan], np.float64).astype(dtype)
    a = np.repeat(special, len(special))
    b = np.tile(special, len(special))
    n = len(a)
    func = vkir.from_script(f'''
@T.prim_func
def floors(a: T.Buffer(({n},), "{dtype}"), b: T.Buffer(({n},), "{dtype}"),
           q: T.Buffer(({n},), "{dtype}"), r: T.Buffer(({n},), "{dtype}")):
    for i in T.serial({n}):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
''')
    python, native = _both(monkeypatch, func, a, b, np.zeros(n, dtype), np.zeros(n, dtype))
    assert runs == [True]
    assert _same(python[2], native[2]) and _same(python[3], native[3])
    with np.errstate(all="ignore"):
        assert _same(native[2], a // b) and _same(native[3], a % b)
