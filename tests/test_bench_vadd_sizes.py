"""benchmarks/vadd_sizes.py: every vadd form it times gives numpy's result, and a measurement
yields wall and CPU seconds per implementation (no time is asserted)."""

import pytest


@pytest.mark.device
def test_vadd_sizes_forms_are_exact_and_measured(vkir_device):
    import vkir
    from vkir.benchmarks import vadd_sizes

    calls, check = vadd_sizes.implementations(vkir, vkir_device, 4096, tuned=False)
    got = vadd_sizes.interleaved(calls, repeat=1, rounds=1)
    check()
    assert {"numpy", "parallel", "block64", "map"} <= set(got)
    assert all(w > 0 and c >= 0 for w, c in got.values())
