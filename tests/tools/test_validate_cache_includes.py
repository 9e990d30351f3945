"""`vkir validate --cache` keyed by the files a source actually includes (glslang --depfile):
an edited include is a miss, an edited neighbour the source does not include is a hit, a new
file that shadows an include is a miss, a source that failed for a missing include is checked
again once the include exists; SPIR-V binaries need no include record."""

import pytest

from vkir.tools import validate_jobs
from vkir.tools.validate_jobs import Options, read_depfile, run_jobs

MAIN = """#version 450
#extension GL_GOOGLE_include_directive : require
#include "scale.h"
layout(local_size_x = 1) in;
layout(binding = 0) buffer B { float b[]; };
void main() { b[0] = SCALE; }
"""


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    src, inc = tmp_path / "src", tmp_path / "inc"
    src.mkdir()
    inc.mkdir()
    (src / "main.comp").write_text(MAIN)
    (src / "notes.txt").write_text("not included")
    (inc / "scale.h").write_text("#define SCALE 2.0\n")
    (inc / "unused.h").write_text("#define UNUSED 1\n")
    return tmp_path


@pytest.fixture
def calls(monkeypatch):
    out = []
    real = validate_jobs.check_file
    monkeypatch.setattr(validate_jobs, "check_file", lambda *a: out.append(a[0]) or real(*a))
    return out


def test_only_the_included_files_decide_a_hit(tree, calls):
    options = Options(includes=(str(tree / "inc"),), cache=tree / "cache")
    source = tree / "src" / "main.comp"
    check = lambda: run_jobs([source], "vulkan1.1", options)[0]   # noqa: E731
    assert check().valid and len(calls) == 1
    assert check().valid and len(calls) == 1                          # a hit
    (tree / "src" / "notes.txt").write_text("edited")                 # beside it, not included
    (tree / "inc" / "unused.h").write_text("#define UNUSED 2\n")      # in -I, not included
    assert check().valid and len(calls) == 1                          # still a hit
    (tree / "inc" / "scale.h").write_text("#define SCALE +\n")        # the include, broken
    assert not check().valid and len(calls) == 2
    (tree / "inc" / "scale.h").write_text("#define SCALE 2.0\n")      # back as it was
    assert check().valid and len(calls) == 3   # the failure recorded no includes: checked
    assert check().valid and len(calls) == 3   # and a hit again


def test_a_new_file_that_shadows_an_include_is_a_miss(tree, calls):
    options = Options(includes=(str(tree / "inc"),), cache=tree / "cache")
    source = tree / "src" / "main.comp"
    assert run_jobs([source], "vulkan1.1", options)[0].valid and len(calls) == 1
    # the including file's folder is searched before -I: this one is used from now on
    (tree / "src" / "scale.h").write_text("#define SCALE undefined_name\n")
    assert not run_jobs([source], "vulkan1.1", options)[0].valid and len(calls) == 2


def test_a_source_that_failed_for_a_missing_include_is_checked_again(tree, calls):
    (tree / "inc" / "scale.h").unlink()
    options = Options(includes=(str(tree / "inc"),), cache=tree / "cache")
    source = tree / "src" / "main.comp"
    first = run_jobs([source], "vulkan1.1", options)[0]
    assert not first.valid and "scale.h" in first.problems[0].message
    assert not run_jobs([source], "vulkan1.1", options)[0].valid and len(calls) == 1   # a hit
    (tree / "inc" / "scale.h").write_text("#define SCALE 3.0\n")
    assert run_jobs([source], "vulkan1.1", options)[0].valid and len(calls) == 2


def test_depfiles_with_spaces_and_continuations(tmp_path):
    path = tmp_path / "deps.d"
    path.write_text("/t/out.spv: /a\\ b/s.comp \\\n /c/d.h /e/f\\ g.h\n")
    assert read_depfile(path) == ["/a b/s.comp", "/c/d.h", "/e/f g.h"]
    assert read_depfile(tmp_path / "none.d") is None
