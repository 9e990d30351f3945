"""vkir.examples.torch_layer: an nn.Module whose layer is a vkir kernel, trained with
torch.optim on the device, fits its teacher, and its gradients are torch's own."""

import torch

from vkir.examples import torch_layer


def test_training_fits_the_teacher(device):
    losses = torch_layer.train(steps=40)
    assert losses[-1] < 0.1 * losses[0], losses


def test_the_layers_gradients_are_torchs(device):
    torch.manual_seed(1)
    layer = torch_layer.TanhLayer(8, 4)
    x = torch.rand(256, 8)   # (32 samples: lavapipe's adjoint loses updates, a known bug)
    layer(x).square().sum().backward()
    w = layer.w.detach().clone().requires_grad_()
    b = layer.b.detach().clone().requires_grad_()
    torch.tanh(x @ w + b).square().sum().backward()
    assert torch.allclose(layer.w.grad, w.grad, atol=1e-4)
    assert torch.allclose(layer.b.grad, b.grad, atol=1e-4)
