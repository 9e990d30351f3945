"""User-facing errors show IR in script syntax (`n * 4`, `A[i + 1]`), never Python reprs such as
`Var('n', 'int32')`, `Mul(a=...)`, `IntImm(dtype=DataType('int32'), value=4)`.

One representative error per kind: each message must contain the script form of the IR it is
about and none of the repr markers.
"""

from __future__ import annotations

import numpy as np
import pytest

import vkir
from vkir import ir
from vkir.analysis import verify_types, verify_well_formed
from vkir.ir import (Add, BufferLoad, BufferStore, For, IntImm, PrimFunc, Var, decl_buffer,
                     show)
from vkir.schedule import fuse_reduction_epilogue
from vkir.spirv import codegen
from vkir.transform import VectorizeLoop

REPR_MARKERS = ("Var(", "IntImm(", "DataType(", "Add(", "Mul(", "BufferLoad(", "Buffer(")

n, i = Var("n"), Var("i")
A = decl_buffer((n,), "int32", "A")
F = decl_buffer((n,), "float32", "F")


def _func(body, *buffers):
    return PrimFunc(tuple(b.data for b in buffers), body, {b.data: b for b in buffers})


def _message(exc_type, fn) -> str:
    with pytest.raises(exc_type) as info:
        fn()
    return str(info.value)


def _assert_script_only(message: str, *script_forms: str) -> None:
    for marker in REPR_MARKERS:
        assert marker not in message, message
    for form in script_forms:
        assert form in message, message


def test_nodes_print_as_script_and_repr_stays_a_dataclass():
    e = n * 4 + IntImm(n.dtype, 3)
    assert str(e) == f"{e}" == show(e) == "n * 4 + 3"
    assert repr(e).startswith("Add(a=Mul(a=Var('n', 'int32')")
    store = BufferStore(A, e, (i,))
    assert str(store) == "A[i] = n * 4 + 3"
    assert show((n, IntImm(n.dtype, 4))) == "(n, 4)"
    assert show([A, ir.DataType.parse("float32x4")]) == "[A, float32x4]"


def test_type_check_error():
    bad = _func(BufferStore(A, Add(BufferLoad(A, (i,)), BufferLoad(F, (i,))), (n * 4,)), A, F)
    _assert_script_only(_message(vkir.TypeCheckError, lambda: verify_types(bad)),
                        "A[i] + F[i]", "int32 vs float32")


def test_well_formed_error():
    bad = _func(BufferStore(A, i * 4, (i + 1,)), A)
    _assert_script_only(_message(vkir.WellFormedError, lambda: verify_well_formed(bad)),
                        "variable i", "A[", "i * 4")


def test_transform_error_from_vectorize_loop():
    f = _func(For(i, 0, n * 4, "vectorized", BufferStore(A, i, (i,))), A)
    _assert_script_only(_message(vkir.TransformError, lambda: VectorizeLoop()(f)),
                        "the extent n * 4 is not a constant")


_TRANSPOSED = '''
@T.prim_func
def f(A: T.Buffer((4, 3), "float32"), B: T.Buffer((3, 4), "float32"),
      D: T.Buffer((4, 4), "float32")):
    temp = T.alloc_buffer((4, 4), "float32")
    for i, j in T.grid(4, 4):
        temp[i, j] = T.float32(0)
        for k in T.serial(3):
            temp[i, j] = temp[i, j] + A[i, k] * B[k, j]
    for i, j in T.grid(4, 4):
        D[i, j] = T.max(temp[j, i], T.float32(0))
'''


def test_schedule_error():
    f = vkir.from_script(_TRANSPOSED)
    _assert_script_only(_message(vkir.ScheduleError, lambda: fuse_reduction_epilogue(f, "temp")),
                        "`temp[j, i]`", "`temp[i, j]`")


def test_unsupported_error_for_a_symbolic_thread_extent():
    f = _func(For(i, 0, n * 4, "thread_binding", BufferStore(A, i, (i,)), thread="threadIdx.x"),
              A)
    _assert_script_only(_message(vkir.UnsupportedError, lambda: codegen(f)),
                        "threadIdx.x extent n * 4")


def test_unsupported_error_for_a_non_constant_local_buffer():
    local = decl_buffer((n * 2,), "int32", "L", scope="local")
    f = _func(ir.AllocBuffer(local, BufferStore(local, 0, (0,))), A)
    with pytest.raises(vkir.VkirError) as info:
        codegen(f)
    _assert_script_only(str(info.value), "non-constant shape (n * 2,)")


def test_argument_error_for_a_size_mismatch(device):
    k = vkir.build(vkir.from_script('''
def g(c: T.int32, A: T.Buffer((c * 2,), "float32"), B: T.Buffer(("m",), "float32")):
    for i in T.serial(T.min(c * 2, m)):
        B[i] = A[i]
'''), device=device)
    message = _message(vkir.ArgumentError,
                       lambda: k(3, np.zeros(4, np.float32), np.zeros(2, np.float32)))
    _assert_script_only(message, "expected c * 2 = 6")


def test_interpreter_evaluate_names_a_bad_key_in_script():
    from vkir.interpreter import evaluate

    message = _message(vkir.VkirError, lambda: evaluate(n + 1, {n: 1, n + 1: 3}))
    _assert_script_only(message, "environment key n + 1 is not a value variable")


@pytest.mark.device
def test_the_first_mistakes_say_how_to_fix_them_without_internal_frames():
    import traceback

    import numpy as np

    import vkir
    from vkir.errors import ArgumentError, TypeCheckError

    f = vkir.from_script('''
@T.prim_func
def f(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "int32")):
    for i in T.serial(4):
        b[i] = a[i]
''')
    with pytest.raises(ArgumentError, match=r"vkir.build\(f\)\(...\) on the device, or "
                                            r"vkir.interpret\(f, ...\) in the interpreter"):
        f(np.zeros(4, np.float32), np.zeros(4, np.int32))
    for run in (lambda: vkir.build(f),
                lambda: vkir.interpret(f, np.zeros(4, np.float32), np.zeros(4, np.int32))):
        with pytest.raises(TypeCheckError, match=r"at <script>:5") as info:
            run()
        frames = traceback.extract_tb(info.value.__traceback__)
        assert not any("/analysis/" in frame.filename for frame in frames), frames
