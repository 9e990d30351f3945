"""The on-disk compile cache of vkir.build: a kernel built before (by this or another process)
loads without lowering or codegen, computes the same results, and a damaged entry is rebuilt."""

import threading

import numpy as np
import pytest

import vkir
from vkir.cache import compile as compile_cache
from vkir.target import Target

SOURCE = '''
@T.prim_func
def scaled(x: T.Buffer(("h", 8), "int32"), y: T.Buffer(("h", 8), "int32"), s: T.int32,
           f: T.Buffer((4 * 2,), "float32")):
    for bx in T.thread_binding((h + 1) // 2, "blockIdx.x"):
        for ty in T.thread_binding(2, "threadIdx.y"):
            for tx in T.thread_binding(8, "threadIdx.x"):
                if bx * 2 + ty < h:
                    y[bx * 2 + ty, tx] = x[bx * 2 + ty, tx] * s - x[bx * 2 + ty, tx] // 3
    for bx in T.thread_binding((h + 1) // 2, "blockIdx.x"):
        for v in T.vectorized(4):
            if bx == 0:
                f[v + 4] = f[v] * T.float32(2)
'''


def parse():
    """A fresh PrimFunc from the same text, as a new process would have."""
    return vkir.from_script(SOURCE)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    return tmp_path / "kernels"


def _run(k, h=5, s=3):
    rng = np.random.default_rng(1)
    x = rng.integers(-100, 100, (h, 8), dtype=np.int32)
    y = np.zeros((h, 8), np.int32)
    f = np.arange(8, dtype=np.float32)
    k(x, y, s, f)
    np.testing.assert_array_equal(y, x * s - x // 3)
    np.testing.assert_array_equal(f, [0, 1, 2, 3, 0, 2, 4, 6])
    return y


def test_second_build_loads_from_disk(device, cache):
    first = vkir.build(parse(), device=device, pointer_casts=True)
    assert not first._compiled.cached
    entries = list(cache.glob("*.json"))
    assert len(entries) == 1
    again = vkir.build(parse(), device=device, pointer_casts=True)
    assert again._compiled.cached and again.spirv == first.spirv
    assert again.module.local_size == first.module.local_size
    assert [(b.binding, b.param_index, b.writable, str(b.buffer.dtype)) for b in again.module.bindings] \
        == [(b.binding, b.param_index, b.writable, str(b.buffer.dtype)) for b in first.module.bindings]
    assert any(str(b.buffer.dtype) == "float32x4" for b in again.module.bindings)  # the cast alias
    for h in (1, 5, 6):  # grid and push constants computed from the user's sizes and scalars
        np.testing.assert_array_equal(_run(first, h), _run(again, h))
    vkir.assert_structural_equal(again.ir, first.ir)  # lowered again on demand
    assert len(list(cache.glob("*.json"))) == 1


def test_key_covers_options_and_target(device, cache):
    vkir.build(parse(), device=device)
    vkir.build(parse(), device=device, precise=True)
    vkir.build(parse(), device=device, pointer_casts=True)
    assert len(list(cache.glob("*.json"))) == 3
    func = parse()
    keys = {compile_cache.cache_key(func, t, {"pointer_casts": False})
            for t in (Target(), Target.vulkan13(), Target.lavapipe())}
    assert len(keys) == 3
    edited = vkir.from_script(SOURCE.replace("// 3", "// 4"))
    assert compile_cache.cache_key(edited, Target(), {}) != compile_cache.cache_key(func, Target(), {})


def _resealed(text, change):
    """The entry with its words changed by `change` and every checksum recomputed: only the
    seal (an HMAC under the user's key, which an attacker with the cache folder lacks) can
    tell."""
    import base64
    import hashlib
    import json

    rec = json.loads(text)
    words = change(base64.b64decode(rec["words"]))
    rec["words"] = base64.b64encode(words).decode()
    rec["sha256"] = hashlib.sha256(words).hexdigest()
    rec["digest"] = compile_cache._digest(rec)
    return json.dumps(rec)


@pytest.mark.parametrize("damage", [
    lambda text: text[: len(text) // 2],                               # truncated
    lambda text: "not json",                                           # garbage
    lambda text: text.replace('"sha256":"', '"sha256":"0'),            # checksum mismatch
    lambda text: text.replace('"words":"', '"words":"AAAA'),           # words changed
    lambda text: text.replace('"var","h"', '"var","nosuch"'),          # names a missing size
    lambda text: text.replace(f'"format":{compile_cache.FORMAT}', '"format":99'),  # another format
    lambda text: text.replace('"writable":true', '"writable":false'),  # one dispatch field
    lambda text: text.replace('"local_size":[', '"local_size":[1'),    # one number
    lambda text: b"\xff\xfe" + text.encode(),                         # not UTF-8
    lambda text: "[1, 2]",                                             # JSON, not an entry
    lambda text: _resealed(text, lambda w: w[:20] + b"\xff\xff\x00\x00" + w[24:]),  # digest ok, words not valid SPIR-V
])
def test_damaged_entry_is_rebuilt(device, cache, damage):
    vkir.build(parse(), device=device)
    (entry,) = cache.glob("*.json")
    damaged = damage(entry.read_text())
    if isinstance(damaged, bytes):
        entry.write_bytes(damaged)
    else:
        entry.write_text(damaged)
    k = vkir.build(parse(), device=device)
    assert not k._compiled.cached  # rebuilt, and the entry rewritten whole
    _run(k)
    assert vkir.build(parse(), device=device)._compiled.cached


def test_concurrent_builds_share_one_entry(device, cache):
    kernels, errors = [], []

    def build():
        try:
            kernels.append(vkir.build(parse(), device=device))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(kernels) == 4
    assert [p.name for p in cache.iterdir()] == [next(cache.glob("*.json")).name]  # no temp files
    assert len({k.spirv for k in kernels}) == 1


def test_cache_off_and_unwritable(device, tmp_path, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", "0")
    assert compile_cache.cache_dir() is None
    assert not vkir.build(parse(), device=device)._compiled.cached
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("VKIR_CACHE_DIR", str(blocked))  # kernels/ cannot be created under a file
    _run(vkir.build(parse(), device=device))


WIDE_SCALAR = '''
@T.prim_func
def offset(x: T.Buffer((64,), "int64"), y: T.Buffer((64,), "int64"), d: T.int64):
    for tx in T.thread_binding(64, "threadIdx.x"):
        y[tx] = x[tx] + d
'''


def test_a_kernel_with_an_int64_scalar_is_stored_and_loaded(device, cache):
    """Where int64 is emulated (SwiftShader) the scalar travels as two words, the high one a
    parameter of the lowered function the entry must map back to `d`; natively it is one."""
    x = np.arange(-32, 32, dtype=np.int64) * (1 << 33)
    first = vkir.build(vkir.from_script(WIDE_SCALAR), device=device)
    again = vkir.build(vkir.from_script(WIDE_SCALAR), device=device)
    assert not first._compiled.cached and again._compiled.cached
    assert len(list(cache.glob("*.json"))) == 1
    for k in (first, again):
        for d in (-(1 << 40) - 7, (1 << 35) + 3, -1):
            y = np.zeros(64, np.int64)
            k(x, y, d)
            np.testing.assert_array_equal(y, x + d)
