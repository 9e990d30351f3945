"""Differentiable `vkir.ops` inside a `vkir.Tape`: matmul, sum, mean, cumsum, softmax,
layer_norm, conv2d and sort (values) are recorded and their adjoints run at backward, mixed with
kernel calls; the gradients match torch's autograd of the same function in float64. Inputs
changed (outside the tape) after a recorded call read them are an ArgumentError at backward."""

import numpy as np
import pytest
import torch

import vkir
from vkir import T
from vkir.errors import ArgumentError


@T.prim_func
def square(x: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        y[i] = x[i] * x[i]


def _check(device, inputs, vk_fn, torch_fn, rtol=2e-3, atol=2e-3):
    """Seed the result of `vk_fn(*device arrays)` with random values; compare every input's
    gradient with torch's of `torch_fn` in float64."""
    rng = np.random.default_rng(0)
    arrays = [vkir.array(a, device=device) for a in inputs]
    with vkir.Tape() as tape:
        out = vk_fn(*arrays)
    seed = rng.standard_normal(out.shape).astype(np.float32)
    tape.backward({out: seed})
    refs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in inputs]
    expect = torch_fn(*refs)
    np.testing.assert_allclose(out.numpy(), expect.detach().numpy(), rtol=rtol, atol=atol)
    (expect * torch.tensor(seed, dtype=torch.float64)).sum().backward()
    for a, r in zip(arrays, refs):
        np.testing.assert_allclose(tape.grad(a).numpy(), r.grad.numpy(), rtol=rtol, atol=atol)


R = np.random.default_rng(1)


def test_sum_mean_and_cumsum(device):
    x = R.standard_normal((6, 40)).astype(np.float32)
    _check(device, [x], lambda a: vkir.ops.sum(a, axis=1), lambda a: a.sum(1))
    _check(device, [x], lambda a: vkir.ops.sum(a), lambda a: a.sum())
    _check(device, [x], lambda a: vkir.ops.mean(a, axis=0), lambda a: a.mean(0))
    _check(device, [x], lambda a: vkir.ops.cumsum(a, axis=-1), lambda a: a.cumsum(-1))
    _check(device, [x], lambda a: vkir.ops.cumsum(a, axis=0, exclusive=True),
           lambda a: a.cumsum(0) - a)


def test_matmul_softmax_and_layer_norm(device):
    a = R.standard_normal((8, 16)).astype(np.float32)
    b = R.standard_normal((16, 4)).astype(np.float32)
    bias = R.standard_normal(4).astype(np.float32)
    _check(device, [a, b, bias], lambda x, y, z: vkir.ops.matmul(x, y, bias=z),
           lambda x, y, z: x @ y + z)
    _check(device, [a, b.T.copy()], lambda x, y: vkir.ops.matmul(x, y, trans_b=True),
           lambda x, y: x @ y.T)
    _check(device, [a], lambda x: vkir.ops.softmax(x), lambda x: torch.softmax(x, -1))
    g, be = R.standard_normal(16).astype(np.float32), R.standard_normal(16).astype(np.float32)
    _check(device, [a, g, be], lambda x, y, z: vkir.ops.layer_norm(x, y, z),
           lambda x, y, z: torch.nn.functional.layer_norm(x, (16,), y, z, 1e-5))


def test_conv2d_and_sort(device):
    x = R.standard_normal((2, 3, 9, 9)).astype(np.float32)
    w = R.standard_normal((4, 3, 3, 3)).astype(np.float32)
    _check(device, [x, w], lambda a, b: vkir.ops.conv2d(a, b, stride=2, padding=1),
           lambda a, b: torch.nn.functional.conv2d(a, b, stride=2, padding=1))
    v = R.permutation(64).astype(np.float32).reshape(4, 16)
    _check(device, [v], lambda a: vkir.ops.sort(a), lambda a: torch.sort(a, -1).values)


def test_ops_and_kernels_chain(device):
    k = vkir.build(square, device=device)
    x = R.standard_normal(32).astype(np.float32)

    def chain(a):
        y = vkir.empty(32, device=device)
        k(a, y)
        return vkir.ops.cumsum(y)

    _check(device, [x], chain, lambda a: (a * a).cumsum(0))


def test_an_input_changed_before_backward_is_refused(device):
    x = vkir.array(R.standard_normal((4, 8)).astype(np.float32), device=device)
    with vkir.Tape() as tape:
        s = vkir.ops.softmax(x)
    x.write(np.zeros((4, 8), np.float32))
    with pytest.raises(ArgumentError, match="'x' of recorded call 0 .*changed"):
        tape.backward(s)
    k = vkir.build(square, device=device)
    a, y = vkir.array(np.ones(8, np.float32), device=device), vkir.empty(8, device=device)
    with vkir.Tape() as tape:
        k(a, y)
    a.write(np.full(8, 2, np.float32))
    with pytest.raises(ArgumentError, match="argument 'x' of recorded call 0"):
        tape.backward(y)


def test_op_inputs_in_a_tape_must_be_device_arrays(device):
    with vkir.Tape():
        with pytest.raises(ArgumentError, match="vkir.ops.cumsum argument 'x' is a ndarray"):
            vkir.ops.cumsum(np.ones(4, np.float32), device=device)
