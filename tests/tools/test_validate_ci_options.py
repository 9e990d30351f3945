"""What CI users of `vkir validate` need: include folders and defines, a manifest of variants per
source, glob and exclude patterns (headers are not shaders), a stage for .glsl files, parallel
runs, a result cache and SARIF output."""

import json
import subprocess
import sys

import pytest

from vkir.tools import validate_jobs
from vkir.tools.validate_jobs import Options, run_jobs

HEADER = "float twice(float x) { return 2.0 * x; }\n"
USES_INCLUDE = """#version 450
#include "common.h.glsl"
layout(local_size_x = 1) in;
layout(binding = 0) buffer B { float v[]; };
void main() { v[0] = twice(v[0]) + float(SCALE); }
"""
BROKEN = """#version 450
layout(local_size_x = 1) in;
void main() {
  float x = undefined_thing;
}
"""


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "shaders" / "include").mkdir(parents=True)
    (tmp_path / "shaders" / "include" / "common.h.glsl").write_text(HEADER)
    (tmp_path / "shaders" / "uses_include.comp").write_text(USES_INCLUDE)
    (tmp_path / "shaders" / "broken.comp").write_text(BROKEN)
    (tmp_path / "variants.json").write_text(json.dumps(
        {"*uses_include.comp": [{"SCALE": "1"}, {"SCALE": "2.5"}, {"OTHER": "1"}]}))
    return tmp_path


def validate(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "vkir", "validate", *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def test_includes_variants_and_excludes(tree):
    run = validate(tree / "shaders", "--exclude", "*.h.glsl", "-I", tree / "shaders" / "include",
                   "--variants", tree / "variants.json")
    lines = run.stdout.splitlines()
    assert run.returncode == 1
    assert f"{tree / 'shaders' / 'uses_include.comp'} [SCALE=1]: ok" in lines
    assert f"{tree / 'shaders' / 'uses_include.comp'} [SCALE=2.5]: ok" in lines
    assert any(line.startswith(f"{tree / 'shaders' / 'uses_include.comp'} [OTHER=1]: error "
                               "(glslang): ERROR") and "SCALE" in line for line in lines)
    assert not any("common.h.glsl" in line for line in lines)   # the header was excluded
    assert lines[-1].endswith("4 file(s) checked for vulkan1.1: 2 invalid")


def test_defines_for_every_source_and_a_glob(tree):
    run = validate(tree / "shaders", "--glob", "uses_*.comp", "-I", tree / "shaders" / "include",
                   "-D", "SCALE=3")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1].endswith("1 file(s) checked for vulkan1.1: all valid")


def test_a_stage_for_glsl_files(tmp_path):
    frag = tmp_path / "shade.glsl"
    frag.write_text("#version 450\nlayout(location = 0) out vec4 color;\n"
                    "void main() { color = vec4(1.0); }\n")
    assert validate(frag).returncode == 1                 # .glsl defaults to a compute shader
    assert validate(frag, "-S", "frag").returncode == 0


def test_parallel_runs_report_in_order(tree):
    files = sorted((tree / "shaders").glob("*.comp"))
    options = Options(includes=(str(tree / "shaders" / "include"),), defines=(("SCALE", "1"),))
    one = run_jobs(files, "vulkan1.1", options)
    many = run_jobs(files, "vulkan1.1", Options(options.includes, options.defines, jobs=4))
    assert [(r.file, r.valid) for r in many] == [(r.file, r.valid) for r in one]
    assert [r.valid for r in one] == [False, True]


def test_the_cache_reuses_results_until_an_include_changes(tree, monkeypatch):
    calls = []
    real = validate_jobs.check_file
    monkeypatch.setattr(validate_jobs, "check_file", lambda *a: calls.append(a[0]) or real(*a))
    files = [tree / "shaders" / "uses_include.comp"]
    options = Options(includes=(str(tree / "shaders" / "include"),), defines=(("SCALE", "1"),),
                      cache=tree / "cache")
    first = run_jobs(files, "vulkan1.1", options)
    again = run_jobs(files, "vulkan1.1", options)
    assert len(calls) == 1 and first[0].valid and again[0].valid
    (tree / "shaders" / "include" / "common.h.glsl").write_text("float twice(float x) { return x }\n")
    changed = run_jobs(files, "vulkan1.1", options)
    assert len(calls) == 2 and not changed[0].valid
    for entry in (tree / "cache").glob("*.json"):
        entry.write_text("not json")                   # a damaged entry is a miss
    run_jobs(files, "vulkan1.1", options)
    assert len(calls) == 3


def test_sarif_names_file_and_line(tree):
    run = validate(tree / "shaders" / "broken.comp", "--format", "sarif")
    doc = json.loads(run.stdout)
    assert doc["version"] == "2.1.0"
    (result, *_) = doc["runs"][0]["results"]
    assert result["ruleId"] == "glslang" and "undefined_thing" in result["message"]["text"]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith("broken.comp")
    assert location["region"]["startLine"] == 4


@pytest.mark.parametrize("args, message", [
    (["-D", "=oops"], "expected NAME or NAME=VALUE"),
    (["-I", "/no/such/folder"], "no such folder"),
    (["--variants", "/no/such/file.json"], "--variants"),
])
def test_usage_errors_exit_2(tree, args, message):
    run = validate(tree / "shaders" / "broken.comp", *args)
    assert run.returncode == 2 and message in run.stderr
