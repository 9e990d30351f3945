"""`vkir validate` on hostile input, as CI runs it on folders an untrusted change may fill: a
device, a FIFO and a huge file are refused unread (exit status 2, the file named), a file name
cannot forge a CI log command (text and GitHub-annotation reports), and a warm `--cache` run reads
each file once, not once per file in its folder."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vkir.tools import cli
from vkir.runtime.glsl import compile_glsl
from vkir.tools import validate_input
from vkir.tools.validate_jobs import Options, run_jobs

SHADERS = Path(__file__).resolve().parents[1] / "shaders"
BROKEN = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { float x = nope; }\n"
FORGED = "a\n::error file=x::forged.comp"
MEMORY_BOUND = 3 << 30   # today's unbounded reads fail fast under it instead of taking the machine


def _bound_memory():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND, MEMORY_BOUND))


def validate(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "vkir", "validate", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=cwd,
                          preexec_fn=_bound_memory)


@pytest.fixture(scope="module")
def words():
    return compile_glsl(SHADERS / "counts.comp", target_env="vulkan1.1")


@pytest.fixture
def good(tmp_path, words):
    path = tmp_path / "good.spv"
    path.write_bytes(words)
    return path


def test_variants_from_a_device_is_refused(good):
    run = validate(good, "--variants", "/dev/zero")
    assert run.returncode == 2, run.stderr[-2000:]
    assert "--variants /dev/zero: a device, not a regular file" in run.stderr


def test_a_fifo_is_refused_without_blocking(good, tmp_path):
    pipe = tmp_path / "variants.json"
    os.mkfifo(pipe)
    try:
        run = validate(good, "--variants", pipe)
    except subprocess.TimeoutExpired:
        pytest.fail("vkir validate blocked on a FIFO")
    assert run.returncode == 2 and f"--variants {pipe}: a FIFO" in run.stderr


def test_a_fifo_in_a_folder_is_refused_not_skipped(good, tmp_path, capsys):
    os.mkfifo(tmp_path / "pipe.spv")
    assert cli.main(["validate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'pipe.spv'}: a FIFO, not a regular file" in err


def test_a_huge_sparse_module_is_refused_unread(tmp_path, words):
    big = tmp_path / "big.spv"
    big.write_bytes(words)
    os.truncate(big, 300 << 20)          # sparse: nothing more is written
    run = validate(big)
    assert run.returncode == 2, run.stderr[-2000:]
    assert (f"{big}: {300 << 20} bytes is over the limit of {validate_input.DEFAULT_MAX_BYTES} "
            "bytes per input file (raise it with --max-file-size)") in run.stderr
    assert run.stdout == ""


def test_the_limit_can_be_raised(good, capsys):
    size = good.stat().st_size
    assert cli.main(["validate", str(good), "--max-file-size", str(size - 1)]) == 2
    assert "over the limit" in capsys.readouterr().err
    assert cli.main(["validate", str(good), "--max-file-size", "1M"]) == 0
    assert cli.main(["validate", str(good), "--max-file-size", "lots"]) == 2
    assert "--max-file-size 'lots'" in capsys.readouterr().err


def _no_command_lines(text):
    """No line a CI runner reads as a command (GitHub: `::` or `##[` after leading blanks)."""
    return not [s for s in text.splitlines() if s.lstrip().startswith(("::", "##["))]


def test_a_file_name_cannot_forge_log_commands(tmp_path, capsys, monkeypatch):
    (tmp_path / FORGED).write_text(BROKEN)
    (tmp_path / "::warning::w.comp").write_text(BROKEN)
    monkeypatch.chdir(tmp_path)
    for args in (["."], [FORGED, "::warning::w.comp"], [FORGED, "--format", "junit", "-o", "r.xml"]):
        assert cli.main(["validate", *args]) == 1
        out = capsys.readouterr().out
        assert _no_command_lines(out), out
        assert "a\\x0a::error file=x::forged.comp: error (glslang)" in out
    # a missing file's name is escaped in the usage error too
    assert cli.main(["validate", "gone\n::error::forged.comp"]) == 2
    err = capsys.readouterr().err
    assert _no_command_lines(err) and "gone\\x0a::error::forged.comp: no such file" in err


def test_github_annotations_escape_their_fields(tmp_path, capsys, monkeypatch):
    (tmp_path / FORGED).write_text(BROKEN)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["validate", FORGED, "--format", "github"]) == 1
    lines = capsys.readouterr().out.splitlines()
    (annotation,) = [s for s in lines if s.startswith("::")]
    assert annotation.startswith("::error file=a%0A%3A%3Aerror file=x%3A%3Aforged.comp,line=3,")
    assert "'nope' : undeclared identifier" in annotation and "%0AERROR:" in annotation
    assert lines[-1] == "1 file(s) checked for vulkan1.1: 1 invalid"


def test_printable_escapes_controls_and_commands():
    assert validate_input.printable("x\r\n\x1b[2J\u2028") == "x\\x0d\\x0a\\x1b[2J\\u2028"
    assert validate_input.printable("  ::error::x") == "  \\x3a:error::x"
    assert validate_input.printable("ok ##vso[task.complete]") == "ok ##vso\\x5btask.complete]"
    assert validate_input.shown("::set-output name=x::y.comp") == "./::set-output name=x::y.comp"
    assert validate_input.shown(os.fsdecode(b"bad\xff.spv")) == "bad\\xff.spv"


def test_a_warm_cache_reads_each_file_once(tmp_path, words):
    count = 40
    shaders = tmp_path / "shaders"
    shaders.mkdir()
    files = []
    for i in range(count):
        files.append(shaders / f"s{i:02d}.spv")
        files[-1].write_bytes(words)
    cache = tmp_path / "cache"
    cache.mkdir()
    for i in range(300):                   # entries of other runs: never read
        (cache / f"{i:064x}.json").write_text("{}")
    options = Options(cache=cache)
    cold = run_jobs(files, "vulkan1.1", options)

    opened = []
    active = [True]

    def hook(event, args):
        if event == "open" and active[0] and isinstance(args[0], (str, bytes, os.PathLike)):
            opened.append(os.fsdecode(args[0]))

    sys.addaudithook(hook)                 # sees io.open and os.open alike
    try:
        warm = run_jobs(files, "vulkan1.1", options)
    finally:
        active[0] = False
    assert [r.valid for r in warm] == [r.valid for r in cold] == [True] * count
    sources = [p for p in opened if Path(p).parent in (shaders, shaders.resolve())]
    entries = [p for p in opened if Path(p).parent in (cache, cache.resolve())]
    assert len(sources) == count, len(sources)     # each once (today: count * count)
    assert len(entries) == count, len(entries)     # each hit once, no other entry
