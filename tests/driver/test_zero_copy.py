"""Zero-copy with numpy: DeviceArrays exported as views (`__array_interface__`, DLPack 1.x kDLCPU
capsules, kDLVulkan on request), host memory imported as DeviceArrays (`vkir.asarray`,
VK_EXT_external_memory_host), kernel calls on numpy arguments without staging
(`Kernel.last_call_copies`), and the lifetimes around them under attack: capsules consumed twice
or never, sources dropped or resized while a launch runs, the device closed under a view, views
from several threads. Runs on lavapipe and SwiftShader (whose 256-byte descriptor alignment
imports only aligned memory: the tests align what they import)."""

import ctypes
import gc
import os
import subprocess
import sys
import textwrap
import threading
import weakref

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.driver import dlpack

N = 1024

_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


@T.prim_func
def axpy(x: T.Buffer((N,), "float32"), y: T.Buffer((N,), "float32"),
         out: T.Buffer((N,), "float32")):
    for b in T.thread_binding(N // 128, "blockIdx.x"):
        for t in T.thread_binding(128, "threadIdx.x"):
            out[b * 128 + t] = x[b * 128 + t] * T.float32(2) + y[b * 128 + t]


@pytest.fixture(scope="module")
def k(_vulkan_device):
    return vkir.build(axpy, device=_vulkan_device)


def aligned(n, dtype=np.float32, align=4096, shift=0):
    """A fresh numpy array of `n` elements at an `align`-byte boundary (plus `shift` bytes)."""
    dt = np.dtype(dtype)
    raw = np.zeros(n * dt.itemsize + align + shift, np.uint8)
    start = (-raw.ctypes.data) % align + shift
    return raw[start:start + n * dt.itemsize].view(dt)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    x, y = aligned(N), aligned(N)
    x[:] = rng.standard_normal(N)
    y[:] = rng.standard_normal(N)
    return x, y, x * np.float32(2) + y


# -- export --------------------------------------------------------------------------------------
def test_numpy_views_of_device_arrays_share_memory(device):
    a = vkir.array(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    assert a.__dlpack_device__() == (dlpack.KDL_CPU, 0)
    v = np.asarray(a)
    assert v.shape == (3, 4) and v.dtype == np.float32 and np.shares_memory(v, a.host_view())
    v[1, 2] = -5
    assert a.numpy()[1, 2] == -5                          # the host wrote device memory
    d = np.from_dlpack(a)
    assert np.shares_memory(d, v)
    a.write(np.ones((3, 4), np.float32))
    np.testing.assert_array_equal(d, 1)                   # and reads what the device holds
    assert not a.is_view


def test_views_keep_their_array_and_are_tracked_while_they_live(device):
    a = vkir.array(np.arange(8, dtype=np.float32), device=device)
    before = len(device.host_views) if getattr(device, "host_views", None) is not None else 0
    v, t = np.asarray(a), np.from_dlpack(a)
    assert len(device.host_views) >= before + 2           # what close() must not free under
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is not None and v[3] == 3 and t[7] == 7
    del v, t
    gc.collect()
    assert ref() is None and len(device.host_views) == before


def test_capsules_follow_the_consumers_version(device):
    a = vkir.array(np.arange(4, dtype=np.int32), device=device)
    assert _capsule_name(a.__dlpack__()) == b"dltensor"
    assert _capsule_name(a.__dlpack__(max_version=(1, 0))) == b"dltensor_versioned"
    assert _capsule_name(a.__dlpack__(max_version=(0, 8))) == b"dltensor"
    # TVM's handle: kDLVulkan on request, in both layouts
    want = (dlpack.KDL_VULKAN, device.info.index)
    legacy = a.__dlpack__(dl_device=want)
    tensor = dlpack._Managed.from_address(_capsule_pointer(legacy, b"dltensor")).dl_tensor
    assert (tensor.device.device_type, dlpack.array_of_handle(tensor.data)) == (7, a)
    versioned = a.__dlpack__(dl_device=want, max_version=(1, 1))
    managed = dlpack._ManagedVersioned.from_address(
        _capsule_pointer(versioned, b"dltensor_versioned"))
    assert managed.dl_tensor.device.device_type == 7 and managed.dl_tensor.ndim == 1
    assert dlpack.array_of_handle(managed.dl_tensor.data) is a
    with pytest.raises(BufferError, match="device type 2"):
        a.__dlpack__(dl_device=(2, 0))                   # CUDA: not offered
    with pytest.raises(BufferError, match="stream"):
        a.__dlpack__(stream=3)
    c = np.from_dlpack(a, copy=True)                      # copy=True: memory of its own
    c[0] = 99
    assert a.numpy()[0] == 0
    del legacy, versioned, managed, tensor


def test_export_waits_for_device_work_that_writes_the_array(device, k):
    x, y, want = _inputs(1)
    X, Y = vkir.array(x, device=device), vkir.array(y, device=device)
    for _ in range(3):
        out = vkir.empty(N, "float32", device=device)
        handle = k.launch(X, Y, out)
        got = np.from_dlpack(out)                         # no wait() before: the export waits
        np.testing.assert_allclose(got, want, rtol=1e-6)
        handle.wait()


def test_a_capsule_is_consumed_once(device):
    a = vkir.array(np.arange(5, dtype=np.float32), device=device)

    class Producer:                                       # hands out the same capsule twice
        capsule = a.__dlpack__(max_version=(1, 0))

        def __dlpack__(self, **_kwargs):
            return self.capsule

        def __dlpack_device__(self):
            return (dlpack.KDL_CPU, 0)

    first = np.from_dlpack(Producer())
    with pytest.raises((BufferError, ValueError, TypeError, RuntimeError)) as info:
        np.from_dlpack(Producer())
    assert not isinstance(info.value, SystemError)
    ref = weakref.ref(a)
    del a, Producer
    gc.collect()
    np.testing.assert_array_equal(first, np.arange(5))    # the consumed view still reads right
    assert ref() is not None                              # and keeps the array alive
    del first
    gc.collect()
    assert ref() is None


def test_an_unconsumed_capsule_frees_its_array(device, unraisable):
    a = vkir.array(np.ones(8, np.float32), device=device)
    ref = weakref.ref(a)
    capsules = [a.__dlpack__(), a.__dlpack__(max_version=(1, 0))]
    del a
    gc.collect()
    assert ref() is not None
    del capsules
    gc.collect()
    assert ref() is None and not unraisable


@pytest.fixture
def unraisable(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    return seen


def test_device_local_memory_is_copied_not_viewed(device):
    saved = device.host_visible_buffers              # the discrete-GPU layout, forced
    device.host_visible_buffers = False
    try:
        a = vkir.array(np.arange(6, dtype=np.float32), device=device)
    finally:
        device.host_visible_buffers = saved
    assert a.__dlpack_device__() == dlpack.vulkan_device(a)
    assert _capsule_name(a.__dlpack__()) == b"dltensor"         # the opaque handle
    np.testing.assert_array_equal(np.asarray(a), np.arange(6))   # __array__: a copy
    np.testing.assert_array_equal(np.from_dlpack(a, device="cpu"), np.arange(6))   # a copy
    with pytest.raises(BufferError, match="copy"):
        a.__dlpack__(dl_device=(1, 0), copy=False)


# -- import --------------------------------------------------------------------------------------
def test_the_extension_is_enabled_on_the_cpu_drivers(device):
    if "llvmpipe" in device.info.name or "SwiftShader" in device.info.name:
        assert "VK_EXT_external_memory_host" in device.enabled_extensions


def test_asarray_imports_aligned_memory_and_kernels_write_it(device, k):
    x, y, want = _inputs(2)
    out = aligned(N)
    X, Y, OUT = (vkir.asarray(v, device=device, copy=False) for v in (x, y, out))
    assert X.is_view and OUT.is_view and np.shares_memory(np.asarray(OUT), out)
    k(X, Y, OUT)
    np.testing.assert_allclose(out, want, rtol=1e-6)      # written in place
    x[:] = 0
    k(X, Y, OUT)
    np.testing.assert_allclose(out, y, rtol=1e-6)         # host writes reach the device
    assert vkir.asarray(X, device=device) is X
    assert not vkir.asarray(x, device=device, copy=True).is_view


def test_asarray_copies_what_it_cannot_import(device):
    misaligned = aligned(N, shift=4)                      # no device binds at 4 bytes
    misaligned[:] = 3
    c = vkir.asarray(misaligned, device=device)
    assert not c.is_view and (c.numpy() == 3).all()
    with pytest.raises(vkir.ArgumentError, match="in place.*multiple of"):
        vkir.asarray(misaligned, device=device, copy=False)
    frozen = aligned(N)
    frozen.flags.writeable = False
    assert not vkir.asarray(frozen, device=device).is_view
    with pytest.raises(vkir.ArgumentError, match="read-only"):
        vkir.asarray(frozen, device=device, copy=False)
    with pytest.raises(vkir.ArgumentError, match="copied"):
        vkir.asarray([1.0, 2.0], device=device, copy=False)
    assert (vkir.asarray([1.0, 2.0], device=device).numpy() == [1, 2]).all()
    with pytest.raises(vkir.ArgumentError, match="bool, int, uint or float"):
        vkir.asarray(np.array(["a"]), device=device)


def test_buffer_protocol_sources_are_kept_and_not_resized(device):
    backing = aligned(256, np.uint8)
    view = memoryview(backing)
    a = vkir.asarray(view, device=device, copy=False)
    assert a.is_view and a.dtype == np.uint8
    np.asarray(a)[:] = 7
    assert (backing == 7).all()
    data = bytearray(4096)
    b = vkir.asarray(data, device=device)
    if b.is_view:                                         # its export pins the bytearray
        with pytest.raises(BufferError):
            data.extend(b"x")
    np.asarray(b)[0] = 1
    assert (data[0] == 1) == b.is_view


def test_sources_live_while_a_launch_runs(device, k):
    x, y, want = _inputs(3)
    out = aligned(N)
    refs = [weakref.ref(v) for v in (x, y, out)]
    X, Y, OUT = (vkir.asarray(v, device=device) for v in (x, y, out))
    handle = k.launch(X, Y, OUT)
    with pytest.raises(ValueError):
        out.resize(2 * N)                                 # referenced: numpy refuses
    del x, y, X, Y
    gc.collect()
    assert all(r() is not None for r in refs)             # the launch and OUT keep them
    handle.wait()
    np.testing.assert_allclose(out, want, rtol=1e-6)
    del handle, OUT, out
    gc.collect()
    assert all(r() is None for r in refs)


def test_views_from_several_threads(device, k):
    errors = []

    def work(seed):
        try:
            for i in range(8):
                x, y, want = _inputs(seed * 100 + i)
                out = aligned(N)
                k(x, y, out)
                np.testing.assert_allclose(out, want, rtol=1e-6)
                a = vkir.asarray(out, device=device)
                assert np.shares_memory(np.from_dlpack(a), out) == a.is_view
                d = vkir.array(want, device=device)
                np.testing.assert_array_equal(np.asarray(d), np.from_dlpack(d))
        except Exception as exc:   # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# -- calls ---------------------------------------------------------------------------------------
def test_numpy_arguments_are_bound_in_place(device, k):
    x, y, want = _inputs(4)
    out = aligned(N)
    k(x, y, out)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert k.last_call_copies == 0
    k(x, y, out)                                          # again: the imports are reused
    assert k.last_call_copies == 0
    odd = aligned(N, shift=4)                             # cannot be imported: staged
    k(x, y, odd)
    np.testing.assert_allclose(odd, want, rtol=1e-6)
    assert k.last_call_copies == 2 * odd.nbytes           # copied in and back
    X, Y = vkir.array(x, device=device), vkir.array(y, device=device)
    OUT = vkir.empty(N, "float32", device=device)
    k(X, Y, OUT)
    assert k.last_call_copies == 0
    out[:] = 0
    k.launch(x, y, out).wait()
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert k.last_call_copies == 0


def test_a_bad_call_on_imported_arguments_touches_nothing(device, k):
    x, y, _ = _inputs(5)
    out = aligned(N)
    out[:] = 11
    with pytest.raises(vkir.ArgumentError):
        k(x, y[:-1], out)
    assert (out == 11).all()


# -- the device closed under views ---------------------------------------------------------------
@pytest.mark.device
def test_closing_the_device_under_views_is_an_error_not_a_crash():
    script = textwrap.dedent("""
        import gc
        import numpy as np
        import vkir
        from vkir.errors import DeviceError

        dev = vkir.device()
        a = vkir.array(np.arange(64, dtype=np.float32), device=dev)
        gone = np.asarray(a)
        del gone
        gc.collect()
        assert not dev.host_views                        # views are tracked while they live
        mapped = np.asarray(a)
        raw = np.zeros(4096 * 3, np.uint8)
        start = (-raw.ctypes.data) % 4096
        src = raw[start:start + 4096].view(np.float32)
        src[:] = 5
        imported = vkir.asarray(src, device=dev)
        capsule = a.__dlpack__(max_version=(1, 0))
        vkir.runtime.shutdown()
        assert dev.closed and dev.abandoned              # its memory stays under the views
        assert mapped.sum() == np.arange(64).sum()      # the mapping stays under the view
        mapped[:] = 1
        assert (src == 5).all()                          # the source is the user's
        failures = 0
        for use in (a.numpy, imported.numpy, lambda: np.asarray(a), lambda: a.__dlpack__(),
                    lambda: vkir.asarray(src, device=dev)):
            try:
                use()
            except DeviceError as exc:
                assert "closed" in str(exc), exc
            else:
                failures += 1
        del capsule, a, imported, mapped
        gc.collect()
        print("ok" if failures == 0 else f"{failures} uses passed")
        """)
    env = dict(os.environ, VKIR_VALIDATION=os.environ.get("VKIR_VALIDATION", "1"))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
    assert "validation message" not in proc.stderr, proc.stderr


def _owning_aligned(n, align=256):
    """A float32 numpy array of `n` elements that owns its memory (so numpy can resize it) at an
    `align`-byte boundary: allocated until malloc returns one (kept misses ensure progress)."""
    misses = []
    for _ in range(4096):
        a = np.zeros(n, np.float32)
        if a.ctypes.data % align == 0:
            return a
        misses.append(a)
    raise AssertionError("no aligned allocation")


def test_a_numpy_source_resized_without_refcheck_is_refused(device, k):
    src = _owning_aligned(N)
    out = vkir.asarray(src, device=device, copy=False)
    x, y, _ = _inputs(6)
    k(x, y, out)
    src.resize(4 * N, refcheck=False)            # numpy moves (and frees) the memory
    with pytest.raises(vkir.ArgumentError, match=r"argument 'out' is memory imported in place "
                                                 r"and its ndarray was resized or moved"):
        k(x, y, out)
    with pytest.raises(vkir.ArgumentError, match="resized or moved"):
        out.numpy()
