"""Before/expected pairs from TVM's own pass tests (vendored unchanged in upstream/), captured by
running each upstream test function with TVM's pass and `tvm.ir.assert_structural_equal`
wrapped: the module the pass receives is "before", the one the result is compared with is
"expected". Parametrized upstream tests run once per parameter set."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import inspect
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

UPSTREAM = Path(__file__).resolve().parent / "upstream"


@dataclass
class Pair:
    """One before/expected pair of an upstream test (`test` names it, with its parameters)."""

    test: str
    before: object
    expected: object


# file names of code with no source file: the frozen importlib (on the stack during any import)
# and the code TVMScript's parser compiles and evaluates
_NO_SOURCE_FILES = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>",
                    "<string>", "<ast>")


@contextlib.contextmanager
def _no_module_scans():
    """Within: inspect finds at once that frames of code with no source file have no module.

    TVMScript's `@T.prim_func` calls `inspect.stack()`, which looks up each frame's module; for
    a file name no module's `__file__` names (the frozen importlib's, `<string>`), that lookup
    (`inspect.getmodule`) scans all of sys.modules, every time, and answers None. Loading the
    software-pipeline tests (whose `import tvm.s_tir.tensor_intrin.cuda` defines hundreds of
    prim_funcs at import time) and running their test functions made ~60,000 such scans: 85-300 s
    on a loaded 2-core machine. Naming those files in
    inspect's file-to-module cache with a module name that is not in sys.modules gives the same
    answer (None; such frames have no code context either way) without the scan."""
    import inspect

    added = [f for f in _NO_SOURCE_FILES if f not in inspect.modulesbyfile]
    inspect.modulesbyfile.update(dict.fromkeys(added, "<no module: code with no source file>"))
    try:
        yield
    finally:
        for f in added:
            inspect.modulesbyfile.pop(f, None)


@functools.cache
def load(name: str):
    """The upstream module `upstream/<name>.py` (loaded once per process)."""
    spec = importlib.util.spec_from_file_location(f"tvm_upstream_{name}", UPSTREAM / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # TVMScript reads the source of its functions through it
    with _no_module_scans():
        spec.loader.exec_module(module)
    return module


def _calls(fn):
    """(id, kwargs) of each parameter set of an upstream test function."""
    marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
    if not marks:
        yield fn.__name__, {}
        return
    axes = []
    for m in marks:
        names = [n.strip() for n in (m.args[0].split(",") if isinstance(m.args[0], str)
                                     else m.args[0])]
        values = [v if len(names) > 1 else (v,) for v in m.args[1]]
        axes.append([dict(zip(names, v)) for v in values])
    for k, combo in enumerate(itertools.product(*axes)):
        kwargs = {}
        for part in combo:
            kwargs.update(part)
        yield f"{fn.__name__}[{k}]", kwargs


def capture(module, pass_owner, pass_name: str, monkeypatch, skip=(),
            only: str | None = None) -> tuple[list, dict]:
    """(pairs, failures): every pair the upstream tests of `module` (or its test function
    `only`) compare after running `pass_owner.<pass_name>`, and for the tests that gave none, why
    (their exception). Tests named in `skip` do not run (they compare no pair, and some crash
    this TVM build)."""
    import tvm

    real_pass = getattr(pass_owner, pass_name)
    real_equal = tvm.ir.assert_structural_equal
    state = {"before": None, "pairs": []}

    def recording_pass(*args, **kwargs):
        inner = real_pass(*args, **kwargs)

        def record(mod, _ctx):   # a real pass, so that upstream tests may sequence it
            state["before"] = mod
            return inner(mod)
        return tvm.transform.module_pass(record, opt_level=0, name=f"Recording{pass_name}")

    def recording_equal(after, expected, *args, **kwargs):
        if state["before"] is not None:
            state["pairs"].append((state["before"], expected))
        return real_equal(after, expected, *args, **kwargs)

    monkeypatch.setattr(pass_owner, pass_name, recording_pass)
    monkeypatch.setattr(tvm.ir, "assert_structural_equal", recording_equal)
    pairs, failures = [], {}
    try:
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if not name.startswith("test_") or fn.__module__ != module.__name__ or name in skip \
                    or (only is not None and name != only):
                continue
            for test_id, kwargs in _calls(fn):
                state["before"], state["pairs"] = None, []
                try:
                    with _no_module_scans():   # tests that define prim_funcs as they run
                        fn(**kwargs)
                except Exception as exc:  # noqa: BLE001 - an upstream test's own verdict
                    failures[test_id] = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:120]}"
                pairs.extend(Pair(test_id, b, e) for b, e in state["pairs"])
    finally:
        monkeypatch.undo()
    return pairs, failures


def arguments(func, seed: int, size: int = 16) -> list:
    """Random arguments for a vkir PrimFunc: symbolic sizes and int scalars `size`, float
    scalars from a standard normal, vector buffers with their lanes as an extra last axis."""
    import numpy as np

    from vkir.testing import random_arguments

    rng = np.random.default_rng(seed)
    return random_arguments(func, rng, sizes=size, lanes="axis",
                            scalars=lambda p: size if p.dtype.is_int else rng.standard_normal())
