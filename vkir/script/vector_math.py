"""The float vector helpers of the script: `T.dot`, `T.cross`, `T.length`, `T.normalize`,
`T.reflect`, `T.mix`, `T.clamp`, `T.smoothstep` (GLSL's names and meanings).

Each one expands, where it is called, into existing IR (lane shuffles, arithmetic, `sqrt`,
`min`/`max`), so no layer needs code of its own for them: the printer prints the expansion, and
the checker, interpreter, native loops and codegen see ordinary expressions and agree by
construction. An operand used more than once is bound once with a Let (it is evaluated once).

Types, checked exactly (a typed value never converts; a Python literal takes the type needed):
- `dot(a, b)`, `length(a)`: float vectors of 2-4 lanes (`a`, `b` of one type); a scalar of the
  element type. `normalize(a)` (a / length(a)), `reflect(i, n)` (i - 2 dot(n, i) n): vectors
  as for `dot`, the result of their type. `cross(a, b)`: float vectors of exactly 3 lanes.
- `mix(x, y, a)` (x (1 - a) + y a), `smoothstep(e0, e1, x)` (Hermite step between the edges,
  t = clamp((x - e0) / (e1 - e0), 0, 1), t t (3 - 2 t)): float scalars or vectors of 2-4 lanes;
  the weight / the edges either of the same type or a scalar of its element type.
- `clamp(x, lo, hi)` (min(max(x, lo), hi)): as `mix`, and integers too.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.dtype import DataType
from .builtins import BuildError, is_literal, literal_as, to_expr


def _vector(value, arg: int, lanes=(2, 3, 4)) -> E.PrimExpr:
    if is_literal(value):
        raise BuildError(f"expected a float vector of {_lanes_text(lanes)} lanes, got the "
                         f"literal {value!r}", arg)
    value = to_expr(value, arg)
    dt = value.dtype
    if not (isinstance(dt, DataType) and dt.is_float and dt.lanes in lanes):
        raise BuildError(f"expected a float vector of {_lanes_text(lanes)} lanes, got {dt}", arg)
    return value


def _lanes_text(lanes) -> str:
    return " or ".join(map(str, lanes)) if len(lanes) > 1 else str(lanes[0])


def _same(first: E.PrimExpr, value, arg: int) -> E.PrimExpr:
    value = to_expr(value, arg)
    if value.dtype != first.dtype:
        raise BuildError(f"expected {first.dtype} like the first operand, got {value.dtype}", arg)
    return value


def _genfloat(value, arg: int, integers: bool = False) -> E.PrimExpr:
    """A float scalar or float vector of 2-4 lanes (with `integers`, integer ones too)."""
    value = to_expr(value, arg) if not is_literal(value) else None
    if value is None:
        raise BuildError("expected a typed value (give a literal its type, e.g. T.float32(1))",
                         arg)
    dt = value.dtype
    ok = isinstance(dt, DataType) and (dt.is_float or (integers and dt.is_integer)) \
        and dt.lanes in (1, 2, 3, 4)
    if not ok:
        kind = "float or integer" if integers else "float"
        raise BuildError(f"expected a {kind} scalar or vector of 2-4 lanes, got {dt}", arg)
    return value


def _like(value, like: DataType, arg: int) -> E.PrimExpr:
    """`value` as an operand beside one of type `like`: that type, or a scalar of its element
    type (broadcast); a literal takes the element type."""
    element = like.element_of()
    if is_literal(value):
        value = literal_as(value, element, arg)
    value = to_expr(value, arg)
    if value.dtype == like:
        return value
    if value.dtype == element:
        return E.Broadcast(value, like.lanes) if like.lanes > 1 else value
    raise BuildError(f"expected {like} or {element}, got {value.dtype}", arg)


def _cheap(e: E.PrimExpr) -> bool:
    return isinstance(e, (E.Var, E.IntImm, E.FloatImm)) or \
        (isinstance(e, E.Broadcast) and _cheap(e.value))


def _bound(values, build, span):
    """`build(*values)` with each value that is not a variable or constant bound once by a Let
    (named v0, v1, ...) around it."""
    lets, names = [], []
    for k, v in enumerate(values):
        if _cheap(v):
            names.append(v)
        else:
            var = E.Var(f"v{k}", v.dtype)
            lets.append((var, v))
            names.append(var)
    out = build(*names)
    for var, v in reversed(lets):
        out = E.Let(var, v, out, span=span)
    return out


def _lane(v: E.PrimExpr, k: int) -> E.PrimExpr:
    return E.Shuffle((v,), (k,))


def _dot(a, b):
    out = E.Mul(_lane(a, 0), _lane(b, 0))
    for k in range(1, a.dtype.lanes):
        out = E.Add(out, E.Mul(_lane(a, k), _lane(b, k)))
    return out


def _const(dtype: DataType, value: float) -> E.PrimExpr:
    c = E.FloatImm(dtype.element_of(), value) if dtype.is_float else \
        E.IntImm(dtype.element_of(), int(value))
    return E.Broadcast(c, dtype.lanes) if dtype.lanes > 1 else c


def _sqrt(x):
    return E.Call(x.dtype, "sqrt", (x,))


def dot(a, b, *, span=None):
    """The dot product of two float vectors (2-4 lanes): a scalar."""
    a = _vector(a, 0)
    b = _same(a, b, 1)
    return _bound((a, b), _dot, span)


def cross(a, b, *, span=None):
    """The cross product of two 3-lane float vectors."""
    a = _vector(a, 0, lanes=(3,))
    b = _same(a, b, 1)

    def build(a, b):
        lanes = [E.Sub(E.Mul(_lane(a, i), _lane(b, j)), E.Mul(_lane(a, j), _lane(b, i)))
                 for i, j in ((1, 2), (2, 0), (0, 1))]
        return E.Shuffle(tuple(lanes), (0, 1, 2))
    return _bound((a, b), build, span)


def length(a, *, span=None):
    """The Euclidean length of a float vector (2-4 lanes): sqrt(dot(a, a))."""
    a = _vector(a, 0)
    return _bound((a,), lambda a: _sqrt(_dot(a, a)), span)


def normalize(a, *, span=None):
    """`a / length(a)` for a float vector of 2-4 lanes (NaN lanes for a zero vector)."""
    a = _vector(a, 0)
    return _bound((a,), lambda a: E.Div(a, E.Broadcast(_sqrt(_dot(a, a)), a.dtype.lanes)), span)


def reflect(i, n, *, span=None):
    """The reflection of direction `i` about the (unit) normal `n`: i - 2 dot(n, i) n."""
    i = _vector(i, 0)
    n = _same(i, n, 1)

    def build(i, n):
        scale = E.Mul(E.FloatImm(i.dtype.element_of(), 2.0), _dot(n, i))
        return E.Sub(i, E.Mul(E.Broadcast(scale, i.dtype.lanes), n))
    return _bound((i, n), build, span)


def mix(x, y, a, *, span=None):
    """Linear blend x (1 - a) + y a of float scalars or vectors; `a` of their type or a scalar."""
    x = _genfloat(x, 0)
    y = _same(x, y, 1)
    a = _like(a, x.dtype, 2)

    def build(x, y, a):
        return E.Add(E.Mul(x, E.Sub(_const(x.dtype, 1.0), a)), E.Mul(y, a))
    return _bound((x, y, a), build, span)


def clamp(x, lo, hi, *, span=None):
    """min(max(x, lo), hi) for float or integer scalars or vectors; the bounds of x's type or
    scalars of its element type."""
    x = _genfloat(x, 0, integers=True)
    lo, hi = _like(lo, x.dtype, 1), _like(hi, x.dtype, 2)
    return E.Min(E.Max(x, lo, span=span), hi, span=span)


def smoothstep(edge0, edge1, x, *, span=None):
    """0 below edge0, 1 above edge1, the Hermite curve t t (3 - 2 t) between, with
    t = clamp((x - edge0) / (edge1 - edge0), 0, 1); float scalars or vectors, the edges of x's
    type or scalars of its element type."""
    x = _genfloat(x, 2)
    e0, e1 = _like(edge0, x.dtype, 0), _like(edge1, x.dtype, 1)
    dt = x.dtype

    def build(e0, e1, x):
        ratio = E.Div(E.Sub(x, e0), E.Sub(e1, e0))
        t = E.Var("t", dt)
        curve = E.Mul(E.Mul(t, t), E.Sub(_const(dt, 3.0), E.Mul(_const(dt, 2.0), t)))
        return E.Let(t, E.Min(E.Max(ratio, _const(dt, 0.0)), _const(dt, 1.0)), curve)
    return _bound((e0, e1, x), build, span)


VECTOR_BUILDERS = {"dot": dot, "cross": cross, "length": length, "normalize": normalize,
                   "reflect": reflect, "mix": mix, "clamp": clamp, "smoothstep": smoothstep}
"""The helpers by T name (vkir.script.exprs.BUILDERS joins them to the others)."""
