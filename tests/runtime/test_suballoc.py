"""The sub-allocator: small buffers share blocks, at aligned offsets, freed ranges are reused,
neighbours never see each other's bytes, and kernels bind them at their offsets (mapped and
staging paths)."""

import gc

import numpy as np
import pytest

import vkir
from vkir import T


@T.prim_func
def add_one(x: T.Buffer(("n",), "int32"), y: T.Buffer(("n",), "int32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                y[i] = x[i] + 1


def _limits(device):
    import vulkan as vk

    return vk.vkGetPhysicalDeviceProperties(device.physical).limits


def test_small_buffers_share_aligned_blocks(device):
    from vkir.runtime import SubBuffer, allocate
    from vkir.runtime.suballoc import MAX_SUBALLOC

    lim = _limits(device)
    bufs = [allocate(device, n) for n in (1, 4, 100, 4096, 12345, MAX_SUBALLOC)]
    assert all(isinstance(b, SubBuffer) for b in bufs)
    assert len({b.memory for b in bufs}) == 1                  # one VkDeviceMemory for all
    for b in bufs:
        assert b.offset % lim.minStorageBufferOffsetAlignment == 0
        assert b.offset % lim.nonCoherentAtomSize == 0
        assert b.alloc_bytes >= b.nbytes
    spans = sorted((b.offset, b.offset + b.alloc_bytes) for b in bufs)
    assert all(end <= nxt for (_, end), (nxt, _) in zip(spans, spans[1:]))  # disjoint
    big = allocate(device, MAX_SUBALLOC + 1)
    assert not isinstance(big, SubBuffer) and big.offset == 0


def test_freed_ranges_are_reused(device):
    from vkir.runtime import allocate

    arena_used = None
    first = allocate(device, 4096)
    block, offset = first.block, first.offset
    del first
    gc.collect()
    again = allocate(device, 4096)
    assert (again.block, again.offset) == (block, offset)
    arena = device.arenas[bool(device.host_visible_buffers)]
    arena_used = arena.used_bytes()
    many = [allocate(device, 4096) for _ in range(2000)]      # more than one 4 MiB block
    assert arena.used_bytes() >= arena_used + 2000 * 4096
    blocks = len(arena.blocks)
    del many
    gc.collect()
    assert arena.used_bytes() == arena_used
    _ = [allocate(device, 4096) for _ in range(2000)]
    assert len(arena.blocks) == blocks                         # the same blocks again


@pytest.mark.parametrize("mapped", [True, False])
def test_neighbours_and_kernels_at_offsets(device, mapped):
    """Writes stay inside their range, fill_zero touches only its own bytes, and a kernel binds
    each sub-allocation at its offset; `mapped=False` forces the device-local + staging path."""
    saved = device.host_visible_buffers
    device.host_visible_buffers = mapped
    try:
        k = vkir.build(add_one, device=device)
        rng = np.random.default_rng(0)
        hosts = [rng.integers(-1000, 1000, n).astype(np.int32) for n in (3, 64, 1000, 7)]
        arrays = [vkir.array(h, device=device) for h in hosts]
        assert all(a.buffer.host_visible == mapped for a in arrays)
        assert len({a.buffer.offset for a in arrays}) == len(arrays)
        outs = [vkir.empty(h.shape, "int32", device=device) for h in hosts]
        for a, o in zip(arrays, outs):
            k(a, o)
        arrays[1].buffer.fill_zero()
        for i, (h, a, o) in enumerate(zip(hosts, arrays, outs)):
            np.testing.assert_array_equal(o.numpy(), h + 1)
            np.testing.assert_array_equal(a.numpy(), np.zeros_like(h) if i == 1 else h)
    finally:
        device.host_visible_buffers = saved


def test_many_arrays_free_on_collect(device):
    arena_used = None
    warm = vkir.zeros(1024, device=device)
    arena = device.arenas[bool(device.host_visible_buffers)]
    arena_used = arena.used_bytes()
    for _ in range(3000):                                      # 12 MiB if nothing were freed
        x = vkir.zeros(1024, device=device)
    del x
    gc.collect()
    assert arena.used_bytes() == arena_used
    del warm


def test_threads_allocate_and_free_concurrently(device):
    """4 threads x 300 arrays: every array keeps its own contents while others come and go."""
    import threading

    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(300):
                v = rng.integers(0, 1 << 30, int(rng.integers(1, 2000))).astype(np.int32)
                a = vkir.array(v, device=device)
                b = vkir.zeros(int(rng.integers(1, 500)), "int32", device=device)
                if not (np.array_equal(a.numpy(), v) and not b.numpy().any()):
                    errors.append(seed)
                del a, b
        except Exception as exc:  # reported below: a thread's exception would vanish
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
