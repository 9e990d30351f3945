"""Entries of the SPIR-V cache, the driver pipeline cache and the tuning cache are used only when
vkir sealed them for that place: a consistent-looking entry planted or moved from another key,
a corrupted blob, or an edited tuning record is rebuilt or ignored, never a wrong kernel."""

import json
import os
import types

import numpy as np
import pytest

import vkir
from vkir import store
from vkir.cache import compile as compile_cache

SOURCE = '''
@T.prim_func
def scale(x: T.Buffer((64,), "float32"), y: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        y[tx] = x[tx] * T.float32({factor})
'''


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path / "root"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "root"


def _scale(factor):
    return vkir.from_script(SOURCE.format(factor=factor))


def _run(kernel):
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    kernel(x, y)
    return y / np.maximum(x, 1)


def test_an_entry_moved_from_another_key_is_rebuilt(device, root):
    """An attacker who knows the format rewrites another kernel's entry under this key, with the
    key field and digest made consistent: it must not run."""
    double = vkir.build(_scale(2), device=device)
    (entry_2,) = (root / "kernels").glob("*.json")
    vkir.build(_scale(3), device=device)
    (entry_3,) = set((root / "kernels").glob("*.json")) - {entry_2}
    rec = json.loads(entry_3.read_text())
    rec["key"] = json.loads(entry_2.read_text())["key"]
    rec["digest"] = compile_cache._digest(rec)
    entry_2.write_text(json.dumps(rec))
    again = vkir.build(_scale(2), device=device)
    assert not again._compiled.cached
    np.testing.assert_array_equal(_run(again)[1:], 2)
    assert again.spirv == double.spirv


def test_an_entry_of_another_user_key_is_rebuilt(device, root, tmp_path, monkeypatch):
    vkir.build(_scale(2), device=device)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "other-state"))   # another sealing key
    assert not vkir.build(_scale(2), device=device)._compiled.cached
    assert vkir.build(_scale(2), device=device)._compiled.cached


# -- the driver's pipeline cache -------------------------------------------------------------
@pytest.fixture
def initial_sizes(monkeypatch):
    """The initialDataSize of every VkPipelineCache created during the test."""
    from vkir.runtime._vk import vk

    sizes = []
    create = vk.vkCreatePipelineCache

    def spy(device, info, allocator):
        sizes.append(info.initialDataSize)
        return create(device, info, allocator)

    monkeypatch.setattr(vk, "vkCreatePipelineCache", spy)
    return sizes


def _fresh_cache(device, path):
    from vkir.runtime._vk import ffi, lib

    lib.vkDestroyPipelineCache(device.handle, device._create_pipeline_cache(path), ffi.NULL)


def test_pipeline_cache_round_trip_and_damage(device, root, monkeypatch, initial_sizes):
    from vkir.runtime import pipeline_cache

    vkir.build(_scale(5), device=device)(np.ones(64, np.float32), np.zeros(64, np.float32))
    path = root / "pipelines-test.bin"
    monkeypatch.setattr(device, "_cache_file", path)
    device._save_pipeline_cache()
    sealed = path.read_bytes()
    data = store.unseal(f"pipelines/{path.name}", sealed)
    assert data and pipeline_cache.header_matches(data, device_properties(device))
    _fresh_cache(device, path)
    assert initial_sizes == [len(data)]            # vkir's own data is handed to the driver

    damaged = [
        data,                                        # the driver's bytes, unsealed (planted)
        sealed[:-1] + bytes([sealed[-1] ^ 1]),       # one bit of the payload
        sealed[: len(sealed) // 2],                  # truncated
        b"\0" * 4096,                                # garbage
    ]
    foreign = bytearray(data)
    foreign[16] ^= 0xFF                              # another device's pipelineCacheUUID
    damaged.append(store.seal(f"pipelines/{path.name}", bytes(foreign)))
    for blob in damaged:
        path.write_bytes(blob)
        _fresh_cache(device, path)
    assert initial_sizes[1:] == [0] * len(damaged)   # nothing of them reaches the driver
    k = vkir.build(_scale(7), device=device)         # the device works on
    np.testing.assert_array_equal(_run(k)[1:], 7)


def device_properties(device):
    from vkir.runtime._vk import vk

    return vk.vkGetPhysicalDeviceProperties(device.physical)


# -- tuning records --------------------------------------------------------------------------
def _template(n, w=32):
    return _scale(2)


def _info():
    return types.SimpleNamespace(vendor_id=0x10005, device_id=0, driver_version=1, name="test",
                                 driver="test", kind="cpu")


def test_an_edited_or_planted_tuning_record_is_a_miss(root):
    tuned = vkir.autotune(configs=[dict(w=32), dict(w=64)], key=("n",))(_template)
    tuned._record(_info(), {"n": 8}, {"w": 64}, 0.001)
    tuned._record(_info(), {"n": 9}, {"w": 32}, 0.002)
    assert tuned.cached(_info(), n=8) == {"w": 64}
    path = tuned._cache_path()
    table = json.loads(path.read_text())
    key_8, key_9 = sorted(table)
    table[key_8]["config"] = {"w": 32}              # edited
    path.write_text(json.dumps(table))
    assert tuned.cached(_info(), n=8) is None
    table[key_8] = table[key_9]                       # another shape's record, moved
    path.write_text(json.dumps(table))
    assert tuned.cached(_info(), n=8) is None
    assert tuned.cached(_info(), n=9) == {"w": 32}   # the intact record still counts
    path.write_bytes(os.urandom(300))                 # corrupted
    assert tuned.cached(_info(), n=9) is None
    tuned._record(_info(), {"n": 8}, {"w": 64}, 0.001)
    assert tuned.cached(_info(), n=8) == {"w": 64}


@pytest.mark.parametrize("mode, why", [(0o644, "others may read or write it (mode 0644)"),
                                       (0o600, "owned by another user (uid 12345)")])
def test_a_key_others_could_read_or_write_is_not_used(tmp_path, monkeypatch, caplog, mode, why):
    import hashlib
    import hmac
    import logging

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    key = store.key_file()
    key.parent.mkdir(parents=True, mode=0o700)
    key.write_bytes(b"k" * 32)
    os.chmod(key, mode)
    if mode == 0o600 and os.geteuid() == 0:
        os.chown(key, 12345, 12345)   # private, but another user's
    elif mode == 0o600:
        pytest.skip("making a file of another user needs root")
    with caplog.at_level(logging.WARNING, logger="vkir.store"):
        tag = store.mac("kernels/x", b"payload")
    assert tag != hmac.new(b"k" * 32, b"kernels/x\0payload", hashlib.sha256).hexdigest()
    assert "cannot use the cache key" in caplog.text
    assert why in caplog.text                           # the reason: its mode, or its owner
    assert store.verify("kernels/x", b"payload", tag)   # this process's own key, consistently
