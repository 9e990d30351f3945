"""vkir.binding: one set of argument rules for the interpreter and compiled kernels, keyword
arguments by parameter name, and ArgumentError as the TypeError/ValueError Python users expect."""

import numpy as np
import pytest

import vkir
from vkir.binding import Signature, scalar_value
from vkir.tools.demo import vadd
from vkir.interpreter import evaluate
from vkir import ir
from vkir.ir import DataType

SCALED = vkir.from_script('''
def scaled(c: T.int32, A: T.Buffer((c * 2,), "float32"), B: T.Buffer(("m",), "float32"),
           x: T.float32):
    for i in T.serial(T.min(c * 2, m)):
        B[i] = A[i] * x
''')


def _vadd_args(n=8):
    a = np.arange(n, dtype=np.float32)
    return a, a * 2, np.zeros(n, np.float32)


def test_argument_error_is_a_type_error_and_a_value_error():
    assert issubclass(vkir.ArgumentError, vkir.VkirError)
    assert issubclass(vkir.ArgumentError, TypeError)
    assert issubclass(vkir.ArgumentError, ValueError)
    with pytest.raises(TypeError):
        vkir.interpret(vadd, *_vadd_args()[:2])


def test_interpret_binds_keyword_arguments_by_parameter_name():
    a, b, c = _vadd_args()
    vkir.interpret(vadd, c=c, a=a, b=b)
    np.testing.assert_array_equal(c, a + b)
    c2 = np.zeros_like(c)
    vkir.interpret(vadd, a, b=b, c=c2)
    np.testing.assert_array_equal(c2, a + b)


@pytest.mark.parametrize("args, kwargs, message", [
    ((), {"a": 0, "b": 0, "c": 0, "d": 0}, "vadd has no parameter named 'd' (parameters: a, b, c)"),
    (("a",), {"a": 0, "b": 0, "c": 0}, "parameter 'a' is given twice"),
    (("a",), {"c": 0}, "missing argument(s) for 'b' (parameters: a, b, c)"),
    ((), {"c": 0}, "missing argument(s) for 'a', 'b'"),
    (("a", "b", "c", "a"), {"c": 0}, "takes 3 arguments, got 4 by position"),
])
def test_keyword_mistakes_name_the_parameters(args, kwargs, message):
    a, b, c = _vadd_args()
    real = {"a": a, "b": b, "c": c}
    args = tuple(real[x] for x in args)
    kwargs = {k: (real[k] if k in real else c) for k in kwargs}
    with pytest.raises(vkir.ArgumentError) as info:
        vkir.interpret(vadd, *args, **kwargs)
    assert message in str(info.value)
    assert not c.any()


def test_one_rule_set_for_interpreter_and_kernel_messages():
    """The same mistake gets the same message from both callers, only the prefix differs."""
    interp = Signature(SCALED, evaluate, exact=False)
    kernel = Signature(SCALED, evaluate, where="kernel scaled")
    bad = (3, np.zeros(4, np.float32), np.zeros(2, np.float32), 1.0)
    for sig, prefix in ((interp, "scaled"), (kernel, "kernel scaled")):
        with pytest.raises(vkir.ArgumentError) as info:
            sig.bind(bad)
        assert str(info.value) == (f"{prefix}: argument 'A' has size 4 in dim 0, "
                                   "expected c * 2 = 6")
    bound = kernel.bind((), {"x": 0.5, "B": np.zeros(2, np.float32), "c": 2,
                             "A": np.zeros(4, np.float32)})
    assert bound.env(kernel) == {kernel.env_vars[0]: 2, kernel.env_vars[1]: 2,
                                 kernel.env_vars[2]: 0.5}
    assert [v.name for v in kernel.env_vars] == ["m", "c", "x"]


def test_a_scalar_that_sizes_an_earlier_buffer_is_checked_against_it():
    """A size named by a later scalar parameter is that scalar, not whatever the array says."""
    c = ir.Var("c")
    A = ir.decl_buffer((c,), "float32", "A")
    i = ir.Var("i")
    body = ir.For(i, 0, c, "serial", ir.BufferStore(A, ir.const(1.0, "float32"), (i,)))
    f = ir.PrimFunc((A.data, c), body, {A.data: A})
    a = np.zeros(4, np.float32)
    with pytest.raises(vkir.ArgumentError, match="argument 'A' dim 0 = 4 but c = 5"):
        vkir.interpret(f, a, 5)
    assert not a.any()
    vkir.interpret(f, a, c=4)
    np.testing.assert_array_equal(a, 1)


def test_a_size_named_only_inside_shape_expressions_is_an_argument_error():
    """A size no argument shape names on its own (EmulateInt8's word buffer of (n + 3) // 4
    words) is reported as unbound before any shape expression is evaluated with it (found by the
    property suite: the interpreter said "variable n is used outside its scope")."""
    n = ir.Var("n")
    A = ir.decl_buffer(((n + 3) // 4,), "uint32", "A")
    f = ir.PrimFunc((A.data,), ir.Evaluate(ir.const(0, "int32")), {A.data: A},
                    {"global_symbol": "words"})   # the parser refuses it; EmulateInt8 makes it
    with pytest.raises(vkir.ArgumentError, match="^words: symbolic size n is not bound by any "
                                                 "argument shape$"):
        vkir.interpret(f, np.zeros(1, np.uint32))


@pytest.mark.parametrize("value, dtype, message", [
    (1.0, "int32", "is int32, got the non-integer 1.0"),
    (2**31, "int32", "= 2147483648 does not fit in int32"),
    (-1, "uint8", "= -1 does not fit in uint8"),
    (True, "int32", "is int32, got True"),
    (1, "bool", "is bool, got 1"),
    ("1", "float32", "is float32, got '1'"),
    (1j, "float32", "is float32, got 1j"),
    (7e4, "float16", "= 70000.0 is out of range for float16"),
])
def test_scalar_rules(value, dtype, message):
    with pytest.raises(vkir.ArgumentError, match="^x " + message.replace("(", r"\(")):
        scalar_value(value, DataType.parse(dtype), "x")


def test_scalar_values_are_python_numbers():
    assert scalar_value(np.int8(-3), DataType.parse("int32"), "x") == -3
    assert type(scalar_value(np.uint16(7), DataType.parse("int32"), "x")) is int
    assert type(scalar_value(3, DataType.parse("float32"), "x")) is float
    assert np.isnan(scalar_value(float("nan"), DataType.parse("float16"), "x"))
    assert scalar_value(np.bool_(True), DataType.parse("bool"), "x") is True


@pytest.mark.device
def test_kernel_binds_keyword_arguments(device):
    k = vkir.build(vadd, device=device)
    a, b, c = _vadd_args(100)
    k(a, c=c, b=b)
    np.testing.assert_array_equal(c, a + b)
    A, B = vkir.array(a, device=device), vkir.array(b, device=device)
    C = vkir.empty(100, "float32", device=device)
    k(A, B, c=C)
    k(A, B, c=C)          # the memoized launch of the same device arrays
    np.testing.assert_array_equal(C.numpy(), a + b)
    with pytest.raises(vkir.ArgumentError, match="kernel vadd has no parameter named 'out'"):
        k(A, B, out=C)
    with pytest.raises(TypeError, match="parameter 'a' is given twice"):
        k(A, B, C, a=A)
    p = k.profile(a=A, b=B, c=C, repeat=2)
    assert p.n == 2
