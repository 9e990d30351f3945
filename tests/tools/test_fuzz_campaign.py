"""The fuzzing campaign (vkir.tools.fuzz, `make fuzz`) in short: a fixed seed and count run on the
test device must have no finding (crash, refusal of a valid kernel, build refusing what the
interpreter ran, validation failure, device/interpreter mismatch)."""

from __future__ import annotations

import random

import pytest

import vkir
from vkir.tools import fuzz
from vkir.tools.fuzz import generate

pytestmark = pytest.mark.device


def test_short_campaign_has_no_findings(device):
    report = fuzz.run(40, seed=2026, device=device)
    kinds = {o.kind for o in report.outcomes}
    assert "ok" in kinds and "refused" in kinds  # valid kernels ran, mutants were refused
    assert not report.findings, "\n\n".join(f"[{o.index}] {o.kind}: {o.detail}\n{o.source}"
                                            for o in report.findings)
    assert "| all |" in report.table()


def test_generated_programs_are_valid_and_deterministic():
    a = [fuzz.program(7, k)[0] for k in range(30)]
    assert a == [fuzz.program(7, k)[0] for k in range(30)]
    for k in range(30):
        source, features, mutant = fuzz.program(7, k, mutants=0.0)
        assert not mutant
        f = vkir.from_script(source)
        vkir.analysis.verify_types(f)
    prog = generate(random.Random(1))
    assert prog.features and "fuzz" in prog.source


def test_every_intrinsic_is_fuzzed_or_listed_as_not_fuzzable():
    """The fuzzer's intrinsics are the table's rows (vkir.ir.intrinsics) less NOT_FUZZED, which
    gives each of its rows a reason; generated programs call every fuzzed one."""
    from vkir.ir.intrinsics import INTRINSICS
    from vkir.tools.fuzz.programs import NOT_FUZZED, fuzzed_intrinsics

    fuzzed = set(fuzzed_intrinsics("float")) | set(fuzzed_intrinsics("int"))
    assert fuzzed | set(NOT_FUZZED) == set(INTRINSICS), set(INTRINSICS) - fuzzed - set(NOT_FUZZED)
    assert not fuzzed & set(NOT_FUZZED) and all(r.strip() for r in NOT_FUZZED.values())
    called = set()
    for k in range(2000):
        source = generate(random.Random(k)).source
        called |= {name for name in fuzzed - called if f"T.{name}(" in source}
        if called == fuzzed:
            break
    assert called == fuzzed, fuzzed - called


def test_offline_campaign_builds_and_validates():
    report = fuzz.run(10, seed=5, device=None)
    assert not report.findings
    assert all(o.kind in ("ok", "refused", "unsupported", "skipped") for o in report.outcomes)


def test_int64_programs_run_where_the_device_lacks_int64(device):
    """int64/uint64 programs run on every device (emulated in word pairs without shaderInt64),
    computing the interpreter's bits; the dtypes that need a feature still need it."""
    from vkir.tools.fuzz.campaign import _supported_dtypes

    bare = set(_supported_dtypes(frozenset()))
    assert {"int64", "uint64", "int32", "float32"} <= bare
    assert not bare & {"float64", "float16", "int16", "uint16"}
    report = fuzz.run(12, seed=64, device=device, make_program=lambda seed, index: fuzz.program(
        seed, index, ("int64", "uint64"), mutants=0.0))
    assert not report.findings, "\n\n".join(f"[{o.index}] {o.kind}: {o.detail}\n{o.source}"
                                            for o in report.findings)
    assert sum(o.kind == "ok" for o in report.outcomes) >= 8, report.table()
