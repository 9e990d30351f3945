"""`vkir validate`, `vkir dis` and `vkir doctor` on real shader files: valid GLSL, SPIR-V binary
and assembly; a GLSL syntax error, a truncated module and one with a bad opcode (exit status 1,
the message, the instruction and the disassembly around it); the junit and json reports parsed
back; usage errors (exit status 2)."""

import json
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from vkir.tools import cli
from vkir.runtime.glsl import compile_glsl

SHADERS = Path(__file__).resolve().parents[1] / "shaders"
BROKEN_GLSL = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Y { float y[]; };
void main() {
    y[gl_GlobalInvocationID.x] = 1.0 +;
}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A folder of shaders: two good GLSL files, a good binary, good assembly, and the bad ones."""
    root = tmp_path_factory.mktemp("shaders")
    good = root / "good"
    good.mkdir()
    for name in ("affine.comp", "counts.comp"):
        shutil.copy(SHADERS / name, good / name)
    words = compile_glsl(SHADERS / "counts.comp", target_env="vulkan1.1")
    (good / "counts.spv").write_bytes(words)
    from vkir.spirv import disassemble

    (good / "counts.spvasm").write_text(disassemble(words))
    bad = root / "bad"
    bad.mkdir()
    (bad / "syntax.comp").write_text(BROKEN_GLSL)
    (bad / "truncated.spv").write_bytes(words[:-6])
    corrupt = bytearray(words)
    # the 3rd instruction (after OpCapability Shader and OpExtInstImport) gets opcode 0xFFFF
    pos = 5
    for _ in range(2):
        pos += struct.unpack_from("<I", corrupt, pos * 4)[0] >> 16
    count = struct.unpack_from("<I", corrupt, pos * 4)[0] >> 16
    struct.pack_into("<I", corrupt, pos * 4, (count << 16) | 0xFFFF)
    (bad / "opcode.spv").write_bytes(bytes(corrupt))
    (bad / "typo.spvasm").write_text("OpCapability Shader\nOpFrobnicate %1\n")
    return root


def run(capsys, *argv):
    status = cli.main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_valid_folder(folder, capsys):
    status, out, _ = run(capsys, "validate", str(folder / "good"), "--target-env", "vulkan1.1")
    assert status == 0, out
    assert out.count(": ok") == 4 and "4 file(s) checked for vulkan1.1: all valid" in out
    # assembly is assembled for the target environment, as spirv-as --target-env does, not for
    # the "; Version: 1.3" its comment names: SPIR-V 1.5 wants every global in the interface
    status, out, _ = run(capsys, "validate", str(folder / "good" / "counts.spvasm"),
                         "--target-env", "vulkan1.2")
    assert status == 1 and "is not listed as an interface" in out


def test_glsl_syntax_error(folder, capsys):
    status, out, _ = run(capsys, "validate", str(folder / "bad" / "syntax.comp"))
    assert status == 1
    assert "syntax.comp: error (glslang):" in out and "syntax error" in out and ":5:" in out


def test_truncated_and_bad_opcode(folder, capsys):
    status, out, _ = run(capsys, "validate", str(folder / "bad" / "truncated.spv"),
                         str(folder / "bad" / "opcode.spv"), str(folder / "good" / "counts.spv"))
    assert status == 1
    assert "truncated.spv: error (binary): truncated SPIR-V" in out
    assert "opcode.spv: error (validate): Invalid opcode: 65535" in out
    # the instructions before the bad one, then its words
    assert "OpExtInstImport" in out and "--> word 13: opcode 65535" in out
    assert "counts.spv: ok" in out and "3 file(s) checked for vulkan1.1: 2 invalid" in out


def test_invalid_module_shows_instruction_and_disassembly(folder, tmp_path, capsys):
    text = (folder / "good" / "counts.spvasm").read_text()
    # a storage buffer that is not decorated as a Block: the validator names the variable
    lines = [s for s in text.splitlines() if "OpDecorate %Out Block" not in s]
    bad = tmp_path / "noblock.spvasm"
    bad.write_text("\n".join(lines) + "\n")
    status, out, _ = run(capsys, "validate", str(bad), "--format", "json")
    assert status == 1
    doc = json.loads(out)
    assert doc["valid"] is False and doc["target_env"] == "vulkan1.1"
    (problem,) = doc["files"][0]["problems"]
    assert problem["stage"] == "validate" and "Block" in problem["message"]
    assert problem["instruction"].startswith("%Out = OpTypeStruct")
    marked = [s for s in problem["context"] if s.startswith("-->")]
    assert len(marked) == 1 and problem["instruction"] in marked[0]
    assert len(problem["context"]) > 5


def test_junit_report_parsed_back(folder, tmp_path, capsys):
    report = tmp_path / "report.xml"
    status, out, _ = run(capsys, "validate", str(folder / "good"), str(folder / "bad"),
                         "--format", "junit", "-o", str(report))
    assert status == 1
    assert "8 file(s) checked" in out                     # the text report on stdout too
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite.get("tests") == "8" and suite.get("failures") == "4"
    cases = {Path(c.get("name")).name: c for c in suite.iter("testcase")}
    assert set(cases) == {"affine.comp", "counts.comp", "counts.spv", "counts.spvasm",
                          "syntax.comp", "truncated.spv", "opcode.spv", "typo.spvasm"}
    failed = {name for name, c in cases.items() if c.find("failure") is not None}
    assert failed == {"syntax.comp", "truncated.spv", "opcode.spv", "typo.spvasm"}
    failure = cases["syntax.comp"].find("failure")
    assert failure.get("type") == "glslang" and "syntax error" in failure.text
    assert "OpFrobnicate" in cases["typo.spvasm"].find("failure").text


@pytest.mark.parametrize("argv, message", [
    (["validate", "missing.comp"], "no such file"),
    (["validate", __file__], "unknown kind of file"),
])
def test_usage_errors_exit_2(argv, message, capsys):
    status, _, err = run(capsys, *argv)
    assert status == 2 and message in err


def test_bad_target_env_is_a_usage_error(folder, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["validate", str(folder / "good"), "--target-env", "vulkan9"])
    assert exc.value.code == 2


def test_dis(folder, capsys):
    status, out, _ = run(capsys, "dis", str(folder / "good" / "counts.spv"))
    assert status == 0 and "OpEntryPoint GLCompute %main \"main\"" in out
    status, _, err = run(capsys, "dis", str(folder / "bad" / "truncated.spv"))
    assert status == 1 and "truncated.spv: error" in err


def test_doctor(tmp_path):
    vkir = [sys.executable, "-m", "vkir"]
    ok = subprocess.run(vkir + ["doctor"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    for label in ("Vulkan loader", "ICDs", "layers", "device 0", "SPIRV-Tools", "glslang",
                  "C compiler"):
        assert label in ok.stdout
    missing = tmp_path / "missing_icd.json"
    env = {"PATH": "/usr/bin:/bin", "VK_ICD_FILENAMES": str(missing), "VKIR_VALIDATION": "0"}
    broken = subprocess.run(vkir + ["doctor"], capture_output=True, text=True, timeout=120, env=env)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert f"VK_ICD_FILENAMES names {missing}" in broken.stdout
    assert "apt install mesa-vulkan-drivers" in broken.stdout


def test_junit_carries_no_control_characters_and_times_each_file(tmp_path):
    """A bad module's strings may hold control characters; CI servers reject XML with them."""
    import xml.etree.ElementTree as ET

    from vkir.tools.validate import FileResult, Problem, junit_report

    bad = FileResult("bad\x01.spv", "spirv", [Problem("validate", "name \x1b[31mred\x00 here")],
                     seconds=0.25)
    good = FileResult("good.comp", "glsl", seconds=0.5)
    text = junit_report([bad, good], "vulkan1.1")
    root = ET.fromstring(text)   # parses: nothing XML 1.0 forbids
    cases = root.findall(".//testcase")
    assert [c.get("time") for c in cases] == ["0.250", "0.500"]
    assert root.find("testsuite").get("time") == "0.750"
    assert "\\x1b" in cases[0].find("failure").get("message")


def test_glslang_errors_come_before_its_warnings(tmp_path):
    from vkir.tools.validate import compile_glsl_file

    src = tmp_path / "warn.comp"
    src.write_text("#version 450\n#extension GL_EXT_no_such_thing : warn\n"
                   "layout(local_size_x = 1) in;\nvoid main() { undefined_name = 1; }\n")
    data, message = compile_glsl_file(src, "vulkan1.1")
    assert data is None
    assert message.splitlines()[0].lstrip().startswith("ERROR"), message
