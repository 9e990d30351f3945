"""torch and vkir share memory both ways: `torch.from_dlpack(device_array)` is a view of the
device memory (a versioned kDLCPU capsule, as torch asks for it), `vkir.asarray(tensor)` imports
a CPU tensor's memory (the DeviceArray keeps the tensor alive), and a kernel's writes into it show
in the tensor. torch is in the test extra (the CPU wheel), so these run wherever the suite runs."""

import gc
import weakref

import numpy as np
import pytest
import torch

import vkir
from vkir import T

N = 512


@T.prim_func
def halve(x: T.Buffer((N,), "float32"), out: T.Buffer((N,), "float32")):
    for b in T.thread_binding(N // 128, "blockIdx.x"):
        for t in T.thread_binding(128, "threadIdx.x"):
            out[b * 128 + t] = x[b * 128 + t] * T.float32(0.5)


@pytest.fixture(scope="module")
def k(_vulkan_device):
    return vkir.build(halve, device=_vulkan_device)


def aligned_tensor(n, align=4096):
    """A float32 CPU tensor of `n` elements at an `align`-byte boundary (so SwiftShader, which
    binds buffers at 256-byte offsets, can import it too)."""
    raw = torch.zeros(n * 4 + align, dtype=torch.uint8)
    start = (-raw.data_ptr()) % align
    return raw[start:start + n * 4].view(torch.float32)


def test_torch_views_device_arrays(device):
    a = vkir.array(np.arange(6, dtype=np.float32).reshape(2, 3), device=device)
    t = torch.from_dlpack(a)
    assert t.device.type == "cpu" and tuple(t.shape) == (2, 3)
    t[1, 1] = -1
    assert a.numpy()[1, 1] == -1
    a.write(np.full((2, 3), 4, np.float32))
    assert bool((t == 4).all())
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is not None and float(t.sum()) == 24     # the tensor keeps the array
    del t
    gc.collect()
    assert ref() is None


def test_asarray_imports_torch_tensors_and_kernels_write_them(device, k):
    x = aligned_tensor(N)
    x.copy_(torch.arange(N, dtype=torch.float32))
    out = aligned_tensor(N)
    X = vkir.asarray(x, device=device, copy=False)
    OUT = vkir.asarray(out, device=device, copy=False)
    assert X.is_view and OUT.is_view
    k(X, OUT)
    assert torch.equal(out, x * 0.5)
    ref = weakref.ref(out)
    del out
    gc.collect()
    assert ref() is not None                              # OUT keeps the tensor alive
    back = torch.from_dlpack(OUT)
    assert back.data_ptr() == ref().data_ptr()            # torch -> vkir -> torch: no copy
    del OUT, back
    gc.collect()
    assert ref() is None


def test_misaligned_tensors_are_copied_once(device):
    t = aligned_tensor(N + 1)[1:]                        # 4 bytes past a page
    t.fill_(2)
    a = vkir.asarray(t, device=device)
    assert not a.is_view and (a.numpy() == 2).all()
    with pytest.raises(vkir.ArgumentError, match="in place"):
        vkir.asarray(t, device=device, copy=False)
