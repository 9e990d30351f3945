"""The fuzzing campaign's time limit: a program that runs too long (here a while loop that never
ends, in the interpreter) is killed with its worker process and recorded as a "timeout" finding
with its seed and index, and the campaign goes on with the next program in a fresh worker."""

from __future__ import annotations

import pytest

from vkir.tools import fuzz
from vkir.tools.fuzz.__main__ import main

ENDLESS = '''@T.prim_func
def fuzz(A: T.Buffer((1,), "int32"), B: T.Buffer((1,), "int32"), C: T.Buffer((1,), "int32"),
         H: T.Buffer((16,), "int32")):
    for tx in T.thread_binding(1, thread="threadIdx.x"):
        while A[0] == A[0]:
            C[0] = C[0] + 1
'''
BROKEN = "@T.prim_func\ndef fuzz(A: T.Buffer((1,), \"int32\"):\n    pass\n"  # a mutant: refused


def _programs(seed, index):
    if index == 0:
        return ENDLESS, frozenset({"while"}), False
    return BROKEN, frozenset({"mutant"}), True


def test_a_program_past_the_time_limit_is_a_timeout_finding_and_the_campaign_goes_on():
    report = fuzz.run(2, seed=4401, device=None, timeout=2.0, make_program=_programs)
    kinds = [o.kind for o in report.outcomes]
    assert kinds == ["timeout", "refused"]
    (finding,) = report.findings
    assert (report.seed, finding.index, finding.kind) == (4401, 0, "timeout")
    assert "2 s" in finding.detail and finding.source == ENDLESS
    assert "timeout" in report.table()


def test_the_time_limit_is_an_option_of_the_command(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--count", "1", "--timeout", "-1"])
    assert exit_.value.code == 2
    assert "--timeout must be a number of seconds >= 0" in capsys.readouterr().err
