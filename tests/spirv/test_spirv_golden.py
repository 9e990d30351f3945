"""Golden disassembly for a handful of small kernels, kept as text in tests/spirv/golden/.

Regenerate after an intended codegen change with
`VKIR_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/spirv/test_spirv_golden.py`, then review
the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vkir.spirv import Target, assemble, codegen, disassemble
from vkir.spirv.tools import diagnose

import spirv_scripts as S

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("VKIR_UPDATE_GOLDEN") == "1"
CASES = {
    "vadd": (S.vadd, Target()),
    "saxpy": (S.saxpy, Target()),
    "cast_x4": (S.cast_x4, Target()),
    "block_sum": (S.block_sum, Target()),
    "local_loops": (S.local_loops, Target()),
    "vadd_vulkan13": (S.vadd, Target.vulkan13()),
    # SPIR-V 1.4+: integer ops carry NoSignedWrap/NoUnsignedWrap where vkir/arith/ranges.py
    # proves them (loops, thread ids, lets: the scoping of its memoized bounds)
    "local_loops_lavapipe": (S.local_loops, Target.lavapipe()),
    "block_sum_lavapipe": (S.block_sum, Target.lavapipe()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_disassembly(name):
    func, target = CASES[name]
    mod = codegen(func, target)
    text = disassemble(mod.words)
    path = GOLDEN / f"{name}.spvasm"
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"missing golden file {path}; run with VKIR_UPDATE_GOLDEN=1")
        path.write_text(text)
    assert text == path.read_text(), f"disassembly of {name} changed (see {path})"


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_text_assembles_and_validates(name):
    """The stored text is itself a valid module for its environment."""
    _, target = CASES[name]
    words = assemble((GOLDEN / f"{name}.spvasm").read_text(), target.env)
    problem = diagnose(words, target.env)
    assert problem is None, problem.report()
