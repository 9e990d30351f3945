"""`make test`'s runner (tools/run_suite.py): its concurrent sessions together run every test
on lavapipe once, every device test on SwiftShader once and the quirk-sensitive, image and golden
device tests on Mesa 25's lavapipe, all with the validation layer, and the suite fails when any
session does (or, under CI, when a session's driver is missing)."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run_suite():
    spec = importlib.util.spec_from_file_location("run_suite", ROOT / "tools" / "run_suite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _test_files(args):
    """The test files a session's positional paths (folders or files) and --ignore options
    select."""
    paths = [ROOT / a for a in args if a.startswith("tests")] or [ROOT / "tests"]
    ignored = [ROOT / a.split("=", 1)[1] for a in args if a.startswith("--ignore=")]
    files = {f for p in paths for f in ([p] if p.is_file() else p.rglob("test_*.py"))}
    return {f for f in files if not any(f.is_relative_to(i) for i in ignored)}


def test_the_lavapipe_shards_partition_the_suite_and_swiftshader_runs_its_device_tests():
    sessions = _run_suite().sessions([])
    lavapipe = [args for _, env, args in sessions
                if env["VKIR_DEVICE"] == "lavapipe" and "VK_ICD_FILENAMES" not in env]
    swift = [(env, args) for _, env, args in sessions if env["VKIR_DEVICE"] == "swiftshader"]
    assert len(lavapipe) == 2 and len(swift) == 1
    a, b = (_test_files(args) for args in lavapipe)
    assert a and b and not a & b
    assert a | b == _test_files([]) == _test_files(swift[0][1])
    assert all(args[:2] == ["-m", "not timing and not full"] for args in lavapipe)
    env, args = swift[0]
    assert args[:2] == ["-m", "device and not timing and not full"]
    assert env["VK_ICD_FILENAMES"].endswith("vk_swiftshader_icd.json")
    assert all(env["VKIR_VALIDATION"] == "1" for _, env, _ in sessions)


def test_mesa25_runs_the_quirk_image_and_golden_device_tests():
    run_suite = _run_suite()
    [(env, args)] = [(env, args) for _, env, args in run_suite.sessions(["-x"])
                     if env.get("VK_ICD_FILENAMES") == str(run_suite.MESA25_ICD)]
    assert env["VKIR_DEVICE"] == "lavapipe" and env["VKIR_VALIDATION"] == "1"
    assert args[:2] == ["-m", "device and not timing and not full"] and args[-1] == "-x"
    paths = [a for a in args if a.startswith("tests")]
    assert all((ROOT / p).exists() for p in paths)
    files = {f.relative_to(ROOT).as_posix() for f in _test_files(args)}
    assert {"tests/test_quirk_releases.py", "tests/test_golden_images.py",
            "tests/driver/test_loop_cut.py", "tests/images/test_image_kernels.py"} <= files
    assert run_suite.MESA25_ICD.relative_to(ROOT).as_posix() == "build/mesa25/lvp_icd.json"


def test_a_session_without_its_driver_is_skipped_outside_ci_and_fails_under_ci(monkeypatch,
                                                                               capsys, tmp_path):
    run_suite, started = _run_suite(), []
    monkeypatch.setattr(run_suite, "MESA25_ICD", tmp_path / "missing.json")
    monkeypatch.setattr(subprocess, "Popen",
                        lambda cmd, **kw: started.append(cmd) or _Session(0, kw["stdout"]))
    monkeypatch.delenv("VKIR_CI", raising=False)
    assert run_suite.main([]) == 0 and len(started) == 3
    assert "Mesa 25, quirk, image and golden device tests: skipped" in capsys.readouterr().out
    monkeypatch.setenv("VKIR_CI", "1")
    assert run_suite.main([]) == 1 and len(started) == 6
    out = capsys.readouterr().out
    assert "FAILED under CI" in out and "missing.json does not exist (make setup" in out


class _Session:
    """A finished pytest process with a given exit status."""

    def __init__(self, code, stdout):
        self.code = code
        stdout.write(f"session output {code}\n")

    def wait(self):
        return self.code


def test_the_suite_fails_when_any_session_fails_and_prints_every_output(monkeypatch, capsys,
                                                                        tmp_path):
    run_suite = _run_suite()
    monkeypatch.setattr(run_suite, "MESA25_ICD", tmp_path / "lvp_icd.json")
    (tmp_path / "lvp_icd.json").write_text("{}")   # every session's driver is present
    codes = iter([0, 1, 0, 0])
    monkeypatch.setattr(subprocess, "Popen",
                        lambda cmd, **kw: _Session(next(codes), kw["stdout"]))
    assert run_suite.main([]) == 1
    out = capsys.readouterr().out
    assert out.count("session output") == 4 and "suite: exit 1" in out
    codes = iter([0, 0, 0, 0])
    assert run_suite.main(["-x"]) == 0


def test_sessions_run_pytest_with_this_interpreter(monkeypatch):
    run_suite, commands = _run_suite(), []

    def popen(cmd, **kw):
        commands.append(cmd)
        return _Session(0, kw["stdout"])

    monkeypatch.setattr(subprocess, "Popen", popen)
    assert run_suite.main(["--serial", "-x"]) == 0
    assert all(c[:4] == [sys.executable, "-m", "pytest", "-q"] and c[-1] == "-x"
               for c in commands)


def test_make_test_deselects_full_tests_and_make_test_full_runs_them(monkeypatch):
    """`full` is a registered marker; make test's sessions deselect it, make test-full's (the
    same sessions, `--full`) select it too; `timing` stays out of both."""
    import tomllib

    run_suite = _run_suite()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    markers = config["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("full:") for m in markers)
    quick, full = run_suite.sessions(["-x"]), run_suite.sessions(["-x"], full=True)
    assert [(n, e) for n, e, _ in quick] == [(n, e) for n, e, _ in full]
    for (_, _, q), (_, _, f) in zip(quick, full):
        assert q[0] == f[0] == "-m" and q[2:] == f[2:]
        assert q[1] == f[1] + " and not full" and "full" not in f[1] and "not timing" in f[1]
    commands = []
    monkeypatch.setattr(subprocess, "Popen",
                        lambda cmd, **kw: commands.append(cmd) or _Session(0, kw["stdout"]))
    monkeypatch.setattr(run_suite, "missing_driver", lambda env: None)
    assert run_suite.main(["--full", "-x"]) == 0
    assert [c[4:] for c in commands] == [args for _, _, args in full]
    makefile = (ROOT / "Makefile").read_text()
    recipe = lambda target: re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
    assert recipe("test").strip() == "$(PY) tools/run_suite.py"
    assert recipe("test-full").strip() == "$(PY) tools/run_suite.py --full"


def _make_dry_run(target: str) -> list[str]:
    """The commands `make TARGET` runs on a fresh machine (-B: every stamp out of date)."""
    proc = subprocess.run(["make", "-n", "-B", "--no-print-directory", "-C", str(ROOT), target],
                          capture_output=True, text=True, check=True)
    return proc.stdout.splitlines()


def test_make_demo_installs_vkir_alone_and_make_test_adds_the_extras():
    """make demo: vkir's own dependencies and the loader with lavapipe (the core stamp);
    make test: that, then the extras, the suite's system packages and the Mesa 25 lavapipe."""
    demo, test = _make_dry_run("demo"), _make_dry_run("test")
    pip = [line for line in demo if "pip install" in line and "--upgrade pip" not in line]
    assert pip == [".venv/bin/python -m pip install -q -e ."]
    assert "touch .venv/.installed-core" in demo and not any("installed-test" in line for line in demo)
    assert not any("chromium" in line or "validationlayers" in line for line in demo)
    assert demo[-1] == ".venv/bin/vkir demo"
    assert ".venv/bin/python -m pip install -q -e '.[test,peers,tvm,wgpu,fleet,bench]'" in test
    assert test.index("touch .venv/.installed-core") < test.index("touch .venv/.installed-test")
    assert any("chromium" in line and "vulkan-validationlayers" in line for line in test)
    assert test[-1] == ".venv/bin/python tools/run_suite.py"
