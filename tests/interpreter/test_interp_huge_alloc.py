"""An allocation the machine cannot hold is a precise vkir error, raised before numpy is asked for
the memory: UnsupportedError naming the buffer, its size in bytes and the source line, for global,
shared and local (one row per invocation) buffers; and a numpy MemoryError under the machine's
size is reported the same way, never bare."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import UnsupportedError
from vkir.interpreter import memory

TIB4 = 1 << 42   # bytes of (1 << 20) x (1 << 20) float32, or 256 invocations x (1 << 24) float32


@T.prim_func
def huge_global(out: T.Buffer((4,), "float32")):
    tmp = T.alloc_buffer((1 << 20, 1 << 20), "float32")
    tmp[0, 0] = T.float32(1)
    out[0] = tmp[0, 0]


@T.prim_func
def huge_shared(out: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        s = T.alloc_buffer((1 << 20, 1 << 20), "float32", scope="shared")
        s[0, tx] = T.float32(1)
        out[tx] = s[0, tx]


@T.prim_func
def huge_local(out: T.Buffer((256,), "float32")):
    for tx in T.thread_binding(256, "threadIdx.x"):
        acc = T.alloc_buffer((1 << 12, 1 << 12), "float32", scope="local")
        acc[0, 0] = T.float32(1)
        out[tx] = acc[0, 0]


@pytest.mark.parametrize("func, size, name, nbytes, line", [
    (huge_global, 4, "tmp", TIB4, 'tmp = T.alloc_buffer((1 << 20, 1 << 20), "float32")'),
    (huge_shared, 64, "s", TIB4,
     's = T.alloc_buffer((1 << 20, 1 << 20), "float32", scope="shared")'),
    (huge_local, 256, "acc", 256 * (1 << 26),
     'acc = T.alloc_buffer((1 << 12, 1 << 12), "float32", scope="local")'),
])
def test_refused_before_allocating(func, size, name, nbytes, line, monkeypatch):
    monkeypatch.setattr(memory, "host_memory_bytes", lambda: nbytes - 1)
    asked = []
    real_zeros = np.zeros
    monkeypatch.setattr(memory.np, "zeros", lambda n, *a, **k: asked.append(n) or real_zeros(
        n, *a, **k))
    out = real_zeros(size, np.float32)
    with pytest.raises(UnsupportedError) as info:
        vkir.interpret(func, out)
    message = str(info.value)
    assert f"buffer {name} (" in message and f"{nbytes} bytes" in message
    assert "test_interp_huge_alloc.py:" in message and line in message
    assert nbytes not in asked                 # numpy was never asked for it


def test_a_numpy_memory_error_is_reported_precisely(monkeypatch):
    monkeypatch.setattr(memory, "host_memory_bytes", lambda: None)   # no size known up front
    with pytest.raises(UnsupportedError) as info:
        vkir.interpret(huge_global, np.zeros(4, np.float32))
    assert not isinstance(info.value, MemoryError)
    assert f"buffer tmp (global, (1 << 20, 1 << 20) float32): {TIB4} bytes" in str(info.value)


def test_the_machine_limit_is_known():
    limit = memory.host_memory_bytes()
    assert limit is None or 0 < limit < TIB4
