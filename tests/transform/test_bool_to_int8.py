"""BoolToInt8: bool buffers (parameters, allocations, vector accesses) are stored as int8 with an
explicit Cast at every load and store; parameters get new int8 data vars in params and
buffer_map. Outputs pass the checker and match the interpreter, with the numpy bool argument
passed to the converted function as its int8 bytes."""

import numpy as np

import vkir
from vkir import T
from vkir.ir import PointerType
from vkir.testing import check_pass, random_arguments
from vkir.transform import BoolToInt8


def _run_both(before, after, seeds=range(3)):
    """The bool function on bool arrays and the int8 one on their int8 views agree."""
    for seed in seeds:
        want = random_arguments(before, seed)
        got = [a.copy() for a in want]
        vkir.interpret(before, *want)
        vkir.interpret(after, *[a.view(np.int8) if a.dtype == np.bool_ else a for a in got])
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g, w)


def _check(before, expected):
    after = check_pass(BoolToInt8(), before, expected)
    _run_both(before, after)
    return after


def test_parameter_buffers():
    @T.prim_func
    def before(M: T.Buffer((16,), "bool"), X: T.Buffer((16,), "float32")):
        for i in T.serial(16):
            if M[i]:
                X[i] = X[i] * 2.0
            M[i] = not M[i]
            M[15 - i] = X[i] > 0.0 and M[15 - i]

    @T.prim_func
    def expected(M: T.Buffer((16,), "int8"), X: T.Buffer((16,), "float32")):
        for i in T.serial(16):
            if T.cast(M[i], "bool"):
                X[i] = X[i] * 2.0
            M[i] = T.cast(not T.cast(M[i], "bool"), "int8")
            M[15 - i] = T.cast(X[i] > 0.0 and T.cast(M[15 - i], "bool"), "int8")

    after = _check(before, expected)
    assert after.params[1] is before.params[1]
    assert after.buffer_map[after.params[1]] is before.buffer_map[before.params[1]]
    assert after.params[0] is not before.params[0]
    assert after.params[0].dtype == PointerType("int8", "global")
    assert after.buffer_map[after.params[0]].data is after.params[0]


def test_vector_accesses_and_allocations():
    @T.prim_func
    def before(M: T.Buffer((8,), "bool"), X: T.Buffer((8,), "float32")):
        for o in T.serial(2):
            L = T.alloc_buffer((4,), "bool", scope="local")
            L[T.ramp(0, 1, 4)] = M[T.ramp(o * 4, 1, 4)]
            M[T.ramp(o * 4, 1, 4)] = L[T.ramp(0, 1, 4)]
            X[o] = T.select(L[o], X[o], 1.0)

    @T.prim_func
    def expected(M: T.Buffer((8,), "int8"), X: T.Buffer((8,), "float32")):
        for o in T.serial(2):
            L = T.alloc_buffer((4,), "int8", scope="local")
            L[T.ramp(0, 1, 4)] = T.cast(T.cast(M[T.ramp(o * 4, 1, 4)], "boolx4"), "int8x4")
            M[T.ramp(o * 4, 1, 4)] = T.cast(T.cast(L[T.ramp(0, 1, 4)], "boolx4"), "int8x4")
            X[o] = T.select(T.cast(L[o], "bool"), X[o], 1.0)

    _check(before, expected)


def test_declared_alias_follows_the_new_data_var():
    @T.prim_func
    def before(M: T.Buffer((8,), "bool")):
        M2 = T.decl_buffer((2, 4), "bool", data=M.data)
        for i in T.serial(4):
            M2[1, i] = M2[0, i]

    @T.prim_func
    def expected(M: T.Buffer((8,), "int8")):
        M2 = T.decl_buffer((2, 4), "int8", data=M.data)
        for i in T.serial(4):
            M2[1, i] = T.cast(T.cast(M2[0, i], "bool"), "int8")

    _check(before, expected)


def test_function_without_bool_buffers_is_unchanged():
    @T.prim_func
    def f(X: T.Buffer((8,), "float32")):
        for i in T.serial(8):
            X[i] = X[i] + 1.0

    assert BoolToInt8()(f) is f
