"""Reductions: `vkir.ops.sum`, `max`, `min`, `mean` and `argmax`, along one axis or over all
elements, and their kernel templates `rows_kernel` (reduce the last axis of an (O, R) array) and
`cols_kernel` (reduce the middle axis of an (O, R, I) array).

Schedules: no barriers and no shared memory (on CPU devices a workgroup is one host thread and a
barrier costs more than the tree saves). A row reduction splits every row into `parts` interleaved
slices, each reduced by one invocation with float32x4 loads into a vector accumulator; when a row
has several parts, a second pass (the same template, one part) combines them: the multi-stage
reduction. A column reduction gives each invocation a float32x4 strip of adjacent columns, so
neighbouring invocations read neighbouring memory.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..autotuning import autotune
from ..errors import ArgumentError
from ..script import from_script
from ._common import Call, axis_index, check_positive, view

OPS = ("sum", "max", "min", "mean", "argmax")
_INIT = {"sum": "T.float32(0)", "mean": "T.float32(0)", "max": 'T.float32("-inf")',
         "min": 'T.float32("inf")', "argmax": 'T.float32("-inf")'}


def _combine(op: str, a: str, b: str) -> str:
    if op in ("sum", "mean"):
        return f"{a} + {b}"
    return f"T.{'min' if op == 'min' else 'max'}({a}, {b})"


def _check(name, value):
    check_positive("reduction kernel", **{name: value})


def _lanes_combine(op: str, V: int, indent: str) -> tuple[str, str, str]:
    """(statements, value expr, index expr) combining the V lanes of acc (and acc_i)."""
    if op != "argmax":
        expr = "acc[0]"
        for v in range(1, V):
            expr = _combine(op, expr, f"acc[{v}]")
        return "", expr, ""
    lines = [f"{indent}best = T.alloc_buffer((1,), \"float32\", scope=\"local\")",
             f"{indent}best_i = T.alloc_buffer((1,), \"int32\", scope=\"local\")",
             f"{indent}best[0] = acc[0]", f"{indent}best_i[0] = acc_i[0]"]
    for v in range(1, V):
        lines += [f"{indent}if acc[{v}] > best[0] or (acc[{v}] == best[0] and "
                  f"acc_i[{v}] < best_i[0]):",
                  f"{indent}    best[0] = acc[{v}]", f"{indent}    best_i[0] = acc_i[{v}]"]
    return "\n".join(lines) + "\n", "best[0]", "best_i[0]"


_ROWS = '''
@T.prim_func
def reduce_rows({params}):
{wide_view}    for bx in T.thread_binding((O * P + W - 1) // W, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            g = bx * W + tx
            if g < O * P:
                o = g // P
                p = g % P
                acc = T.alloc_buffer((UV,), "float32", scope="local")
{acc_i_alloc}                for u in T.unroll(UI):
                    for v in T.vectorized(VI):
                        acc[u * VI + v] = {init}
{acc_i_init}                for s in T.serial(STEPS):
                    for u in T.unroll(U):
{step}
{tail}{combine}                y[o, p] = {value}
{store_i}'''


@autotune(configs={
    # float32x4 loads: on lavapipe they are whole-texel fetches (x retyped as float32x4), twice
    # as fast per CPU-second as the uint64x4 loads of v=8 (a pointer cast: storage reads looped
    # over the SIMD lanes; benchmarks.access_forms sum_forms), which devices without int64 run
    # emulated in word pairs, slower still: v=8 is the template's, not the tuner's. At most 512 parts: 2048 or 8192
    # shorter runs cost 20-40% more CPU per element, yet tuned on a loaded host by wall time
    # they won as often as not (their extra workgroups only wait for the same two cores).
    "cpu": [dict(lanes=512, w=8, v=4, u=4, layout="range"),
            dict(lanes=256, w=8, v=4, u=4, layout="range"),
            dict(lanes=512, w=8, v=4, u=8, layout="range"),
            dict(lanes=512, w=64, v=4), dict(lanes=16, w=8, v=4), dict(lanes=512, w=64, v=1)],
    "default": [dict(lanes=65536, w=256, v=4), dict(lanes=16384, w=128, v=4),
                dict(lanes=65536, w=256, v=1)],
}, key=("O", "R", "op", "with_index", "scale"))
def rows_kernel(O, R, op="sum", with_index=False, scale=1.0, lanes=512, w=64, v=4, u=1,
                layout="interleave"):
    """The PrimFunc reducing each row of x (O, R) to y (O, P): every row is split into P parts
    (P = lanes // O, at least 1, at most the row's vector count), each reduced by one invocation
    with `v`-wide loads into `u` independent vector accumulators; `w` invocations per workgroup.
    With layout "interleave" part p takes vectors p, p + P, p + 2P, ... (any row length); with
    "range" it takes one contiguous run of the row, `u` vectors per step (a stream the host's
    prefetcher follows: the fast layout on CPU devices; the row's vectors must divide into P runs
    of whole steps). "mean" scales by `scale`; "argmax" also writes the index (y_i, int32), and
    with `with_index` it reads the indices of a previous pass (x_i) instead of the positions.

    `v=8` (layout "range" only) loads eight float32 at a time through an explicit pointer cast of
    x to uint64x4 (`T.decl_buffer`), split into two float32x4 with `T.shuffle` and
    `T.reinterpret`: on lavapipe every load costs a loop over the SIMD lanes whatever its width,
    so the widest load (32 bytes) is the cheapest per element. Devices without 64-bit integers
    (shaderInt64) run it with the uint64x4 emulated in word pairs, slower."""
    if op not in OPS:
        raise ArgumentError(f"reduction kernel: op must be one of {', '.join(OPS)}, got {op!r}")
    for name, value in (("O", O), ("R", R), ("lanes", lanes), ("w", w), ("v", v), ("u", u)):
        _check(name, value)
    if v not in (1, 2, 4, 8) or R % v:
        raise ArgumentError(f"reduction kernel: row length {R} is not a multiple of the vector "
                            f"width {v} (1, 2, 4 or 8)")
    if layout not in ("interleave", "range"):
        raise ArgumentError(f"reduction kernel: layout must be 'interleave' or 'range', got "
                            f"{layout!r}")
    if v == 8 and layout != "range":
        raise ArgumentError("reduction kernel: v=8 (uint64x4 loads) takes the range layout")
    nvec = R // v
    P = builtins.max(1, builtins.min(lanes // O, nvec // u))
    if layout == "range":
        if nvec % (P * u):
            raise ArgumentError(f"reduction kernel: {nvec} vectors per row do not split into "
                                f"{P} runs of whole {u}-vector steps")
        steps = nvec // (P * u)
        q = "(p * STEPS + s) * U + u"
    else:
        if u != 1:
            raise ArgumentError("reduction kernel: the interleaved layout takes u=1")
        steps = nvec // P
        q = "s * P + p"
    arg = op == "argmax"
    idx = f"x_i[o, ({q}) * V + v]" if with_index else f"({q}) * V + v"
    params = ['x: T.Buffer((O, R), "float32")']
    if with_index:
        params.append('x_i: T.Buffer((O, R), "int32")')
    params.append('y: T.Buffer((O, P), "float32")')
    if arg:
        params.append('y_i: T.Buffer((O, P), "int32")')

    def update(index_expr, x_expr, pad, a="acc[u * V + v]", ai="acc_i[u * V + v]"):
        if not arg:
            return f"{pad}{a} = {_combine(op, a, x_expr)}"
        return (f"{pad}{ai} = T.select({x_expr} > {a}, {index_expr}, {ai})\n"
                f"{pad}{a} = T.max({a}, {x_expr})")

    tail = ""
    if layout == "interleave" and nvec % P:
        t_idx = idx.replace("s * P", "STEPS * P")
        tail = (f"                if STEPS * P + p < NVEC:\n"
                f"                    for v in T.vectorized(V):\n"
                + update(t_idx, "x[o, (STEPS * P + p) * V + v]", " " * 24, "acc[v]", "acc_i[v]")
                + "\n")
    pad = " " * 24
    if v == 8:  # one uint64x4 load per step and u, accumulated as two float32x4 halves
        step = f"{pad}xv = xw[o, {q}]\n"
        for h in (0, 1):
            half = f'T.reinterpret(T.shuffle([xv], [{2 * h}, {2 * h + 1}]), "float32x4")'
            slot = f"T.ramp(u * 8 + {4 * h}, 1, 4)"
            pos = f"T.ramp(({q}) * 8 + {4 * h}, 1, 4)"
            step += update(f"x_i[o, {pos}]" if with_index else pos, half, pad,
                           f"acc[{slot}]", f"acc_i[{slot}]") + "\n"
        step = step.rstrip("\n")
    else:
        step = (f"{pad}for v in T.vectorized(V):\n"
                + update(idx, f"x[o, ({q}) * V + v]", pad + "    "))
    stmts, value, value_i = _lanes_combine(op, u * v, " " * 16)
    if op == "mean":
        value = f"({value}) * T.float32({float(scale)!r})"
    text = _ROWS.format(
        params=", ".join(params), init=_INIT[op],
        acc_i_alloc=(" " * 16 + 'acc_i = T.alloc_buffer((UV,), "int32", scope="local")\n')
        if arg else "",
        acc_i_init=(" " * 16 + "for u in T.unroll(UI):\n" + " " * 20 + "for v in T.vectorized(VI):\n"
                    + " " * 24 + "acc_i[u * VI + v] = 0\n") if arg else "",
        wide_view='    xw = T.decl_buffer((O, R // 8), "uint64x4", data=x.data)\n' if v == 8 else "",
        step=step, tail=tail, combine=stmts,
        value=value, store_i=(" " * 16 + f"y_i[o, p] = {value_i}\n") if arg else "")
    vi = builtins.min(v, 4)  # the accumulators are initialized in vectors of at most 4 lanes
    env = dict(O=O, R=R, P=P, W=w, V=v, U=u, UV=u * v, UI=u * v // vi, VI=vi, STEPS=steps,
               NVEC=nvec)
    return from_script(text, env=env, file="<vkir.ops.reduce rows>")


_COLS = '''
@T.prim_func
def reduce_cols({params}):
    for bx in T.thread_binding((O * (I // V) + W - 1) // W, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            g = bx * W + tx
            if g < O * (I // V):
                o = g // (I // V)
                c = g % (I // V) * V
                acc = T.alloc_buffer((V,), "float32", scope="local")
{acc_i_alloc}                for v in T.vectorized(V):
                    acc[v] = {init}
{acc_i_init}                for r in T.serial(R):
                    for v in T.vectorized(V):
{update}
                for v in T.vectorized(V):
                    y[o, c + v] = {value}
{store_i}'''


@autotune(configs={
    "cpu": [dict(w=64, v=4), dict(w=8, v=4), dict(w=64, v=1)],
    "default": [dict(w=256, v=4), dict(w=64, v=4), dict(w=256, v=1)],
}, key=("O", "R", "I", "op", "scale"))
def cols_kernel(O, R, I, op="sum", scale=1.0, w=64, v=4):
    """The PrimFunc reducing the middle axis of x (O, R, I) to y (O, I): each invocation owns
    `v` adjacent columns (a float32x4 strip) and walks the R rows; `w` invocations per
    workgroup. "argmax" also writes the row index of the maximum (y_i, int32)."""
    if op not in OPS:
        raise ArgumentError(f"reduction kernel: op must be one of {', '.join(OPS)}, got {op!r}")
    for name, value in (("O", O), ("R", R), ("I", I), ("w", w), ("v", v)):
        _check(name, value)
    if v not in (1, 2, 4) or I % v:
        raise ArgumentError(f"reduction kernel: {I} columns are not a multiple of the vector "
                            f"width {v} (1, 2 or 4)")
    arg = op == "argmax"
    params = ['x: T.Buffer((O, R, I), "float32")', 'y: T.Buffer((O, I), "float32")']
    if arg:
        params.append('y_i: T.Buffer((O, I), "int32")')
    pad = " " * 24
    x = "x[o, r, c + v]"
    if arg:
        upd = (f"{pad}acc_i[v] = T.select({x} > acc[v], T.broadcast(r, V), acc_i[v])\n"
               f"{pad}acc[v] = T.max(acc[v], {x})")
        upd = upd.replace("T.broadcast(r, V)", "r")
    else:
        upd = f"{pad}acc[v] = {_combine(op, 'acc[v]', x)}"
    value = "acc[v]" if op != "mean" else f"acc[v] * T.float32({float(scale)!r})"
    text = _COLS.format(
        params=", ".join(params), init=_INIT[op], update=upd, value=value,
        acc_i_alloc=(" " * 16 + 'acc_i = T.alloc_buffer((V,), "int32", scope="local")\n') if arg else "",
        acc_i_init=(" " * 16 + "for v in T.vectorized(V):\n" + " " * 20 + "acc_i[v] = 0\n") if arg else "",
        store_i=(" " * 16 + "for v in T.vectorized(V):\n" + " " * 20 + "y_i[o, c + v] = acc_i[v]\n")
        if arg else "")
    return from_script(text, env=dict(O=O, R=R, I=I, W=w, V=v), file="<vkir.ops.reduce cols>")


def _reduce(op, x, axis=None, device=None, out=None):
    call = Call(op, {"x": x}, device, out)
    X = call.arrays["x"]
    shape = tuple(X.shape)
    if X.size == 0:
        raise ArgumentError(f"vkir.ops.{op}: reduction of an empty array")
    if axis is None:
        O, R, I, result_shape = 1, int(X.size), 1, ()
    else:
        if not shape:
            raise ArgumentError(f"vkir.ops.{op}: axis {axis} given for a 0-d array")
        k = axis_index(op, axis, len(shape))
        O = int(np.prod(shape[:k], dtype=np.int64))
        R, I = shape[k], int(np.prod(shape[k + 1:], dtype=np.int64))
        result_shape = shape[:k] + shape[k + 1:]
    dev = call.device
    xd = call.device_array("x")
    scale = 1.0 / R if op == "mean" else 1.0
    arg = op == "argmax"
    out_dtype = "int32" if arg else "float32"
    res = call.result(result_shape, out_dtype)
    from ..api import empty

    if I > 1:
        k = cols_kernel.kernel(dev, O=O, R=R, I=I, op=op, scale=scale)
        if arg:
            k(view(xd, (O, R, I)), empty((O, I), "float32", dev), view(res, (O, I)))
        else:
            k(view(xd, (O, R, I)), view(res, (O, I)))
        return call.finish(res)
    k1 = rows_kernel.kernel(dev, O=O, R=R, op=op, with_index=False, scale=scale)
    P = k1.func.buffer_map[k1.func.params[1]].shape[1].value
    if P == 1:
        target = [view(res, (O, 1))]
        if arg:
            target = [empty((O, 1), "float32", dev), view(res, (O, 1))]
        k1(view(xd, (O, R)), *target)
        return call.finish(res)
    part = empty((O, P), "float32", dev)
    part_i = empty((O, P), "int32", dev) if arg else None
    k1(view(xd, (O, R)), *([part, part_i] if arg else [part]))
    # second stage: combine the P parts of every row in one invocation per row
    # (a mean's first pass already scaled each part by 1/R: the second one sums them)
    k2 = final_sum.kernel(dev, O=O, R=P, op=op, with_index=arg, scale=1.0)
    if arg:
        k2(part, part_i, empty((O, 1), "float32", dev), view(res, (O, 1)))
    else:
        k2(part, view(res, (O, 1)))
    return call.finish(res)


# the combining pass of a multi-stage row reduction: one part per row
final_sum = autotune(configs=[dict(lanes=1, w=64, v=4), dict(lanes=1, w=64, v=1)],
                  key=("O", "R", "op", "with_index", "scale"))(rows_kernel.fn)


def sum(x, axis=None, device=None, out=None):  # noqa: A001 - the op's name
    """Sum of x's elements (axis=None) or along `axis`."""
    return _reduce("sum", x, axis, device, out)


def max(x, axis=None, device=None, out=None):  # noqa: A001
    """Maximum of x's elements (axis=None) or along `axis`."""
    return _reduce("max", x, axis, device, out)


def min(x, axis=None, device=None, out=None):  # noqa: A001
    """Minimum of x's elements (axis=None) or along `axis`."""
    return _reduce("min", x, axis, device, out)


def mean(x, axis=None, device=None, out=None):
    """Mean of x's elements (axis=None) or along `axis`."""
    return _reduce("mean", x, axis, device, out)


def argmax(x, axis=None, device=None, out=None):
    """Index of the first maximum (int32) over the flattened array (axis=None) or along
    `axis`."""
    return _reduce("argmax", x, axis, device, out)


for _op in (sum, max, min, mean, argmax):
    _op.kernel = rows_kernel
    _op.cols_kernel = cols_kernel
