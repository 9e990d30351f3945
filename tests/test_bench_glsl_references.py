"""The benchmark's GLSL vadd and sum references (benchmarks.access_forms): every vadd
form it can take (texel or storage reads, u64vec4 or vec4 stores) gives numpy's sums exactly,
so do the sum's partials, and `vkir bench`'s vadd and sum run them and name the form (no time
is asserted)."""

import numpy as np
import pytest


@pytest.mark.device
@pytest.mark.parametrize("texel", [True, False])
@pytest.mark.parametrize("wide", [True, False])
def test_glsl_vadd_forms_are_exact(vkir_device, texel, wide):
    import vkir
    from vkir.benchmarks.access_forms import vadd_glsl

    from vkir.testing import expect_features

    n = 4096
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    # u64vec4 stores declare Int64: refused by name where the device lacks shaderInt64
    with expect_features(vkir_device, *(["int64"] if wide else [])):
        k = vkir.compile_glsl(vadd_glsl(texel, wide), device=vkir_device)
    if wide and "int64" not in vkir_device.info.features:
        return
    C = vkir.empty(n, "float32", vkir_device)
    if wide:
        target = vkir.api.DeviceArray(C.buffer, (n // 8, 4), np.dtype("uint64"), vkir_device)
    else:
        target = C.reshape(n // 4, 4)
    ins = ((a.reshape(-1, 4), b.reshape(-1, 4)) if texel
           else (vkir.array(a, vkir_device).reshape(n // 4, 4),
                 vkir.array(b, vkir_device).reshape(n // 4, 4)))
    k(*ins, target, grid=(n // 1024, 1, 1))
    np.testing.assert_array_equal(C.numpy(), a + b)


@pytest.mark.device
def test_bench_vadd_runs_the_glsl_reference(vkir_device):
    from vkir.benchmarks.suite import Bench

    bench = Bench(repeat=2, quick=True)
    bench.vadd()   # checks vkir, the mirror and the GLSL reference against numpy
    assert ("glsl", "device_s") in {(m.impl, m.metric) for m in bench.results}
    assert any(note.startswith("vadd GLSL reference: chunk shader") for note in bench.notes)


@pytest.mark.device
@pytest.mark.parametrize("texel", [True, False])
def test_glsl_sum_pass_is_exact(vkir_device, texel):
    import vkir
    from vkir.benchmarks.access_forms import SUM_PARTS, sum_glsl

    n = 16 * SUM_PARTS * 2
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    k = vkir.compile_glsl(sum_glsl(texel, 2), device=vkir_device)
    P = vkir.empty(SUM_PARTS, "float32", vkir_device)
    X = x.reshape(-1, 4) if texel else vkir.array(x, vkir_device).reshape(n // 4, 4)
    k(X, P, grid=(SUM_PARTS // 8, 1, 1))
    # each partial is its run of 32 elements, summed in float32 (4 accumulators)
    want = x.reshape(SUM_PARTS, 32).astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(P.numpy(), want, rtol=1e-6)


@pytest.mark.device
def test_bench_sum_runs_the_glsl_reference(vkir_device):
    from vkir.benchmarks.suite import Bench

    bench = Bench(repeat=2, quick=True)
    bench.sum()   # checks vkir, the mirror and the GLSL reference against numpy
    assert ("glsl", "device_s") in {(m.impl, m.metric) for m in bench.results}
    assert any(note.startswith("sum GLSL reference: contiguous runs") for note in bench.notes)
