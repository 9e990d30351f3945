"""ScriptError: file:line:col, the offending source line, a caret under the column, a message."""

import inspect
import re

import pytest

import vkir
from vkir import T
from vkir.errors import ScriptError


def error_of(text):
    with pytest.raises(ScriptError) as info:
        vkir.from_script(text)
    return info.value


def check(text, line, col, message):
    """The error is at `line`:`col` (1-based, in `text`), shows that line and a caret under
    `col`, and its message matches `message`."""
    err = error_of(text)
    msg = str(err)
    head, src, caret = msg.splitlines()[:3]
    assert re.match(rf"<script>:{line}:{col}: ", head), msg
    assert re.search(message, head), msg
    assert src.strip() == text.splitlines()[line - 1].strip(), msg
    # the caret sits under column `col` of the source line as displayed
    src_line = text.splitlines()[line - 1]
    assert caret.index("^") - 4 == col - 1, msg
    assert src[4:] == src_line
    assert (err.line, err.col) == (line, col)
    return err


CASES = [
    # (script, line, col, message)
    ('''
def f(A: T.Buffer((4,), "float32")):
    for i in T.serial(4):
        A[i] = B[i]
''', 4, 16, r"unknown name 'B'"),
    ('''
def f(A: T.Buffer((4,), "float32")):
    for i in T.serial(4):
        i = 2
''', 4, 9, r"name 'i' is already bound \(at line 3\)"),
    ('''
def f(A: T.Buffer((4,), "float32")):
    for i in T.serial(4):
        for i in T.serial(2):
            A[i] = 0.0
''', 4, 13, r"name 'i' is already bound"),
    ('''
def f(A: T.Buffer((4,), "float32"), n: T.int32):
    n = 1
''', 3, 5, r"name 'n' is already bound"),
    ('''
def f(A: T.Buffer((4,), "float32")):
    A[0] = T.exp(A[0], A[1])
''', 3, 12, r"T\.exp: takes 1 argument, got 2"),
    ('''
def f(A: T.Buffer((4,), "float32")):
    A[0] = T.cast(A[0])
''', 3, 12, r"T\.cast: missing a required argument: 'dtype'"),
    ('''
def f(A: T.Buffer((4,), "float31")):
    A[0] = 1.0
''', 2, 25, r"invalid dtype 'float31'"),
    ('''
def f(A: T.Buffer((4,), "float32")):
    A[0] = T.cast(A[1], "int7")
''', 3, 25, r"T\.cast: invalid dtype 'int7'"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    A[0] = A[1] + 1.5
''', 3, 19, r"float literal 1\.5 used where a value of type int32 is expected"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    A[0] = 2.5
''', 3, 12, r"float literal 2\.5 used where a value of type int32"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    for i in T.serial(4):
        if 0 < i < 3:
            A[i] = 0
''', 4, 20, r"chained comparisons are not supported"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    while True:
        A[0] = 1
''', 3, 11, r"this loop never ends"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    for i in range(4):
        A[i] = 1
''', 3, 14, r"loops must iterate over T\.serial"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    for i in T.thread_binding(4, "threadIdx.w"):
        A[i] = 1
''', 3, 34, r"unknown thread tag 'threadIdx\.w'"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    A[0] + 1
''', 3, 5, r"an expression is not a statement"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    A[0] = T.foo(1)
''', 3, 12, r"unknown function 'T\.foo'"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    A[0] = T.serial(4)
''', 3, 12, r"T\.serial is a statement, not an expression"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    A[0] = "x"
''', 3, 12, r"expected an expression, got the string 'x'"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    A[0] = A[1] if True else 2
''', 3, 12, r"conditional expressions are not supported"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    A[0:2] = 1
''', 3, 7, r"slices are not supported"),
    ('''
def f(A: T.Buffer((4,), "int32"), n: T.int32):
    n[0] = 1
''', 3, 5, r"only buffers can be stored to"),
    ('''
def f(A: T.Buffer((4,), "int32"), n: T.int32):
    A[0] = n[0]
''', 3, 12, r"only buffers can be indexed"),
    ('''
def f(A: T.Buffer((4,), "int32"), n):
    A[0] = 1
''', 2, 35, r"parameter 'n' needs a type annotation"),
    ('''
def f(A: T.Buffer((4,), "int32"), n: int):
    A[0] = 1
''', 2, 38, r"parameter 'n': expected T\.Buffer"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    S = T.alloc_buffer((4,), "int32", scope="texture")
''', 3, 45, r"storage scope must be one of global, shared, local"),
    ('''
def f(A: T.Buffer((4,), "int32"), n: T.int32):
    B = T.decl_buffer((4,), "int32", data=n)
''', 3, 43, r"data= must be a buffer's data"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    B = A
''', 3, 9, r"cannot bind a buffer to a new name"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    for i, j in T.grid(4):
        A[i] = 1
''', 3, 9, r"T\.grid has 1 extents but 2 loop variables"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    A[0] = 1
    T.func_attr({"a": 1})
''', 4, 5, r"T\.func_attr must come first"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    A[0] = T.let(x, 1)
''', 3, 12, r"T\.let takes \(name := value, body\)"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    A[0] = A[1] ** 2
''', 3, 12, r"'\*\*' is not supported; use T\.pow"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    A[0] = 2147483648
''', 3, 12, r"integer literal 2147483648 is out of range for int32"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    with T.async_commit_queue(A[0]):
        A[0] = 1
''', 3, 31, r"the queue index must be an integer literal"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    x += 1
''', 3, 5, r"can only update a buffer element"),
    ('''
def f(A: T.Buffer((4,), "float32")):
    A[0] = T.float32(A[1])
''', 3, 22, r"T\.float32: expected a literal; to convert an expression write T\.cast"),
    ('''
def f(A: T.Buffer((4,), "float32")):
    A[0] = T.ramp(0, 1, A[0])
''', 3, 25, r"lanes must be a Python integer literal"),
    ('''
def f(A: T.Buffer((4,), "float32")):
    A[0] = A[1] + [1, 2]
''', 3, 19, r"expected an expression, got \[1, 2\]"),
    ('''
def f(A: T.Buffer(("n",), "float32")):
    A[0] = "n"
''', 3, 12, r"expected an expression, got the string 'n'"),
    ('''
def f(A: T.Buffer((4,), "int32")):
    A[0] = = 1
''', 3, 12, r"syntax error"),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_script_error_location_and_message(case):
    text, line, col, message = CASES[case]
    check(text, line, col, message)


def test_error_in_decorated_function_points_into_this_file():
    first = inspect.currentframe().f_lineno
    with pytest.raises(ScriptError) as info:
        @T.prim_func
        def bad(A: T.Buffer((4,), "float32")):
            for i in T.serial(4):
                A[i] = A[i] + undefined_name  # noqa: F821
    err = info.value
    assert err.file == __file__
    assert err.line == first + 5
    lines = str(err).splitlines()
    assert lines[0] == f"{__file__}:{first + 5}:31: unknown name 'undefined_name'"
    assert lines[1].strip() == "A[i] = A[i] + undefined_name  # noqa: F821"
    assert lines[2].index("^") == lines[1].index("undefined_name")


def test_error_is_a_vkir_error():
    err = error_of('''
def f(A: T.Buffer((4,), "int32")):
    A[0] = B
''')
    assert isinstance(err, vkir.VkirError)
    assert err.reason == "unknown name 'B'"


def test_from_script_needs_one_function():
    err = error_of('''
x = 1
''')
    assert "expected exactly one function definition" in str(err)


# ---------------------------------------------------------------------------------------------
# robustness: a mangled script parses or raises ScriptError, never another exception

from hypothesis import given, settings, strategies as st  # noqa: E402

from test_script_roundtrip import SCRIPTS  # noqa: E402

_FRAGMENTS = ["T.serial(4)", "A", "A.data", "n", "1.5", "-1", "T.int64(3)", "(", ")", "[", "]",
              ",", ":", "=", "+", " and ", " not ", "T.let", ":=", "x", '"n"', "T.ramp(0, 1, 4)",
              "T.exp", "T.cast", '"float32x4"', "True", "None", "lambda: 1", "{}", "...", "**",
              "T.grid(2, 3)", "T.decl_buffer", "data=", "T.float32", "T", "[0]", ".", "if", "else",
              "yield 1", "A[()]", "T.shuffle", "[1, 2]", '""', "1j", 'f"{n}"', "T.call", "span=1",
              'T.thread_binding(4, "threadIdx.x")', "T.max(", "T.broadcast(", "q :=", "%", "~"]


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(sorted(SCRIPTS)), st.data())
def test_mangled_scripts_raise_only_script_errors(name, data):
    lines = SCRIPTS[name].splitlines()
    k = data.draw(st.integers(0, len(lines) - 1))
    line = lines[k]
    for _ in range(data.draw(st.integers(1, 3))):
        a = data.draw(st.integers(0, len(line)))
        b = min(len(line), a + data.draw(st.integers(0, 8)))
        line = line[:a] + data.draw(st.sampled_from(_FRAGMENTS)) + line[b:]
    lines[k] = line
    try:
        vkir.from_script("\n".join(lines))
    except ScriptError as err:
        assert re.match(r"<script>(:\d+:\d+)?: ", str(err))


@pytest.mark.device
def test_shape_expressions_are_sizes_checked_at_call_time():
    import numpy as np

    import vkir
    from vkir.errors import ArgumentError, ScriptError

    f = vkir.from_script('''
@T.prim_func
def csr_counts(ptr: T.Buffer(("rows + 1",), "int32"), counts: T.Buffer(("rows",), "int32")):
    for b in T.thread_binding((rows + 63) // 64, "blockIdx.x"):
        for t in T.thread_binding(64, "threadIdx.x"):
            if b * 64 + t < rows:
                counts[b * 64 + t] = ptr[b * 64 + t + 1] - ptr[b * 64 + t]
''')
    assert [v.name for v in f.size_vars] == ["rows"]
    ptr = np.array([0, 2, 5, 9], np.int32)
    for run in (lambda *a: vkir.interpret(f, *a), vkir.build(f)):
        counts = np.zeros(3, np.int32)
        run(ptr, counts)
        np.testing.assert_array_equal(counts, [2, 3, 4])
        with pytest.raises(ArgumentError, match=r"'ptr' has size 5 in dim 0, expected rows \+ 1 = 4"):
            run(np.zeros(5, np.int32), counts)
    with pytest.raises(ScriptError, match="must name a size .* or be an expression"):
        vkir.from_script('''
@T.prim_func
def g(a: T.Buffer(("rows ** 2",), "int32")):
    for r in T.serial(1):
        a[0] = 1
''')
    with pytest.raises(ScriptError, match="size 'n' appears only inside shape expressions"):
        vkir.from_script('''
@T.prim_func
def h(a: T.Buffer(("n + 1",), "int32")):
    for i in T.serial(1):
        a[0] = 1
''')
