"""Every config of every vkir.ops kernel template (the lists for CPU devices, GPU vendors and the
default), checked at small sizes against numpy on the device AND in the interpreter."""

import numpy as np
import pytest

import vkir
from vkir.testing import expect_features
from vkir.autotuning import device_class
from vkir.ops import conv2d, layer_norm, matmul, softmax, sum as ops_sum, transpose
from vkir.ops.reduce import cols_kernel, rows_kernel

pytestmark = pytest.mark.device
RNG = np.random.default_rng(1)


def all_configs(tuned):
    """Every distinct config a template ships, over all device classes."""
    lists = tuned.configs.values() if isinstance(tuned.configs, dict) else [tuned.configs]
    seen, out = set(), []
    for configs in lists:
        for c in configs:
            key = tuple(sorted(c.items()))
            if key not in seen:
                seen.add(key)
                out.append(c)
    return out


def ids(configs):
    return ["-".join(f"{k}{v}" for k, v in c.items()) for c in configs]


def check(func, device, inputs, outputs, want, rtol=1e-4, atol=1e-4):
    """Run `func` on the device and in the interpreter (at the device's subgroup size); both
    must match numpy's `want`."""
    k = vkir.build(func, device=device)
    dev_out = [np.zeros_like(o) for o in outputs]
    k(*inputs, *dev_out)
    interp_out = [np.zeros_like(o) for o in outputs]
    vkir.interpret(func, *[a.copy() for a in inputs], *interp_out,
                   subgroup_size=device.info.subgroup_size)
    for got_d, got_i, w in zip(dev_out, interp_out, want):
        np.testing.assert_allclose(got_d, w, rtol=rtol, atol=atol)
        np.testing.assert_allclose(got_i, w, rtol=rtol, atol=atol)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


MATMUL = all_configs(matmul.kernel)


@pytest.mark.parametrize("config", MATMUL, ids=ids(MATMUL))
def test_matmul_configs(device, config):
    if config.get("ka") == 4:   # A as float32x4 along k: whole tiles and plain operands only
        M, N, K = config["tm"] * config["wy"], 2 * config["tn"] * config["wx"], 12
        a, b = rand(2, M, K), rand(2, K, N)
        f = matmul.kernel(M, N, K, batch=2, **config)
        check(f, device, [a, b], [np.zeros((2, M, N), np.float32)], [a @ b])
        with pytest.raises(vkir.errors.ArgumentError, match="ka=4"):
            matmul.kernel(M, N, K, bias="n", **config)
        with pytest.raises(vkir.errors.ArgumentError, match="ka=4"):
            matmul.kernel(M + 1, N, K - 1, trans_a=True, **config)
        return
    # 20 x 36 is covered by no tile exactly: the guarded path; bias + clip exercises the fusion
    M, N, K = 20, 36, 5
    a, b, bias = rand(M, K), rand(K, N), rand(N)
    f = matmul.kernel(M, N, K, bias="n", activation=("clip", -1.0, 1.5), **config)
    check(f, device, [a, b, bias], [np.zeros((M, N), np.float32)],
          [np.clip(a @ b + bias, -1.0, 1.5)])


PLAIN = [c for c in MATMUL if "ka" not in c]   # the ka=4 family takes plain operands only


@pytest.mark.parametrize("config", PLAIN[:2], ids=ids(PLAIN[:2]))
def test_matmul_exact_tiles_batched_transposed(device, config):
    M = config["tm"] * config["wy"]
    N = config["tn"] * config["wx"]
    K = 3
    a, b = rand(2, K, M), rand(2, N, K)
    f = matmul.kernel(M, N, K, batch=2, trans_a=True, trans_b=True, activation="relu", **config)
    want = np.maximum(a.transpose(0, 2, 1) @ b.transpose(0, 2, 1), 0)
    check(f, device, [a, b], [np.zeros((2, M, N), np.float32)], [want])


ROWS = all_configs(rows_kernel)


@pytest.mark.parametrize("config", ROWS, ids=ids(ROWS))
@pytest.mark.parametrize("op", ["sum", "argmax"])
def test_row_reduction_configs(device, config, op):
    x = rand(3, 64)
    f = rows_kernel(3, 64, op=op, **config)
    P = f.buffer_map[f.params[1]].shape[1].value
    outs = [np.zeros((3, P), np.float32)] + ([np.zeros((3, P), np.int32)] if op == "argmax" else [])
    # v=8 configs load 32 bytes at a time as uint64x4: devices without shaderInt64 refuse them
    with expect_features(device, *(["int64"] if config.get("v") == 8 else [])):
        k = vkir.build(f, device=device)
    if config.get("v") == 8 and "int64" not in device.info.features:
        return
    dev_out = [o.copy() for o in outs]
    k(x, *dev_out)
    interp_out = [o.copy() for o in outs]
    vkir.interpret(f, x.copy(), *interp_out)
    for got in (dev_out, interp_out):
        if op == "sum":
            np.testing.assert_allclose(got[0].sum(axis=1), x.sum(axis=1), rtol=1e-5, atol=1e-5)
        else:  # the best part holds the row maximum and its first position
            best = got[0].argmax(axis=1)
            np.testing.assert_array_equal(got[1][np.arange(3), best], x.argmax(axis=1))


COLS = all_configs(cols_kernel)


@pytest.mark.parametrize("config", COLS, ids=ids(COLS))
def test_column_reduction_configs(device, config):
    x = rand(2, 5, 8)
    check(cols_kernel(2, 5, 8, op="max", **config), device, [x],
          [np.zeros((2, 8), np.float32)], [x.max(axis=1)])


SOFTMAX = all_configs(softmax.kernel)


@pytest.mark.parametrize("config", SOFTMAX, ids=ids(SOFTMAX))
def test_softmax_configs(device, config):
    x = rand(5, 256)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    config = {**config, "subgroup_size": device.info.subgroup_size} if "subgroup" in config else config
    check(softmax.kernel(5, 256, **config), device, [x], [np.zeros_like(x)],
          [e / e.sum(axis=1, keepdims=True)], atol=1e-6)


LAYER_NORM = all_configs(layer_norm.kernel)


@pytest.mark.parametrize("config", LAYER_NORM, ids=ids(LAYER_NORM))
def test_layer_norm_configs(device, config):
    x, g, b = rand(3, 256), rand(256), rand(256)
    mu, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
    config = {**config, "subgroup_size": device.info.subgroup_size} if "subgroup" in config else config
    check(layer_norm.kernel(3, 256, eps=1e-3, **config), device, [x, g, b], [np.zeros_like(x)],
          [(x - mu) / np.sqrt(var + 1e-3) * g + b])


TRANSPOSE = all_configs(transpose.kernel)


@pytest.mark.parametrize("config", TRANSPOSE, ids=ids(TRANSPOSE))
def test_transpose_configs(device, config):
    x = rand(3, 4, 6)
    check(transpose.kernel((3, 4, 6), (2, 0, 1), **config), device, [x.reshape(-1)],
          [np.zeros(72, np.float32)], [x.transpose(2, 0, 1).reshape(-1)], rtol=0, atol=0)


def conv_reference(x, w, stride, padding):
    """Direct NCHW/OIHW cross-correlation in float64."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh, ow = (h + 2 * padding - kh) // stride + 1, (wd + 2 * padding - kw) // stride + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return y


CONV = all_configs(conv2d.kernel)


@pytest.mark.parametrize("config", CONV, ids=ids(CONV))
def test_conv2d_configs(device, config):
    x, w = rand(1, 2, 6, 8), rand(3, 2, 3, 3)
    if config.get("form") == "window":
        # the window form takes rows padded by the op (here to 28 columns: the 8 output
        # columns rounded up to the grid's tiles, plus the float32x4 window) and (C, KH, KW, O)
        # filters; 5 of its 8 or 16 output channels are computed and not stored
        xp = np.zeros((1, 2, 8, 40), np.float32)
        xp[:, :, 1:7, 1:9] = x
        f = conv2d.kernel(1, 2, 8, 40, 3, 3, 3, stride=1, ow=8, **config)
        check(f, device, [xp, w.transpose(1, 2, 3, 0).copy()],
              [np.zeros((1, 3, 6, 8), np.float32)], [conv_reference(x, w, 1, 1)])
        return
    f = conv2d.kernel(1, 2, 6, 8, 3, 3, 3, stride=1, padding=1, **config)
    check(f, device, [x, w], [np.zeros((1, 3, 6, 8), np.float32)], [conv_reference(x, w, 1, 1)])


def test_conv2d_window_form_needs_wide_rows():
    with pytest.raises(vkir.errors.ArgumentError, match="needs input rows of"):
        conv2d.kernel(1, 2, 8, 10, 4, 3, 3, ow=8, form="window", toc=4, tw=8, wy=1, wmax=8)
    with pytest.raises(vkir.errors.ArgumentError, match="padding=0"):
        conv2d.kernel(1, 2, 8, 40, 4, 3, 3, padding=1, form="window", toc=4, tw=8)
    with pytest.raises(vkir.errors.ArgumentError, match="unroll_kh"):
        conv2d.kernel(1, 2, 8, 40, 4, 3, 3, toc=4, tw=8, unroll_kh=1)   # the tile form


def test_device_class_of_this_device(device):
    # lavapipe is a CPU device: the ops take the "cpu" config lists there
    if device.info.kind == "cpu":
        assert device_class(device.info) == "cpu"
        assert ops_sum.kernel.configs_for(device.info)[0] == rows_kernel.configs["cpu"][0]


def test_benchmark_add_template_configs(device):
    from vkir.benchmarks.kernels import add

    for config in all_configs(add):
        # the smallest size the config takes whole: one run per invocation ("range"), or a
        # partial last workgroup ("interleave")
        n = (config.get("v", 4) * config["groups"] * config["w"] * config["vpt"]
             if "groups" in config else 1000)
        a, b = rand(n), rand(n)
        # v=8 stores uint64x4: native where the device has int64, word pairs elsewhere
        check(add.fn(n, **config), device, [a, b], [np.zeros(n, np.float32)], [a + b],
              rtol=0, atol=0)


@pytest.mark.parametrize("config", all_configs(conv2d.pad_kernel), ids=ids(all_configs(conv2d.pad_kernel)))
def test_pad_configs(device, config):
    x = rand(2, 3, 5)
    check(conv2d.pad_kernel(2, 3, 5, 2, **config), device, [x], [np.zeros((2, 7, 9), np.float32)],
          [np.pad(x, ((0, 0), (2, 2), (2, 2)))], rtol=0, atol=0)
    # `extra` zero columns on the right (the op's row padding for whole tiles)
    check(conv2d.pad_kernel(2, 3, 5, 1, extra=3, **config), device, [x],
          [np.zeros((2, 5, 10), np.float32)], [np.pad(x, ((0, 0), (1, 1), (1, 4)))], rtol=0, atol=0)


def test_subgroup_softmax_uses_subgroup_reductions_and_no_barrier(device):
    f = softmax.kernel(5, 256, subgroup=True, subgroup_size=device.info.subgroup_size)
    calls = {n.op for n in vkir.ir.walk(f) if isinstance(n, vkir.ir.Call)}
    assert {"subgroup_max", "subgroup_add"} <= calls
    assert not any(isinstance(n, vkir.ir.Barrier) for n in vkir.ir.walk(f))
    # the autotuner hands the device's subgroup size to templates that take one
    k = softmax.kernel.build(device=device, tune=False, O=5, C=256)
    assert k.config == softmax.kernel.configs_for(device.info)[0]
