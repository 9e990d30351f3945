"""Property tests: the checkers never crash (random programs give None, TypeCheckError or
WellFormedError only), the type checker always rejects a program containing an ill-typed fragment,
and random well-typed programs are accepted, well formed, and run in the interpreter."""

import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vkir
from vkir import ir
from vkir.analysis import verify_types, verify_well_formed
from vkir.ir import DataType, PointerType, Var
from vkir.ir.op import OPS

TYPES = ["int32", "int64", "int8", "uint32", "float32", "float16", "bool", "int32x4",
         "float32x4", "boolx4", "float32x2", "handle"]
VARS = {t: Var(f"v_{t}", t) for t in TYPES}
BUFS = [ir.decl_buffer((16,), "float32", "bf"), ir.decl_buffer((4,), "float32x4", "bv"),
        ir.decl_buffer((4, 4), "int32", "bi"), ir.decl_buffer((8,), "bool", "bb")]
BIN = list(ir.BINARY_OPS)
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))

dtypes = st.sampled_from(TYPES)


def _const(draw_t, value):
    dt = DataType.parse(draw_t)
    if dt.lanes > 1 or dt.is_handle:
        return ir.IntImm(draw_t, int(value))
    if dt.is_float:
        return ir.FloatImm(draw_t, float(value))
    return ir.IntImm(draw_t, int(value))


leaves = st.one_of(
    st.sampled_from(list(VARS.values())),
    st.builds(_const, dtypes, st.integers(-300, 300)),
)


def _exprs(children):
    return st.one_of(
        st.builds(lambda c, a, b: c(a, b), st.sampled_from(BIN), children, children),
        st.builds(ir.Not, children),
        st.builds(ir.Select, children, children, children),
        st.builds(ir.Cast, dtypes.filter(lambda t: t != "handle"), children),
        st.builds(ir.Ramp, children, children, st.integers(1, 4)),
        st.builds(ir.Broadcast, children, st.integers(1, 4)),
        st.builds(lambda v, a, b: ir.Let(Var("l", v), a, b), dtypes, children, children),
        st.builds(lambda op, args, t: ir.Call(t, op, tuple(args)), st.sampled_from(sorted(OPS)),
                  st.lists(children, max_size=3), dtypes),
        st.builds(lambda vs, idx: ir.Shuffle(tuple(vs), tuple(idx)), st.lists(children, max_size=2),
                  st.lists(st.integers(-1, 9), max_size=3)),
        st.builds(lambda b, idx: ir.BufferLoad(b, tuple(idx)), st.sampled_from(BUFS),
                  st.lists(children, min_size=0, max_size=3)),
    )


exprs = st.recursive(leaves, _exprs, max_leaves=8)


def _stmts(children):
    return st.one_of(
        st.builds(lambda a, b: ir.seq(a, b), children, children),
        st.builds(lambda v, e, s: ir.LetStmt(Var("s", v), e, s), dtypes, exprs, children),
        st.builds(lambda v, lo, ext, s: ir.For(Var("i", v), lo, ext, "serial", s),
                  dtypes.filter(lambda t: t != "handle"), exprs, exprs, children),
        st.builds(ir.IfThenElse, exprs, children, st.one_of(st.none(), children)),
        st.builds(lambda t, s: ir.AllocBuffer(ir.decl_buffer((4,), t, "al", scope="shared"), s),
                  dtypes.filter(lambda t: t != "handle"), children),
        st.builds(lambda b, t, s: ir.DeclBuffer(ir.decl_buffer((4,), t, "db", data=b.data), s),
                  st.sampled_from(BUFS), dtypes.filter(lambda t: t != "handle"), children),
        st.builds(lambda n, s: ir.AsyncWaitQueue(0, n, s), exprs, children),
        st.builds(ir.AsyncCommitQueue, st.just(0), st.builds(ir.AsyncScope, children)),
    )


base_stmts = st.one_of(
    st.builds(ir.Evaluate, exprs),
    st.builds(lambda b, v, idx: ir.BufferStore(b, v, tuple(idx)), st.sampled_from(BUFS), exprs,
              st.lists(exprs, max_size=2)),
    st.just(ir.Barrier()),
)
stmts = st.recursive(base_stmts, _stmts, max_leaves=6)


def _func(body):
    params = tuple(b.data for b in BUFS) + tuple(v for t, v in VARS.items() if t != "handle")
    return ir.PrimFunc(params, body, {b.data: b for b in BUFS})


@SETTINGS
@given(stmts)
def test_random_programs_never_crash_the_checker(body):
    """The checker accepts (None) or refuses with a TypeCheckError naming the rule broken; any
    other exception fails the test."""
    func = _func(body)
    for target in (None, "vulkan"):
        try:
            assert verify_types(func, target=target) is None
        except vkir.TypeCheckError as exc:
            assert re.match(r"rule \d+ \(", str(exc)), str(exc)
    try:
        verify_well_formed(func)
    except vkir.WellFormedError:
        pass


# fragments that are ill-typed whatever surrounds them
def _bad_binary(op, t1, t2):
    return ir.Evaluate(op(VARS[t1], VARS[t2]))


pairs = st.tuples(dtypes, dtypes).filter(lambda p: p[0] != p[1])
bad_fragments = st.one_of(
    st.builds(lambda op, p: _bad_binary(op, *p), st.sampled_from(BIN), pairs),
    st.builds(lambda t, n: ir.Evaluate(ir.Cast(DataType.parse(t).with_lanes(n), VARS["int32x4"])),
              st.sampled_from(["int32", "float32", "int8"]), st.sampled_from([1, 2, 8])),
    st.builds(lambda t: ir.BufferStore(BUFS[0], VARS[t], (ir.const(0),)),
              dtypes.filter(lambda t: t != "float32")),
    st.builds(lambda t: ir.IfThenElse(VARS[t], ir.Evaluate(ir.const(0))),
              dtypes.filter(lambda t: t != "bool")),
    st.builds(lambda t: ir.BufferStore(BUFS[1], VARS["float32x4"], (VARS[t],)),
              dtypes.filter(lambda t: t not in ("int32", "int64", "int8", "uint32"))),
    st.builds(lambda t: ir.LetStmt(Var("x", "int32"), VARS[t], ir.Evaluate(ir.const(0))),
              dtypes.filter(lambda t: t != "int32")),
    st.builds(lambda op: ir.Evaluate(ir.Call("int32", op, (VARS["int32"],))),
              st.sampled_from(["exp", "sqrt", "log", "tanh", "floor"])),
    st.just(ir.DeclBuffer(ir.Buffer("x", Var("x", PointerType(DataType.parse("int32"))),
                                    "float32", (4,)), ir.Evaluate(ir.const(0)))).map(
        lambda d: ir.AllocBuffer(d.buffer, d.body)),
)


@SETTINGS
@given(stmts, bad_fragments, st.booleans())
def test_programs_with_an_ill_typed_fragment_are_rejected(body, bad, first):
    func = _func(ir.seq(bad, body) if first else ir.seq(body, bad))
    try:
        verify_types(func)
    except vkir.TypeCheckError:
        return
    raise AssertionError("ill-typed program accepted:\n" + str(func.body))


# random well-typed programs: accepted, well formed, and runnable
def _typed(dtype):
    v = VARS[dtype]
    leaf = st.one_of(st.just(v), st.integers(-50, 50).map(lambda c: _const(dtype, c)))

    def grow(children):
        return st.one_of(
            st.builds(lambda c, a, b: c(a, b), st.sampled_from([ir.Add, ir.Sub, ir.Mul, ir.Min,
                                                                 ir.Max]), children, children),
            st.builds(lambda a, b, c, d: ir.Select(ir.LT(a, b), c, d), children, children,
                      children, children),
            st.builds(lambda a: ir.Cast(dtype, ir.Cast("float32" if dtype == "int32" else "int32",
                                                       a)), children),
        )
    return st.recursive(leaf, grow, max_leaves=10)


@SETTINGS
@given(_typed("int32"), _typed("float32"))
def test_random_well_typed_programs_are_accepted_and_run(ei, ef):
    out_i = ir.decl_buffer((1,), "int32", "oi")
    out_f = ir.decl_buffer((1,), "float32", "of")
    x, f = VARS["int32"], VARS["float32"]
    body = ir.seq(ir.BufferStore(out_i, ei, (0,)), ir.BufferStore(out_f, ef, (0,)))
    func = ir.PrimFunc((out_i.data, out_f.data, x, f), body,
                       {out_i.data: out_i, out_f.data: out_f})
    assert verify_types(func) is None
    assert verify_well_formed(func) is None
    oi, of = np.zeros(1, np.int32), np.zeros(1, np.float32)
    vkir.interpret(func, oi, of, 7, 1.5)
    assert oi[0] == vkir.interpreter.evaluate(ei, {x: 7})
