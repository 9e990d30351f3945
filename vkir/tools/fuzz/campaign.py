"""The fuzzing campaign: generate (and mutate) kernels, run each in the interpreter and on a
device, and classify what happens.

Outcomes, per program: "ok" (the device computed the interpreter's result bit for bit), "refused"
(a mutant refused with a VkirError, as it should be), "unsupported" (the device lacks a feature),
"skipped" (a mutant whose loops would run too long to interpret), and the findings: "crash" (an
exception that is not a VkirError), "rejected" (a generated, valid kernel refused), "build-refused"
(the interpreter ran a kernel that vkir.build refused: they must accept the same programs),
"call-refused" (the same, at the kernel call),
"validation" (SPIRV-Tools or the Vulkan validation layer complained), "mismatch" (device and
interpreter results differ, and no known driver class explains it), "known:<class>" (a mismatch
a known driver bug explains, by the rule of that class in known.py: counted, not a finding),
"mutant-mismatch" (a mismatch of a mutant, which may read
memory it never wrote: undefined on a device, not a finding), and "timeout" (with a time limit:
the program's interpretation, build and run took longer; it ran in a worker process, which was
killed, and the campaign went on). Everything is derived from (seed, index): a finding is
reproduced by `python -m vkir.tools.fuzz --seed S --only INDEX`.
"""

from __future__ import annotations

import random
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ...errors import SpirvValidationError, UnsupportedError, VkirError
from .bits import equal, same_bits
from .known import Case, explain
from .programs import DTYPES, NEEDS, generate
from .mutation import mutate

FINDINGS = ("crash", "rejected", "build-refused", "call-refused", "validation", "mismatch",
            "timeout")
KNOWN_PREFIX = "known:"   # the kind of a mismatch a known driver class explains, before its name
MAX_WORK = 200_000  # loop iterations x invocations a program may take to be interpreted
SIZE = 64           # the value of symbolic sizes


@dataclass
class Outcome:
    """What happened to program `index`: `kind` (see the module docstring), a `detail` line,
    its `source` and the `features` it exercised."""

    index: int
    kind: str
    detail: str
    source: str
    features: frozenset
    mutant: bool


@dataclass
class Report:
    """Counts per outcome kind and per feature, and the findings (with their sources)."""

    seed: int
    outcomes: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def findings(self) -> list:
        """The outcomes that are findings (the kinds in FINDINGS: crashes, mismatches, ...)."""
        return [o for o in self.outcomes if o.kind in FINDINGS]

    @property
    def known(self) -> Counter:
        """How many mismatches each known driver class explained (known.py), by class name."""
        return Counter(o.kind.removeprefix(KNOWN_PREFIX) for o in self.outcomes
                       if o.kind.startswith(KNOWN_PREFIX))

    def table(self) -> str:
        """A Markdown table: rows are features, columns outcome kinds."""
        kinds = sorted({o.kind for o in self.outcomes}, key=lambda k: (k in FINDINGS, k))
        rows = Counter()
        for o in self.outcomes:
            for feat in sorted(o.features | {"mutant" if o.mutant else "generated", "all"}):
                rows[feat, o.kind] += 1
        feats = sorted({f for f, _ in rows}, key=lambda f: (f != "all", f))
        lines = ["| programs | " + " | ".join(kinds) + " |",
                 "| --- | " + " | ".join("---" for _ in kinds) + " |"]
        for feat in feats:
            lines.append(f"| {feat} | " + " | ".join(str(rows[feat, k]) for k in kinds) + " |")
        return "\n".join(lines)


# dtypes that run without their feature: lowering emulates them (EmulateInt64 on word pairs)
EMULATED = frozenset({"int64", "uint64"})


def _supported_dtypes(features) -> tuple:
    """The dtypes programs may use on a device with `features` (None: the interpreter, all):
    those that need no feature, whose feature the device has, or that lowering emulates."""
    if features is None:
        return DTYPES
    return tuple(d for d in DTYPES
                 if NEEDS.get(d) is None or NEEDS[d] in features or d in EMULATED)


def program(seed: int, index: int, dtypes=DTYPES, mutants: float = 0.3, atomics: bool = True,
            subgroups: bool = True):
    """(source, features, is_mutant) of program `index` of the campaign with `seed`."""
    rng = random.Random(f"{seed}:{index}")
    prog = generate(rng, dtypes, atomics=atomics, subgroups=subgroups)
    if rng.random() < mutants:
        return mutate(prog.source, rng, rng.choice([1, 1, 2, 3])), prog.features, True
    return prog.source, prog.features, False


def run(count: int, seed: int = 0, device=None, mutants: float = 0.3, only=None,
        log=None, timeout: float | None = None, make_program=None) -> Report:
    """Run programs `range(count)` (or just `only`) of the campaign `seed` on `device` (a
    vkir device, or None: build and validate SPIR-V for lavapipe offline, no execution).

    With a `timeout` (seconds), each program runs in a worker process (worker.py) on the device
    with the same index, and one that takes longer is a "timeout" finding; without one, programs
    run in this process, without a limit. `make_program(seed, index)` -> (source, features,
    is_mutant) replaces the generator (tests give it programs of their own).
    """
    report = Report(seed)
    t0 = time.perf_counter()
    features = device.info.features if device is not None else None
    dtypes = _supported_dtypes(features)
    subgroups = features is None or "subgroup_arithmetic" in features
    if make_program is None:
        def make_program(seed, index):
            return program(seed, index, dtypes, mutants, subgroups=subgroups)
    worker = None
    if timeout is not None:
        from .worker import Worker

        worker = Worker(device.info.index if device is not None else None, timeout)
    try:
        for index in ([only] if only is not None else range(count)):
            source, feats, mutant = make_program(seed, index)
            if worker is not None:
                kind, detail = worker.classify(source, mutant)
            else:
                kind, detail = classify(source, mutant, device)
            outcome = Outcome(index, kind, detail, source, feats, mutant)
            report.outcomes.append(outcome)
            if log is not None and kind in FINDINGS:
                log(f"[{seed}:{index}] {kind}: {detail.splitlines()[0] if detail else ''}")
    except BaseException:  # (Ctrl-C included) the program in flight is abandoned
        if worker is not None:
            worker.close(kill=True)
        raise
    if worker is not None:
        worker.close()
    report.seconds = time.perf_counter() - t0
    return report


def classify(source: str, mutant: bool, device) -> tuple[str, str]:
    """The outcome (kind, detail) of one program on `device` (None: offline), in this process:
    every exception is classified, and the device's validation messages are collected."""
    from ... import runtime

    try:
        kind, detail = _run_one(source, device, mutant)
    except Exception as exc:  # noqa: BLE001 - classifying every failure is the point
        kind = "crash"
        detail = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
    if kind == "mismatch" and mutant:
        # a mutant may read memory nothing wrote (a deleted initialization): undefined on
        # devices, zeros in the interpreter, so its mismatches are listed, not findings
        kind = "mutant-mismatch"
    if device is not None and kind != "crash":
        messages = runtime.validation_messages()
        if messages:
            kind, detail = "validation", "; ".join(messages[:3])
    return kind, detail


def _run_one(source: str, device, mutant: bool) -> tuple[str, str]:
    import vkir

    try:
        func = vkir.from_script(source)
        vkir.analysis.verify_types(func)  # (interpret checks too; the arguments need it first)
    except VkirError as err:
        return ("refused" if mutant else "rejected"), _first(err)
    args = _arguments(func)
    if args is None:
        return "skipped", "arguments cannot be made"
    if _work(func) > MAX_WORK:
        return "skipped", "loops too long to interpret"
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    # subgroup results depend on the size: the interpreter's is the device's
    size = getattr(getattr(device, "info", None), "subgroup_size", None) or 32
    try:
        vkir.interpret(func, *expected, subgroup_size=func.attrs.get("subgroup_size") or size)
    except VkirError as err:
        return ("refused" if mutant else "rejected"), f"interpreter: {_first(err)}"
    if device is None:
        return _offline(func)
    try:
        kernel = vkir.build(func, device=device, precise=True)
    except VkirError as err:
        return _build_refused(err)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        kernel(*got)
    except VkirError as err:
        return "call-refused", _first(err)
    for p, want, have in zip(func.params, expected, got):
        if isinstance(want, np.ndarray) and not same_bits(want, have):
            bad = np.flatnonzero(~equal(want, have))
            k = bad[0]
            detail = (f"{func.buffer_map[p].name}[{k}]: device {have.ravel()[k]!r}, "
                      f"interpreter {want.ravel()[k]!r} ({bad.size} differ)")
            known = None if mutant else explain(
                Case(func, args, got, func.attrs.get("subgroup_size") or size), device.info)
            return ("mismatch", detail) if known is None else (KNOWN_PREFIX + known, detail)
    return "ok", ""


def _offline(func) -> tuple[str, str]:
    import vkir
    from vkir.spirv import codegen
    from vkir.target import Target

    target = Target.lavapipe()
    try:
        codegen(vkir.lower(func, target), target)
    except VkirError as err:
        return _build_refused(err)
    return "ok", "built and validated (no device)"


def _build_refused(err: VkirError) -> tuple[str, str]:
    """The outcome of a build (on a device, or codegen alone) that raised `err`."""
    if isinstance(err, UnsupportedError):
        return "unsupported", _first(err)
    if isinstance(err, SpirvValidationError):
        return "validation", _first(err)
    return "build-refused", _first(err)


def _first(err: Exception) -> str:
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


def _arguments(func):
    """Random inputs: full-range integers, floats of every magnitude with a few specials."""
    from vkir.ir import IntImm

    rng = np.random.default_rng(0)
    out = []
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None:
            out.append(3 if p.dtype.is_integer else True if p.dtype.is_bool else 1.5)
            continue
        shape = []
        for s in buf.shape:
            if isinstance(s, IntImm):
                shape.append(s.value)
            else:
                shape.append(SIZE)
        if buf.dtype.lanes > 1:
            shape[-1:] = [shape[-1] * buf.dtype.lanes] if shape else [buf.dtype.lanes]
        if any(s < 0 for s in shape) or int(np.prod(shape)) > 1 << 20:
            return None
        out.append(_values(rng, buf.dtype.element_of().numpy_dtype(), shape))
    return out


def _values(rng, npdt: np.dtype, shape) -> np.ndarray:
    if npdt == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if npdt.kind in "iu":
        info = np.iinfo(npdt)
        small = rng.integers(-9, 10, shape)
        wide = rng.integers(info.min, info.max, shape, dtype=npdt, endpoint=True)
        return np.where(rng.random(shape) < 0.5, small.astype(npdt), wide)
    with np.errstate(over="ignore"):
        v = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 6, shape)
        v = np.where(rng.random(shape) < 0.3, np.round(v), v).astype(npdt)
        specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0], npdt)
        pick = rng.random(shape) < 0.05
        v[pick] = rng.choice(specials, size=int(pick.sum()))
    return v


def _work(func) -> int:
    """Largest product of the constant loop extents around any statement (symbolic: SIZE)."""
    from vkir.ir import For, IntImm

    def extent(e):
        return e.value if isinstance(e, IntImm) else SIZE

    def visit(node, acc):
        if isinstance(node, For):
            acc *= max(extent(node.extent), 1)
            return max(acc, visit(node.body, acc))
        best = acc
        for child in _children(node):
            best = max(best, visit(child, acc))
        return best

    return visit(func.body, 1)


def _children(node):
    from vkir.ir import Stmt

    from ...ir.functor import children

    return [c for c in children(node) if isinstance(c, Stmt)]
