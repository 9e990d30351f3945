"""`vkir.ops.conv2d(x, w, stride=1, padding=0)`: 2-d convolution (cross-correlation, like deep
learning frameworks) of NCHW inputs with OIHW filters, and its kernel template
`conv2d_kernel(...)`.

Schedule: register tiling. Each invocation computes `toc` output channels x `tw` adjacent output
columns of one output row, kept in a local tile; every step of the (input channel, kh, kw)
reduction loads `tw` input values and `toc` weights and does `toc * tw` multiply-adds, vectorized
along the output columns. The op pads the input first (`pad_kernel`, one cheap pass) so that
the convolution's inner loop has no bounds tests (5x faster on lavapipe than testing every
load); the template itself also takes `padding` and then reads zeros through clamped, selected
loads. The op also pads the right side of each row, so that the columns the workgroups compute
beyond the output width (the grid rounds the width up to whole tiles) read zeros rather than
needing tests: the template takes the output width `ow` apart from the input width.

A second form, `form="window"`, suits CPU drivers that turn every storage-buffer load into a
loop over the SIMD lanes (llvmpipe): per (input channel, filter row) each invocation loads the
input window its `tw` output columns need once, as float32x4 vectors, into registers and
reuses it for every filter column (a 3-wide filter reads 10 values instead of 24, a 7-wide one
at stride 2 reads 21 instead of 56); it reads the filters in (C, KH, KW, O) layout, so the
`toc` weights of one step are float32x4 loads too (the op transposes the filters once per call).
The filter columns are the innermost loop, so each accumulator (a tile this large lives on
llvmpipe's stack) is loaded and stored once per filter row rather than once per column: 1.4x per
CPU-second on lavapipe (ResNet's 64-channel 56 x 56 3 x 3 layer, 16 x 8 tile: 20.1 -> 28.1 GFLOP).
The autotuner picks the form per device and shape.
"""

from __future__ import annotations

from ..autotuning import autotune
from ..errors import ArgumentError
from ..script import from_script
from ._common import Call, check_positive, distribute_tile, view

# the op pads each input row so that the grid's columns up to the output width rounded up to
# this many read inside the row (every config computes at most that many: its tw * wmax <= 64)
_COLUMN_ROUND = 64

# both forms: the grid, one invocation's tile of accumulators, and the store of the tile;
# {filters} is the filters' layout, the body between accumulates the tile
_HEAD = '''
@T.prim_func
def conv2d(x: T.Buffer((NB, C, H, W), "float32"), w: T.Buffer({filters}, "float32"),
           y: T.Buffer((NB, O, OH, OW), "float32")):
    for bz in T.thread_binding(NB * OH, "blockIdx.z"):
        for by in T.thread_binding((O + BO - 1) // BO, "blockIdx.y"):
            for bx in T.thread_binding((OW + BW - 1) // BW, "blockIdx.x"):
                for ty in T.thread_binding(WY, "threadIdx.y"):
                    for tx in T.thread_binding(WX, "threadIdx.x"):
                        n = bz // OH
                        oh = bz % OH
                        acc = T.alloc_buffer((TOC, TW), "float32", scope="local")
'''

_STORE = '''\
                        for i in T.unroll(TOC):
                            for j0 in T.unroll(TW // V):
                                for j in T.vectorized(V):
{store}
'''

_TEXT = _HEAD + '''\
                        for i in T.unroll(TOC, annotations={{"register_tile": 1}}):
                            for j0 in T.unroll(TW // V):
                                for j in T.vectorized(V):
                                    acc[i, j0 * V + j] = T.float32(0)
                                    for c in T.serial(C):
                                        for kh in T.serial(KH):
                                            for kw in T.serial(KW):
                                                acc[i, j0 * V + j] = acc[i, j0 * V + j] + w[T.min((by * WY + ty) * TOC + i, O - 1), c, kh, kw] * {xval}
''' + _STORE

_WINDOW = _HEAD + '''\
                        xw = T.alloc_buffer((1, XW), "float32", scope="local")
                        wv = T.alloc_buffer((KW, TOC), "float32", scope="local")
                        for i in T.unroll(TOC):
                            for j0 in T.unroll(TW // V):
                                for j in T.vectorized(V):
                                    acc[i, j0 * V + j] = T.float32(0)
                        for c in T.serial(C):
                            for kh in T.{kh_loop}(KH):
                                for u0 in T.unroll(XW // 4):
                                    for u in T.vectorized(4):
                                        xw[0, u0 * 4 + u] = x[n, c, oh * S + kh, (bx * WX + tx) * (TW * S) + u0 * 4 + u]
                                for kw in T.unroll(KW):
                                    for i0 in T.unroll(TOC // 4):
                                        for i in T.vectorized(4):
                                            wv[kw, i0 * 4 + i] = w[c, kh, kw, {oc4}]
                                for i in T.unroll(TOC):
                                    for j0 in T.unroll(TW // V):
                                        for kw in T.unroll(KW):
                                            for j in T.vectorized(V):
                                                acc[i, j0 * V + j] = acc[i, j0 * V + j] + wv[kw, i] * xw[0, (j0 * V + j) * S + kw]
''' + _STORE


@autotune(configs={
    # CPU devices: the window form first (lavapipe, ResNet's 64-channel 56 x 56 3 x 3 layer, per
    # CPU-second: window 16 x 8 with the filter rows unrolled 36.4 GFLOP, 32 x 8 33.7 (unrolled
    # 33.3), 16 x 8 30.3, tile form 8 x 8 8.9; SwiftShader: the window form 4-5x the tile form)
    "cpu": [dict(form="window", toc=16, tw=8, wy=1, wmax=8, unroll_kh=1),
            dict(form="window", toc=32, tw=8, wy=1, wmax=8),
            dict(toc=8, tw=8, wy=4, wmax=8), dict(toc=4, tw=8, wy=8, wmax=8),
            dict(toc=8, tw=4, wy=4, wmax=16), dict(toc=16, tw=4, wy=2, wmax=16),
            dict(form="window", toc=16, tw=8, wy=1, wmax=8),
            dict(form="window", toc=8, tw=8, wy=4, wmax=8),
            dict(form="window", toc=16, tw=8, wy=2, wmax=4),
            dict(form="window", toc=8, tw=16, wy=2, wmax=4),
            dict(form="window", toc=16, tw=4, wy=2, wmax=16),
            dict(toc=1, tw=1, wy=8, wmax=8, v=1)],
    "default": [dict(toc=4, tw=4, wy=8, wmax=16), dict(toc=1, tw=1, wy=16, wmax=16, v=1)],
}, key=("NB", "C", "H", "W", "O", "KH", "KW", "stride", "padding", "ow"))
def conv2d_kernel(NB, C, H, W, O, KH, KW, stride=1, padding=0, ow=None, toc=8, tw=8, wy=4,
                  wmax=8, v=4, form="tile", unroll_kh=0):
    """The PrimFunc y = conv2d(x, w) for x (NB, C, H, W), y (NB, O, OH, OW) and filters w
    (O, C, KH, KW), or (C, KH, KW, O) with `form="window"`: each invocation computes `toc`
    output channels x `tw` output columns (a multiple of the vector width `v`); `wy` x wx
    invocations per workgroup, wx = enough to cover a row, at most `wmax`. `ow`: the output
    width when the input has more columns on the right than the output needs (default: all the
    input allows). The window form takes no `padding` and needs the input rows to reach every
    column the grid computes (`conv2d` pads them so); `unroll_kh=1` unrolls its loop over the
    filter rows (longer straight runs of multiply-adds, and KH times the code)."""
    check_positive("conv2d kernel", NB=NB, C=C, H=H, W=W, O=O, KH=KH, KW=KW, stride=stride,
                   toc=toc, tw=tw, wy=wy, wmax=wmax, v=v)
    if not isinstance(padding, int) or padding < 0:
        raise ArgumentError(f"conv2d kernel: padding must be an int >= 0, got {padding!r}")
    if form not in ("tile", "window"):
        raise ArgumentError(f"conv2d kernel: form must be 'tile' or 'window', got {form!r}")
    if unroll_kh not in (0, 1) or (unroll_kh and form != "window"):
        raise ArgumentError(f"conv2d kernel: unroll_kh must be 0 or 1, and 1 only with "
                            f"form='window', got {unroll_kh!r} with form={form!r}")
    OH = (H + 2 * padding - KH) // stride + 1
    OW = (W + 2 * padding - KW) // stride + 1
    if OH < 1 or OW < 1:
        raise ArgumentError(f"conv2d kernel: the {KH}x{KW} filter does not fit the "
                            f"{H}x{W} input padded by {padding}")
    if ow is not None:
        if not isinstance(ow, int) or not 1 <= ow <= OW:
            raise ArgumentError(f"conv2d kernel: ow must be an int from 1 to {OW}, got {ow!r}")
        OW = ow
    if v not in (1, 2, 4) or tw % v:
        raise ArgumentError(f"conv2d kernel: tw={tw} must be a multiple of v={v} (1, 2 or 4)")
    wx = min(-(-OW // tw), wmax)
    if v > 1 and (OW % v or (wx * tw) % v):
        raise ArgumentError(f"conv2d kernel: {OW} output columns are not a multiple of the "
                            f"vector width {v}")
    env = dict(NB=NB, C=C, H=H, W=W, O=O, KH=KH, KW=KW, OH=OH, OW=OW, TOC=toc, TW=tw, WX=wx,
               WY=wy, V=v, BO=toc * wy, BW=tw * wx, S=stride)
    # the last input column the grid's columns read (the grid rounds OW up to whole tiles)
    cols = -(-OW // (tw * wx)) * tw * wx
    oc = "(by * WY + ty) * TOC + i"
    ow_ = "(bx * WX + tx) * TW + j0 * V + j"
    store = f"y[n, {oc}, oh, {ow_}] = acc[i, j0 * V + j]"
    pad = " " * 36
    if O % (toc * wy) or OW % (wx * tw):
        store = f"{pad}if {oc} < O and {ow_} < OW:\n{pad}    {store}"
    else:
        store = pad + store
    if form == "window":
        env["XW"] = xw = -(-((tw - 1) * stride + KW) // 4) * 4
        if padding or toc % 4 or v != 4:
            raise ArgumentError("conv2d kernel: the window form takes an input padded already "
                                "(padding=0), toc a multiple of 4 and v=4")
        if (cols - tw) * stride + xw > W:
            raise ArgumentError(f"conv2d kernel: the window form needs input rows of "
                                f"{(cols - tw) * stride + xw} columns, got {W}")
        oc4 = "(by * WY + ty) * TOC + i0 * 4 + i"
        if O % (toc * wy):
            oc4 = f"T.min({oc4}, O - 1)"
        text = _WINDOW.format(filters="(C, KH, KW, O)", oc4=oc4, store=store,
                              kh_loop="unroll" if unroll_kh else "serial")
        return from_script(text, env=env, file="<vkir.ops.conv2d window>")
    ow_ = "(bx * WX + tx) * TW + j0 * V + j"
    ih = f"oh * {stride} + kh - {padding}" if padding else f"oh * {stride} + kh"
    iw = f"({ow_}) * {stride} + kw - {padding}" if padding else f"({ow_}) * {stride} + kw"
    if padding or (cols - 1) * stride + KW > W:
        cond = f"{ih} >= 0 and {ih} < H and {iw} >= 0 and {iw} < W"
        xval = (f"T.if_then_else({cond}, x[n, c, T.max(T.min({ih}, H - 1), 0), "
                f"T.max(T.min({iw}, W - 1), 0)], T.float32(0))")
    else:
        xval = f"x[n, c, {ih}, {iw}]"
    text = _TEXT.format(filters="(O, C, KH, KW)", xval=xval, store=store)
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
          key=("NC", "H", "W", "padding", "extra"))
def pad_kernel(NC, H, W, padding, extra=0, wg=64):
    """The PrimFunc y = x padded with `padding` zeros on each side of its last two dims, and
    `extra` more zero columns on the right, for x (NC, H, W): one output element per
    invocation, `wg` invocations per workgroup."""
    check_positive("pad kernel", NC=NC, H=H, W=W, wg=wg)
    for name, value in (("padding", padding), ("extra", extra)):
        if not isinstance(value, int) or value < 0:
            raise ArgumentError(f"pad kernel: {name} must be an int >= 0, got {value!r}")
    if padding + extra < 1:
        raise ArgumentError("pad kernel: nothing to pad (padding and extra are 0)")
    env = dict(NC=NC, H=H, W=W, HP=H + 2 * padding, WP=W + 2 * padding + extra, PAD=padding,
               WG=wg)
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
    plan = conv2d_plan(NB, C, H, W, O, KH, KW, stride, padding)
    dev = call.device
    xd = call.device_array("x")
    if plan["pad"] is not None:
        from ..api import empty

        HP, WP = plan["conv"]["H"], plan["conv"]["W"]
        padded = empty((NB, C, HP, WP), "float32", dev)
        pad_kernel.kernel(dev, **plan["pad"])(view(xd, (NB * C, H, W)),
                                              view(padded, (NB * C, HP, WP)))
        xd = padded
    k = conv2d_kernel.kernel(dev, **plan["conv"])
    wd = call.device_array("w")
    if k.config.get("form") == "window":  # filters in (C, KH, KW, O) layout
        from ..api import empty
        from .layout import transpose_kernel

        wt = empty((C, KH, KW, O), "float32", dev)
        transpose_kernel.kernel(dev, shape=(O, C * KH * KW), axes=(1, 0))(
            view(wd, (wd.size,)), view(wt, (wt.size,)))
        wd = wt
    res = call.result((NB, O, OH, OW))
    k(xd, wd, res)
    return call.finish(res)


def conv2d_plan(NB, C, H, W, O, KH, KW, stride, padding) -> dict:
    """The shapes of the kernels `conv2d` runs: {"pad": pad_kernel's (None: no padding pass),
    "conv": conv2d_kernel's}. The padded rows reach every column the grid computes (the output
    width rounded up to _COLUMN_ROUND, 4 columns more for the window form's float32x4 loads),
    and their width is a multiple of 4 (aligned float32x4 loads)."""
    OW = (W + 2 * padding - KW) // stride + 1
    need = (-(-OW // _COLUMN_ROUND) * _COLUMN_ROUND - 1) * stride + KW + 4
    WP = -(-max(W + 2 * padding, need) // 4) * 4
    extra = WP - W - 2 * padding
    pad = None
    if padding or extra:
        pad = dict(NC=NB * C, H=H, W=W, padding=padding, extra=extra)
    conv = dict(NB=NB, C=C, H=H + 2 * padding, W=WP, O=O, KH=KH, KW=KW, stride=stride,
                padding=0, ow=OW)
    return {"pad": pad, "conv": conv}


def tuned_configs(device, shape) -> dict:
    """Tune, with vkir's autotuner, the kernels `conv2d` runs for `shape` = (N, C, H, W, O, KH,
    KW, stride, padding) on `device` (winners cached on disk, where `conv2d` finds them):
    template name -> the config picked."""
    from ..api import resolve_device

    dev = resolve_device(device)
    plan = conv2d_plan(*shape)
    out = {}
    if plan["pad"] is not None:
        out["pad"] = pad_kernel.build(device=dev, **plan["pad"]).config
    out["conv2d"] = conv2d_kernel.build(device=dev, **plan["conv"]).config
    return out


conv2d.kernel = conv2d_kernel
conv2d.pad_kernel = pad_kernel
