"""The reference interpreter: runs any PrimFunc on numpy arrays (the oracle every pass is tested
against), raising DataRaceError where invocations race (races.py), and evaluates closed
expressions (`evaluate`) for dispatch grids and push constants."""

from .errors import DataRaceError, InterpreterError, OutOfBoundsError
from .execution import Prepared, evaluate, interpret

__all__ = ["interpret", "Prepared", "evaluate", "InterpreterError", "OutOfBoundsError", "DataRaceError"]
