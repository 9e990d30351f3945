"""The `vkir` command line: compile (no device needed), devices, run, demo, bench."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vkir.tools.cli import main
from vkir.tools.demo import VADD_SOURCE

KERNELS = "from vkir import T\n" + VADD_SOURCE + textwrap.dedent('''

    @T.prim_func
    def scale2d(x: T.Buffer(("h", 8), "int32"), y: T.Buffer(("h", 8), "int32"), s: T.int32):
        for bx in T.thread_binding(h, "blockIdx.x"):
            for tx in T.thread_binding(8, "threadIdx.x"):
                y[bx, tx] = x[bx, tx] * s - x[bx, tx] // 3
''')

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    return path


def test_compile_emits_ir_lowered_asm_spv(kernels, tmp_path, capsys):
    import vkir

    assert main(["compile", f"{kernels}:vadd", "--emit", "ir", "--target", "vulkan1.1"]) == 0
    ir = capsys.readouterr().out
    assert "def vadd" in ir and "T.thread_binding" in ir
    assert main(["compile", f"{kernels}:vadd", "--emit", "lowered", "--target", "vulkan1.1"]) == 0
    assert "def vadd" in capsys.readouterr().out
    out = tmp_path / "vadd.spvasm"
    assert main(["compile", f"{kernels}:vadd", "--emit", "asm", "--target", "vulkan1.1", "-o", str(out)]) == 0
    assert "OpEntryPoint GLCompute" in out.read_text()
    spv = tmp_path / "vadd.spv"
    assert main(["compile", f"{kernels}:vadd", "--emit", "spv", "--target", "vulkan1.1", "-o", str(spv)]) == 0
    vkir.spirv.validate(spv.read_bytes(), "vulkan1.1")


def test_compile_user_errors(kernels, capsys):
    assert main(["compile", str(kernels), "--emit", "ir"]) == 2       # two kernels: must pick one
    assert "several kernels" in capsys.readouterr().err
    assert main(["compile", f"{kernels}:nope", "--emit", "ir"]) == 2
    assert "no T.prim_func named 'nope'" in capsys.readouterr().err
    assert main(["compile", "/no/such/file.py", "--emit", "ir"]) == 2


def test_devices(device, capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert device.info.name in out and "shared memory" in out
    assert main(["devices", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[device.info.index]["name"] == device.info.name
    assert "max_workgroup_invocations" in rows[0]["limits"]


def test_run_compares_with_interpreter(device, kernels, capsys):
    assert main(["run", f"{kernels}:vadd", "--size", "n=777"]) == 0
    out = capsys.readouterr().out
    assert "matches the interpreter" in out and "[777]" in out
    assert main(["run", f"{kernels}:scale2d", "--size", "h=5", "--size", "s=-3"]) == 0
    assert "matches the interpreter" in capsys.readouterr().out
    assert main(["run", f"{kernels}:vadd", "--size", "bogus=1"]) == 2


def _vkir(*args, timeout=300, **extra_env):
    env = dict(os.environ, VKIR_VALIDATION=os.environ.get("VKIR_VALIDATION", "1"), **extra_env)
    exe = Path(sys.executable).parent / "vkir"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "vkir.tools.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)


def test_demo_subprocess(device, tmp_path):
    """The console script end to end; with validation on, stderr must stay empty. The picture
    is checked against the interpreter and written where --out says."""
    proc = _vkir("demo", "--out", str(tmp_path), "--size", "160x96")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4/4 kernels match numpy" in proc.stdout
    assert "ray-marched scene 160x96" in proc.stdout and "it matches vkir.interpret" in proc.stdout
    assert f"picture: {tmp_path / 'scene.png'}" in proc.stdout
    assert (tmp_path / "scene.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert proc.stderr == ""


def test_bench_quick_json(device, tmp_path):
    out = tmp_path / "bench.jsonl"
    # VKIR_AUTOTUNE=0: the ops kernels take their default configs (tuning would show progress
    # on stderr, which must stay empty here)
    proc = _vkir("bench", "--quick", "--workload", "vadd", "--workload", "latency", "--repeat", "3",
                 "--json", str(out), VKIR_AUTOTUNE="0", VKIR_CACHE_DIR=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    keys = {"workload", "impl", "device", "metric", "median", "min", "max", "n", "gflops", "gbps",
            "size", "quick", "cpu_s", "gflops_cpu", "gbps_cpu"}
    assert rows and all(set(r) == keys for r in rows)
    assert all(r["quick"] is True for r in rows)
    assert {tuple(r["size"]) for r in rows if r["workload"] == "vadd"} == {(1 << 16,)}
    assert {(r["workload"], r["impl"], r["metric"]) for r in rows} >= {
        ("vadd", "vkir", "device_s"), ("vadd", "vkir_mirror", "device_s"),
        ("vadd", "glsl", "device_s"), ("vadd", "numpy", "wall_s"),
        ("latency", "vkir", "latency_s"), ("latency", "glsl", "latency_s")}
    assert "vkir/GLSL" in proc.stdout
    assert proc.stderr == ""


def test_bench_ops_workloads_json(device, tmp_path):
    """The vkir.ops workloads: each result is a well-formed object with its size; the tuned
    kernel ("vkir") is measured next to numpy (and IREE when it is installed)."""
    out = tmp_path / "ops.jsonl"
    proc = _vkir("bench", "--quick", "--repeat", "2", "--json", str(out), "--workload", "softmax",
                 "--workload", "layer_norm", "--workload", "conv2d", "--workload",
                 "batched_matmul", "--workload", "sum", VKIR_AUTOTUNE="0",
                 VKIR_CACHE_DIR=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    sizes = {r["workload"]: r["size"] for r in rows}
    assert sizes == {"softmax": [256, 256], "layer_norm": [256, 256],
                     "conv2d": [1, 8, 16, 16, 8, 3, 3], "batched_matmul": [2, 64, 64, 64],
                     "sum": [1 << 16]}
    got = {(r["workload"], r["impl"], r["metric"]) for r in rows}
    for workload in sizes:
        assert (workload, "vkir", "device_s") in got and (workload, "numpy", "wall_s") in got
    assert ("softmax", "vkir_mirror", "device_s") in got and ("sum", "glsl", "device_s") in got
    assert all(r["median"] > 0 and r["min"] <= r["median"] <= r["max"] for r in rows)
    assert "vkir/mirror" in proc.stdout and "(quick sizes)" in proc.stdout
