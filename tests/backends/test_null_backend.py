"""A device from outside vkir: the recording null backend (null_backend.py, under 60 lines: a
core Runtime and nothing optional), installed beside vkir as a package of its own whose
metadata registers it in the entry point group `vkir.backends`, runs the README's vadd and
block_sum to the dispatch; what it lacks is refused by capability before anything runs."""

import re
import shutil
import struct
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.backends import BACKENDS
from vkir.errors import UnsupportedError
from vkir.seam import CAPABILITIES, registry
from vkir.target import Target

HERE = Path(__file__).resolve().parent
README = (HERE.parent.parent / "README.md").read_text()


def _readme_kernel(name: str):
    """The README's T.prim_func `name`, parsed from its text."""
    block = re.search(rf"(@T\.prim_func\ndef {name}\(.*?)\n\n", README, re.S).group(1)
    return vkir.from_script(block)


def _install(folder: Path, monkeypatch, registered: str):
    """null_backend.py installed in `folder` as the distribution vkir-null (its module
    vkir_null, a dist-info whose entry_points.txt registers `registered` as "null", on sys.path
    as pip would leave it); the module."""
    shutil.copy(HERE / "null_backend.py", folder / "vkir_null.py")
    info = folder / "vkir_null-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vkir-null\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[vkir.backends]\nnull = vkir_null:{registered}\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "vkir_null", raising=False)
    registry.refresh()
    import vkir_null

    return vkir_null


@pytest.fixture
def null(tmp_path, monkeypatch):
    """The null backend installed beside vkir, registered by its backend class."""
    yield _install(tmp_path, monkeypatch, "NullBackend")
    registry.refresh()


def test_a_runtime_class_registered_alone_is_a_backend_too(tmp_path, monkeypatch):
    try:
        module = _install(tmp_path, monkeypatch, "NullRuntime")
        k = vkir.build(_readme_kernel("block_sum"), device="null")
        assert isinstance(k, vkir.Kernel) and k.target.kind == "null"
        rt = module.NullRuntime()
        vkir.build(_readme_kernel("block_sum"), device=rt)(np.ones(1024, np.float32),
                                                           np.zeros(16, np.float32))
        assert [d["grid"] for d in rt.dispatches] == [(16, 1, 1)]
    finally:
        registry.refresh()


def test_the_null_backend_is_small_and_outside_the_package():
    lines = (HERE / "null_backend.py").read_text().splitlines()
    assert len(lines) < 60
    assert not list((HERE.parent.parent / "vkir").rglob("null_backend.py"))


def test_an_installed_entry_point_adds_a_backend_and_a_target_kind(null):
    assert "null" in BACKENDS and BACKENDS["null"] is null.NullBackend
    assert Target(kind="null").is_vulkan
    assert registry.backend_names()[:3] == ("vulkan", "interp", "wgpu")


def test_an_unregistered_kind_is_refused_naming_the_registered_ones():
    registry.refresh()
    assert "null" not in BACKENDS
    with pytest.raises(ValueError, match="unknown target kind 'null'.*'vkir.backends'"):
        Target(kind="null")


def test_builtins_are_found_when_the_installed_metadata_predates_the_group(monkeypatch):
    """An editable install made before the entry points existed has none of them."""
    real = metadata.entry_points
    monkeypatch.setattr(metadata, "entry_points",
                        lambda **kw: () if kw.get("group") == registry.GROUP else real(**kw))
    registry.refresh()
    try:
        assert set(registry.backend_names()) >= {"vulkan", "interp", "wgpu"}
        k = vkir.build(_readme_kernel("vadd"), device="interp")
        a = np.arange(8, dtype=np.float32)
        out = np.zeros(8, np.float32)
        k(a, a, out)
        np.testing.assert_array_equal(out, 2 * a)
    finally:
        registry.refresh()


def test_readme_vadd_runs_to_the_dispatch(null):
    rt = null.NullRuntime()
    k = vkir.build(_readme_kernel("vadd"), device=rt)
    x, y = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    out = np.zeros(1000, np.float32)
    k(x, y, out)
    (d,) = rt.dispatches
    assert d["grid"] == (16, 1, 1)                            # ceil(1000 / 64) workgroups
    assert d["push"] == struct.pack("<i", 1000)               # the symbolic size n
    assert d["spec"].bindings == (0, 1, 2) and d["spec"].local_size == (64, 1, 1)
    assert [b.nbytes for b in d["buffers"]] == [4000] * 3
    np.testing.assert_array_equal(d["buffers"][0].view(np.float32), x)   # copied in
    assert isinstance(d["spec"].spirv, bytes) and d["spec"].entry_point == "vadd"


def test_readme_block_sum_runs_to_the_dispatch(null):
    rt = null.NullRuntime()
    k = vkir.build(_readme_kernel("block_sum"), device="null")
    a, out = np.ones(1024, np.float32), np.zeros(16, np.float32)
    vkir.build(_readme_kernel("block_sum"), device=rt)(a, out)
    assert isinstance(k, vkir.Kernel) and k.target.kind == "null"
    (d,) = rt.dispatches
    assert d["grid"] == (16, 1, 1) and d["push"] == b""      # every size is a constant
    assert d["spec"].bindings == (0, 1) and d["spec"].local_size == (64, 1, 1)
    assert [b.nbytes for b in d["buffers"]] == [4096, 64]


@T.prim_func
def doubled(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in T.thread_binding(64, "blockIdx.x"):
        B[i] = A[i] * T.float32(2)


def test_what_the_backend_lacks_is_refused_by_capability_before_anything_runs(null):
    rt = null.NullRuntime()
    assert rt.capabilities == frozenset()
    assert set(CAPABILITIES) == {"shaders", "images", "sequences", "timestamps", "aliasing"}
    k = vkir.build(doubled, device=rt)
    with pytest.raises(UnsupportedError, match="'shaders' capability"):
        vkir.load_spirv(k.spirv, device=rt)
    with pytest.raises(UnsupportedError, match="'sequences' capability, which the null backend"):
        k.dispatch_spec(np.zeros(64, np.float32), np.zeros(64, np.float32))
    a = np.zeros(64, np.float32)
    with pytest.raises(UnsupportedError, match="'aliasing' capability"):
        k(a, a)
    with pytest.raises(UnsupportedError, match="check_bounds=True is not supported by the null"):
        vkir.build(doubled, device="null", check_bounds=True)
    assert rt.dispatches == []
