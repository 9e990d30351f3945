"""One semantics, checked before anything runs: bounded constant folding in scripts, constant shift
amounts and constant indices refused by the type checker (so interpret and build agree), the
interpreter type-checks first, and its OutOfBoundsError names buffer, index, invocation and line.
"""

from __future__ import annotations

import signal
from dataclasses import replace

import numpy as np
import pytest

import vkir
from vkir.testing import interpret_lowered
from vkir import T
from vkir.analysis import verify_types
from vkir.interpreter import evaluate
from vkir.ir import Add, Broadcast, BufferLoad, Call, DataType, Var


def _script(body: str, params: str = 'A: T.Buffer((16,), "int32")'):
    return vkir.from_script(f"@T.prim_func\ndef f({params}):\n" + body)


# -- constant folding in the parser ---------------------------------------------------------------


@pytest.fixture
def alarm():
    """Fail instead of hanging: a 10 s alarm around the test."""
    def timeout(*_):
        raise AssertionError("the parser took more than 10 s")

    old = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("expr, shown", [
    ("T.int64(2**31**3)", "2**29791"),
    ("T.int64(9**9**9)", "9**387420489"),
    ("2**31**63", f"2**{31**63}"),
    ("(-3)**100000", "-3**100000"),
])
def test_huge_powers_are_located_script_errors(alarm, expr, shown):
    with pytest.raises(vkir.ScriptError) as info:
        _script(f"    A[0] = {expr}\n", 'A: T.Buffer((16,), "int64")')
    message = str(info.value)
    assert f"constant {shown} has more than 2048 bits" in message
    assert ":3:" in message and "^" in message  # file:line:col and a caret under the power


def test_powers_that_fit_still_fold():
    f = _script("    A[0] = T.int64(2**62) + T.int64(-(2**63))\n", 'A: T.Buffer((16,), "int64")')
    a = np.zeros(16, np.int64)
    vkir.interpret(f, a)
    assert a[0] == 2**62 - 2**63


def test_wide_python_constants_are_described_not_printed(alarm):
    with pytest.raises(vkir.ScriptError, match=r"integer literal <an integer of 16610 bits> is "
                                               r"out of range for int32"):
        vkir.from_script("@T.prim_func\ndef f(A: T.Buffer((16,), \"int32\")):\n"
                         "    A[0] = BIG\n", env={"BIG": 10**5000})


# -- shifts ---------------------------------------------------------------------------------------


INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_interpreter_takes_shift_amounts_modulo_the_width(dtype):
    dt = DataType.parse(dtype)
    x, s = Var("x", dt), Var("s", dt)
    npdt = dt.numpy_dtype()
    for amount in range(-1, 71):
        amt = npdt.type(np.array(amount).astype(npdt))  # -1 wraps for unsigned types
        k = int(amt) % dt.bits
        for value in (1, 5, -7, 0x5A, -128):
            v = npdt.type(np.array(value).astype(npdt))
            left = evaluate(Call(dt, "shift_left", (x, s)), {x: v, s: amt})
            right = evaluate(Call(dt, "shift_right", (x, s)), {x: v, s: amt})
            wrapped = (int(v) << k) & ((1 << dt.bits) - 1)
            if dt.is_int and wrapped >= 1 << (dt.bits - 1):
                wrapped -= 1 << dt.bits
            assert left == wrapped, (dtype, value, amount)
            assert right == int(v) >> k, (dtype, value, amount)  # arithmetic for signed


@pytest.mark.parametrize("amount", [-1, 32, 33, 64])
def test_constant_shift_amount_out_of_range_is_refused(amount):
    f = _script(f"    A[0] = A[1] << {amount}\n")
    with pytest.raises(vkir.TypeCheckError, match=rf"constant shift amount {amount} is outside "
                                                  r"\[0, 32\).*<script>:3"):
        verify_types(f)
    with pytest.raises(vkir.TypeCheckError):
        vkir.interpret(f, np.zeros(16, np.int32))
    with pytest.raises(vkir.TypeCheckError):
        vkir.lower(f)


def test_constant_vector_shift_amounts_are_checked_per_lane():
    ok = _script("    A[T.ramp(0, 1, 4)] = A[T.ramp(4, 1, 4)] >> T.broadcast(31, 4)\n")
    verify_types(ok)
    bad = _script("    A[T.ramp(0, 1, 4)] = A[T.ramp(4, 1, 4)] >> T.broadcast(32, 4)\n")
    with pytest.raises(vkir.TypeCheckError, match="constant shift amount 32"):
        verify_types(bad)


# -- constant indices -----------------------------------------------------------------------------


@pytest.mark.parametrize("store, index", [("A[-1] = 1", -1), ("A[16] = 1", 16),
                                          ("A[0] = A[16]", 16), ("A[T.ramp(13, 1, 4)] = "
                                                                 "T.broadcast(1, 4)", 16)])
def test_constant_index_outside_constant_shape_is_refused(store, index):
    f = _script(f"    {store}\n")
    pattern = rf"constant index {index} is outside dim 0 of buffer A \(shape \(16,\)\).*<script>:3"
    with pytest.raises(vkir.TypeCheckError, match=pattern):
        vkir.interpret(f, np.zeros(16, np.int32))
    with pytest.raises(vkir.TypeCheckError, match=pattern):
        vkir.lower(f)


def test_constant_index_in_a_symbolic_dim_is_left_to_run_time():
    f = _script("    A[20] = 1\n", 'A: T.Buffer(("n",), "int32")')
    verify_types(f)
    vkir.interpret(f, np.zeros(21, np.int32))
    with pytest.raises(vkir.OutOfBoundsError, match="index 20"):
        vkir.interpret(f, np.zeros(20, np.int32))


# -- the interpreter type-checks first --------------------------------------------------------------


def test_interpreter_refuses_ill_typed_programs_like_build():
    f = vkir.from_script('''
@T.prim_func
def f(a: T.Buffer((4,), "int32"), b: T.Buffer((4,), "float32"), c: T.Buffer((4,), "float32")):
    for i in T.serial(4):
        c[i] = b[i]
''')
    loop, a_buf = f.body, f.buffer_map[f.params[0]]
    store = loop.body
    mixed = replace(store, value=Add(BufferLoad(a_buf, store.indices), store.value))  # i32 + f32
    vector = replace(store, value=Broadcast(store.value, 4))  # float32x4 into a float32 element
    args = (np.zeros(4, np.int32), np.zeros(4, np.float32), np.zeros(4, np.float32))
    for body, rule in ((mixed, "rule 3"), (vector, "rule 1")):
        bad = replace(f, body=replace(loop, body=body))
        with pytest.raises(vkir.TypeCheckError, match=rule):
            vkir.interpret(bad, *args)
        with pytest.raises(vkir.TypeCheckError, match=rule):
            vkir.lower(bad)


# -- OutOfBoundsError ------------------------------------------------------------------------------


def test_out_of_bounds_error_names_buffer_index_invocation_and_line():
    f = vkir.from_script('''
@T.prim_func
def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            B[bx * 32 + tx] = A[bx * 32 + tx + 1]
''')
    with pytest.raises(vkir.OutOfBoundsError) as info:
        vkir.interpret(f, np.zeros(64, np.float32), np.zeros(64, np.float32))
    err = info.value
    assert (err.buffer, err.index) == ("A", 64)
    assert err.invocation == {"blockIdx.x": 1, "threadIdx.x": 31}
    assert err.location == "<script>:6:31"
    assert str(err).startswith("buffer A: index 64 is out of bounds for dim 0 of extent 64, in "
                               "invocation (blockIdx.x=1, threadIdx.x=31) at <script>:6:31")
    assert "A[bx * 32 + tx + 1]" in str(err)
    assert vkir.OutOfBoundsError is vkir.interpreter.OutOfBoundsError
    assert isinstance(err, IndexError) and isinstance(err, vkir.VkirError)


def test_out_of_bounds_store_of_a_vector_names_the_invocation():
    f = vkir.from_script('''
@T.prim_func
def f(A: T.Buffer((32,), "float32")):
    for tx in T.thread_binding(8, thread="threadIdx.x"):
        A[T.ramp(tx * 4 + 1, 1, 4)] = T.broadcast(T.float32(1.0), 4)
''')
    with pytest.raises(vkir.OutOfBoundsError) as info:
        vkir.interpret(f, np.zeros(32, np.float32))
    assert info.value.invocation == {"threadIdx.x": 7} and info.value.index == 32
    assert info.value.location == "<script>:5:9"


def test_duplicate_parameters_are_a_script_error():
    """Found by the fuzzing campaign: the interpreter ran `def f(A, A)`, build refused it."""
    with pytest.raises(vkir.ScriptError, match=r"<script>:2:35: duplicate parameter 'A'"):
        vkir.from_script('@T.prim_func\ndef f(A: T.Buffer((4,), "int32"), A: T.Buffer((4,), "int32")):\n'
                         '    A[0] = 1\n')


def test_negative_constant_thread_extent_is_refused_before_running():
    """Found by the fuzzing campaign: the interpreter ran zero workgroups, the device call
    refused the launch; both now refuse at check time."""
    f = _script('    for bx in T.thread_binding(-129, thread="blockIdx.x"):\n        A[0] = 1\n')
    with pytest.raises(vkir.TypeCheckError, match=r"constant extent -129 of blockIdx.x is negative"):
        vkir.interpret(f, np.zeros(16, np.int32))
    with pytest.raises(vkir.TypeCheckError, match="is negative"):
        vkir.lower(f)


def test_folded_shift_amounts_are_taken_modulo_the_width():
    """Found by the fuzzing campaign: Simplify folded `x << (t - 149)` (t = 0) to a constant
    amount of 107 on uint8, which the checker then refused after lowering."""
    f = vkir.from_script('''
@T.prim_func
def f(A: T.Buffer((4,), "uint8")):
    for tx in T.thread_binding(1, thread="threadIdx.x"):
        A[0] = A[1] << (T.cast(tx, "uint8") - T.uint8(149))
''')
    lowered = vkir.lower(f)
    a, b = np.array([0, 5, 0, 0], np.uint8), np.array([0, 5, 0, 0], np.uint8)
    vkir.interpret(f, a)
    interpret_lowered(lowered, b)  # uint8 as words where EmulateInt8 ran
    assert a[0] == b[0] == np.uint8(5 << (107 % 8))
