"""The intrinsic table (vkir.ir.intrinsics) is the one list of pure intrinsics: every layer has an
entry for every row (the script, the checker's type rule, the interpreter, the C translation of
native loops or its refusal, SPIR-V, the 8-bit emulation rule, the TVM importer, the docs), and no
layer keeps one for a name the table lacks. The bit counts (popcount, clz, ctz) give the
interpreter's answer everywhere, including on 8-bit values emulated in 32 bits."""

import re
from pathlib import Path

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.ir import Call, walk
from vkir.ir import stmt as S
from vkir.ir.intrinsics import (BIT_COUNTS, EMULATION_RULES, INTRINSICS, OWN, TYPE_RULES,
                                CExpr, CoreOp, Glsl, NotTranslated)
from vkir.ir.op import OPS, result_dtype

ROOT = Path(__file__).resolve().parent.parent
ROWS = sorted(INTRINSICS)
INT_TYPES = ("int8", "uint8", "int16", "int32", "uint32", "int64", "uint64")


def _operand_types(row) -> list[str]:
    """The operand types a row's type rule accepts, as the tests below use them."""
    return {"float": ["float32"], "numeric": ["float32", "int8", "int32"],
            "float_predicate": ["float32"], "integer": list(INT_TYPES),
            "shift": list(INT_TYPES), "reinterpret": ["float32"],
            "if_then_else": ["float32", "int8"]}[row.type_rule]


def _call_text(row, dt: str, xs: list[str]) -> tuple[str, str]:
    """(the script of a call of `row` on operands `xs` of type `dt`, its result type)."""
    if row.name == "reinterpret":
        return f'T.reinterpret({xs[0]}, "int32")', "int32"
    if row.name == "if_then_else":
        return f"T.if_then_else({xs[0]} < {xs[1]}, {xs[1]}, {xs[2]})", dt
    call = f"T.{row.name}({', '.join(xs[:row.arity])})"
    if row.type_rule == "float_predicate":
        return f'T.cast({call}, "int32")', "int32"
    return call, dt


def _kernel(rows, dt: str, loop: str = "thread"):
    """One kernel storing each of `rows` applied to a[i], b[i], c[i] (of type `dt`) in its own
    output buffer; `loop` "thread" gives one invocation per element, "serial" one loop."""
    calls = [_call_text(row, dt, ["a[i]", "b[i]", "c[i]"]) for row in rows]
    outs = "".join(f', o{k}: T.Buffer((16,), "{t}")' for k, (_, t) in enumerate(calls))
    body = "".join(f"\n        o{k}[i] = {text}" for k, (text, _) in enumerate(calls))
    head = "for i in T.thread_binding(16, \"threadIdx.x\"):" if loop == "thread" else \
        "for i in T.serial(16):"
    return vkir.from_script(f'''
@T.prim_func
def k(a: T.Buffer((16,), "{dt}"), b: T.Buffer((16,), "{dt}"), c: T.Buffer((16,), "{dt}"){outs}):
    {head}{body}
''')


def _values(dt: str, seed: int) -> np.ndarray:
    """16 values of `dt`: the edges (0, 1, -1, min, max, powers of two) and random ones."""
    npdt = np.dtype(dt)
    rng = np.random.default_rng(seed)
    if npdt.kind == "f":
        v = rng.uniform(-4, 4, 16).astype(npdt)
        v[:6] = [0.0, -0.0, 1.0, -1.0, 0.5, 2.5]
        return v
    info = np.iinfo(npdt)
    v = rng.integers(info.min, info.max, 16, dtype=npdt, endpoint=True)
    edges = [0, 1, info.max, info.min, info.min + 1, 8, 1 << (info.bits - 2)]
    edges += [-1, -2, -8, -(1 << (info.bits - 2))] if npdt.kind == "i" else [3, 6, 128]
    v[:len(edges)] = edges
    return v


def _arguments(func, dt: str, seed: int = 0) -> list[np.ndarray]:
    args = [_values(dt, seed + k) for k in range(3)]
    for p in func.params[3:]:
        args.append(np.zeros(16, func.buffer_map[p].dtype.numpy_dtype()))
    return args


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    """Equal bit for bit (any NaN equals any NaN)."""
    if x.dtype.kind == "f" and np.isnan(x).any():
        nan = np.isnan(x)
        return np.array_equal(nan, np.isnan(y)) and _same(x[~nan], y[~nan])
    return np.array_equal(np.ascontiguousarray(x).view(np.uint8),
                          np.ascontiguousarray(y).view(np.uint8))


# ---------------------------------------------------------------------------------------------
# the table itself and the layers that read it


def test_every_row_is_an_op_the_script_and_the_printer_know():
    for name, row in INTRINSICS.items():
        assert OPS[name].arity == row.arity and OPS[name].pure
        assert callable(getattr(T, name)), name
        assert row.doc and row.type_rule in TYPE_RULES and row.emulation in EMULATION_RULES
    pure = {name for name, info in OPS.items() if info.kind not in ("atomic", "subgroup")}
    assert pure == set(INTRINSICS)


@pytest.mark.parametrize("name", ROWS)
def test_the_checker_applies_each_rows_type_rule(name):
    """A call with operands its rule accepts passes the checker; one of a type it refuses does
    not (or the result type differs from the rule's)."""
    from vkir.analysis import verify_types

    row = INTRINSICS[name]
    for dt in _operand_types(row):
        func = _kernel([row], dt)
        verify_types(func)
        (call,) = [n for n in walk(func.body) if isinstance(n, Call) and n.op == name]
        if row.type_rule != "reinterpret":   # its result type is spelled out
            assert call.dtype == result_dtype(name, call.args)
    wrong = {"float": "int32", "float_predicate": "int32", "integer": "float32",
             "shift": "float32", "numeric": "bool"}.get(row.type_rule)
    if wrong is not None:
        args = ", ".join(["a[i]"] * row.arity)
        func = vkir.from_script(f'''
@T.prim_func
def bad(a: T.Buffer((4,), "{wrong}"), o: T.Buffer((4,), "{wrong}")):
    for i in T.serial(4):
        o[i] = T.call("{wrong}", "{name}", {args})
''')
        with pytest.raises(vkir.TypeCheckError, match=name):
            verify_types(func)


def test_the_interpreter_has_a_function_for_every_row():
    from vkir.interpreter import numeric

    for name, row in INTRINSICS.items():
        if name in numeric.COMPILED:
            assert row.interp == OWN, name
            continue
        assert callable(numeric.intrinsic(name)), name
    assert set(numeric.OWN) == {n for n, r in INTRINSICS.items() if r.interp == OWN} \
        - set(numeric.COMPILED)


def test_every_row_is_translated_to_c_or_refused_by_name():
    from vkir.interpreter import c_exprs

    for name, row in INTRINSICS.items():
        if row.c == OWN:
            assert name in c_exprs.OWN_CALLS, name
        else:
            assert isinstance(row.c, (CExpr, NotTranslated)), name
            assert not isinstance(row.c, CExpr) or row.c.operands in ("float", "integer")
    assert set(c_exprs.OWN_CALLS) == {n for n, r in INTRINSICS.items() if r.c == OWN}


def test_codegen_lowers_every_row():
    from vkir.spirv.codegen.emitter import KernelEmitter
    from vkir.spirv.codegen.intrinsics import OWN_LOWERINGS
    from vkir.spirv.khronos_grammar import grammar

    core, glsl = grammar().opcodes, grammar().glsl
    for name, row in INTRINSICS.items():
        if row.spirv == OWN:
            assert callable(getattr(KernelEmitter, OWN_LOWERINGS[name])), name
        elif isinstance(row.spirv, Glsl):
            assert row.spirv.name in glsl, name
        else:
            assert isinstance(row.spirv, CoreOp) and row.spirv.name in core, name
    assert set(OWN_LOWERINGS) == {n for n, r in INTRINSICS.items() if r.spirv == OWN}


@pytest.mark.parametrize("name", ROWS)
def test_each_row_compiles_to_valid_spirv_with_and_without_8bit_support(name):
    """codegen validates each module with SPIRV-Tools; Vulkan 1.3 without optional features
    emulates the 8-bit operands in 32 bits."""
    from vkir.lowering import lower
    from vkir.spirv import codegen
    from vkir.spirv.tools import diagnose
    from vkir.target import Target

    row = INTRINSICS[name]
    for target in (Target.lavapipe(), Target.vulkan13()):
        for dt in _operand_types(row):
            if target.features and dt in ("int16", "int64", "uint64") or \
                    dt in ("int8", "uint8", "int32", "uint32", "float32"):
                module = codegen(lower(_kernel([row], dt), target), target)
                problem = diagnose(module.words, target.env)
                assert problem is None, f"{name} {dt}: {problem.report()}"


def test_cse_takes_commutativity_from_the_table():
    from vkir.transform.cse_keys import _COMMUTATIVE_CALLS

    assert _COMMUTATIVE_CALLS == {n for n, r in INTRINSICS.items() if r.commutative}
    assert {"bitwise_and", "bitwise_or", "bitwise_xor"} <= _COMMUTATIVE_CALLS
    assert not {"pow", "shift_left", "atan2", "fmod"} & _COMMUTATIVE_CALLS


def test_the_tvm_importer_reads_each_rows_names():
    from vkir.tvm import importer

    for name, row in INTRINSICS.items():
        for op in row.tvm.ops:
            assert importer._CALLS[op] == name
        for extern in row.tvm.externs:
            assert importer._LIBM[extern] == name
    assert set(importer._CALLS.values()) == {n for n, r in INTRINSICS.items() if r.tvm.ops}
    assert INTRINSICS["popcount"].tvm.ops == ("popcount",) and INTRINSICS["ctz"].tvm.ops == ()


def test_the_language_docs_list_every_intrinsic():
    text = (ROOT / "docs" / "language.md").read_text()
    listed = set(re.findall(r"T\.(\w+)", text))
    assert set(INTRINSICS) <= listed, set(INTRINSICS) - listed


# ---------------------------------------------------------------------------------------------
# behaviour: the C translation and the 8-bit emulation give the interpreter's answers


def _c_rows(operands: str):
    return [r for r in INTRINSICS.values() if isinstance(r.c, CExpr) and r.c.operands == operands]


@pytest.mark.parametrize("dt", ["float16", "float32", "float64", "int8", "uint8", "int16",
                                "int32", "uint64"])
def test_native_loops_compute_each_c_translation_as_the_interpreter(monkeypatch, tmp_path, dt):
    from vkir.interpreter import native_loops
    from vkir.interpreter.loop_to_c import translate

    if native_loops.c_compiler() is None:
        pytest.skip("needs a C compiler")
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    rows = _c_rows("float" if dt.startswith("float") else "integer")
    func = _kernel(rows, dt, loop="serial")
    (loop,) = [n for n in walk(func.body) if isinstance(n, S.For) and n.kind == "serial"]
    translate(loop)  # no NotTranslatable: every row of the kernel has a C translation
    ran = []
    original = native_loops.NativeLoop.run
    monkeypatch.setattr(native_loops.NativeLoop, "run",
                        lambda self, *a: ran.append(original(self, *a)) or ran[-1])
    results = []
    for mode in ("0", "1"):
        monkeypatch.setenv("VKIR_NATIVE_LOOPS", mode)
        args = _arguments(func, dt)
        vkir.interpret(func, *args)
        results.append(args)
    assert ran and all(r is True for r in ran), ran   # C ran the loop to its end
    for row, python, native in zip(rows, results[0][3:], results[1][3:]):
        assert _same(python, native), (row.name, python, native)


@pytest.mark.parametrize("dt", ["int8", "uint8"])
def test_emulated_8bit_intrinsics_compute_what_the_interpreter_does(dt):
    """EmulateInt8 by each row's emulation rule: in 32 bits, the same values as in 8."""
    from vkir.testing import interpret_lowered
    from vkir.transform import BoolToInt8, EmulateInt8

    rows = [r for r in INTRINSICS.values() if dt in _operand_types(r) and r.emulation != "refused"]
    func = _kernel(rows, dt)
    emulated = EmulateInt8()(BoolToInt8()(func))
    for seed in range(3):
        want = _arguments(func, dt, seed)
        got = [a.copy() for a in want]
        vkir.interpret(func, *want)
        interpret_lowered(emulated, *got)
        for row, w, g in zip(rows, want[3:], got[3:]):
            np.testing.assert_array_equal(g, w, err_msg=row.name)


def test_bit_counts_of_8bit_values_count_the_byte_not_its_sign_extension():
    """int8 -1 has 8 one bits (32 in the sign-extended word), uint8 0 has 8 leading and 8
    trailing zeros (32 in the word)."""
    func = _kernel([INTRINSICS[n] for n in BIT_COUNTS], "int8")
    a = np.array([-1, 0, -128, 1] + [0] * 12, np.int8)
    args = [a, a.copy(), a.copy()] + [np.zeros(16, np.int8) for _ in BIT_COUNTS]
    from vkir.testing import interpret_lowered
    from vkir.transform import EmulateInt8

    interpret_lowered(EmulateInt8()(func), *args)
    counts = dict(zip(BIT_COUNTS, (o[:4].tolist() for o in args[3:])))
    assert counts == {"popcount": [8, 0, 1, 1], "clz": [0, 8, 0, 7], "ctz": [0, 8, 7, 0]}


# ---------------------------------------------------------------------------------------------
# on the device


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "int32", "uint32", "int8x4", "int16x2"])
def test_bit_counts_on_the_device_are_the_interpreters(device, dt):
    """popcount, clz and ctz of negative, zero and edge values: on lavapipe natively, on
    SwiftShader with 8-bit values emulated in 32 bits."""
    from vkir.testing import expect_features

    lanes = int(dt.split("x")[1]) if "x" in dt else 1
    scalar = dt.split("x")[0]
    func = _kernel([INTRINSICS[n] for n in BIT_COUNTS], dt)
    args = [np.concatenate([_values(scalar, k + lane) for lane in range(lanes)])
            for k in range(3)]
    args = [a.reshape(lanes, 16).T.copy() if lanes > 1 else a for a in args]
    args += [np.zeros_like(args[0]) for _ in BIT_COUNTS]
    want = [a.copy() for a in args]
    vkir.interpret(func, *want)
    with expect_features(device, "int16") if "16" in scalar else _nothing():
        vkir.build(func, device=device)(*args)
        for name, w, g in zip(BIT_COUNTS, want[3:], args[3:]):
            np.testing.assert_array_equal(g, w, err_msg=name)


def _nothing():
    import contextlib

    return contextlib.nullcontext()
