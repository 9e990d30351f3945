"""benchmarks/torch_op.py: the per-call forms (kernel on DeviceArrays, on tensors, as a torch op)
compute the same result, and the three training steps (torch op, vkir.Tape, torch) give the
same gradients (no time is asserted)."""

import numpy as np
import pytest


@pytest.mark.device
def test_every_form_computes_the_same(vkir_device):
    import torch

    import vkir
    from vkir.benchmarks import torch_op

    forms, check = torch_op.call_forms(vkir, torch, 4096)
    check()
    steps = torch_op.step_forms(vkir, torch, n=256, k=32, m=16)
    ref = steps["torch"]()
    for name, step in steps.items():
        dw, db = step()
        np.testing.assert_allclose(dw, ref[0], atol=1e-4, err_msg=name)
        np.testing.assert_allclose(db, ref[1], atol=1e-4, err_msg=name)
    assert torch_op.median(forms["op"], 2) > 0
