"""The `interop` workload of `vkir bench` (benchmarks/zero_copy.py) at its quick sizes: numpy
arguments, DeviceArrays and numpy's add are all measured and checked against a + b, numpy
arguments stage nothing where the device imports host memory, and the torch round trip copies
nothing on lavapipe."""

import numpy as np
import pytest

from vkir.benchmarks import suite


@pytest.mark.device
def test_interop_workload_measures_each_way(capsys):
    bench = suite.Bench(repeat=2, quick=True)
    bench.interop()
    got = {(m.workload, m.impl) for m in bench.results}
    assert {("interop_vadd", "vkir"), ("interop_vadd", "devicearray"), ("interop_vadd", "numpy"),
            ("interop_roundtrip", "vkir"), ("interop_roundtrip", "copies")} <= got
    assert all(np.isfinite(m.median) and m.median > 0 for m in bench.results)
    out = capsys.readouterr().out
    if "llvmpipe" in bench.dev.info.name:
        assert "bytes staged per numpy-argument call: 0" in out and "(no copy)" in out
