"""`vkir.ops.conv2d` against TVM's dlight default schedule of the same convolution, imported through
vkir (vkir.tvm.dlight + vkir.from_tvm), on the same device, beside numpy.

    python -m benchmarks.conv_dlight [--repeat N] [--shapes NAME ...] [--no-tune]

Shapes: the 1x32x28x28 input with 64 3x3 filters (pad 1) and the first convolutions of TVM's
ResNet-18 (7x7 stride 2 on 3x224x224; 3x3 on 64x56x56 and on 128x28x28). Every result is checked
first against numpy (float64) and TVM's own llvm build of the same TE function. The op is tuned
for the device with vkir's autotuner first (the template's `build`, which records the winner in
the on-disk cache that `vkir.ops.conv2d` then reads), unless `--no-tune`.

Timing is interleaved: each round times one call of every implementation (dlight kernel, the op,
numpy's im2col + BLAS), the order rotating from round to round, so that a change of load on a
shared host falls on all of them; the ratios are medians of the per-round ratios. Wall time per
call on device-resident arrays (submit + wait; the op's padding and weight passes included).
Needs the `vkir[tvm]` extra (apache-tvm 0.27).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

# name -> (N, C, H, W, O, KH, KW, stride, padding)
SHAPES = {
    "32x28x28 o64 3x3": (1, 32, 28, 28, 64, 3, 3, 1, 1),
    "resnet 3x224x224 o64 7x7 s2": (1, 3, 224, 224, 64, 7, 7, 2, 3),
    "resnet 64x56x56 o64 3x3": (1, 64, 56, 56, 64, 3, 3, 1, 1),
    "resnet 128x28x28 o128 3x3": (1, 128, 28, 28, 128, 3, 3, 1, 1),
}


def numpy_conv(x, w, stride, padding):
    """Cross-correlation by im2col (a strided window view) and one BLAS contraction."""
    kh, kw = w.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    cols = cols[:, :, ::stride, ::stride]
    return np.einsum("nchwij,ocij->nohw", cols, w, optimize=True)


def te_conv(shape):
    """The TE PrimFunc of the convolution (topi.nn.conv2d_nchw)."""
    from tvm import te, topi

    n, c, h, w, o, kh, kw, stride, padding = shape
    X = te.placeholder((n, c, h, w), "float32", name="X")
    Wt = te.placeholder((o, c, kh, kw), "float32", name="W")
    Y = topi.nn.conv2d_nchw(X, Wt, stride, padding, 1)
    return te.create_prim_func([X, Wt, Y])


def tvm_llvm(func, x, w, out_shape):
    """TVM's own CPU build of `func` run on x, w."""
    import tvm

    mod = tvm.compile(func, target="llvm")
    y = tvm.runtime.tensor(np.zeros(out_shape, np.float32))
    mod(tvm.runtime.tensor(x), tvm.runtime.tensor(w), y)
    return y.numpy()


def tune_op(dev, shape):
    """Tune the kernels `vkir.ops.conv2d` runs for `shape` on `dev` (cached on disk): the config
    each picks."""
    from vkir.ops.conv import tuned_configs

    return tuned_configs(dev, shape)


def interleaved(fns: dict, repeat: int) -> dict:
    """name -> list of wall seconds, one per round, the order rotating every round."""
    names = list(fns)
    for fn in fns.values():
        fn()  # warm-up
    out = {n: [] for n in names}
    for r in range(repeat):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            t0 = time.perf_counter()
            fns[name]()
            out[name].append(time.perf_counter() - t0)
    return out


def run_shape(vkir, dev, name, shape, repeat, tune, rng):
    n, c, h, w_, o, kh, kw, stride, padding = shape
    x = rng.standard_normal((n, c, h, w_)).astype(np.float32)
    w = rng.standard_normal((o, c, kh, kw)).astype(np.float32)
    want = numpy_conv(x.astype(np.float64), w.astype(np.float64), stride, padding)
    func = te_conv(shape)
    np.testing.assert_allclose(tvm_llvm(func, x, w, want.shape), want, rtol=1e-3, atol=1e-3)
    dl = vkir.build(vkir.from_tvm(vkir.tvm.dlight(func, dev), device=dev), device=dev)
    X, Wd = vkir.array(x, dev), vkir.array(w, dev)
    Yd, Yo = (vkir.empty(want.shape, "float32", dev) for _ in range(2))
    dl(X, Wd, Yd)
    np.testing.assert_allclose(Yd.numpy(), want, rtol=1e-3, atol=1e-3, err_msg=f"dlight {name}")
    configs = tune_op(dev, shape) if tune else None
    vkir.ops.conv2d(X, Wd, stride=stride, padding=padding, out=Yo)
    np.testing.assert_allclose(Yo.numpy(), want, rtol=1e-3, atol=1e-3, err_msg=f"ops {name}")
    samples = interleaved({
        "dlight": lambda: dl(X, Wd, Yd),
        "ops": lambda: vkir.ops.conv2d(X, Wd, stride=stride, padding=padding, out=Yo),
        "numpy": lambda: numpy_conv(x, w, stride, padding),
    }, repeat)
    med = {k: float(np.median(v)) for k, v in samples.items()}
    ratio = {k: float(np.median([a / b for a, b in zip(samples[k], samples["ops"])]))
             for k in ("dlight", "numpy")}
    flops = 2.0 * want.size * c * kh * kw
    print(f"{name:30s} {med['dlight'] * 1e3:9.2f} {med['ops'] * 1e3:9.2f} "
          f"{med['numpy'] * 1e3:9.2f} {ratio['dlight']:11.2f} {ratio['numpy']:10.2f} "
          f"{flops / med['ops'] / 1e9:8.1f}", flush=True)
    if configs:
        print(f"{'':30s} op configs: {configs}", flush=True)
    return med, ratio


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--shapes", nargs="*", choices=list(SHAPES), default=list(SHAPES))
    parser.add_argument("--no-tune", action="store_true",
                        help="use the op's cached or default configs, do not tune")
    args = parser.parse_args(argv)
    import vkir

    dev = vkir.device()
    rng = np.random.default_rng(0)
    print(f"device: {dev.info.name}   repeat: {args.repeat}")
    print(f"{'shape':30s} {'dlight ms':>9s} {'ops ms':>9s} {'numpy ms':>9s} {'dlight/ops':>11s} "
          f"{'numpy/ops':>10s} {'GFLOP/s':>8s}")
    for name in args.shapes:
        run_shape(vkir, dev, name, SHAPES[name], args.repeat, not args.no_tune, rng)
    print("(ratios: the other's time over the op's, median of per-round ratios; above 1 the op "
          "is faster)")


if __name__ == "__main__":
    main()
