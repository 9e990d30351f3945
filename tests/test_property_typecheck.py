"""Property tests of the explicit-cast checker: random ill-typed programs raise
`TypeCheckError` from `vkir.analysis.verify_types`, never another exception, and `vkir.lower` /
`vkir.build` refuse them with `TypeCheckError` before anything reaches SPIR-V codegen or the
driver.

Each ill-typed program is a random well-typed kernel (the generator of test_property_pipeline.py)
with one mutation applied at a random site. Every mutation is ill-typed whatever surrounds it, so
the property is exact: mismatched operand dtypes or lanes, a store of the wrong type or lanes, a
vector index in a non-last position, a float index, a wrong number of indices, a Cast that changes
the lane count, bool arithmetic, logic on ints, an int condition, a let whose value has another
type, float math on ints, mismatched loop bounds, a Ramp with mixed base/stride types, Select
branches of different types, and implicit pointer casts (a parameter, an allocation or an
undeclared buffer reading its data pointer as another type).
"""

from __future__ import annotations

import dataclasses
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vkir
from vkir import ir
from vkir.analysis import verify_types
from vkir.errors import TypeCheckError
from vkir.ir import DataType, PointerType
from vkir.ir.functor import Mutator
from vkir.ir.intrinsics import INTRINSICS
from vkir.ir.op import OPS

from test_property_pipeline import kernels

SETTINGS = settings(max_examples=int(os.environ.get("VKIR_PROPERTY_EXAMPLES", 40)), deadline=None,
                    derandomize=not os.environ.get("VKIR_PROPERTY_RANDOM"),
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])

OTHERS = ("int32", "float32", "int8", "float16", "uint32", "int64", "bool")


def _other(dt: DataType, draw) -> DataType:
    """A dtype with `dt`'s lanes and another element type."""
    options = [DataType.parse(t).with_lanes(dt.lanes) for t in OTHERS]
    return draw(st.sampled_from([t for t in options if t != dt]))


def _with_lanes(dt: DataType, lanes: int) -> DataType:
    return dt.with_lanes(lanes)


# ---------------------------------------------------------------------------------------------
# mutations: (applies to node?, new node); each result is ill-typed in any context


def _binary(n):
    return isinstance(n, ir.BinaryOp)


def _math(n, op):
    return ir.Call(n.dtype, op, (n,) * OPS[op].arity)


# the intrinsics that take float operands only, and those that take integer operands only (their
# rows' type rules in vkir.ir.intrinsics): either applied to the other kind is ill-typed
FLOAT_ONLY = sorted(n for n, row in INTRINSICS.items()
                    if row.type_rule in ("float", "float_predicate"))
INTEGER_ONLY = sorted(n for n, row in INTRINSICS.items() if row.type_rule in ("integer", "shift"))


def _access(n):
    return isinstance(n, (ir.BufferLoad, ir.BufferStore))


MUTATIONS = {
    "operand dtype": (_binary, lambda n, d: dataclasses.replace(
        n, b=ir.Cast(_other(n.b.dtype, d), n.b))),
    "operand lanes": (lambda n: _binary(n) and n.b.dtype.lanes == 1,
                      lambda n, d: dataclasses.replace(
                          n, b=ir.Broadcast(n.b, d(st.sampled_from([2, 4]))))),
    "store value dtype": (lambda n: isinstance(n, ir.BufferStore), lambda n, d: dataclasses.replace(
        n, value=ir.Cast(_other(n.value.dtype, d), n.value))),
    "store lanes": (lambda n: isinstance(n, ir.BufferStore) and n.value.dtype.lanes == 1,
                    lambda n, d: dataclasses.replace(n, value=ir.Broadcast(n.value, 2))),
    "vector index not last": (lambda n: _access(n) and len(n.indices) >= 2,
                              lambda n, d: dataclasses.replace(n, indices=(
                                  ir.Ramp(n.indices[0], ir.const(1), 4),) + tuple(n.indices[1:]))),
    "float index": (lambda n: _access(n) and n.indices, lambda n, d: dataclasses.replace(
        n, indices=tuple(n.indices[:-1]) + (ir.Cast(
            DataType.parse("float32").with_lanes(n.indices[-1].dtype.lanes), n.indices[-1]),))),
    "index count": (_access, lambda n, d: dataclasses.replace(
        n, indices=tuple(n.indices) + (ir.const(0),))),
    "cast changes lanes": (lambda n: isinstance(n, (ir.Cast, ir.BufferLoad)),
                           lambda n, d: ir.Cast(_with_lanes(n.dtype, 2 * n.dtype.lanes), n)),
    "bool arithmetic": (lambda n: isinstance(n, ir.CmpOp), lambda n, d: d(st.sampled_from(
        [ir.Add, ir.Sub, ir.Mul, ir.FloorDiv]))(n, n)),
    "logic on ints": (lambda n: isinstance(n, (ir.And, ir.Or, ir.Not)),
                      lambda n, d: dataclasses.replace(n, a=ir.Cast(
                          DataType.parse("int32").with_lanes(n.a.dtype.lanes), n.a))),
    "int condition": (lambda n: isinstance(n, (ir.IfThenElse, ir.Select)),
                      lambda n, d: dataclasses.replace(n, condition=ir.Cast(
                          DataType.parse("int32").with_lanes(n.condition.dtype.lanes),
                          n.condition))),
    "let value dtype": (lambda n: isinstance(n, ir.LetStmt), lambda n, d: dataclasses.replace(
        n, value=ir.Cast(_other(n.value.dtype, d), n.value))),
    "float math on ints": (lambda n: isinstance(n, ir.BufferLoad) and n.dtype.is_integer,
                           lambda n, d: _math(n, d(st.sampled_from(FLOAT_ONLY)))),
    "integer math on floats": (lambda n: isinstance(n, ir.BufferLoad) and n.dtype.is_float,
                               lambda n, d: _math(n, d(st.sampled_from(INTEGER_ONLY)))),
    "loop bounds": (lambda n: isinstance(n, ir.For), lambda n, d: dataclasses.replace(
        n, extent=ir.Cast(d(st.sampled_from(["int64", "float32", "int8"])), n.extent))),
    "ramp mixed types": (lambda n: isinstance(n, ir.Ramp), lambda n, d: dataclasses.replace(
        n, stride=ir.Cast(d(st.sampled_from(["int64", "float32", "int16"])), n.stride))),
    "select branches": (lambda n: isinstance(n, ir.Select), lambda n, d: dataclasses.replace(
        n, false_value=ir.Cast(_other(n.false_value.dtype, d), n.false_value))),
    "implicit cast by alloc": (lambda n: isinstance(n, ir.AllocBuffer),
                               lambda n, d: dataclasses.replace(n, buffer=dataclasses.replace(
                                   n.buffer, dtype=_other(n.buffer.dtype, d)))),
    "implicit cast by use": (lambda n: isinstance(n, ir.BufferLoad),
                             lambda n, d: dataclasses.replace(n, buffer=dataclasses.replace(
                                 n.buffer, name=n.buffer.name + "_as",
                                 dtype=_other(n.buffer.dtype, d)))),
}


class _Replace(Mutator):
    """Replace one node (by identity) with another."""

    def __init__(self, target, new):
        self.target, self.new = target, new

    def visit(self, node):
        if node is self.target:
            return self.new
        return super().visit(node)


class _SwapBuffer(Mutator):
    def __init__(self, old, new):
        self.old, self.new = old, new

    def visit_buffer(self, buffer):
        return self.new if buffer is self.old else buffer


def implicit_cast_param(func, draw):
    """A parameter's buffer reads its data pointer as another element type (in buffer_map)."""
    param = draw(st.sampled_from([p for p in func.params if p in func.buffer_map]))
    old = func.buffer_map[param]
    new = dataclasses.replace(old, dtype=_other(old.dtype, draw))
    assert new.data.dtype == PointerType(old.dtype, old.scope)
    buffer_map = {p: (new if b is old else b) for p, b in func.buffer_map.items()}
    return dataclasses.replace(func, body=_SwapBuffer(old, new).visit(func.body),
                               buffer_map=type(func.buffer_map)(buffer_map))


@st.composite
def ill_typed(draw):
    """(mutation name, mutated function) from a random well-typed kernel."""
    func = draw(kernels()).func()
    verify_types(func)  # the starting point is well typed
    sites = {name: [node for node in ir.walk(func.body) if applies(node)]
             for name, (applies, _) in MUTATIONS.items()}
    sites["implicit cast of a parameter"] = [None]
    name = draw(st.sampled_from(sorted(name for name, nodes in sites.items() if nodes)))
    node = draw(st.sampled_from(sites[name]))
    if node is None:
        return name, implicit_cast_param(func, draw)
    new = MUTATIONS[name][1](node, draw)
    return name, func.with_body(_Replace(node, new).visit(func.body))


def _describe(name, func):
    return f"mutation {name!r} accepted by the checker:\n{func.script()}"


@SETTINGS
@given(ill_typed())
def test_ill_typed_programs_raise_type_check_error(case):
    name, func = case
    with pytest.raises(TypeCheckError):
        verify_types(func)
        pytest.fail(_describe(name, func))


@SETTINGS
@given(ill_typed())
def test_lower_refuses_ill_typed_programs(case):
    """vkir.lower raises TypeCheckError (the passes never see, or never crash on, bad input)."""
    name, func = case
    with pytest.raises(TypeCheckError):
        vkir.lower(func)
        pytest.fail(_describe(name, func))


@pytest.mark.device
@SETTINGS
@given(case=ill_typed())
def test_build_refuses_ill_typed_programs_before_the_driver(device, monkeypatch, case):
    """vkir.build raises TypeCheckError; SPIR-V codegen and pipeline creation are never reached."""
    from vkir import runtime, spirv

    def unreachable(*args, **kwargs):
        raise AssertionError("an ill-typed kernel reached codegen or the driver")

    monkeypatch.setattr(spirv, "codegen", unreachable)
    monkeypatch.setattr(runtime, "get_pipeline", unreachable)
    name, func = case
    with pytest.raises(TypeCheckError):
        vkir.build(func, device=device)
        pytest.fail(_describe(name, func))


def test_every_mutation_is_exercised():
    """Each mutation kind applies to some kernel of a small fixed set (guards the generator)."""
    texts = [
        '''@T.prim_func
def k(A: T.Buffer(("n", 4), "float32"), B: T.Buffer(("n", 4), "int32"), C: T.Buffer(("n",), "bool")):
    for bx in T.thread_binding((n + 31) // 32, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            S = T.alloc_buffer((32,), "float32", scope="shared")
            i = bx * 32 + tx
            S[tx] = T.float32(0)
            T.barrier()
            if i < n and not C[i]:
                t = T.select(C[i], B[i, 0], B[i, 1])
                A[i, T.ramp(0, 1, 4)] = T.cast(B[i, T.ramp(0, 1, 4)], "float32x4") + T.broadcast(S[tx] * 2.0, 4)
''']
    funcs = [vkir.from_script(t) for t in texts]
    for f in funcs:
        verify_types(f)
    names = {name for f in funcs for node in ir.walk(f.body)
             for name, (applies, _) in MUTATIONS.items() if applies(node)}
    assert names == set(MUTATIONS)


# ---------------------------------------------------------------------------------------------
# the checker plugin (tests/checker_plugin.py) itself


@dataclasses.dataclass(frozen=True)
class _CastStores(vkir.transform.Pass):
    """A broken pass: every stored value becomes float16 (an implicit conversion)."""

    def transform(self, func):
        class Cast16(Mutator):
            def visit_BufferStore(self, node):
                return dataclasses.replace(node, value=ir.Cast(
                    DataType.parse("float16").with_lanes(node.value.dtype.lanes), node.value))

        return func.with_body(Cast16().visit(func.body))


_STORE = '''@T.prim_func
def store(A: T.Buffer((4,), "float32")):
    for i in T.serial(4):
        A[i] = T.float32(1)
'''


def test_checker_plugin_fails_a_pass_that_breaks_typing():
    func = vkir.from_script(_STORE)
    with pytest.raises(TypeCheckError, match=r"pass _CastStores\(\) turned well-typed function "
                                             r"'store' into an ill-typed one: rule 1"):
        _CastStores()(func)


def test_checker_plugin_blames_ill_typed_input_not_the_pass():
    """Garbage in, garbage out: a pass given ill-typed IR is not blamed for its ill-typed result."""
    bad = _CastStores().transform(vkir.from_script(_STORE))
    with pytest.raises(TypeCheckError):
        verify_types(bad)
    out = _CastStores()(bad)  # no error from the plugin
    with pytest.raises(TypeCheckError):
        verify_types(out)
