"""CSE's node attributes: the fast paths of `cse_keys.attributes` (operator classes skipped,
DataTypes as (code, bits, lanes)) identify exactly the nodes that the plain field walk does, on
every expression of real kernels before and after lowering."""

import dataclasses

import vkir
from vkir import ir
from vkir.ops import conv2d, layer_norm, matmul, softmax
from vkir.transform.cse_keys import attributes


def _field_walk(expr) -> tuple:
    """The reference: every non-span field that holds no expression, DataTypes as they are."""
    if isinstance(expr, ir.FloatImm):
        return (expr.dtype, expr.value.hex())
    if isinstance(expr, ir.Var):
        return (expr,)
    if isinstance(expr, ir.Let):
        return (expr.var,)
    if isinstance(expr, ir.BufferLoad):
        return (expr.buffer,)
    out = []
    for f in dataclasses.fields(expr):
        value = getattr(expr, f.name)
        if f.name == "span" or isinstance(value, ir.PrimExpr):
            continue
        if isinstance(value, tuple) and any(isinstance(v, ir.PrimExpr) for v in value):
            continue
        out.append(value)
    return tuple(out)


def _kernels():
    funcs = [matmul.kernel(64, 48, 32), softmax.kernel(8, 256), layer_norm.kernel(4, 128),
             conv2d.kernel(1, 8, 16, 16, 8, 3, 3, padding=1)]
    return funcs + [vkir.lower(f) for f in funcs]


def test_attributes_identify_the_same_nodes_as_the_field_walk():
    extra = [ir.FloatImm("float32", 0.0), ir.FloatImm("float32", -0.0),
             ir.FloatImm("float16", 0.0), ir.IntImm("int32", 3), ir.IntImm("int64", 3),
             ir.IntImm("uint32", 3)]
    nodes = [n for f in _kernels() for n in ir.walk(f.body) if isinstance(n, ir.PrimExpr)]
    nodes += extra
    fast_of, walk_of = {}, {}
    for node in nodes:
        fast, walk = (type(node), attributes(node)), (type(node), _field_walk(node))
        assert fast_of.setdefault(walk, fast) == fast, node
        assert walk_of.setdefault(fast, walk) == walk, node
    assert len(fast_of) > 50  # the kernels do exercise many distinct attribute sets
    # -0.0 is not 0.0, float16 is not float32, int32 3 is not int64 3 nor uint32 3
    assert len({attributes(e) for e in extra}) == len(extra)
