"""The default pipeline (`vkir.lowering.pipeline(target).passes`) keeps the ordering constraints its
passes rely on, and includes each pass exactly where its target needs it; `vkir.lower` ends with
the checker. Stated as constraints and rules, never as the whole list: a new pass breaks nothing
here unless it breaks a rule."""

import pytest

import vkir
from vkir import T, transform
from vkir.errors import TypeCheckError
from vkir.lowering import pipeline
from vkir.quirks import LOOP_TRIP_LIMIT
from vkir.target import Target

# (earlier, later, why) for every target on which both run
ORDER = [
    ("InjectSoftwarePipeline", "LowerAsync", "LowerAsync lowers the async copies pipelining makes"),
    ("LowerAsync", "FlattenBuffer", "pipelining and its barriers work on the N-d buffers"),
    ("FlattenBuffer", "VectorizeLoop", "vector indices go in the last position of flat accesses"),
    ("VectorizeLoop", "Simplify", "folding turns vectorized indices into canonical ramps"),
    ("Simplify", "PointerCastVectorize", "pointer casts recognize canonical ramps"),
    ("Simplify", "VectorTypeRewrite", "the rewriter recognizes canonical ramps"),
    ("PointerCastVectorize", "VectorTypeRewrite", "the rewriter leaves cast storages alone"),
    ("VectorTypeRewrite", "SymbolicVectorCast", "casts only what the rewriter left scalar"),
    ("VectorTypeRewrite", "BoolToInt8", "bool vector buffers are retyped once they exist"),
    ("SymbolicVectorCast", "BoolToInt8", "its casts are retyped like any buffer"),
    ("BoolToInt8", "EmulateInt8", "emulation widens the int8 that bools became"),
    ("BoolToInt8", "EmulateInt64", "the int8 that bools became is emulated after it"),
    ("EmulateInt64", "EmulateInt8", "byte addressing needs the int64 indices narrowed"),
    ("CommonSubexprElim", "SplitLongLoops", "loops are split after the last rewrite of their body"),
]
ORDER_NAMES = {n for earlier, later, _ in ORDER for n in (earlier, later)}
LATE = "CommonSubexprElim"   # after every pass but SplitLongLoops: it sees the final index arithmetic

TARGETS = {"baseline": Target(), "lavapipe": Target.lavapipe(), "vulkan1.3": Target.vulkan13(),
           "interp": Target.interp()}
CASES = [(name, casts) for name in TARGETS for casts in (False, True)]


def _names(target_name, casts):
    return pipeline(TARGETS[target_name], pointer_casts=casts).names


@pytest.mark.parametrize("target_name, casts", CASES)
def test_ordering_constraints_hold(target_name, casts):
    names = _names(target_name, casts)
    for earlier, later, why in ORDER:
        if earlier in names and later in names:
            assert names.index(earlier) < names.index(later), f"{earlier} before {later}: {why}"
    assert all(names.index(n) < names.index(LATE) for n in names
               if n not in (LATE, "SplitLongLoops")), names


@pytest.mark.parametrize("target_name, casts", CASES)
def test_each_pass_runs_once_where_its_target_needs_it(target_name, casts):
    target = TARGETS[target_name]
    names = _names(target_name, casts)
    assert len(set(names)) == len(names) and set(names) <= set(transform.__all__), names
    needs = {
        "PointerCastVectorize": casts,
        "SymbolicVectorCast": target.is_vulkan and not casts,
        "BoolToInt8": target.is_vulkan,   # the interpreter stores bools as they are
        "EmulateInt8": target.is_vulkan and not (target.has("int8")
                                                 and target.has("storage_buffer_8bit")),
        "EmulateInt64": target.is_vulkan and not target.has("int64"),
        "SplitLongLoops": LOOP_TRIP_LIMIT in target.quirks,
    }
    for name, needed in needs.items():
        assert (name in names) == needed, (name, names)
    for name in ORDER_NAMES - set(needs):   # the rest run everywhere
        assert name in names, (name, names)


def test_the_rules_are_exercised():
    """Every optional pass runs on some case and is absent on another."""
    for name in ("PointerCastVectorize", "SymbolicVectorCast", "BoolToInt8", "EmulateInt8",
                 "EmulateInt64", "SplitLongLoops"):
        present = {name in _names(t, c) for t, c in CASES}
        assert present == {True, False}, name


@T.prim_func
def implicit_cast(a: T.Buffer((16,), "float32"), b: T.Buffer((16,), "int32")):
    for i in T.serial(16):
        b[i] = a[i]


def test_lower_ends_with_the_checker():
    with pytest.raises(TypeCheckError):
        vkir.lower(implicit_cast)
