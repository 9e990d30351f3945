"""Buffers, pipelines, dispatch, push constants, launch reuse and timing, with the GLSL shaders."""

import gc
import struct

import numpy as np
import pytest

from vkir.errors import ArgumentError, UnsupportedError


def _vadd(device, n, rng, glsl):
    from vkir import runtime as rt

    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    A, B, C = rt.Buffer(device, a.nbytes), rt.Buffer(device, b.nbytes), rt.Buffer(device, a.nbytes)
    A.write(a)
    B.write(b)
    pipe = rt.get_pipeline(device, glsl("vadd"), "main", (0, 1, 2), 4)
    groups = (min((n + 255) // 256, 64), 1, 1)
    rt.dispatch(device, pipe, [A, B, C], struct.pack("<I", n), groups)
    c = np.empty(n, np.float32)
    C.read(c)
    return c, a + b


@pytest.mark.parametrize("n", [1, 63, 64, 1000, 1 << 16])
def test_vadd(device, n, glsl):
    got, want = _vadd(device, n, np.random.default_rng(n), glsl)
    np.testing.assert_array_equal(got, want)


def test_vadd_through_staging_buffers(device, glsl):
    """Device-local buffers with staging copies (the discrete-GPU path), forced on lavapipe."""
    saved = device.host_visible_buffers
    device.host_visible_buffers = False
    try:
        got, want = _vadd(device, 5000, np.random.default_rng(1), glsl)
    finally:
        device.host_visible_buffers = saved
    np.testing.assert_array_equal(got, want)


def test_push_constants_int_and_float(device, glsl):
    from vkir import runtime as rt

    n = 100
    x = np.arange(n, dtype=np.float32)
    X, Y = rt.Buffer(device, x.nbytes), rt.Buffer(device, x.nbytes)
    X.write(x)
    Y.fill_zero()
    pipe = rt.get_pipeline(device, glsl("scale"), "main", (0, 1), 12)
    rt.dispatch(device, pipe, [X, Y], struct.pack("<iff", 70, 2.5, -1.0), (2, 1, 1))
    y = Y.read(np.empty(n, np.float32))
    np.testing.assert_array_equal(y[:70], 2.5 * x[:70] - 1.0)
    np.testing.assert_array_equal(y[70:], 0)


def test_shared_memory_reduction(device, glsl):
    from vkir import runtime as rt

    n, groups = 100_000, 32
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    X, P, T = rt.Buffer(device, x.nbytes), rt.Buffer(device, groups * 4), rt.Buffer(device, 4)
    X.write(x)
    pipe = rt.get_pipeline(device, glsl("sum"), "main", (0, 1), 4)
    rt.dispatch(device, pipe, [X, P], struct.pack("<I", n), (groups, 1, 1))
    rt.dispatch(device, pipe, [P, T], struct.pack("<I", groups), (1, 1, 1))
    total = T.read(np.empty(1, np.float32))[0]
    assert total == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-5)


def test_matmul_and_softmax_shaders(device, glsl):
    from vkir import runtime as rt

    rng = np.random.default_rng(3)
    M, N, K = 37, 50, 70
    a, b = rng.standard_normal((M, K), dtype=np.float32), rng.standard_normal((K, N), dtype=np.float32)
    A, B, C = rt.Buffer(device, a.nbytes), rt.Buffer(device, b.nbytes), rt.Buffer(device, M * N * 4)
    A.write(a)
    B.write(b)
    pipe = rt.get_pipeline(device, glsl("matmul"), "main", (0, 1, 2), 12)
    rt.dispatch(device, pipe, [A, B, C], struct.pack("<III", M, N, K), ((N + 15) // 16, (M + 15) // 16, 1))
    np.testing.assert_allclose(C.read(np.empty((M, N), np.float32)), a @ b, rtol=1e-4, atol=1e-4)

    rows, cols = 5, 300
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    X, Y = rt.Buffer(device, x.nbytes), rt.Buffer(device, x.nbytes)
    X.write(x)
    pipe = rt.get_pipeline(device, glsl("softmax"), "main", (0, 1), 8)
    rt.dispatch(device, pipe, [X, Y], struct.pack("<II", rows, cols), (rows, 1, 1))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(Y.read(np.empty_like(x)), e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_pipelines_and_launches_are_cached(device, glsl):
    from vkir import runtime as rt

    words = glsl("vadd")
    pipe = rt.get_pipeline(device, words, "main", (0, 1, 2), 4)
    assert rt.get_pipeline(device, bytes(words), "main", (0, 1, 2), 4) is pipe
    bufs = [rt.Buffer(device, 64) for _ in range(3)]
    push = struct.pack("<I", 16)
    launch = rt.get_launch(device, pipe, bufs, push, (1, 1, 1))
    assert rt.get_launch(device, pipe, bufs, push, (1, 1, 1)) is launch
    assert rt.get_launch(device, pipe, bufs, struct.pack("<I", 8), (1, 1, 1)) is not launch
    other = rt.Buffer(device, 64)
    assert rt.get_launch(device, pipe, [other, bufs[1], bufs[2]], push, (1, 1, 1)) is not launch
    # freeing a buffer destroys it (at the next runtime call) with the launches that used it
    serial = other.serial
    del other
    gc.collect()
    device.collect()
    assert serial not in device._live_buffers
    assert not any(serial in l.serials for l in device.launches.values())


def test_buffers_are_freed_with_their_python_objects(device, glsl):
    from vkir import runtime as rt

    before = len(device._live_buffers)
    bufs = [rt.Buffer(device, 1 << 16) for _ in range(10)]
    assert len(device._live_buffers) == before + 10
    del bufs  # freed right away: no collect() or later allocation needed
    assert len(device._live_buffers) == before


def test_profile_uses_timestamps(device, glsl):
    from vkir import runtime as rt

    n = 1 << 16
    bufs = [rt.Buffer(device, 4 * n) for _ in range(3)]
    pipe = rt.get_pipeline(device, glsl("vadd"), "main", (0, 1, 2), 4)
    t = rt.profile(device, pipe, bufs, struct.pack("<I", n), (64, 1, 1), repeat=5)
    assert t.n == 5 and 0 < t.min <= t.median <= t.max < 1.0
    assert t.source == ("timestamp" if device.timestamp_bits else "wall")


def test_limits_are_checked_before_dispatch(device, glsl):
    from vkir import runtime as rt

    pipe = rt.get_pipeline(device, glsl("vadd"), "main", (0, 1, 2), 4)
    bufs = [rt.Buffer(device, 64) for _ in range(3)]
    too_many = device.info.limits.max_workgroup_count[0] + 1
    with pytest.raises(UnsupportedError, match="maxComputeWorkGroupCount"):
        rt.dispatch(device, pipe, bufs, struct.pack("<I", 1), (too_many, 1, 1))
    with pytest.raises(ArgumentError, match="bindings"):
        rt.dispatch(device, pipe, bufs[:2], struct.pack("<I", 1), (1, 1, 1))
    with pytest.raises(UnsupportedError, match="maxPushConstantsSize"):
        rt.get_pipeline(device, glsl("vadd"), "main", (0, 1, 2), device.info.limits.max_push_constant_bytes + 4)
    with pytest.raises(UnsupportedError, match="maxStorageBufferRange"):
        rt.Buffer(device, device.info.limits.max_storage_buffer_range + 1)


def test_device_errors_name_the_vkresult(_vulkan_device):  # needs the loader (skips without)
    from vkir.errors import DeviceError
    from vkir.runtime._vk import check, vk

    with pytest.raises(DeviceError, match="VK_ERROR_OUT_OF_DEVICE_MEMORY"):
        check(vk.VK_ERROR_OUT_OF_DEVICE_MEMORY, "vkAllocateMemory")


def test_pipeline_cache_persists(device, tmp_path, monkeypatch):
    from vkir.runtime._vk import ffi, lib

    path = tmp_path / "cache" / "pipelines.bin"
    monkeypatch.setattr(device, "_cache_file", path)
    device._save_pipeline_cache()
    assert path.stat().st_size > 0
    cache = device._create_pipeline_cache(path)       # seeded from the file (validated on)
    lib.vkDestroyPipelineCache(device.handle, cache, ffi.NULL)
