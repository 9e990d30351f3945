"""Below the cache root vkir follows no symbolic link and touches no file linked elsewhere: a cache
folder replaced by a link to someone else's folder (a restored CI cache, say) is not used, not
listed, not cleaned and not evicted from, with one warning; only the root may be a link the user
chose."""

import json
import logging
import os

import pytest

from vkir import store
from vkir.tools.cli import main


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path / "root"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    store._warn_unsafe.cache_clear()
    path = tmp_path / "root"
    path.mkdir(mode=0o700)
    return path


@pytest.fixture
def victim(tmp_path):
    """A folder of the user's that is no cache: its *.json files must survive everything."""
    path = tmp_path / "victim"
    path.mkdir()
    for name in ("settings.json", "loop-x.so", "pipelines-y.bin"):
        (path / name).write_text("{}" * 2000)
    return path


def _victim_files(victim):
    return sorted((p.name, p.stat().st_mtime_ns) for p in victim.iterdir())


def _entry(cache, name, size, used=1000):
    path = store.cache_folder(cache) / name
    assert store.write(path, store.seal(f"{cache}/{name}", b"x" * size))
    os.utime(path, (used, used))
    return path


def test_a_linked_cache_folder_is_neither_cleaned_nor_counted(root, victim, capsys, caplog):
    before = _victim_files(victim)
    (root / "kernels").symlink_to(victim)
    (root / "native-loops").symlink_to(victim)
    _entry("autotune", "a.json", 100)
    with caplog.at_level(logging.WARNING, "vkir.store"):
        assert main(["cache", "info", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["caches"]["kernels"] == {"entries": 0, "bytes": 0}
        assert data["caches"]["native-loops"] == {"entries": 0, "bytes": 0}
        assert data["caches"]["autotune"]["entries"] == 1
        assert "symbolic link" in data["unsafe_folders"]["kernels"]
        assert "autotune" not in data["unsafe_folders"]
        assert main(["cache", "info"]) == 0
        assert "kernels: folder not used" in capsys.readouterr().out
        assert main(["cache", "clean"]) == 0
        assert "removed 1 files" in capsys.readouterr().out
    assert _victim_files(victim) == before
    assert (root / "kernels").is_symlink()
    warned = [r.getMessage() for r in caplog.records if "symbolic link" in r.getMessage()]
    assert len([w for w in warned if "kernels" in w]) == 1, warned   # one warning per folder


def test_eviction_never_reaches_through_a_link(root, victim, monkeypatch):
    before = _victim_files(victim)
    (root / "kernels").symlink_to(victim)
    monkeypatch.setenv("VKIR_CACHE_MAX_BYTES", "1K")
    for i in range(4):                               # each write looks at the root's size
        _entry("autotune", f"t{i}.json", 600, used=1000 + i)
    assert _victim_files(victim) == before
    assert [e.path.name for e in store.entries(root)] == ["t3.json"]


def test_nothing_is_written_or_read_through_a_link(root, victim):
    (root / "kernels").symlink_to(victim)
    path = root / "kernels" / "new.json"
    assert not store.write(path, store.seal("kernels/new.json", b"data"))
    assert not (victim / "new.json").exists()
    assert store.read(root / "kernels" / "settings.json") is None
    assert store.safe_folder(root / "kernels", create=True) is None
    assert "symbolic link" in store.unsafe_reason(root / "kernels")
    (root / "autotune").symlink_to(victim / "missing")   # a dangling link: nothing made
    assert not store.write(root / "autotune" / "t.json", b"{}")
    assert not (victim / "missing").exists()


def test_a_folder_others_may_write_below_the_root_is_unsafe(root):
    _entry("kernels", "a.json", 10)
    os.chmod(root / "kernels", 0o777)
    assert "others" in store.unsafe_reason(root / "kernels")
    assert store.entries(root) == [] and store.clean(root) == []
    assert (root / "kernels" / "a.json").exists()


def test_files_linked_elsewhere_are_not_vkirs(root, victim):
    os.mkdir(root / "kernels", 0o700)
    os.link(victim / "settings.json", root / "kernels" / "hard.json")
    (root / "kernels" / "soft.json").symlink_to(victim / "settings.json")
    mine = _entry("kernels", "mine.json", 10)
    before = _victim_files(victim)
    assert [e.path.name for e in store.entries(root)] == ["mine.json"]
    assert store.read(root / "kernels" / "hard.json") is not None   # readable, never touched
    assert [e.path.name for e in store.clean(root)] == ["mine.json"]
    assert not mine.exists()
    assert (root / "kernels" / "hard.json").exists() and (root / "kernels" / "soft.json").exists()
    assert _victim_files(victim) == before


def test_the_root_itself_may_be_a_link_the_user_chose(tmp_path, monkeypatch):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path / "link"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = _entry("kernels", "a.json", 10)
    assert (real / "kernels" / "a.json").is_file()
    assert store.unseal("kernels/a.json", store.read(path)) == b"x" * 10
    assert [e.cache for e in store.entries(tmp_path / "link")] == ["kernels"]
    assert len(store.clean(tmp_path / "link")) == 1 and not (real / "kernels").exists()
