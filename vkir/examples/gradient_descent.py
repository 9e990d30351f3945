"""Fitting a tanh layer by gradient descent with `vkir.Tape`: the forward kernels run on the
device, the tape records them, `tape.backward` runs their adjoints (built by `vkir.grad`) and a
third kernel takes the step, every array staying on the device.

The model is Y = tanh(X W + b) (X: n samples x 4 features, W: 4 x 8, b: 8), the loss the mean
squared error against targets made by a hidden "teacher" layer, summed over the 8 outputs.
Each invocation owns one output column and walks the samples serially, so every adjoint writes
only its own column: no atomics, which runs on devices without float atomics too (SwiftShader).

    python -m vkir.examples.gradient_descent      # prints the loss every 50 steps

`reference_gradients` computes the same gradients with numpy, by hand, for the tests.
"""

from __future__ import annotations

import numpy as np

from vkir import T

FEATURES, UNITS = 4, 8


@T.prim_func
def tanh_layer(X: T.Buffer(("n", 4), "float32"), W: T.Buffer((4, 8), "float32"),
               b: T.Buffer((8,), "float32"), Y: T.Buffer(("n", 8), "float32")):
    """Y[i, j] = tanh(sum_k X[i, k] W[k, j] + b[j]); invocation j computes column j."""
    for j in T.parallel(8):
        for i in T.serial(n):
            pre = b[j]
            for k in T.serial(4):
                pre += X[i, k] * W[k, j]
            Y[i, j] = T.tanh(pre)


@T.prim_func
def mse(Y: T.Buffer(("n", 8), "float32"), target: T.Buffer(("n", 8), "float32"),
        loss: T.Buffer((8,), "float32")):
    """loss[j] = mean over samples of (Y[i, j] - target[i, j])^2."""
    for j in T.parallel(8):
        acc = T.float32(0)
        for i in T.serial(n):
            acc += (Y[i, j] - target[i, j]) * (Y[i, j] - target[i, j])
        loss[j] = acc / T.cast(n, "float32")


@T.prim_func
def sgd_step(W: T.Buffer((4, 8), "float32"), dW: T.Buffer((4, 8), "float32"),
             b: T.Buffer((8,), "float32"), db: T.Buffer((8,), "float32"), lr: T.float32):
    """W -= lr dW, b -= lr db (in place; run outside the tape)."""
    for j in T.parallel(8):
        for k in T.serial(4):
            W[k, j] = W[k, j] - lr * dW[k, j]
        b[j] = b[j] - lr * db[j]


def synthetic_data(n: int = 64, seed: int = 0):
    """(X, target): n random samples and the outputs of a random teacher layer."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, FEATURES)).astype(np.float32)
    W = rng.normal(0, 1, (FEATURES, UNITS)).astype(np.float32)
    b = rng.normal(0, 0.5, UNITS).astype(np.float32)
    return X, np.tanh(X @ W + b).astype(np.float32)


def reference_gradients(X, W, b, target):
    """(loss, dloss/dW, dloss/db) with numpy, in float64."""
    X, W, b, target = (np.asarray(a, np.float64) for a in (X, W, b, target))
    Y = np.tanh(X @ W + b)
    dY = 2 * (Y - target) / len(X)
    dpre = dY * (1 - Y * Y)
    return float(((Y - target) ** 2).mean(axis=0).sum()), X.T @ dpre, dpre.sum(axis=0)


def fit(X, target, steps: int = 200, lr: float = 0.5, seed: int = 1, device=None,
        on_step=None):
    """Fit W, b to (X, target) from a small random start; returns (W, b, losses) as numpy
    arrays and the list of per-step losses. `on_step(step, loss, tape, W, b)` is called after each
    backward pass (the tests read the tape's gradients there)."""
    import vkir

    rng = np.random.default_rng(seed)
    W = vkir.array(rng.normal(0, 0.1, (FEATURES, UNITS)).astype(np.float32), device=device)
    b = vkir.zeros((UNITS,), device=device)
    dev = W.device
    Xd, Td = vkir.array(X, device=dev), vkir.array(target, device=dev)
    Y, loss = vkir.zeros(target.shape, device=dev), vkir.zeros((UNITS,), device=dev)
    layer, cost, step_k = (vkir.build(f, device=dev) for f in (tanh_layer, mse, sgd_step))
    seed_ones = np.ones(UNITS, np.float32)   # d(total loss) / d(loss[j])
    losses = []
    for step in range(steps):
        with vkir.Tape() as tape:     # a fresh tape per step; the adjoint kernels are cached
            layer(Xd, W, b, Y)
            cost(Y, Td, loss)
        tape.backward({loss: seed_ones})
        losses.append(float(loss.numpy().sum()))
        if on_step is not None:
            on_step(step, losses[-1], tape, W, b)
        step_k(W, tape.grad(W), b, tape.grad(b), lr)
    return W.numpy(), b.numpy(), losses


def main() -> None:
    """Fit the layer on the default device and print the loss every 50 steps."""
    X, target = synthetic_data()
    _, _, losses = fit(X, target, steps=300)
    for step in range(0, len(losses), 50):
        print(f"step {step:4d}  loss {losses[step]:.5f}")
    print(f"final      loss {losses[-1]:.5f}")


if __name__ == "__main__":
    main()
