"""benchmarks/grad_dense.py runs, small: both adjoints of the dense layer and every training step
give numpy's gradients (the benchmark checks them before timing), the gathered form gathers x, w
and b, and the replayed accumulation loop's adjoint executes stores linear in the trip count.
No time is asserted."""

import pytest


@pytest.mark.device
def test_grad_dense_runs_and_its_gradients_are_right(vkir_device, capsys):
    from benchmarks import grad_dense

    found = grad_dense.main(["--repeat", "1", "--rounds", "1", "--rows", "40", "--inputs", "6",
                             "--units", "3", "--trips", "8", "32"])
    assert found["gathered"] == ("x", "w", "b") and found["atomic"] == ()
    assert max(found["errors"].values()) < 1e-5
    assert set(found["step"]) == {"atomic", "gather", "vkir.Tape", "torch", "torch-1t"}
    (_, a8), (_, a32) = found["replay"][8]["stores"], found["replay"][32]["stores"]
    assert a32 - a8 <= 10 * (32 - 8)   # a few stores per trip (replaying: 24 * 39 / 2 more)
    assert "training step" in capsys.readouterr().out
