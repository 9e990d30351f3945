"""`vkir.ops.conv2d(x, w, stride=1, padding=0)`: 2-d convolution (cross-correlation, like deep
learning frameworks) of NCHW inputs with OIHW filters, and its kernel template
`conv2d_kernel(...)`.

Schedule: register tiling. Each invocation computes `toc` output channels x `tw` adjacent output
columns of one output row, kept in a local tile; every step of the (input channel, kh, kw)
reduction loads `tw` input values and `toc` weights and does `toc * tw` multiply-adds, vectorized
along the output columns. The op pads the input first (`pad_kernel`, one cheap pass) so that
the convolution's inner loop has no bounds tests (5x faster on lavapipe than testing every
load); the template itself also takes `padding` and then reads zeros through clamped, selected
loads.
"""

from __future__ import annotations

from ..autotuning import autotune
from ..errors import ArgumentError
from ..script import from_script
from ._common import Call, distribute_tile, view

_TEXT = '''
@T.prim_func
def conv2d(x: T.Buffer((NB, C, H, W), "float32"), w: T.Buffer((O, C, KH, KW), "float32"),
           y: T.Buffer((NB, O, OH, OW), "float32")):
    for bz in T.thread_binding(NB * OH, "blockIdx.z"):
        for by in T.thread_binding((O + BO - 1) // BO, "blockIdx.y"):
            for bx in T.thread_binding((OW + BW - 1) // BW, "blockIdx.x"):
                for ty in T.thread_binding(WY, "threadIdx.y"):
                    for tx in T.thread_binding(WX, "threadIdx.x"):
                        n = bz // OH
                        oh = bz % OH
                        acc = T.alloc_buffer((TOC, TW), "float32", scope="local")
                        for i in T.unroll(TOC, annotations={{"register_tile": 1}}):
                            for j0 in T.unroll(TW // V):
                                for j in T.vectorized(V):
                                    acc[i, j0 * V + j] = T.float32(0)
                                    for c in T.serial(C):
                                        for kh in T.serial(KH):
                                            for kw in T.serial(KW):
                                                acc[i, j0 * V + j] = acc[i, j0 * V + j] + w[T.min((by * WY + ty) * TOC + i, O - 1), c, kh, kw] * {xval}
                        for i in T.unroll(TOC):
                            for j0 in T.unroll(TW // V):
                                for j in T.vectorized(V):
{store}
'''


@autotune(configs={
    "cpu": [dict(toc=8, tw=8, wy=4, wmax=8), dict(toc=4, tw=8, wy=8, wmax=8),
            dict(toc=8, tw=4, wy=4, wmax=16), dict(toc=16, tw=4, wy=2, wmax=16),
            dict(toc=1, tw=1, wy=8, wmax=8, v=1)],
    "default": [dict(toc=4, tw=4, wy=8, wmax=16), dict(toc=1, tw=1, wy=16, wmax=16, v=1)],
}, key=("NB", "C", "H", "W", "O", "KH", "KW", "stride", "padding"))
def conv2d_kernel(NB, C, H, W, O, KH, KW, stride=1, padding=0, toc=8, tw=8, wy=4, wmax=8,
                  v=4):
    """The PrimFunc y = conv2d(x, w) for x (NB, C, H, W), w (O, C, KH, KW), y (NB, O, OH, OW):
    each invocation computes `toc` output channels x `tw` output columns (a multiple of the
    vector width `v`); `wy` x wx invocations per workgroup, wx = enough to cover a row, at most
    `wmax`."""
    for name, value in (("NB", NB), ("C", C), ("H", H), ("W", W), ("O", O), ("KH", KH),
                        ("KW", KW), ("stride", stride), ("toc", toc), ("tw", tw), ("wy", wy),
                        ("wmax", wmax), ("v", v)):
        if not isinstance(value, int) or value < 1:
            raise ArgumentError(f"conv2d kernel: {name} must be a positive int, got {value!r}")
    if not isinstance(padding, int) or padding < 0:
        raise ArgumentError(f"conv2d kernel: padding must be an int >= 0, got {padding!r}")
    OH = (H + 2 * padding - KH) // stride + 1
    OW = (W + 2 * padding - KW) // stride + 1
    if OH < 1 or OW < 1:
        raise ArgumentError(f"conv2d kernel: the {KH}x{KW} filter does not fit the "
                            f"{H}x{W} input padded by {padding}")
    if v not in (1, 2, 4) or tw % v:
        raise ArgumentError(f"conv2d kernel: tw={tw} must be a multiple of v={v} (1, 2 or 4)")
    wx = min(-(-OW // tw), wmax)
    if v > 1 and (OW % v or (wx * tw) % v):
        raise ArgumentError(f"conv2d kernel: {OW} output columns are not a multiple of the "
                            f"vector width {v}")
    ow = "(bx * WX + tx) * TW + j0 * V + j"
    ih = f"oh * {stride} + kh - {padding}" if padding else f"oh * {stride} + kh"
    iw = f"({ow}) * {stride} + kw - {padding}" if padding else f"({ow}) * {stride} + kw"
    if padding or OW % (wx * tw):
        cond = f"{ih} >= 0 and {ih} < H and {iw} >= 0 and {iw} < W"
        xval = (f"T.if_then_else({cond}, x[n, c, T.max(T.min({ih}, H - 1), 0), "
                f"T.max(T.min({iw}, W - 1), 0)], T.float32(0))")
    else:
        xval = f"x[n, c, {ih}, {iw}]"
    oc = "(by * WY + ty) * TOC + i"
    store = f"y[n, {oc}, oh, {ow}] = acc[i, j0 * V + j]"
    pad = " " * 36
    if O % (toc * wy) or OW % (wx * tw):
        store = f"{pad}if {oc} < O and {ow} < OW:\n{pad}    {store}"
    else:
        store = pad + store
    text = _TEXT.format(xval=xval, store=store)
    env = dict(NB=NB, C=C, H=H, W=W, O=O, KH=KH, KW=KW, OH=OH, OW=OW, TOC=toc, TW=tw, WX=wx,
               WY=wy, V=v, BO=toc * wy, BW=tw * wx)
    return distribute_tile(from_script(text, env=env, file="<vkir.ops.conv2d>"))


_PAD = '''
@T.prim_func
def pad2d(x: T.Buffer((NC, H, W), "float32"), y: T.Buffer((NC, HP, WP), "float32")):
    for bx in T.thread_binding((NC * HP * WP + WG - 1) // WG, "blockIdx.x"):
        for tx in T.thread_binding(WG, "threadIdx.x"):
            e = bx * WG + tx
            if e < NC * HP * WP:
                c = e // (HP * WP)
                h = e // WP % HP - PAD
                w = e % WP - PAD
                y[c, h + PAD, w + PAD] = T.if_then_else(h >= 0 and h < H and w >= 0 and w < W, x[c, T.max(T.min(h, H - 1), 0), T.max(T.min(w, W - 1), 0)], T.float32(0))
'''


@autotune(configs={"cpu": [dict(wg=64)], "default": [dict(wg=256)]},
          key=("NC", "H", "W", "padding"))
def pad_kernel(NC, H, W, padding, wg=64):
    """The PrimFunc y = x padded with `padding` zeros on each side of its last two dims, for x
    (NC, H, W): one output element per invocation, `wg` invocations per workgroup."""
    for name, value in (("NC", NC), ("H", H), ("W", W), ("padding", padding), ("wg", wg)):
        if not isinstance(value, int) or value < 1:
            raise ArgumentError(f"pad kernel: {name} must be a positive int, got {value!r}")
    env = dict(NC=NC, H=H, W=W, HP=H + 2 * padding, WP=W + 2 * padding, PAD=padding, WG=wg)
    return from_script(_PAD, env=env, file="<vkir.ops.conv2d pad>")


def conv2d(x, w, stride=1, padding=0, device=None, out=None):
    """2-d convolution (cross-correlation) of x (N, C, H, W) with filters w (O, C, KH, KW):
    y (N, O, OH, OW), OH = (H + 2 * padding - KH) // stride + 1 (likewise OW)."""
    call = Call("conv2d", {"x": x, "w": w}, device, out)
    X, Wt = call.arrays["x"], call.arrays["w"]
    if X.ndim != 4 or Wt.ndim != 4:
        raise ArgumentError(f"vkir.ops.conv2d: x (NCHW) and w (OIHW) must be 4-d, got shapes "
                            f"{list(X.shape)} and {list(Wt.shape)}")
    NB, C, H, W = (int(s) for s in X.shape)
    O, Cw, KH, KW = (int(s) for s in Wt.shape)
    if C != Cw:
        raise ArgumentError(f"vkir.ops.conv2d: x has {C} channels, w expects {Cw}")
    for name, value, least in (("stride", stride, 1), ("padding", padding, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ArgumentError(f"vkir.ops.conv2d: {name} must be an int >= {least}, "
                                f"got {value!r}")
    OH = (H + 2 * padding - KH) // stride + 1
    OW = (W + 2 * padding - KW) // stride + 1
    if OH < 1 or OW < 1:
        raise ArgumentError(f"vkir.ops.conv2d: the {KH}x{KW} filter does not fit the {H}x{W} "
                            f"input padded by {padding}")
    xd = call.device_array("x")
    if padding:
        from ..api import empty

        HP, WP = H + 2 * padding, W + 2 * padding
        padded = empty((NB, C, HP, WP), "float32", call.device)
        pad_kernel.kernel(call.device, NC=NB * C, H=H, W=W, padding=padding)(
            view(xd, (NB * C, H, W)), view(padded, (NB * C, HP, WP)))
        xd, H, W = padded, HP, WP
    k = conv2d_kernel.kernel(call.device, NB=NB, C=C, H=H, W=W, O=O, KH=KH, KW=KW,
                             stride=stride, padding=0)
    res = call.result((NB, O, OH, OW))
    k(xd, call.device_array("w"), res)
    return call.finish(res)


conv2d.kernel = conv2d_kernel
conv2d.pad_kernel = pad_kernel
