"""Whether a buffer access touches an element no other invocation touches: the test that lets an
adjoint accumulate with a plain `+=` instead of an atomic add.

An index qualifies when, after inlining integer lets, it is an affine function of the enclosing
loop variables whose nonzero coefficients form a mixed radix (sorted by size, each at least the
previous one times that loop's constant extent), and every parallel loop with more than one
iteration has a nonzero coefficient: then distinct invocations reach distinct elements.
"""

from __future__ import annotations

from ..ir import Add, IntImm, Mul, Sub, Var


def linear(e, lets, depth=0):
    """{var: coefficient, None: constant} for an affine integer expression, else None."""
    if depth > 64:
        return None
    if isinstance(e, IntImm):
        return {None: e.value}
    if isinstance(e, Var):
        if e in lets:
            return linear(lets[e], lets, depth + 1)
        return {e: 1}
    if isinstance(e, (Add, Sub)):
        a, b = linear(e.a, lets, depth + 1), linear(e.b, lets, depth + 1)
        if a is None or b is None:
            return None
        sign = 1 if isinstance(e, Add) else -1
        out = dict(a)
        for k, v in b.items():
            out[k] = out.get(k, 0) + sign * v
        return out
    if isinstance(e, Mul):
        a, b = linear(e.a, lets, depth + 1), linear(e.b, lets, depth + 1)
        if a is None or b is None:
            return None
        if set(a) == {None}:
            a, b = b, a
        if set(b) != {None}:
            return None
        return {k: v * b[None] for k, v in a.items()}
    return None


def injective(indices, buffer, loops, lets) -> bool:
    """Whether the access buffer[indices], inside `loops` ((var, extent, parallel) outermost
    first), never touches an element that another invocation touches."""
    if len(indices) == 1:
        flat = linear(indices[0], lets)
    else:
        if not all(isinstance(d, IntImm) for d in buffer.shape[1:]):
            return False   # (the outermost size never enters a stride: it may be symbolic)
        flat, stride = {}, 1
        for idx, dim in zip(reversed(indices), reversed(buffer.shape)):
            part = linear(idx, lets)
            if part is None:
                return False
            for k, v in part.items():
                flat[k] = flat.get(k, 0) + v * stride
            stride *= dim.value if isinstance(dim, IntImm) else 0   # (0: the outermost)
    if flat is None:
        return False
    extents = {var: (extent, parallel) for var, extent, parallel in loops}
    terms = []
    for var, coeff in flat.items():
        if var is None or coeff == 0:
            continue
        if var not in extents:
            return False  # a size or other runtime value: no proof
        if isinstance(extents[var][0], IntImm) and extents[var][0].value == 1:
            continue  # a loop of one iteration: a constant
        terms.append((abs(coeff), var))
    for var, (extent, parallel) in extents.items():
        if parallel and flat.get(var, 0) == 0 and not (isinstance(extent, IntImm)
                                                       and extent.value == 1):
            return False  # several invocations read the same element
    terms.sort(key=lambda t: t[0])
    for (c, var), (c_next, _) in zip(terms, terms[1:]):
        extent = extents[var][0]
        if not isinstance(extent, IntImm) or c_next < c * extent.value:
            return False
    return True


def _moving(extent) -> bool:
    """Whether a loop of this extent has more than one iteration (as far as the IR tells)."""
    return not (isinstance(extent, IntImm) and extent.value <= 1)


def radix_step(form, serial) -> int | None:
    """For an affine index `form` ({var: coefficient, None: constant}) and the serial loops
    `serial` ({var: extent}): the smallest coefficient magnitude of a moving loop variable in
    it when those coefficients form a mixed radix (then two iterations that differ in those
    variables reach elements at least that far apart), 0 when no moving loop variable occurs,
    None when no such proof exists (a symbolic extent below the largest coefficient, or a
    coefficient smaller than the one below it times that loop's extent)."""
    terms = sorted((abs(c), var) for var, c in form.items()
                   if var is not None and c != 0 and var in serial and _moving(serial[var]))
    for (c, var), (c_next, _) in zip(terms, terms[1:]):
        extent = serial[var]
        if not isinstance(extent, IntImm) or c_next < c * extent.value:
            return None
    return terms[0][0] if terms else 0


def split_affine(e, loops, lets, depth=0):
    """Integer expression e as an affine function of the loop variables `loops` (a container):
    ({loop var: coefficient, None: constant}, [(term, multiplier)]) where the terms are the
    parts of e that use no loop variable (a parallel index, a size, `i * m`), kept whole; None
    where a loop variable enters otherwise (`j // 2`, `j * m`, a read at an index using j) and
    where e reads a local buffer (a mutable value: two equal-looking terms may differ). Integer
    lets are looked through."""
    if depth > 64:
        return None
    if isinstance(e, IntImm):
        return {None: e.value}, []
    if isinstance(e, Var):
        if e in loops:
            return {e: 1}, []
        if e in lets:
            return split_affine(lets[e], loops, lets, depth + 1)
        return {}, [(e, 1)]
    if isinstance(e, (Add, Sub)):
        a, b = split_affine(e.a, loops, lets, depth + 1), split_affine(e.b, loops, lets, depth + 1)
        if a is None or b is None:
            return None
        sign = 1 if isinstance(e, Add) else -1
        coeffs = dict(a[0])
        for k, v in b[0].items():
            coeffs[k] = coeffs.get(k, 0) + sign * v
        return coeffs, a[1] + [(t, sign * m) for t, m in b[1]]
    if not _uses(e, loops, lets, depth):
        return {}, [(e, 1)]
    if isinstance(e, Mul):
        a, b = split_affine(e.a, loops, lets, depth + 1), split_affine(e.b, loops, lets, depth + 1)
        if a is None or b is None:
            return None
        if set(a[0]) <= {None} and not a[1]:
            a, b = b, a
        if not (set(b[0]) <= {None} and not b[1]):
            return None   # a loop variable times a runtime value
        c = b[0].get(None, 0)
        return {k: v * c for k, v in a[0].items()}, [(t, m * c) for t, m in a[1]]
    return None


def _uses(e, loops, lets, depth=0) -> bool:
    """Whether e uses a loop variable of `loops` or reads a local buffer, looking through
    integer lets."""
    from ..ir import BufferLoad, walk

    for n in walk(e):
        if isinstance(n, BufferLoad) and n.buffer.scope != "global":
            return True
        if isinstance(n, Var) and (n in loops or n in lets and depth < 64 and
                                   _uses(lets[n], loops, lets, depth + 1)):
            return True
    return False


def distinct_iterations(indices, loops, serial, lets) -> bool:
    """Whether the access buffer[indices] reaches a different element in every iteration of the
    serial loops `loops` (their variables; the other variables held fixed): each moving loop's
    variable has a nonzero coefficient in one index whose loop coefficients form a mixed radix.
    `serial` maps every serial loop variable to its extent, `lets` inlines integer lets."""
    forms = [split_affine(i, serial, lets) for i in indices]
    for var in loops:
        if not _moving(serial[var]):
            continue
        if not any(f is not None and f[0].get(var, 0) != 0 and radix_step(f[0], serial)
                   for f in forms):
            return False
    return True


def index_forms(indices, serial, lets) -> list:
    """split_affine of each index over the serial loops `serial` (what `disjoint` compares)."""
    return [split_affine(i, serial, lets) for i in indices]


def disjoint(a, b, serial) -> bool:
    """Whether two accesses of one buffer, given as index_forms, never reach one element in any
    iterations of the serial loops (`serial`: {var: extent}): in some dimension the indices
    differ by a nonzero constant smaller than every step that iterations of the loops they
    share can make (their parts that use no loop variable equal in structure)."""
    for fa, fb in zip(a, b):
        if fa is None or fb is None or fa[1] != fb[1]:
            continue
        diff = {k: fa[0].get(k, 0) - fb[0].get(k, 0) for k in set(fa[0]) | set(fb[0])}
        if any(v for k, v in diff.items() if k is not None):
            continue
        gap = abs(diff.get(None, 0))
        step = radix_step(fa[0], serial)
        if gap and step is not None and (step == 0 or gap < step):
            return True
    return False
