"""Reliability of the runtime and the facade: device limits checked before the driver, closed
devices, lifetimes (pipelines released by dropped kernels, memory freed on collect), threads,
float scalar caching by bit pattern, overflowing shapes, device selection that never falls back."""

import dataclasses
import gc
import os
import re
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ArgumentError, DeviceError, UnsupportedError
from vkir.script import from_script


def _many_buffers_source(count: int) -> str:
    """A kernel with `count` float32 buffer parameters that adds every one into the first."""
    params = ", ".join(f"b{i}: T.Buffer((64,), \"float32\")" for i in range(count))
    total = " + ".join(f"b{i}[tx]" for i in range(1, count))
    return textwrap.dedent(f"""
        @T.prim_func
        def many({params}):
            for tx in T.thread_binding(64, "threadIdx.x"):
                b0[tx] = {total}
        """)


@pytest.fixture
def no_pipeline_creation(monkeypatch):
    """Makes any attempt to create a shader module or pipeline fail the test: the limit checks
    must raise before the driver sees anything."""
    from vkir.runtime import pipeline as runtime_pipeline

    def forbidden(what, *args):
        pytest.fail(f"{what} reached the driver")

    monkeypatch.setattr(runtime_pipeline, "call", forbidden)


def _with_limits(monkeypatch, device, **changes):
    """Pretend `device` reports different limits (as a stricter GPU would)."""
    info = device.info
    monkeypatch.setattr(device, "info", dataclasses.replace(
        info, limits=dataclasses.replace(info.limits, **changes)))


# -- 1: every limit before the driver ------------------------------------------------------------
def test_limits_include_descriptor_and_allocation_limits(device):
    lim = device.info.limits
    assert lim.max_per_stage_storage_buffers >= 4
    assert lim.max_descriptor_set_storage_buffers >= lim.max_per_stage_storage_buffers
    assert lim.max_per_stage_resources >= lim.max_per_stage_storage_buffers
    assert lim.max_bound_descriptor_sets >= 4
    assert lim.max_memory_allocation_size >= 1 << 30


@pytest.mark.parametrize("extra", [1, 8])
def test_one_storage_buffer_more_than_the_stage_allows_is_refused(device, extra, monkeypatch,
                                                                  no_pipeline_creation):
    cap = device.info.limits.max_per_stage_storage_buffers
    if cap > 64:  # a GPU allowing thousands: the check itself, at lavapipe's limit
        cap = 32
        _with_limits(monkeypatch, device, max_per_stage_storage_buffers=cap)
    func = from_script(_many_buffers_source(cap + extra))  # 33 and 40 on lavapipe
    before = (len(device.pipelines), len(device.launches))
    with pytest.raises(UnsupportedError, match=rf"{cap + extra} storage buffers; "
                                               rf"maxPerStageDescriptorStorageBuffers .* is {cap}"):
        vkir.build(func, device=device)
    assert (len(device.pipelines), len(device.launches)) == before


def test_storage_buffers_at_the_limit_run(device):
    cap = min(device.info.limits.max_per_stage_storage_buffers, 32)
    k = vkir.build(from_script(_many_buffers_source(cap)), device=device)
    args = [np.full(64, i, np.float32) for i in range(cap)]
    k(*args)
    np.testing.assert_array_equal(args[0], np.full(64, sum(range(1, cap)), np.float32))


def test_a_stricter_device_limit_is_honoured(device, monkeypatch, no_pipeline_creation):
    """A GPU with 8 storage buffers per stage refuses a 9-buffer kernel; the runtime refuses a
    pipeline layout beyond it too, whoever asks."""
    from vkir import runtime as rt

    _with_limits(monkeypatch, device, max_per_stage_storage_buffers=8)
    with pytest.raises(UnsupportedError, match="9 storage buffers; maxPerStageDescriptorStorageBuffers"):
        vkir.build(from_script(_many_buffers_source(9)), device=device)
    with pytest.raises(UnsupportedError, match="maxPerStageDescriptorStorageBuffers"):
        rt.get_pipeline(device, b"\0" * 20, "main", tuple(range(9)), 0)
    _with_limits(monkeypatch, device, max_descriptor_set_storage_buffers=5)
    with pytest.raises(UnsupportedError, match="6 storage buffers; maxDescriptorSetStorageBuffers"):
        vkir.build(from_script(_many_buffers_source(6)), device=device)


def test_push_constant_bytes_are_checked(device, monkeypatch, no_pipeline_creation):
    from vkir import runtime as rt

    cap = device.info.limits.max_push_constant_bytes
    with pytest.raises(UnsupportedError, match=rf"{cap + 4} bytes of push constants; "
                                               rf"maxPushConstantsSize .* is {cap}"):
        rt.get_pipeline(device, b"\0" * 20, "main", (0,), cap + 4)


def test_workgroup_size_and_invocations_are_checked(device, monkeypatch, no_pipeline_creation):
    @T.prim_func
    def wide(a: T.Buffer((256,), "float32")):
        for tx in T.thread_binding(256, "threadIdx.x"):
            a[tx] = a[tx] + T.float32(1)

    _with_limits(monkeypatch, device, max_workgroup_size=(128, 128, 64))
    with pytest.raises(UnsupportedError, match=r"workgroup size 256 on axis x exceeds "
                                               r"maxComputeWorkGroupSize\[0\] = 128"):
        vkir.build(wide, device=device)


def test_workgroup_count_per_axis_is_checked(device, monkeypatch):
    @T.prim_func
    def blocks(a: T.Buffer(("n",), "float32")):
        for bx in T.thread_binding(n, "blockIdx.x"):
            for tx in T.thread_binding(1, "threadIdx.x"):
                a[bx] = a[bx] + T.float32(1)

    k = vkir.build(blocks, device=device)
    cap = 100
    _with_limits(monkeypatch, device, max_workgroup_count=(cap, cap, cap))
    a = np.zeros(cap * 3 + 1, np.float32)   # folded: 100 x 4 workgroups
    k(a)
    np.testing.assert_array_equal(a, 1)
    a = np.zeros(cap * cap + 1, np.float32)  # 101 rows of 100: beyond blockIdx.y too
    with pytest.raises(UnsupportedError, match=rf"{cap + 1} workgroups on blockIdx.y exceed "
                                               rf"maxComputeWorkGroupCount = {cap}"):
        k(a)
    assert not a.any()  # nothing ran, nothing was copied back


def test_storage_buffer_range_and_allocation_size_are_checked(device, monkeypatch):
    rng = device.info.limits.max_storage_buffer_range
    nbytes = (rng // 4 + 1) * 4
    with pytest.raises(UnsupportedError, match=rf"{nbytes} bytes exceeds maxStorageBufferRange = {rng}"):
        vkir.empty(rng // 4 + 1, "float32", device=device)
    _with_limits(monkeypatch, device, max_memory_allocation_size=1 << 20)
    with pytest.raises(UnsupportedError, match=r"4194304 bytes exceeds maxMemoryAllocationSize = 1048576"):
        vkir.empty((1024, 1024), "float32", device=device)


# -- 13: shape products that overflow ------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2**62, 4), (2**32, 2**32), (2**61,), (3, 2**61, 7)])
def test_overflowing_shapes_are_refused(device, shape):
    with pytest.raises(ArgumentError, match="overflows a 64-bit byte count"):
        vkir.empty(shape, "float32", device=device)


def test_large_but_representable_shapes_name_the_limit(device):
    with pytest.raises(UnsupportedError, match="maxStorageBufferRange"):
        vkir.empty((2**20, 2**20), "float32", device=device)
    assert vkir.empty((0, 2**40), "float32", device=device).size == 0


def test_element_counts_beyond_the_index_type_are_refused(device):
    """A (2**16, 2**16) int8 argument (4 GiB: within maxStorageBufferRange on many GPUs) would
    wrap the kernel's int32 flat index; refused before anything runs. The array is a small
    buffer that claims the shape, as such a GPU's array would."""
    @T.prim_func
    def first(a: T.Buffer(("n", "m"), "int8")):
        for tx in T.thread_binding(1, "threadIdx.x"):
            a[0, 0] = T.int8(1)

    k = vkir.build(first, device=device)
    small = vkir.zeros(16, "int8", device=device)
    huge = vkir.api.DeviceArray(small.buffer, (2**16, 2**16), np.int8, device)
    with pytest.raises(ArgumentError, match=r"4294967296 elements, more than its int32 indices"):
        k(huge)
    assert not small.numpy().any()


# -- 2: use after close / shutdown ---------------------------------------------------------------
@T.prim_func
def addone(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        b[tx] = a[tx] + T.float32(1)


def _record_on(k, dev, A, B):
    def record():
        with vkir.sequence(device=dev):
            k(A, B)
    return record


def test_a_closed_device_raises_device_error(device):
    """A second logical device on the same GPU, closed under live arrays, kernels and launches."""
    from vkir import runtime as rt

    inst = rt.get_instance()
    dev = rt.Device(inst, device.info, inst.physical_devices[device.info.index])
    k = vkir.build(addone, device=dev)
    A, B = vkir.array(np.arange(64, dtype=np.float32), dev), vkir.empty(64, "float32", dev)
    k(A, B)  # cached launch + memo
    np.testing.assert_array_equal(B.numpy(), np.arange(64) + 1)
    dev.close()
    dev.close()  # idempotent
    x = np.zeros(64, np.float32)
    for use in (lambda: k(A, B), lambda: k(x, x.copy()), lambda: k.profile(A, B, repeat=1),
                lambda: vkir.empty(10, device=dev), lambda: vkir.array(x, dev), lambda: A.numpy(),
                lambda: A.write(x), lambda: vkir.build(addone, device=dev), dev.reset_pipeline_cache,
                lambda: k.launch(A, B), lambda: vkir.zeros(4, device=dev), _record_on(k, dev, A, B)):
        with pytest.raises(DeviceError, match="device closed"):
            use()
    del k, A, B
    gc.collect()  # finalizers of the dropped kernel and arrays must not touch freed handles


def test_shutdown_then_use_raises_device_error(device):
    """The issue's repro, in a fresh process (shutdown tears down the process-wide instance)."""
    script = textwrap.dedent("""
        import gc
        import numpy as np
        import vkir
        from vkir.tools.demo import vadd
        from vkir.errors import DeviceError

        dev = vkir.device()
        k = vkir.build(vadd)
        x = np.ones(100, np.float32)
        out = np.zeros(100, np.float32)
        A = vkir.array(x, dev)
        C = vkir.empty(100, "float32", dev)
        k(A, A, C)
        vkir.runtime.shutdown()
        vkir.runtime.shutdown()
        failures = 0
        for use in (lambda: k(x, x, out), lambda: k(A, A, C), lambda: vkir.empty(10, device=dev),
                    lambda: C.numpy()):
            try:
                use()
            except DeviceError as exc:
                assert "device closed" in str(exc), exc
            else:
                failures += 1
        del k, A, C
        gc.collect()
        k2 = vkir.build(vadd)  # a fresh instance and device
        k2(x, x, out)
        assert (out == 2).all() and failures == 0
        print("ok")
        """)
    env = dict(os.environ, VKIR_VALIDATION=os.environ.get("VKIR_VALIDATION", "1"))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
    assert "validation message" not in proc.stderr, proc.stderr


# -- 11: dropped kernels release their pipelines --------------------------------------------------
ADD_CONSTANT = """
@T.prim_func
def addc(a: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        a[tx] = a[tx] + T.float32({c})
"""


def test_dropped_kernels_release_pipelines_and_launches(device):
    A = vkir.array(np.zeros(64, np.float32), device)
    pipelines, launches = len(device.pipelines), len(device.launches)
    builds = 1000
    for c in range(builds):
        k = vkir.build(from_script(ADD_CONSTANT.format(c=c)), device=device)
        k(A)  # a recorded launch (descriptor set + command buffer) per kernel
        assert len(device.pipelines) <= pipelines + 1 and len(device.launches) <= launches + 1
    kept = k.pipeline
    np.testing.assert_array_equal(A.numpy(), np.full(64, builds * (builds - 1) // 2, np.float32))
    del k
    gc.collect()
    assert (len(device.pipelines), len(device.launches)) == (pipelines, launches)
    assert kept.handle is None  # destroyed with its last holder


def test_kernels_sharing_a_pipeline_keep_it_until_the_last_goes(device):
    k1 = vkir.build(addone, device=device)
    k2 = vkir.build(addone, device=device)
    assert k1.pipeline is k2.pipeline
    pipeline = k1.pipeline
    del k1
    gc.collect()
    a, b = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    k2(a, b)
    np.testing.assert_array_equal(b, a + 1)
    del k2
    gc.collect()
    assert pipeline.handle is None and pipeline not in device.pipelines.values()


# -- 12: device memory is freed when the array is collected ---------------------------------------
def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_memory_is_freed_when_arrays_are_collected(device):
    live = len(device._live_buffers)
    arrays = [vkir.zeros(16 << 20, "float32", device=device) for _ in range(4)]  # 4 x 64 MiB, zeroed
    assert len(device._live_buffers) == live + 4
    held = _rss()
    del arrays
    gc.collect()
    assert len(device._live_buffers) == live  # no later allocation needed
    if device.info.unified_memory and device.info.kind == "cpu":  # the memory is this process's
        # most of the 256 MiB goes back (the allocator may keep some pages of a long process)
        assert held - _rss() > 128 << 20


# -- 5: threads ------------------------------------------------------------------------------------
def _hammer(k, device, threads: int, calls: int):
    """`threads` threads x `calls` calls of `k` (addone) with distinct inputs each, every result
    checked; numpy arguments (the kernel's scratch buffers) and device arrays alternate."""
    failures, errors = [], []

    def work(t):
        try:
            rng = np.random.default_rng(t)
            A, B = vkir.empty(64, "float32", device), vkir.empty(64, "float32", device)
            for i in range(calls):
                a = rng.standard_normal(64).astype(np.float32)
                b = np.empty(64, np.float32)
                if i % 4:
                    k(a, b)
                else:
                    A.write(a)
                    k(A, B)
                    b = B.numpy()
                if not np.array_equal(b, a + np.float32(1)):
                    failures.append((t, i))
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not errors, errors[:3]
    assert not failures, f"{len(failures)} wrong results of {threads * calls}"


def test_one_kernel_from_eight_threads(device):
    """The issue's repro: one Kernel, 8 threads x 1000 calls."""
    _hammer(vkir.build(addone, device=device), device, 8, 1000)


def test_threads_through_the_shared_staging_buffer(device):
    """Device-local buffers copied through the device's one staging buffer (the discrete-GPU
    path, forced on a unified-memory device)."""
    saved = device.host_visible_buffers
    device.host_visible_buffers = False
    try:
        _hammer(vkir.build(addone, device=device), device, 4, 150)
    finally:
        device.host_visible_buffers = saved


def test_closing_a_device_under_running_threads(device):
    """Threads calling kernels while another thread closes the device get DeviceError, never a
    crash, and nothing they do afterwards touches freed handles."""
    from vkir import runtime as rt

    inst = rt.get_instance()
    dev = rt.Device(inst, device.info, inst.physical_devices[device.info.index])
    k = vkir.build(addone, device=dev)
    started, outcomes, done = threading.Barrier(5), [], []

    def work(t):
        A, B = vkir.array(np.full(64, t, np.float32), dev), vkir.empty(64, "float32", dev)
        started.wait()
        try:
            for i in range(100000):
                k(A, B) if i % 2 else k(np.zeros(64, np.float32), np.empty(64, np.float32))
                done.append(i)
        except DeviceError as exc:
            outcomes.append("device closed" in str(exc))

    pool = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in pool:
        th.start()
    started.wait()
    deadline = time.monotonic() + 20
    while len(done) < 200 and time.monotonic() < deadline:
        time.sleep(0.001)
    dev.close()
    for th in pool:
        th.join()
    assert outcomes == [True] * 4


def test_arrays_and_builds_from_several_threads(device):
    """Creating, filling, reading and dropping arrays and building kernels concurrently."""
    errors = []

    def work(t):
        try:
            for i in range(40):
                x = np.full(1000 + t, t * 100 + i, np.int32)
                X = vkir.array(x, device)
                assert np.array_equal(X.numpy(), x)
                if i % 20 == 0:
                    k = vkir.build(from_script(ADD_CONSTANT.format(c=t)), device=device)
                    a = np.zeros(64, np.float32)
                    k(a)
                    assert (a == t).all()
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[:3]


# -- 8: float scalars are cache keys by bit pattern -------------------------------------------------
@T.prim_func
def reciprocal(o: T.Buffer((1,), "float32"), s: T.float32):
    for tx in T.thread_binding(1, "threadIdx.x"):
        o[0] = T.float32(1.0) / s


def test_negative_zero_and_nan_scalars_are_not_served_from_a_cache(device):
    k = vkir.build(reciprocal, device=device)
    O = vkir.empty(1, "float32", device)
    o = np.zeros(1, np.float32)
    for s, want in ((0.0, np.inf), (-0.0, -np.inf), (0.0, np.inf), (np.float32(-0.0), -np.inf),
                    (2.0, 0.5), (float("nan"), np.nan), (-0.0, -np.inf)):
        k(O, s)
        k(o, s)
        np.testing.assert_array_equal(O.numpy(), [want])
        np.testing.assert_array_equal(o, [want])


# -- 17: a device that cannot be opened is an error, never a silent fallback ------------------------
def test_unknown_device_selectors_list_the_devices(device, monkeypatch):
    with pytest.raises(DeviceError, match=rf"no device matches 'no-such-gpu'; available: "
                                          rf".*{re.escape(device.info.name)}"):
        vkir.build(addone, device="no-such-gpu")
    with pytest.raises(DeviceError, match=r"device index 99 out of range; available: 0: "):
        vkir.device(99)
    monkeypatch.setenv("VKIR_DEVICE", "no-such-gpu")
    with pytest.raises(DeviceError, match=r"'no-such-gpu' \(from \$VKIR_DEVICE\); available"):
        vkir.build(addone)


def test_cli_compile_with_an_unknown_device_fails(device, tmp_path, capsys, monkeypatch):
    from vkir.tools import cli

    src = tmp_path / "k.py"
    src.write_text("from vkir import T\n" + ADD_CONSTANT.format(c=1))
    assert cli.main(["compile", str(src), "--device", "no-such-gpu"]) == 2
    assert "no device matches 'no-such-gpu'; available" in capsys.readouterr().err
    monkeypatch.setenv("VKIR_DEVICE", "no-such-gpu")
    assert cli.main(["compile", str(src)]) == 2
    assert "from $VKIR_DEVICE" in capsys.readouterr().err


def test_the_icd_fallback_is_announced(device):
    """When the loader finds no driver by itself (here: its search path hides them), vkir uses
    the installed ICDs, and the command line says so."""
    env = dict(os.environ, XDG_DATA_DIRS="/nonexistent", XDG_CONFIG_DIRS="/nonexistent",
               VKIR_VALIDATION="0")
    for key in ("VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES", "VKIR_DEVICE"):
        env.pop(key, None)
    proc = subprocess.run([sys.executable, "-m", "vkir.tools.cli", "devices"], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "vkir: note: the Vulkan loader found no device; using the drivers installed in" in proc.stderr
    # the fallback takes the manifests of the standard folders (lavapipe's is one; SwiftShader's,
    # under /usr/lib/chromium, is not)
    from vkir.runtime.instance import icd_manifests

    if any("lvp" in m for m in icd_manifests()):
        assert "llvmpipe" in proc.stdout
    else:
        assert device.info.name in proc.stdout


def test_a_failed_pipeline_creation_leaves_nothing_behind(device, monkeypatch):
    """The layouts made before vkCreateComputePipelines failed are destroyed with it."""
    import vkir.runtime.pipeline as pipeline_module
    from vkir.errors import DeviceError
    from vkir.runtime.device import EMPTY_COMPUTE_SHADER

    real_call, real_lib = pipeline_module.call, pipeline_module.lib
    destroyed = []

    def failing_call(name, fn, *args):
        if name == "vkCreateComputePipelines":
            raise DeviceError("vkCreateComputePipelines failed: VK_ERROR_OUT_OF_HOST_MEMORY")
        return real_call(name, fn, *args)

    class RecordingLib:
        def __getattr__(self, name):
            target = getattr(real_lib, name)
            if name.startswith("vkDestroy"):
                return lambda *args: destroyed.append(name) or target(*args)
            return target

    monkeypatch.setattr(pipeline_module, "call", failing_call)
    monkeypatch.setattr(pipeline_module, "lib", RecordingLib())
    with pytest.raises(DeviceError, match="VK_ERROR_OUT_OF_HOST_MEMORY"):
        pipeline_module.ComputePipeline(device, EMPTY_COMPUTE_SHADER, "main", (), 0)
    assert sorted(destroyed) == ["vkDestroyDescriptorSetLayout", "vkDestroyPipelineLayout",
                                 "vkDestroyShaderModule"]
