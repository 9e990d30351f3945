"""`vkir.torch.op`: a @T.prim_func as the torch custom op "vkir::<name>". Outputs are new tensors
shaped from the buffer declarations, the backward is vkir.grad's adjoint kernel (checked against
torch's own autograd and, in float64 where the device has it, by torch.autograd.gradcheck's finite
differences), torch.library.opcheck passes, an input changed in place before backward is torch's
RuntimeError, and a model using the op compiles with no graph break."""

import subprocess
import sys

import pytest
import torch

import vkir
from vkir import T
from vkir.testing import expect_features


@T.prim_func
def affine_tanh(x: T.Buffer(("n", "k"), "float32"), w: T.Buffer(("k", "m"), "float32"),
                b: T.Buffer(("m",), "float32"), y: T.Buffer(("n", "m"), "float32")):
    for i in T.parallel(n):
        for j in T.parallel(m):
            acc = T.float32(0)
            for p in T.serial(k):
                acc = acc + x[i, p] * w[p, j]
            y[i, j] = T.tanh(acc + b[j])


@T.prim_func
def poly64(x: T.Buffer(("n",), "float64"), w: T.Buffer(("n",), "float64"),
           y: T.Buffer(("n",), "float64")):
    for i in T.parallel(n):
        y[i] = x[i] * w[i] * w[i] + x[i] * x[i] * x[i] - w[i] / (T.float64(2) + x[i] * x[i])


@T.prim_func
def split(x: T.Buffer(("n",), "float32"), s: T.float32, lo: T.Buffer(("n",), "float32"),
          hi: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        lo[i] = x[i] * s
        hi[i] = x[i] * x[i]


def test_vkir_torch_is_a_lazy_attribute():
    code = ("import sys, vkir; assert 'torch' not in sys.modules; "
            "assert 'torch' in dir(vkir); vkir.torch.op; assert 'torch' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_op_is_registered_once_per_function_and_name(device):
    layer = vkir.torch.op(affine_tanh, outputs=("y",))
    assert vkir.torch.op(affine_tanh, outputs=("y",)) is layer
    assert isinstance(layer, torch._library.custom_ops.CustomOpDef)
    assert hasattr(torch.ops.vkir, "affine_tanh")
    with pytest.raises(vkir.ArgumentError, match="already the op of affine_tanh"):
        vkir.torch.op(poly64, outputs=("y",), name="affine_tanh")
    with pytest.raises(vkir.ArgumentError, match="never writes output 'x'|outputs"):
        vkir.torch.op(affine_tanh, outputs=("x",), name="affine_bad")


def test_forward_and_backward_match_torch(device):
    layer = vkir.torch.op(affine_tanh, outputs=("y",))
    x = torch.randn(64, 8)
    w = torch.randn(8, 4, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    y = layer(x, w, b)
    assert y.shape == (64, 4) and y.dtype == torch.float32
    w2, b2 = w.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    ref = torch.tanh(x @ w2 + b2)
    assert torch.allclose(y, ref, atol=2e-3)
    seed = torch.randn(64, 4)
    (y * seed).sum().backward()
    (ref * seed).sum().backward()
    assert torch.allclose(w.grad, w2.grad, rtol=1e-3, atol=1e-2)
    assert torch.allclose(b.grad, b2.grad, rtol=1e-3, atol=1e-2)


def test_several_outputs_and_a_scalar_input(device):
    op = vkir.torch.op(split, outputs=("lo", "hi"))
    x = torch.randn(100, requires_grad=True)
    lo, hi = op(x, 3.0)
    assert torch.allclose(lo, 3 * x) and torch.allclose(hi, x * x)
    (lo.sum() + hi.sum()).backward()
    assert torch.allclose(x.grad, 3 + 2 * x.detach(), atol=1e-5)


def test_gradcheck_and_opcheck(device):
    # gradcheck needs float64; a device without it refuses the float64 op by name
    op = vkir.torch.op(poly64, outputs=("y",))
    x = torch.randn(37, dtype=torch.float64, requires_grad=True)
    w = torch.randn(37, dtype=torch.float64, requires_grad=True)
    with expect_features(device, "float64"):
        assert torch.autograd.gradcheck(op, (x, w))
        torch.library.opcheck(op, (x, w))


def test_opcheck_in_float32(device):
    layer = vkir.torch.op(affine_tanh, outputs=("y",))
    args = (torch.randn(16, 8), torch.randn(8, 4, requires_grad=True),
            torch.randn(4, requires_grad=True))
    torch.library.opcheck(layer, args, atol=1e-3, rtol=1e-3)


def test_an_input_changed_before_backward_is_torchs_error(device):
    layer = vkir.torch.op(affine_tanh, outputs=("y",))
    x = torch.randn(16, 8)
    w = torch.randn(8, 4, requires_grad=True)
    y = layer(x, w, torch.zeros(4))
    x.add_(1)   # saved for backward
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_a_model_compiles_with_no_graph_break(device):
    layer = vkir.torch.op(affine_tanh, outputs=("y",))

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(8, 4))
            self.b = torch.nn.Parameter(torch.zeros(4))

        def forward(self, x):
            return layer(x, self.w, self.b).square().mean()

    model, x = Model(), torch.randn(32, 8)
    explained = torch._dynamo.explain(model)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    # no graph cache across processes: a cached graph would hold an older build's op schema
    with torch._inductor.config.patch(force_disable_caches=True):
        loss = torch.compile(model)(x)
        loss.backward()
    assert torch.allclose(loss, model(x), atol=1e-5) and model.w.grad.abs().sum() > 0
