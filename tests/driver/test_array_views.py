"""DeviceArray views share the parent's memory: `reshape`, `flatten`, `view(dtype)` and
contiguous slices (`a[16:48]`, `a[i]`). A kernel writing a view writes the parent on every
device: bound at the view's offset where the device's minStorageBufferOffsetAlignment allows
(every 16 bytes on lavapipe, 256 on SwiftShader), else staged through the host (counted in
`last_call_copies`); inside a sequence, where nothing is staged, such a view is refused."""

import numpy as np
import pytest

import vkir
from vkir import T


@T.prim_func
def fill_index(y: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        y[i] = T.cast(i, "float32") + T.float32(1000)


@T.prim_func
def double(x: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        y[i] = x[i] * T.float32(2)


def test_reshape_flatten_and_view_are_the_same_memory(device):
    a = vkir.array(np.arange(64, dtype=np.float32), device=device)
    m = a.reshape(8, 8)
    assert m.shape == (8, 8) and a.reshape((-1, 4)).shape == (16, 4)
    assert m.flatten().shape == (64,) and m.buffer is a.buffer
    bits = a.view("int32")
    assert bits.dtype == np.int32 and bits.shape == (64,)
    assert np.array_equal(bits.numpy(), np.arange(64, dtype=np.float32).view(np.int32))
    assert a.view(np.uint8).shape == (256,)
    m.write(np.zeros((8, 8), np.float32))
    assert not a.numpy().any()
    with pytest.raises(vkir.ArgumentError, match="reshape"):
        a.reshape(7, 9)
    with pytest.raises(vkir.ArgumentError, match="views take an int or a slice"):
        a[::2]


def test_slices_read_and_write_the_parent(device):
    a = vkir.array(np.arange(64, dtype=np.float32), device=device)
    s = a[16:48]
    assert s.shape == (32,) and np.array_equal(s.numpy(), np.arange(16, 48))
    s.write(np.zeros(32, np.float32))
    expect = np.arange(64, dtype=np.float32)
    expect[16:48] = 0
    assert np.array_equal(a.numpy(), expect)
    rows = a.reshape(8, 8)
    assert np.array_equal(rows[3].numpy(), expect.reshape(8, 8)[3])
    assert np.array_equal(rows[-2:].numpy(), expect.reshape(8, 8)[-2:])


@pytest.mark.parametrize("start", [16, 64, 3])
def test_a_kernel_writing_a_view_writes_the_parent(device, start):
    k = vkir.build(fill_index, device=device)
    a = vkir.zeros(256, device=device)
    k(a[start:start + 32])
    host = a.numpy()
    assert np.array_equal(host[start:start + 32], 1000 + np.arange(32, dtype=np.float32))
    assert not host[:start].any() and not host[start + 32:].any()
    align = device.info.limits.min_storage_buffer_offset_alignment
    assert (k.last_call_copies == 0) == (start * 4 % align == 0)


def test_views_as_inputs_and_in_a_launch(device):
    k = vkir.build(double, device=device)
    a = vkir.array(np.arange(128, dtype=np.float32), device=device)
    out = vkir.zeros(128, device=device)
    k(a[64:96], out[:32])
    assert np.array_equal(out.numpy()[:32], 2 * np.arange(64, 96))
    k.launch(a.reshape(4, 32)[1], out[96:]).wait()
    assert np.array_equal(out.numpy()[96:], 2 * np.arange(32, 64))


def test_a_misaligned_view_is_refused_in_a_sequence(device):
    k = vkir.build(fill_index, device=device)
    a = vkir.zeros(256, device=device)
    with pytest.raises(vkir.ArgumentError, match="cannot bind"):
        with vkir.sequence():
            k(a[1:33])


def test_views_in_a_tape_share_the_parents_adjoint(device):
    k = vkir.build(double, device=device)
    base = vkir.array(np.arange(128, dtype=np.float32), device=device)
    whole = vkir.zeros(128, device=device)
    y = vkir.empty(32, device=device)
    with vkir.Tape() as tape:
        k(base[64:96], y)                      # a view at an offset, as an input
        k(base.reshape(4, 32)[2], whole[:32])  # the same memory, another object
    tape.backward({y: np.ones(32, np.float32), whole[:32]: np.full(32, 3, np.float32)})
    np.testing.assert_array_equal(tape.grad(base[64:96]).numpy(), np.full(32, 8))


def test_iteration_gives_row_views(device):
    a = vkir.array(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    rows = list(a)
    assert len(rows) == 3 and np.array_equal(rows[2].numpy(), [8, 9, 10, 11])
    rows[1].write(np.zeros(4, np.float32))
    assert not a.numpy()[1].any()
