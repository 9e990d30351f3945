"""Native-loop libraries are loaded only when vkir built them or can verify them: a library
planted in the cache is never loaded (its code never runs, the result stays right), a cache
folder another user could write to is not used, and "no disk cache" leaves nothing in the
system's temporary folder."""

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import vkir
from vkir.interpreter import native_loops

SOURCE = '''
@T.prim_func
def total(a: T.Buffer((64,), "int32"), out: T.Buffer((1,), "int32")):
    acc = T.alloc_buffer((1,), "int32", scope="local")
    acc[0] = 0
    for i in T.serial(64):
        acc[0] = acc[0] + a[i]
    out[0] = acc[0]
'''

PLANTED = r'''
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen("%s", "w");
    if (f) { fputs("planted code ran", f); fclose(f); }
}
int vkir_loop(long long a, void **b, void *c, void *d) { return 0; }
'''

pytestmark = pytest.mark.skipif(native_loops.c_compiler() is None, reason="needs a C compiler")


@pytest.fixture
def env(tmp_path, monkeypatch):
    """Native loops from the first iteration, a fresh cache root and a fresh sealing key."""
    monkeypatch.setenv("VKIR_NATIVE_LOOPS", "1")
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path / "root"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    native_loops.load_loop.cache_clear()   # what this process loaded before is not reused
    yield tmp_path
    native_loops.load_loop.cache_clear()


def _run():
    """Interpret the sum in C; its result (2016 when right)."""
    runs = []
    original = native_loops.NativeLoop.run

    def run(self, *args):
        result = original(self, *args)
        runs.append(result)
        return result

    native_loops.NativeLoop.run, saved = run, original
    try:
        out = np.zeros(1, np.int32)
        vkir.interpret(vkir.from_script(SOURCE), np.arange(64, dtype=np.int32), out)
    finally:
        native_loops.NativeLoop.run = saved
    assert True in runs   # C ran the loop
    return int(out[0])


def _planted_library(tmp_path: Path, marker: Path) -> bytes:
    src = tmp_path / "planted.c"
    src.write_text(PLANTED % marker)
    lib = tmp_path / "planted.so"
    subprocess.run([native_loops.c_compiler(), "-shared", "-fPIC", "-o", str(lib), str(src)],
                   check=True)
    return lib.read_bytes()


def test_a_replaced_cached_library_is_not_loaded(env):
    assert _run() == 2016
    cached = list((env / "root" / "native-loops").glob("loop-*.so"))
    assert cached
    marker = env / "marker"
    planted = _planted_library(env, marker)
    for path in cached:   # what a CI cache restored from an untrusted branch could hold
        path.write_bytes(planted)
    native_loops.load_loop.cache_clear()
    assert _run() == 2016
    assert not marker.exists()
    # the entry was built again, and the rebuilt entry is used as it is
    assert all(path.read_bytes() != planted for path in cached)
    native_loops.load_loop.cache_clear()
    assert _run() == 2016


def _chown_foreign(path: Path) -> None:
    os.chown(path, 12345, 12345)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder of another user needs root")
@pytest.mark.parametrize("setup", ["foreign 0777", "own 0777", "inside a shared folder"])
def test_an_unsafe_cache_folder_is_not_used(env, monkeypatch, caplog, setup):
    shared = env / "shared"
    shared.mkdir()
    root = shared / "root"
    root.mkdir()
    if setup == "foreign 0777":
        _chown_foreign(root)
        os.chmod(root, 0o777)
    elif setup == "own 0777":
        os.chmod(root, 0o777)
    else:   # someone else may replace root: the folder above it is writable by all, not sticky
        _chown_foreign(shared)
        os.chmod(shared, 0o777)
    monkeypatch.setenv("VKIR_CACHE_DIR", str(root))
    with caplog.at_level(logging.WARNING, logger="vkir.store"):
        assert _run() == 2016
    assert list(root.iterdir()) == []    # nothing read from it, nothing written to it
    assert "not using the cache folder" in caplog.text and str(root) in caplog.text


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder of another user needs root")
def test_no_disk_cache_leaves_nothing_in_the_temporary_folder(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # a folder another user made where an old vkir put its libraries
    planted = tmp / f"vkir-native-{os.getuid()}"
    planted.mkdir()
    _chown_foreign(planted)
    os.chmod(planted, 0o777)
    script = textwrap.dedent(f'''
        import numpy as np, vkir
        out = np.zeros(1, np.int32)
        vkir.interpret(vkir.from_script({SOURCE!r}), np.arange(64, dtype=np.int32), out)
        print(int(out[0]))
    ''')
    env = {**os.environ, "VKIR_CACHE_DIR": "0", "VKIR_NATIVE_LOOPS": "1", "TMPDIR": str(tmp),
           "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2016"
    assert sorted(p.name for p in tmp.iterdir()) == [planted.name]
    assert list(planted.iterdir()) == []
    assert not (tmp_path / "state").exists()   # no key either: nothing was sealed


def test_each_library_loaded_is_its_own(env):
    """Libraries loaded one after another from private copies (each removed once loaded) each
    keep their own code: the loader never takes a later copy for one loaded before."""
    from vkir.interpreter.native_library import load_library

    compiler = native_loops.c_compiler()
    sources = [f"int vkir_loop(long long a, void **b, void *c, void *d) {{ return {i}; }}\n"
               for i in range(4)]
    for source in sources:
        load_library(source, compiler, ("-shared", "-fPIC"))    # built and cached
    for _ in range(3):
        for i, source in enumerate(sources):
            fn = load_library(source, compiler, ("-shared", "-fPIC")).vkir_loop
            assert fn(0, None, None, None) == i
