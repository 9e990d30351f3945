"""`vkir validate --cache` trusts no entry it did not seal: a result planted or edited in the
cache folder (`"problems": []` for an invalid shader) is a miss, so the shader is checked again
and CI still fails; so is an entry sealed under another user's key (a cache restored on a fresh
runner)."""

import json
import os
import subprocess
import sys

import pytest

from vkir.tools import validate_jobs
from vkir.tools.validate_jobs import Options, run_jobs

BROKEN = """#version 450
layout(local_size_x = 1) in;
void main() {
  float x = undefined_thing;
}
"""


@pytest.fixture
def broken(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "shaders").mkdir()
    path = tmp_path / "shaders" / "broken.comp"
    path.write_text(BROKEN)
    return path


@pytest.fixture
def calls(monkeypatch):
    out = []
    real = validate_jobs.check_file
    monkeypatch.setattr(validate_jobs, "check_file", lambda *a: out.append(a[0]) or real(*a))
    return out


def test_an_edited_or_planted_entry_is_a_miss(broken, calls, tmp_path):
    cache = tmp_path / "cache"
    options = Options(cache=cache)
    first = run_jobs([broken], "vulkan1.1", options)[0]
    assert not first.valid
    assert not run_jobs([broken], "vulkan1.1", options)[0].valid and len(calls) == 1   # a hit
    (entry,) = cache.glob("*.json")

    entry.write_text(_planted(first))                    # a plain result, no seal
    assert not run_jobs([broken], "vulkan1.1", options)[0].valid and len(calls) == 2
    assert not run_jobs([broken], "vulkan1.1", options)[0].valid and len(calls) == 2   # resealed

    doc = json.loads(entry.read_text())
    doc["result"]["result"]["problems"] = []             # edited, its seal kept
    entry.write_text(json.dumps(doc))
    assert not run_jobs([broken], "vulkan1.1", options)[0].valid and len(calls) == 3
    assert stat_mode(cache) == 0o700                     # made private by vkir.store


def _planted(result):
    return json.dumps({"file": result.file, "kind": result.kind, "problems": []})


def test_an_entry_sealed_under_another_key_is_a_miss(broken, calls, tmp_path, monkeypatch):
    options = Options(cache=tmp_path / "cache")
    run_jobs([broken], "vulkan1.1", options)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "another-runner"))
    assert not run_jobs([broken], "vulkan1.1", options)[0].valid and len(calls) == 2


def test_the_command_fails_despite_a_planted_pass(broken, tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))

    def validate():
        return subprocess.run([sys.executable, "-m", "vkir", "validate", "--cache", str(cache),
                               str(broken)], capture_output=True, text=True, timeout=300, env=env)

    assert validate().returncode == 1
    (entry,) = cache.glob("*.json")
    entry.write_text(json.dumps({"file": str(broken), "kind": "glsl", "problems": []}))
    run = validate()
    assert run.returncode == 1 and "undefined_thing" in run.stdout, run.stdout


def stat_mode(path):
    return os.stat(path).st_mode & 0o777
