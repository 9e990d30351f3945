"""The adjoints of the differentiable `vkir.ops` (what `vkir.Tape` and the op records of
vkir.autodiff.op_tape run backwards): each takes the op's array inputs and options as the call
bound them, its result and the seed d(loss)/d(result), all as float64 numpy arrays, and returns
{input name: d(loss)/d(input)}. They run on the host in float64 (the ops' results are float32,
so the adjoint's own rounding stays below theirs); argsort and histogram have none (integer
results), nor do min, max and argmax (ties make them not differentiable everywhere).
"""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedError

__all__ = ["ADJOINTS"]


def _sum(x, seed, axis=None, **_):
    if axis is None:
        return {"x": np.broadcast_to(seed, x.shape).copy()}
    return {"x": np.broadcast_to(np.expand_dims(seed, axis), x.shape).copy()}


def _mean(x, seed, axis=None, **_):
    count = x.size if axis is None else x.shape[axis]
    return {"x": _sum(x, seed, axis)["x"] / count}


def _cumsum(x, seed, axis=-1, exclusive=False, **_):
    # d/dx[i] of sum_j seed[j] * y[j], y[j] = sum_{k <= j} x[k]: the seeds from i on, summed
    tail = np.flip(np.cumsum(np.flip(seed, axis), axis), axis)
    return {"x": tail - seed if exclusive else tail}


def _softmax(x, seed, result, axis=-1, **_):
    inner = np.sum(seed * result, axis=axis, keepdims=True)
    return {"x": result * (seed - inner)}


def _layer_norm(x, gamma, beta, seed, eps=1e-5, **_):
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    inv = 1.0 / np.sqrt((centered ** 2).mean(axis=-1, keepdims=True) + eps)
    xhat = centered * inv
    rows = tuple(range(x.ndim - 1))
    g = seed * gamma
    c = x.shape[-1]
    dx = inv / c * (c * g - g.sum(-1, keepdims=True) - xhat * (g * xhat).sum(-1, keepdims=True))
    return {"x": dx, "gamma": (seed * xhat).sum(axis=rows), "beta": seed.sum(axis=rows)}


def _matmul(a, b, seed, bias=None, activation=None, trans_a=False, trans_b=False, **_):
    if activation is not None:
        raise UnsupportedError("vkir.Tape: vkir.ops.matmul with activation= has no adjoint; "
                               "apply the activation as a kernel after the matmul")
    A = np.swapaxes(a, -1, -2) if trans_a else a
    B = np.swapaxes(b, -1, -2) if trans_b else b
    dA, dB = seed @ np.swapaxes(B, -1, -2), np.swapaxes(A, -1, -2) @ seed
    out = {"a": np.swapaxes(dA, -1, -2) if trans_a else dA,
           "b": np.swapaxes(dB, -1, -2) if trans_b else dB}
    if bias is not None:
        out["bias"] = seed.reshape(-1, seed.shape[-1]).sum(0) if bias.ndim == 1 else seed
    return out


def _conv2d(x, w, seed, stride=1, padding=0, **_):
    n, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    oh, ow = seed.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for i in range(kh):
        for j in range(kw):
            rows = slice(i, i + stride * (oh - 1) + 1, stride)
            cols = slice(j, j + stride * (ow - 1) + 1, stride)
            dw[:, :, i, j] = np.einsum("nohw,nchw->oc", seed, xp[:, :, rows, cols])
            dxp[:, :, rows, cols] += np.einsum("nohw,oc->nchw", seed, w[:, :, i, j])
    return {"x": dxp[:, :, padding:padding + h, padding:padding + wd], "w": dw}


def _sort(x, seed, axis=-1, **_):
    order = np.argsort(x, axis=axis, kind="stable")   # the ops' sort is stable too
    out = np.zeros_like(x)
    np.put_along_axis(out, order, seed, axis=axis)
    return {"x": out}


# op name -> (its array inputs in order, adjoint(inputs..., seed=, result=, **options))
ADJOINTS = {
    "sum": (("x",), _sum),
    "mean": (("x",), _mean),
    "cumsum": (("x",), _cumsum),
    "softmax": (("x",), _softmax),
    "layer_norm": (("x", "gamma", "beta"), _layer_norm),
    "matmul": (("a", "b", "bias"), _matmul),
    "conv2d": (("x", "w"), _conv2d),
    "sort": (("x",), _sort),
}
