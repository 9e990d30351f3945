"""The TVM bridge tests need apache-tvm 0.27 (the `vkir[tvm]` extra, which `make test` installs);
under CI a missing extra is a skip, and skips fail the run."""

import pytest

pytest.importorskip("tvm", reason="apache-tvm (vkir[tvm]) is not installed")


@pytest.fixture(scope="session")
def dlight_schedule():
    """schedule(func) -> IRModule: TVM's dlight default GPU schedules for vkir's device."""
    import tvm
    from tvm.s_tir import dlight as dl

    import vkir

    rules = (dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(), dl.gpu.GeneralReduction(),
             dl.gpu.Fallback())

    def schedule(func):
        mod = tvm.IRModule({"main": func})
        with vkir.tvm.target():
            return dl.ApplyDefaultSchedule(*rules)(mod)
    return schedule
