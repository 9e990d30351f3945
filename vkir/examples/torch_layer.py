"""A torch `nn.Module` whose layer is a vkir kernel (`vkir.torch.op`), trained with torch.optim:
the forward runs the kernel on the Vulkan device (lavapipe by default), the backward its adjoint
kernel from `vkir.grad`, and torch does the rest (the loss, the optimizer step).

The model is y = tanh(x W + b), fitted to the outputs of a hidden "teacher" layer by Adam.

    python -m vkir.examples.torch_layer      # prints the loss every 20 steps
"""

from __future__ import annotations

import torch

import vkir
from vkir import T


@T.prim_func
def dense_tanh(x: T.Buffer(("n", "k"), "float32"), w: T.Buffer(("k", "m"), "float32"),
                b: T.Buffer(("m",), "float32"), y: T.Buffer(("n", "m"), "float32")):
    """y[i, j] = tanh(sum_p x[i, p] w[p, j] + b[j]): one invocation per output element."""
    for i in T.parallel(n):
        for j in T.parallel(m):
            acc = T.float32(0)
            for p in T.serial(k):
                acc += x[i, p] * w[p, j]
            y[i, j] = T.tanh(acc + b[j])


class TanhLayer(torch.nn.Module):
    """A dense tanh layer of `inputs` -> `outputs` units whose forward is a vkir kernel."""

    def __init__(self, inputs: int, outputs: int):
        super().__init__()
        self.op = vkir.torch.op(dense_tanh, outputs=("y",))   # the op "vkir::dense_tanh"
        self.w = torch.nn.Parameter(torch.randn(inputs, outputs) / inputs ** 0.5)
        self.b = torch.nn.Parameter(torch.zeros(outputs))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """tanh(x w + b), computed by the kernel."""
        return self.op(x, self.w, self.b)


def train(steps: int = 100, n: int = 256, inputs: int = 8, outputs: int = 4, seed: int = 0,
          report=None) -> list[float]:
    """Fit a TanhLayer to a random teacher with Adam; the losses, one per step."""
    torch.manual_seed(seed)
    x = torch.rand(n, inputs) * 2 - 1
    teacher = torch.tanh(x @ torch.randn(inputs, outputs) + 0.1)
    model = TanhLayer(inputs, outputs)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), teacher)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if report is not None and step % 20 == 0:
            report(step, losses[-1])
    return losses


def main() -> None:
    """Train and print the losses."""
    losses = train(report=lambda step, loss: print(f"step {step:3d}  loss {loss:.5f}"))
    print(f"final loss {losses[-1]:.5f} (from {losses[0]:.5f})")


if __name__ == "__main__":
    main()
