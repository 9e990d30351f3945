"""vkir/examples/gradient_descent.py: the tanh layer fitted with vkir.Tape on the device (the
loss falls below a threshold; the tape's gradients match numpy's analytic ones at every checked
step), and its adjoints need no atomics (an outer buffer size that is symbolic does not make a
column-per-invocation access shared)."""

import numpy as np

import vkir
from vkir.examples import gradient_descent as gd


def test_adjoints_write_their_own_columns_without_atomics():
    for func, wrt in ((gd.tanh_layer, ("W", "b")), (gd.mse, ("Y",))):
        assert "atomic" not in vkir.grad(func, wrt).script()


def test_fit_reduces_the_loss_with_exact_gradients(device):
    X, target = gd.synthetic_data(n=32)
    checked = []

    def check(step, loss, tape, W, b):
        if step % 20:
            return
        want_loss, dW, db = gd.reference_gradients(X, W.numpy(), b.numpy(), target)
        np.testing.assert_allclose(loss, want_loss, rtol=1e-4)
        np.testing.assert_allclose(tape.grad(W).numpy(), dW, rtol=2e-3, atol=2e-5)
        np.testing.assert_allclose(tape.grad(b).numpy(), db, rtol=2e-3, atol=2e-5)
        checked.append(step)

    W, b, losses = gd.fit(X, target, steps=60, lr=0.5, device=device, on_step=check)
    assert checked == [0, 20, 40]
    assert losses[0] > 1.0 and losses[-1] < 0.05, losses[::10]
    assert all(b_ <= a * 1.001 for a, b_ in zip(losses, losses[1:]))   # descends every step
    assert abs(gd.reference_gradients(X, W, b, target)[0] - losses[-1]) < losses[-1]
