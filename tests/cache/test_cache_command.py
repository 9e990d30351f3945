"""`vkir cache info` and `vkir cache clean` report and remove vkir's own files only, and a cache
root stays under its size cap by removing the entries used least recently."""

import json
import os

import numpy as np
import pytest

import vkir
from vkir import config, store
from vkir.errors import ArgumentError
from vkir.tools.cli import main

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


def _entry(root, cache, name, size, used=None):
    """A sealed entry of `size` bytes in `cache`, last used at time `used` (default: now)."""
    folder = store.cache_folder(cache)
    path = folder / name
    assert store.write(path, store.seal(f"{cache}/{name}", b"x" * size))
    if used is not None:
        os.utime(path, (used, used))
    return path


def test_info_and_clean(root, capsys):
    assert main(["cache", "info"]) == 0
    assert "total                0 entries" in capsys.readouterr().out
    kernel = _entry(root, "kernels", "a.json", 100, 1000)
    _entry(root, "native-loops", "loop-b.so", 200, 1000)
    _entry(root, "pipelines", "pipelines-c.bin", 50, 1000)
    mine = root / "kernels" / "notes.txt"          # not vkir's: never counted, never removed
    mine.write_text("keep me")
    assert main(["cache", "info", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["root"] == str(root) and data["unsafe"] is None
    assert data["max_bytes"] == config.cache_max_bytes()
    sizes = {name: (row["entries"], row["bytes"]) for name, row in data["caches"].items()}
    assert sizes["autotune"] == (0, 0) and sizes["kernels"][0] == 1
    assert sizes["native-loops"][0] == sizes["pipelines"][0] == 1
    assert sizes["kernels"][1] == kernel.stat().st_size
    assert main(["cache", "info"]) == 0
    text = capsys.readouterr().out
    assert f"cache root: {root}" in text and "native-loops         1 entries" in text
    assert main(["cache", "clean"]) == 0
    assert "removed 3 files" in capsys.readouterr().out
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) \
        == ["kernels", "kernels/notes.txt"]
    assert main(["cache", "clean"]) == 0
    assert "removed 0 files" in capsys.readouterr().out


def test_clean_refuses_an_unsafe_root(root, capsys):
    _entry(root, "kernels", "a.json", 10, 1000)
    os.chmod(root, 0o777)
    assert main(["cache", "clean"]) == 2
    assert "not cleaning" in capsys.readouterr().err
    assert (root / "kernels" / "a.json").exists()
    with pytest.raises(ArgumentError, match="others may write to it"):
        from vkir.tools import caches

        caches.cmd_clean(None)


def test_no_disk_cache(monkeypatch, capsys):
    monkeypatch.setenv("VKIR_CACHE_DIR", "0")
    assert main(["cache", "info"]) == 0 and "no disk cache" in capsys.readouterr().out
    assert main(["cache", "clean"]) == 0 and "nothing to clean" in capsys.readouterr().out


def test_least_recently_used_entries_go_first(root, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_MAX_BYTES", "1K")
    sealed = len(store.seal("x", b""))
    old = _entry(root, "kernels", "old.json", 300 - sealed, 1000)
    used = _entry(root, "autotune", "used.json", 300 - sealed, 1001)
    newer = _entry(root, "native-loops", "loop-n.so", 300 - sealed, 1002)
    assert store.read(used) is not None            # a read marks `used` as the newest
    assert used.stat().st_mtime > newer.stat().st_mtime
    _entry(root, "kernels", "new.json", 300 - sealed)   # 1200 bytes: the oldest must go
    assert not old.exists() and used.exists() and newer.exists()
    _entry(root, "kernels", "big.json", 900 - sealed)
    assert not newer.exists()
    assert sum(e.size for e in store.entries(root)) <= 1024


def test_builds_stay_under_the_cap(device, root, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_MAX_BYTES", "5000")
    for factor in range(2, 7):
        k = vkir.build(vkir.from_script(SOURCE.format(factor=factor)), device=device)
        x = np.ones(64, np.float32)
        y = np.zeros(64, np.float32)
        k(x, y)
        assert y[0] == factor
        assert sum(e.size for e in store.entries(root)) <= 5000
    assert list((root / "kernels").glob("*.json"))


@pytest.mark.parametrize("raw, value", [("", 1 << 30), ("2048", 2048), ("3k", 3072),
                                         ("1M", 1 << 20), ("2G", 2 << 30),
                                         ("4294967296G", 1 << 62)])
def test_max_bytes_setting(monkeypatch, raw, value):
    monkeypatch.setenv("VKIR_CACHE_MAX_BYTES", raw)
    assert config.cache_max_bytes() == value


@pytest.mark.parametrize("raw", ["0", "-5", "1.5G", "lots", "G", "99999999999999999999999G",
                                 "4294967297G"])
def test_max_bytes_setting_refused(monkeypatch, raw):
    monkeypatch.setenv("VKIR_CACHE_MAX_BYTES", raw)
    with pytest.raises(ArgumentError, match="VKIR_CACHE_MAX_BYTES"):
        config.cache_max_bytes()
