"""The honest benchmark: CPU seconds beside wall time, `--compare` against a baseline, numpy
with the host's OpenBLAS setting and without it, and the GLSL register tile as the matmul
reference. No test asserts a time: only that each measurement is made and reported."""

import json
import sys

import numpy as np
import pytest

from vkir.benchmarks import host_numpy, report, suite


def _m(impl="vkir", median=1e-3, cpu=1e-3, workload="vadd"):
    return suite.Measurement(workload, impl, "dev", "wall_s", median, median, median, 3,
                             None, 12e6 / median / 1e9, [4], False, cpu, None, 12e6 / cpu / 1e9)


def test_compare_flags_a_vkir_row_whose_cpu_cost_grew(tmp_path):
    base = tmp_path / "base.json"
    base.write_text("".join(m.json() + "\n" for m in (_m(), _m("numpy"), _m(workload="sum"))))
    now = [_m(median=1e-3, cpu=2e-3), _m("numpy", cpu=9e-3), _m(workload="sum", cpu=1.1e-3),
           _m(workload="cumsum")]
    lines, bad = report.compare(now, report.load(base))
    assert bad == 1 and len(lines) == 2       # numpy rows and rows the baseline lacks: not compared
    assert "REGRESSION" in lines[0] and "vadd" in lines[0] and "REGRESSION" not in lines[1]


def test_compare_uses_wall_time_where_the_baseline_has_no_cpu_seconds(tmp_path):
    old = _m().__dict__ | {"cpu_s": None}
    base = tmp_path / "base.json"
    base.write_text(json.dumps(old) + "\n")
    lines, bad = report.compare([_m(median=3e-3, cpu=1e-3)], report.load(base))
    assert bad == 1 and " time " in lines[0]


def test_table_gives_work_per_cpu_second_beside_wall_time():
    text = report.format_table([_m(cpu=2e-3), _m("numpy", median=5e-4, cpu=5e-4)])
    head, _, row = text.splitlines()[:3]
    assert "vkir per CPU-s" in head and "numpy per CPU-s" in head and "CPU vkir/numpy" in head
    assert "6.00 GB/s" in row and "4.00" in row   # 12 MB per 2 ms of CPU; cpu ratio 2/0.5


def test_timed_calls_counts_cpu_of_every_thread():
    import threading

    def two_threads():
        t = threading.Thread(target=lambda: sum(range(300000)))
        t.start()
        sum(range(300000))
        t.join()

    wall, cpu = host_numpy.timed_calls(two_threads, 2)
    assert len(wall) == len(cpu) == 2 and all(c > 0 for c in cpu)


def test_numpy_native_runs_in_a_child_without_the_openblas_variables(monkeypatch):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    assert "OPENBLAS_CORETYPE" not in host_numpy.native_environment()
    assert "OPENBLAS_CORETYPE=Haswell" in host_numpy.host_setting()
    got = host_numpy.native_samples("matmul", (32, 32, 32), 2, timeout=300)
    assert isinstance(got, dict), got
    assert len(got["wall"]) == len(got["cpu"]) == 2 and isinstance(got["blas"], str)


def test_numpy_child_refuses_an_unknown_workload():
    got = host_numpy.native_samples("fft", (8,), 1, timeout=300)
    assert isinstance(got, str) and "fft" in got
    assert sys.executable  # the child is this interpreter


@pytest.mark.device
def test_glsl_matmul_reference_is_the_register_tile_and_exact(device):
    import vkir
    from vkir import runtime
    from vkir.benchmarks import glsl_reference

    n = 64
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    A, B, C = vkir.array(a, device), vkir.array(b, device), vkir.empty((n, n), "float32", device)
    pipe, res, groups, form = glsl_reference.matmul_launch(device, A, B, C, n, n, n)
    assert form in ("texel", "storage")
    runtime.dispatch(device, pipe, res, b"", groups)
    np.testing.assert_allclose(C.numpy(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert not glsl_reference.fits(100, 100, 100)
