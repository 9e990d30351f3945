"""`vkir validate` on HLSL sources (glslang's HLSL front end, `--entry`) and with
`--auto-map-bindings` (resources declared without a binding, as HLSL registers and GLSL written
for other APIs are); both are part of the result cache's key."""

from pathlib import Path

import pytest

from vkir.spirv.reflection import reflect
from vkir.tools import cli
from vkir.tools.validate import check_file, compile_glsl_file

HLSL = """RWStructuredBuffer<float> data : register(u0);
cbuffer Params : register(b0) { float scale; };
[numthreads(64, 1, 1)]
void CSMain(uint3 id : SV_DispatchThreadID) { data[id.x] = data[id.x] * scale; }
"""

HLSL_BROKEN = """RWStructuredBuffer<float> data : register(u0);
[numthreads(64, 1, 1)]
void CSMain(uint3 id : SV_DispatchThreadID) { data[id.x] = undefined_name; }
"""

NO_BINDINGS = """#version 450
layout(local_size_x = 16) in;
layout(std430) readonly buffer A { float a[]; };
layout(std430) buffer B { float b[]; };
void main() { b[gl_GlobalInvocationID.x] = 2.0 * a[gl_GlobalInvocationID.x]; }
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("hlsl")
    (root / "scale.hlsl").write_text(HLSL)
    (root / "nobind.comp").write_text(NO_BINDINGS)
    bad = root / "bad"
    bad.mkdir()
    (bad / "broken.hlsl").write_text(HLSL_BROKEN)
    return root


def run(capsys, *argv):
    status = cli.main([str(a) for a in argv])
    return status, capsys.readouterr().out


def test_hlsl_compiles_with_its_entry_point(folder, capsys):
    words, messages = compile_glsl_file(folder / "scale.hlsl", "vulkan1.1", entry="CSMain")
    assert messages == ""
    info = reflect(words, "CSMain")
    assert info.local_size == (64, 1, 1)
    # registers u0 and b0 both become binding 0 of set 0 (different kinds)
    assert [(b.set, b.binding, b.kind, b.name) for b in info.bindings] == [
        (0, 0, "storage", "data"), (0, 0, "uniform", "Params")]
    status, out = run(capsys, "validate", folder / "scale.hlsl", "--entry", "CSMain")
    assert status == 0 and "scale.hlsl: ok" in out


def test_hlsl_without_its_entry_point_or_with_an_error_is_invalid(folder, capsys):
    status, out = run(capsys, "validate", folder / "scale.hlsl")
    assert status == 1
    assert "no entry point function 'main' in the HLSL source (name it with --entry)" in out
    status, out = run(capsys, "validate", folder / "bad", "--entry", "CSMain")
    assert status == 1 and "broken.hlsl: error (glslang)" in out and "undefined_name" in out
    assert check_file(folder / "bad" / "broken.hlsl", "vulkan1.1", entry="CSMain").kind == "hlsl"


def test_a_folder_scan_finds_hlsl_sources(folder, capsys):
    status, out = run(capsys, "validate", folder, "--exclude", "*.comp", "--entry", "CSMain")
    assert status == 1
    assert "scale.hlsl: ok" in out and "broken.hlsl: error" in out


def test_auto_map_bindings_binds_what_the_source_leaves_unbound(folder, capsys):
    status, out = run(capsys, "validate", folder / "nobind.comp")
    assert status == 1 and "require layout(binding=X)" in out
    status, out = run(capsys, "validate", folder / "nobind.comp", "--auto-map-bindings")
    assert status == 0 and "nobind.comp: ok" in out
    words, _ = compile_glsl_file(folder / "nobind.comp", "vulkan1.1", auto_map=True)
    assert [(b.set, b.binding, b.name) for b in reflect(words).bindings] == [
        (0, 0, "A"), (0, 1, "B")]


def test_the_cache_keys_on_auto_map_and_entry(folder, tmp_path, capsys):
    cache = tmp_path / "cache"
    source = folder / "nobind.comp"
    assert run(capsys, "validate", source, "--cache", cache)[0] == 1
    assert run(capsys, "validate", source, "--cache", cache, "--auto-map-bindings")[0] == 0
    assert run(capsys, "validate", source, "--cache", cache)[0] == 1    # not the amb result
    hlsl = folder / "scale.hlsl"
    assert run(capsys, "validate", hlsl, "--cache", cache)[0] == 1
    assert run(capsys, "validate", hlsl, "--cache", cache, "--entry", "CSMain")[0] == 0
    # one entry (its includes and result) per source and options
    assert len(list(Path(cache).glob("*.json"))) == 4
