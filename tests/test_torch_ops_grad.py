"""`vkir.ops` on torch tensors that require grad are torch autograd nodes: the differentiable ops
(matmul, sum, cumsum, softmax, layer_norm, conv2d, sort) give torch's gradients (compared in
float64); the others are refused inside a Tape only, and on tensors simply return values."""

import pytest
import torch

import vkir

torch.manual_seed(0)


def _check(device, inputs, vk_fn, torch_fn, atol=2e-3):
    leaves = [t.clone().requires_grad_() for t in inputs]
    refs = [t.double().clone().requires_grad_() for t in inputs]
    got, expect = vk_fn(*leaves), torch_fn(*refs)
    assert isinstance(got, torch.Tensor) and got.requires_grad
    torch.testing.assert_close(got.double(), expect, atol=atol, rtol=atol)
    seed = torch.randn(got.shape, dtype=torch.float64)
    (got.double() * seed).sum().backward()
    (expect * seed).sum().backward()
    for leaf, ref in zip(leaves, refs):
        torch.testing.assert_close(leaf.grad.double(), ref.grad, atol=atol, rtol=atol)


def test_reductions_and_scans(device):
    x = torch.randn(5, 33)
    _check(device, [x], lambda a: vkir.ops.sum(a, axis=0, device=device), lambda a: a.sum(0))
    _check(device, [x], lambda a: vkir.ops.cumsum(a, exclusive=True, device=device),
           lambda a: a.cumsum(-1) - a)
    _check(device, [x], lambda a: vkir.ops.sort(a, device=device),
           lambda a: torch.sort(a, dim=-1, stable=True).values)


def test_matmul_norms_and_conv(device):
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    _check(device, [a, b], lambda x, y: vkir.ops.matmul(x, y, device=device), torch.matmul)
    _check(device, [a], lambda x: vkir.ops.softmax(x, device=device),
           lambda x: torch.softmax(x, -1))
    g, be = torch.randn(16), torch.randn(16)
    _check(device, [a, g, be], lambda x, y, z: vkir.ops.layer_norm(x, y, z, device=device),
           lambda x, y, z: torch.nn.functional.layer_norm(x, (16,), y, z))
    x, w = torch.randn(1, 2, 7, 7), torch.randn(3, 2, 3, 3)
    _check(device, [x, w], lambda p, q: vkir.ops.conv2d(p, q, padding=1, device=device),
           lambda p, q: torch.nn.functional.conv2d(p, q, padding=1))


def test_a_saved_input_changed_in_place_is_torchs_error(device):
    x = torch.randn(40, requires_grad=True)
    h = x * 1
    y = vkir.ops.softmax(h, device=device)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_out_with_grad_is_refused(device):
    x = torch.randn(40, requires_grad=True)
    with pytest.raises(vkir.ArgumentError, match="out= with inputs that require grad"):
        vkir.ops.cumsum(x, out=torch.empty(40), device=device)
