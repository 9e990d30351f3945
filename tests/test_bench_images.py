"""The `images` workload of `vkir bench` (benchmarks/image_workloads.py) at its quick sizes:
shading into an rgba8 image and into a float32x4 buffer, and a 3x3 blur through a sampler and
through buffer loads, each measured and checked (Bench.check: the image and the buffer agree,
both blurs equal numpy's edge-padded blur)."""

import numpy as np
import pytest

from vkir.benchmarks import suite


@pytest.mark.device
def test_images_workload_measures_images_and_buffers(capsys):
    bench = suite.Bench(repeat=1, quick=True)
    bench.images()
    got = {(m.workload, m.impl, m.metric) for m in bench.results}
    assert {(w, impl, "device_s") for w in ("images_shade", "images_blur")
            for impl in ("vkir", "buffer")} <= got
    assert all(np.isfinite(m.median) and m.median > 0 for m in bench.results)
    out = capsys.readouterr().out
    assert "images_shade 256x144" in out and "image/buffer" in out
