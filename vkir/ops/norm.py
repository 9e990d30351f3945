"""Row normalizations: `vkir.ops.softmax(x, axis=-1)` and `vkir.ops.layer_norm(x, gamma, beta,
eps)` (over the last axis), with their kernel templates `softmax_kernel(O, C, ...)` and
`layer_norm_kernel(O, C, ...)`.

Schedule: `tpr` invocations per row (threads per row), `w` invocations per workgroup, float32x4
loads. Each invocation reduces its interleaved slice of the row into a vector accumulator; with
`tpr` > 1 the slices are combined through shared memory with one barrier before and one after
(every invocation of the row reads the `tpr` values: no tree). With `subgroup`, a row is one
subgroup (`tpr` = the device's subgroup size) and the slices combine with `T.subgroup_max` /
`T.subgroup_add`: no shared memory, no barrier (the GPU schedule). With `tpr` = 1 a row is one
invocation and the kernel has no barrier either, which suits CPU devices.
"""

from __future__ import annotations

import numpy as np

from ..autotuning import autotune
from ..errors import ArgumentError
from ..script import from_script
from ._common import Call, axis_index, check_positive, view

_HEAD = '''
@T.prim_func
def {name}({params}):
    for bx in T.thread_binding((O + RPW - 1) // RPW, "blockIdx.x"):
{shared}        for tx in T.thread_binding(W, "threadIdx.x"):
            row = T.min(bx * RPW + tx // TPR, O - 1)
            lane = tx % TPR
            acc = T.alloc_buffer((V,), "float32", scope="local")
'''


def _row_reduce(name: str, init: str, update: str, combine, final: str, tpr: int, v: int,
                subgroup: bool = False) -> str:
    """Statements reducing the row slice into the let-bound scalar `name` (all lanes of the
    row agree on it). `update` is the new accumulator from `acc[v]` and the element `X`; with
    `subgroup` the row's lanes are one subgroup and combine with a subgroup reduction."""
    pad = " " * 12
    x = "x[row, (s * TPR + lane) * V + v]"
    lines = [f"{pad}for v in T.vectorized(V):", f"{pad}    acc[v] = {init}",
             f"{pad}for s in T.serial(STEPS):", f"{pad}    for v in T.vectorized(V):",
             f"{pad}        acc[v] = {update.replace('X', x)}"]
    expr = "acc[0]"
    for k in range(1, v):
        expr = combine(expr, f"acc[{k}]")
    if tpr == 1:
        lines.append(f"{pad}{name} = {final.replace('R', expr)}")
        return "\n".join(lines) + "\n"
    if subgroup:
        op = "T.subgroup_max" if combine is _MAX else "T.subgroup_add"
        lines.append(f"{pad}{name} = {final.replace('R', f'{op}({expr})')}")
        return "\n".join(lines) + "\n"
    lines += [f"{pad}sh[tx] = {expr}", f"{pad}T.barrier()"]
    expr = "sh[tx - lane]"
    for k in range(1, tpr):
        expr = combine(expr, f"sh[tx - lane + {k}]")
    lines += [f"{pad}{name} = {final.replace('R', expr)}", f"{pad}T.barrier()"]
    return "\n".join(lines) + "\n"


def _schedule(op, tpr, subgroup, subgroup_size):
    """`tpr` for the schedule: the device's subgroup size when `subgroup`."""
    if not subgroup:
        return tpr
    if not isinstance(subgroup_size, int) or subgroup_size < 1:
        raise ArgumentError(f"{op} kernel: subgroup=True needs the device's subgroup_size")
    return subgroup_size


def _pinned(func, subgroup_size):
    """`func` marked as built for `subgroup_size` (its pipeline then requires that size, and a
    device that cannot run it refuses the build); unchanged for a schedule without subgroups."""
    return func if subgroup_size is None else func.with_attr("subgroup_size", subgroup_size)


def _check(op, C, tpr, w, v):
    check_positive(f"{op} kernel", C=C, tpr=tpr, w=w, v=v)
    if v not in (1, 2, 4) or w % tpr:
        raise ArgumentError(f"{op} kernel: v must be 1, 2 or 4 and tpr ({tpr}) divide w ({w})")
    if C % (tpr * v):
        raise ArgumentError(f"{op} kernel: row length {C} is not a multiple of tpr * v = "
                            f"{tpr * v}")


def _text(name, params, body, tpr, subgroup=False):
    shared = ('        sh = T.alloc_buffer((W,), "float32", scope="shared")\n'
              if tpr > 1 and not subgroup else "")
    return _HEAD.format(name=name, params=params, shared=shared) + body


_MAX = (lambda a, b: f"T.max({a}, {b})")
_ADD = (lambda a, b: f"{a} + {b}")

_CPU = [dict(tpr=1, w=64, v=4), dict(tpr=1, w=16, v=4), dict(tpr=8, w=64, v=4),
        dict(tpr=1, w=64, v=1)]
_GPU = [dict(subgroup=True, w=256, v=4), dict(tpr=32, w=256, v=4), dict(tpr=64, w=256, v=4),
        dict(tpr=1, w=64, v=1)]


@autotune(configs={"cpu": _CPU, "default": _GPU}, key=("O", "C"))
def softmax_kernel(O, C, tpr=1, w=64, v=4, subgroup=False, subgroup_size=None):
    """The PrimFunc y = softmax(x) over the rows of x (O, C): the row maximum, the sum of
    exp(x - max), then y = exp(x - max) / sum, each pass reading the row with `v`-wide loads;
    `tpr` invocations per row (one subgroup of `subgroup_size` with `subgroup`), `w` per
    workgroup."""
    tpr = _schedule("softmax", tpr, subgroup, subgroup_size)
    _check("softmax", C, tpr, w, v)
    body = _row_reduce("mx", 'T.float32("-inf")', "T.max(acc[v], X)", _MAX, "R", tpr, v, subgroup)
    body += _row_reduce("total", "T.float32(0)", "acc[v] + T.exp(X - mx)", _ADD, "R", tpr, v,
                        subgroup)
    body += '''\
            inv = T.float32(1) / total
            if bx * RPW + tx // TPR < O:
                for s in T.serial(STEPS):
                    for v in T.vectorized(V):
                        y[row, (s * TPR + lane) * V + v] = T.exp(x[row, (s * TPR + lane) * V + v] - mx) * inv
'''
    text = _text("softmax", 'x: T.Buffer((O, C), "float32"), y: T.Buffer((O, C), "float32")',
                 body, tpr, subgroup)
    env = dict(O=O, C=C, TPR=tpr, W=w, V=v, RPW=w // tpr, STEPS=C // (tpr * v))
    return _pinned(from_script(text, env=env, file="<vkir.ops.softmax>"), tpr if subgroup else None)


@autotune(configs={"cpu": _CPU, "default": _GPU}, key=("O", "C", "eps"))
def layer_norm_kernel(O, C, eps=1e-5, tpr=1, w=64, v=4, subgroup=False, subgroup_size=None):
    """The PrimFunc y = (x - mean) / sqrt(var + eps) * gamma + beta over the rows of x (O, C)
    (gamma, beta of shape (C,)): the row mean, the mean of squared deviations (two passes, as
    exact as numpy's), then the normalized row; `tpr` invocations per row (one subgroup of
    `subgroup_size` with `subgroup`), `w` per workgroup."""
    tpr = _schedule("layer_norm", tpr, subgroup, subgroup_size)
    _check("layer_norm", C, tpr, w, v)
    inv_c = f"T.float32({1.0 / C!r})"
    body = _row_reduce("mu", "T.float32(0)", "acc[v] + X", _ADD, f"(R) * {inv_c}", tpr, v,
                       subgroup)
    body += _row_reduce("var", "T.float32(0)", "acc[v] + (X - mu) * (X - mu)", _ADD,
                        f"(R) * {inv_c}", tpr, v, subgroup)
    body += f'''\
            rstd = T.rsqrt(var + T.float32({float(eps)!r}))
            if bx * RPW + tx // TPR < O:
                for s in T.serial(STEPS):
                    for v in T.vectorized(V):
                        y[row, (s * TPR + lane) * V + v] = (x[row, (s * TPR + lane) * V + v] - mu) * rstd * gamma[(s * TPR + lane) * V + v] + beta[(s * TPR + lane) * V + v]
'''
    params = ('x: T.Buffer((O, C), "float32"), gamma: T.Buffer((C,), "float32"), '
              'beta: T.Buffer((C,), "float32"), y: T.Buffer((O, C), "float32")')
    text = _text("layer_norm", params, body, tpr, subgroup)
    env = dict(O=O, C=C, TPR=tpr, W=w, V=v, RPW=w // tpr, STEPS=C // (tpr * v))
    return _pinned(from_script(text, env=env, file="<vkir.ops.layer_norm>"), tpr if subgroup else None)


def _rows(call, name):
    X = call.arrays[name]
    if X.ndim == 0 or X.size == 0:
        raise ArgumentError(f"vkir.ops.{call.op}: {name} must have at least one element and "
                            "one dim")
    C = X.shape[-1]
    return int(X.size // C), int(C)


def softmax(x, axis=-1, device=None, out=None):
    """exp(x - max) / sum(exp(x - max)) along `axis` (default the last)."""
    call = Call("softmax", {"x": x}, device, out)
    X = call.arrays["x"]
    k = axis_index("softmax", axis, max(X.ndim, 1))
    if X.ndim and k != X.ndim - 1:
        from .layout import transpose

        perm = [d for d in range(X.ndim) if d != k] + [k]
        back = list(np.argsort(perm))
        moved = transpose(call.device_array("x"), perm)
        res = transpose(softmax(moved, axis=-1), back, out=call.out if call.out is not None
                        and not isinstance(call.out, np.ndarray) else None)
        return call.finish(res)
    O, C = _rows(call, "x")
    kern = softmax_kernel.kernel(call.device, O=O, C=C)
    res = call.result(X.shape)
    kern(view(call.device_array("x"), (O, C)), view(res, (O, C)))
    return call.finish(res)


def layer_norm(x, gamma, beta, eps=1e-5, device=None, out=None):
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last axis; gamma and beta have
    shape (x.shape[-1],)."""
    call = Call("layer_norm", {"x": x, "gamma": gamma, "beta": beta}, device, out)
    O, C = _rows(call, "x")
    for name in ("gamma", "beta"):
        if tuple(call.arrays[name].shape) != (C,):
            raise ArgumentError(f"vkir.ops.layer_norm: {name} has shape "
                                f"{list(call.arrays[name].shape)}, expected [{C}]")
    eps = float(eps)
    if not eps >= 0:
        raise ArgumentError(f"vkir.ops.layer_norm: eps must be >= 0, got {eps}")
    kern = layer_norm_kernel.kernel(call.device, O=O, C=C, eps=eps)
    res = call.result(call.arrays["x"].shape)
    kern(view(call.device_array("x"), (O, C)), call.device_array("gamma"),
         call.device_array("beta"), view(res, (O, C)))
    return call.finish(res)


softmax.kernel = softmax_kernel
layer_norm.kernel = layer_norm_kernel
