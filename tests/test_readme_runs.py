"""What no area test covers: the README's code runs as written (a
newcomer's vector add and shared-memory reduction, in the interpreter and on the device), and CI's
entry point runs `make test`, whose pytest status is the run's."""

import re
import runpy
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _readme_python() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 2, "the README shows the vector add and the reduction"
    return blocks


def test_readme_code_runs_as_written(device, tmp_path, capsys):
    """Every ```python block of the README, concatenated in order, runs unchanged (the
    parser reads the decorated functions' source, so it runs from a real file)."""
    blocks = _readme_python()
    first, everything = tmp_path / "readme_vadd.py", tmp_path / "readme_all.py"
    first.write_text(blocks[0])
    everything.write_text("\n".join(blocks))
    ns = runpy.run_path(str(first), run_name="readme_vadd")
    # the vector add: interpreter (asserted by the README itself) and device agree with numpy
    np.testing.assert_array_equal(ns["out"], ns["x"] + ns["y"])
    assert "OpEntryPoint GLCompute" in capsys.readouterr().out  # print(k.asm)
    ns = runpy.run_path(str(everything), run_name="readme_all")  # the reduction asserts itself
    # the shared-memory reduction ran in the interpreter; it runs on the device alike
    import vkir

    a, out = ns["a"], np.zeros(16, "float32")
    vkir.build(ns["block_sum"], device=device)(a, out)
    np.testing.assert_allclose(out, a.reshape(16, 64).sum(1), rtol=1e-5)


def test_ci_entry_point_runs_make_test():
    run = (ROOT / ".ci" / "run").read_text()
    assert run.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in run
    assert re.search(r"^(\w+=\S+ )*make test$", run, re.M), run
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
    assert "tools/run_suite.py" in recipe and "||" not in recipe and "-" != recipe.lstrip()[0]
    assert '"-m", "pytest"' in (ROOT / "tools" / "run_suite.py").read_text()
