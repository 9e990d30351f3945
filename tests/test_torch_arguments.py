"""Every call that takes arrays takes torch CPU tensors, and gives back the caller's kind: kernel
calls and launches write tensors in place (their memory imported where the device can, else one
copy each way, counted in `last_call_copies`; inside a sequence, which makes no hidden copies,
imported or refused); `vkir.ops` and `vkir.map` return tensors for
tensors (numpy for numpy, DeviceArrays for DeviceArrays); `out=` may be a tensor."""

import numpy as np
import pytest
import torch

import vkir
from vkir import T


@T.prim_func
def axpy(x: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32"),
         out: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        out[i] = T.float32(3) * x[i] + y[i]


@T.func
def mul_add(a: T.float32, b: T.float32) -> T.float32:
    return a * b + T.float32(1)


def test_a_kernel_call_writes_a_tensor_in_place(device):
    k = vkir.build(axpy, device=device)
    x, y = torch.rand(1000), torch.rand(1000)
    out = torch.empty(1000)
    k(x, y, out)
    assert torch.allclose(out, 3 * x + y)
    # a strided input is one copy in; the result is the same
    wide = torch.rand(2000)
    k(wide[::2], y, out)
    assert torch.allclose(out, 3 * wide[::2] + y)
    with pytest.raises(vkir.ArgumentError, match="non-contiguous torch tensor"):
        k(x, y, torch.empty(2000)[::2])


def test_tensor_memory_is_imported_where_the_device_can(device):
    k = vkir.build(axpy, device=device)
    raw = torch.zeros(3 * 4096 * 4 + 4096, dtype=torch.uint8)   # 4096-aligned, any device
    start = (-raw.data_ptr()) % 4096
    x, y, out = (raw[start + j * 16384:start + (j + 1) * 16384].view(torch.float32)
                 for j in range(3))
    x.copy_(torch.arange(4096.0))
    y.fill_(1)
    k(x, y, out)
    assert torch.equal(out, 3 * x + 1)
    if "VK_EXT_external_memory_host" in device.info.extensions:
        assert k.last_call_copies == 0
    else:   # each input copied in, the output copied in and back
        assert k.last_call_copies == 4 * 16384


def test_a_launch_takes_tensors(device):
    k = vkir.build(axpy, device=device)
    x, y, out = torch.rand(256), torch.rand(256), torch.zeros(256)
    k.launch(x, y, out).wait()
    assert torch.allclose(out, 3 * x + y)


def test_ops_give_the_callers_kind(device):
    x = torch.rand(1000)
    s = vkir.ops.cumsum(x, device=device)
    assert isinstance(s, torch.Tensor) and torch.allclose(s, torch.cumsum(x, 0), atol=1e-3)
    assert isinstance(vkir.ops.cumsum(x.numpy(), device=device), np.ndarray)
    assert isinstance(vkir.ops.cumsum(vkir.asarray(x, device=device)), vkir.DeviceArray)
    v = vkir.ops.sort(x, device=device)
    assert isinstance(v, torch.Tensor) and torch.equal(v, torch.sort(x).values)
    a, b = torch.rand(16, 32), torch.rand(32, 8)
    assert torch.allclose(vkir.ops.matmul(a, b, device=device), a @ b, atol=1e-4)
    out = torch.empty(1000)
    assert vkir.ops.cumsum(x, out=out, device=device) is out
    assert torch.allclose(out, torch.cumsum(x, 0), atol=1e-3)
    counts, edges = vkir.ops.histogram(x, 4, device=device)
    assert isinstance(counts, torch.Tensor) and int(counts.sum()) == 1000


def test_map_takes_and_returns_tensors(device):
    x = torch.rand(100)
    y = vkir.map(mul_add, device=device)(x, torch.full((100,), 2.0))
    assert isinstance(y, torch.Tensor) and torch.allclose(y, 2 * x + 1)
    out = torch.empty(100)
    assert vkir.map(mul_add, device=device)(x, 3.0, out=out) is out
    assert torch.allclose(out, 3 * x + 1)


def test_unsupported_tensors_are_refused_by_name(device):
    k = vkir.build(axpy, device=device)
    x = torch.rand(8, dtype=torch.bfloat16)
    with pytest.raises(vkir.ArgumentError, match="argument 'x'"):
        k(x, torch.rand(8), torch.empty(8))


def _aligned(n):
    raw = torch.zeros(n * 4 + 4096, dtype=torch.uint8)
    start = (-raw.data_ptr()) % 4096
    return raw[start:start + n * 4].view(torch.float32)


def test_a_sequence_imports_tensors_or_refuses_them(device):
    k = vkir.build(axpy, device=device)
    x, y, out = _aligned(256), _aligned(256), _aligned(256)
    x.copy_(torch.arange(256.0))
    y.fill_(1)
    with vkir.sequence() as seq:
        k(x, y, out)
    seq.wait()
    assert torch.equal(out, 3 * x + 1)
    x.fill_(2)
    seq.run().wait()   # the recording is of the tensors' own memory
    assert torch.equal(out, torch.full((256,), 7.0))
    with pytest.raises(vkir.ArgumentError, match="inside a sequence a torch tensor"):
        with vkir.sequence():
            k(torch.rand(512)[::2], y, out)


@T.prim_func
def brighten(src: T.Image((6, 10), "rgba32f"), dst: T.Image((6, 10), "rgba32f")):
    for ty in T.thread_binding(6, "threadIdx.y"):
        for tx in T.thread_binding(10, "threadIdx.x"):
            dst[ty, tx] = src[ty, tx] * 2.0


def test_images_take_tensors(device):
    k = vkir.build(brighten, device=device)
    src = torch.rand(6, 10, 4)
    dst = torch.zeros(6, 10, 4)
    k(src, dst)
    assert torch.allclose(dst, 2 * src)
