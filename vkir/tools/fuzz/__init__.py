"""The fuzzing campaign (`make fuzz`, `python -m vkir.tools.fuzz`): random well-typed kernels across
dtypes, loops, shared memory, vectors, atomics and subgroups, and mutated sources, run in the
interpreter and on a device; crashes, validation failures and mismatches are reported, except
mismatches that a known driver class explains (known.py), which are counted by class."""

from .campaign import FINDINGS, Outcome, Report, program, run
from .known import KNOWN, KnownClass
from .programs import FuzzProgram, generate
from .mutation import mutate

__all__ = ["run", "program", "generate", "mutate", "FuzzProgram", "Report", "Outcome",
           "FINDINGS", "KNOWN", "KnownClass"]
