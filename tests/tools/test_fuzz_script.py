"""Robustness fuzzing of the script front end: whatever the text, `vkir.from_script` parses it or
raises `ScriptError` located inside the source (`<script>:line:col:` with a line of the text),
never another exception.

tests/script/test_script_errors.py checks the wording of each error and mangles scripts
character by character; here the mutations are structured: every T.* function (and dtype
constructor) with wrong arities and wrong argument types in each statement position, unsupported
Python syntax inserted in a valid kernel, bad parameter annotations, and token deletions /
replacements of the round-trip scripts. Examples are derandomized (the same ones on every run).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vkir
from vkir.errors import ScriptError
from vkir.ir.op import OPS
from vkir.script.exprs import BUILDERS, STMT_NAMES

from script.test_script_roundtrip import SCRIPTS

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

T_NAMES = sorted(set(BUILDERS) | set(OPS) | set(STMT_NAMES)
                 | {"let", "Buffer", "Ptr", "int32", "int64", "float32", "float32x4", "bool",
                    "uint8", "float16", "handle", "prim_func", "nonexistent"})

ARGS = ['"a"', "1", "1.5", "-1", "0", "A", "A.data", "A[0]", "i", '"float32"', '"int8x4"',
        '"floatx"', '"int33"', "None", "True", "(1, 2)", "[1]", "T.int64(2)", "T.ramp(0, 1, 4)",
        '"threadIdx.x"', '"blockIdx.w"', "x", "T", "T.exp", "2**40", "-2**31 - 1", "1e400",
        '"shared"', '"n"', "A.shape", "A.dtype", "{}", '{"a": 1}', "()", '""', "n", "lambda: 1",
        "[j for j in A]", "*A", "...", "1j", 'f"{n}"', "b'x'", "T.serial(4)", "A[0:2]"]

KEYWORDS = ["", "", "", "annotations={}", "span=1", "dtype=1", "data=A.data", "scope=1", "x=1",
            "**{}", 'annotations={"software_pipeline_stage": 1}', "thread=3"]

# where a call may stand
TEMPLATES = ["    x = {c}", "    A[0] = {c}", "    T.evaluate({c})", "    {c}",
             "    for i in {c}:\n        A[0] = 1.0", "    with {c}:\n        pass",
             "    with {c} as q:\n        A[0] = 1.0", "    B = {c}\n    B[0] = A[0]",
             "    if {c}:\n        pass", "    A[{c}] = A[0]", "    x: T.int32 = {c}"]

HEADS = ['def f(A: T.Buffer((4,), "float32"), n: T.int32):',
         'def f(A: T.Buffer(("n", 4), "float32x4"), x: T.float32):']

# unsupported or misused Python syntax, as statements in a kernel body (indent 4)
STATEMENTS = [
    "while i < 3:\n        pass", "try:\n        pass\n    except E:\n        pass",
    "x = lambda: 1", "x = [j for j in range(3)]", "x = {j: j for j in A}", "x = (j for j in A)",
    "return 1", "return", "global g", "nonlocal g", "x = 1\n    x += 1", "A[0] += 1.0", "n += 1",
    "*x, = A", "x, *y = 1, 2", "(x := 1)", "x = (y := 1)", "A[(k := 0)] = 1.0",
    "def g():\n        pass", "class C:\n        pass", "import os", "from os import path",
    "with open(1):\n        pass", "assert i", "del x", "raise E", "x, y = 1, 2", "x = y = 1",
    "print(1)", "A.data = 1", "A[0:2] = 1.0", "A[...] = 1.0", "A[0][0] = 1.0", "yield 1",
    "await x", "async for j in A:\n        pass", "async with x:\n        pass",
    "for i, j in T.serial(2):\n        pass", "for j in range(3):\n        pass",
    "for A[0] in T.serial(3):\n        pass", "for j in T.serial(3):\n        pass\n    else:\n        pass",
    "if A:\n        pass", "with T.async_scope() as s:\n        pass",
    "with T.async_scope(), T.async_scope():\n        pass", "x = 1 if i else 2",
    "x = A[0] < A[1] < A[2]", "x = A[0] @ A[1]", "x = -A", "x = not A", "x = A[0] ** 2",
    "x = A[0] is None", "x = A[0] in A", "x = {1, 2}", "x = A[1, 2, 3]", "x = A[A]",
    "x = A[1.5]", "x = A.foo", "x = A.data.foo", "x = T.foo", "x = T.exp.foo", "x = A.shape[5]",
    "match i:\n        case 1:\n            pass", "x = ...", "pass; pass", "x = i; x = 2",
    "B = T.alloc_buffer((4,), \"int32\", scope=\"weird\")", "B = T.alloc_buffer((-1,), \"int32\")",
    "B = T.decl_buffer((4,), \"int32\", data=A)", "B = T.decl_buffer((4,), \"int32\", data=1)",
    "T.evaluate(A)", "T.barrier(1)", "with T.async_wait_queue(0, \"a\"):\n        pass",
    "for j in T.serial(4, annotations=1):\n        pass",
    "for j in T.serial(4, annotations={1: 2}):\n        pass",
    "for j in T.serial(4, annotations={\"x\": A}):\n        pass",
    "x = T.int8(300)", "x = T.int32(2**40)", "x = T.bool(2)", "x = T.uint8(-1)",
    "x = T.float32(\"a\")", "x = T.int32(1.5)", "x = T.handle(1)", "x = 2**100",
    "x = i << 100", "x = T.int32(1) // 0", "x = 1 % 0", "x = T.ramp(0, 1, 0)",
    "x = T.broadcast(1.0, 0)", "x = T.broadcast(1.0, 10**9)", "x = T.cast(1, \"float32x0\")",
    "x = T.cast(1, \"\")", "x = T.shuffle([A[0]], [5])", "x = T.call(\"float32\", 1, 2)",
    "x = T.let(1)", "x = T.let(q := 1, q, dtype=\"int\")", "T.func_attr(1)", "T.func_attr({1: A})",
    "i = 1", "A = 1", "T = 1", "x = A[0]\n    x[0] = 1.0", "x = A\n    x[0] = 1.0",
    "    A[0] = 1.0", "\tA[0] = 1.0",
]

ANNOTATIONS = ['"float32"', "T.int32", "T.Buffer", "T.Buffer()", "T.Buffer(4)", "T.Buffer((4,))",
               'T.Buffer((4,), "float33")', 'T.Buffer(("n", "n"), "float32")',
               'T.Buffer((4,), "float32", strides=(1, 1))', 'T.Buffer((4,), "float32", scope=1)',
               'T.Buffer((4,), "float32", elem_offset="n")', 'T.Buffer((4.5,), "float32")',
               'T.Buffer((-1,), "float32")', 'T.Buffer(("", ), "float32")', 'T.Buffer((A,), "float32")',
               'T.Buffer((4,), "float32", foo=1)', 'T.Buffer((4,), dtype="int8")', "T.Ptr(\"float32\")",
               'T.Ptr("float32", "shared")', "T.handle", "T.int32x4", "int", "1", "None", "T.foo",
               'T.Buffer((4,), "bool", "x")', "T.float32(1)", "A", "T.Buffer[4]",
               'T.Buffer((1 + 2,), "float32")', 'T.Buffer((T.int64(4),), "float32")']

SIGNATURES = ["def f(A{a}):", "def f(A: T.int32 = 1):", "def f(*A: T.int32):",
              "def f(A: T.int32, A: T.int32):", "def f(**kw: T.int32):",
              "def f(A: T.int32) -> T.int32:", "async def f(A: T.int32):",
              "def f(A: T.int32, /, b: T.int32):", "def f(A: T.int32, *, b: T.int32):",
              "@foo\ndef f(A: T.int32):", "@T.prim_func(x=1)\ndef f(A: T.int32):",
              "def f(A: T.int32):\n    '''doc'''\n    def g():\n        pass", "class f:",
              "def f(A: T.int32, n: {b}):", "lambda: 1\ndef f(A: T.int32):"]


def parses_or_points_into_the_source(text: str) -> None:
    """from_script(text) succeeds, or raises ScriptError at a line:col of `text`."""
    try:
        vkir.from_script(text)
    except ScriptError as err:
        msg = str(err)
        m = re.match(r"<script>:(\d+):(\d+): ", msg)
        assert m, f"no line:col in {msg!r} for\n{text}"
        lines = text.splitlines()
        line, col = int(m.group(1)), int(m.group(2))
        assert 1 <= line <= len(lines), f"line {line} outside the source in {msg!r}"
        assert 1 <= col <= len(lines[line - 1]) + 1, f"col {col} outside line {line}: {msg!r}"
        assert (err.line, err.col) == (line, col)


@st.composite
def t_calls(draw):
    name = draw(st.sampled_from(T_NAMES))
    args = draw(st.lists(st.sampled_from(ARGS), max_size=4))
    kw = draw(st.sampled_from(KEYWORDS))
    return f"T.{name}({', '.join(args + ([kw] if kw else []))})"


@SETTINGS
@given(head=st.sampled_from(HEADS), template=st.sampled_from(TEMPLATES), call=t_calls())
def test_t_functions_with_wrong_arities_and_argument_types(head, template, call):
    parses_or_points_into_the_source(f"{head}\n{template.format(c=call)}\n")


@pytest.mark.parametrize("name", T_NAMES)
def test_each_t_function_with_every_arity(name):
    """Each T.* name with 0..4 arguments of one odd kind, in an expression and a loop header."""
    for arg in ("1", '"float32"', "A", "None", "i"):
        for n in range(5):
            call = f"T.{name}({', '.join([arg] * n)})"
            for template in ("    x = {c}", "    for j in {c}:\n        pass",
                             "    with {c}:\n        pass"):
                text = (f"{HEADS[0]}\n    for i in T.serial(4):\n        A[i] = 1.0\n"
                        f"{template.format(c=call)}\n")
                parses_or_points_into_the_source(text)


@pytest.mark.parametrize("stmt", STATEMENTS)
def test_unsupported_syntax_is_a_located_script_error(stmt):
    for head in HEADS:
        text = f"{head}\n    for i in T.serial(4):\n        A[i] = A[i]\n    {stmt}\n"
        parses_or_points_into_the_source(text)
        nested = f"{head}\n    for i in T.serial(4):\n        " + stmt.replace("\n", "\n    ") + "\n"
        parses_or_points_into_the_source(nested)


@SETTINGS
@given(sig=st.sampled_from(SIGNATURES), a=st.sampled_from(ANNOTATIONS),
       b=st.sampled_from(ANNOTATIONS))
def test_bad_signatures_and_annotations(sig, a, b):
    head = sig.format(a=f": {a}", b=b)
    parses_or_points_into_the_source(f"{head}\n    pass\n")
    parses_or_points_into_the_source(f"def f(A: {a}, B: {b}):\n    A[0] = B[0]\n")


_TOKENS = re.compile(r"\w+|\"[^\"]*\"|\S")
_REPLACEMENTS = ARGS + ["T.serial(4)", "T.exp(", ")", "]", "(", ",", "=", ":", "for", "in",
                        "if", "else", "with", "as", "not", "and", "T.", ".", "+", "//", "def"]


@SETTINGS
@given(name=st.sampled_from(sorted(SCRIPTS)), data=st.data())
def test_token_mutations_of_valid_scripts(name, data):
    """Delete, replace or duplicate 1-3 tokens of a valid script."""
    lines = SCRIPTS[name].splitlines()
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        k = data.draw(st.integers(0, len(lines) - 1), label="line")
        spans = [m.span() for m in _TOKENS.finditer(lines[k])]
        if not spans:
            continue
        a, b = spans[data.draw(st.integers(0, len(spans) - 1), label="token")]
        op = data.draw(st.sampled_from(["delete", "replace", "duplicate"]), label="op")
        token = lines[k][a:b]
        new = {"delete": "", "duplicate": token + " " + token,
               "replace": data.draw(st.sampled_from(_REPLACEMENTS), label="by")}[op]
        lines[k] = lines[k][:a] + new + lines[k][b:]
    parses_or_points_into_the_source("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------------------------
# reproducers of the crashes this fuzzing found


def test_one_argument_loop_with_a_non_expression_extent_is_located():
    """`T.serial("float32")` (one argument: the extent) raised a ScriptError without a location
    (the error blamed the implicit start 0, which has no source node)."""
    text = ('def f(A: T.Buffer((4,), "float32")):\n'
            '    for i in T.vectorized("float32", annotations={}):\n'
            '        A[0] = 1.0\n')
    with pytest.raises(ScriptError, match=r"^<script>:2:27: expected an expression, got the "
                                          r"string 'float32'"):
        vkir.from_script(text)
    text = text.replace('T.vectorized("float32", annotations={})', "T.serial(T.int64)")
    with pytest.raises(ScriptError, match=r"^<script>:2:23: expected an expression"):
        vkir.from_script(text)


@pytest.mark.parametrize("stmt", ["A[0] = 22**400", "A[0] = A[0] + 22**400",
                                  "A[0] = T.float32(-22**400)", "A[0] = T.max(A[0], 22**400)",
                                  "A[0] = T.select(True, 22**400, A[0])"])
def test_integer_literal_beyond_any_float_is_located(stmt):
    """An integer literal too large for a double, used as a float, raised OverflowError from
    `float(value)` deep in the IR constructors."""
    text = f'def f(A: T.Buffer((4,), "float32")):\n    {stmt}\n'
    with pytest.raises(ScriptError, match=r"^<script>:2:\d+: .*integer literal -?\d+ is out of "
                                          r"range for float32"):
        vkir.from_script(text)


def test_expression_too_deep_for_pythons_parser_is_located():
    """ast.parse raised RecursionError ("during ast construction") for a 3000-term sum."""
    text = ('def f(A: T.Buffer((4,), "float32")):\n    x = 1\n'
            "    A[0] = " + " + ".join(["A[1]"] * 3000) + "\n")
    with pytest.raises(ScriptError, match=r"^<script>:3:5: expression nested too deeply"):
        vkir.from_script(text)


@pytest.mark.parametrize("text, env, message", [
    (None, None, "expects the source as a str, got NoneType"),
    (b"def f():\n    pass\n", None, "expects the source as a str, got bytes"),
    ("def f():\n    pass\n", 3, "env must be a dict of names, got int"),
])
def test_from_script_argument_types(text, env, message):
    """None or bytes were a TypeError from inside textwrap; env=3 one from dict()."""
    with pytest.raises(TypeError, match=message):
        vkir.from_script(text, env=env)


@pytest.mark.parametrize("obj", [3, None.__class__, print, "def f():\n    pass\n"])
def test_prim_func_of_something_without_source(obj):
    """T.prim_func(3) was an AttributeError (no __qualname__) instead of the ScriptError that
    other sourceless objects get."""
    with pytest.raises(ScriptError, match="cannot read the source of .*use vkir.from_script"):
        vkir.T.prim_func(obj)
