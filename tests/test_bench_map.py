"""`vkir bench --workload map`: vkir.map(add) beside the tuned hand-written vadd and numpy, each
result checked exactly against numpy, rows with CPU seconds (no time is asserted)."""

import pytest


@pytest.mark.device
def test_map_workload_rows(vkir_device):
    from vkir.benchmarks.suite import Bench, format_table

    bench = Bench(repeat=2, quick=True)
    bench.map()   # checks the map and the hand kernel against numpy
    got = {(m.impl, m.metric) for m in bench.results}
    assert got == {(i, "wall_s") for i in ("vkir", "vkir_mirror", "numpy")}
    assert all(m.workload == "map" and m.size == [1 << 16] and m.cpu_s is not None
               for m in bench.results)
    assert "map" in format_table(bench.results)
