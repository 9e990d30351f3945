"""Helpers for tests that run on whatever Vulkan device is present.

A test of a feature that some devices lack must still test something there: on a device without
the feature, vkir promises an `UnsupportedError` naming it, and the test asserts exactly that
instead of skipping:

    with vkir.testing.expect_features(device, "int64"):
        vkir.build(kernel_with_int64, device=device)(...)
        ...  # checks that only run where the device has the feature

Math intrinsics are only as accurate as Vulkan requires (the precision table of the Vulkan
specification, "Precision and Operation of SPIR-V Instructions"); `math_tolerance(op)` gives
(rtol, atol) bounds that every conformant device meets for arguments of moderate size.

Helpers for pass tests, shared by the whole suite (a test file never keeps its own copy):

- `random_arguments(func, seed, ...)`: numpy arguments for a PrimFunc's parameters (symbolic sizes,
  vector buffers, scalars and value ranges as options);
- `same_results(before, after, arguments=None, ...)`: both functions compute the same in the
  interpreter on fresh random arguments;
- `check_pass(transform, before, expected)` and the test-class base `CompareBeforeAfter`: apply a
  pass, run both checkers on its output and compare it with the expected script (a mismatch
  shows where, and both scripts).

Golden-image tests (vkir.golden_images): `assert_image_matches(actual, golden, max_diff=...,
max_fraction=..., mean=..., edges=..., ssim=..., flip=...)` compares a rendered picture with a
committed one per channel, with a budget of differing pixels, an edge-tolerant budget, SSIM and
FLIP bounds (vkir.golden_matching), and writes actual, golden and diff images on failure, naming
the device; the pytest plugin's `vkir_golden` fixture keeps the goldens (and per-device
baselines, vkir.golden_baselines) beside the tests.
"""

from __future__ import annotations

import contextlib

from .golden_images import assert_image_matches

__all__ = ["device_features", "missing_features", "expect_features", "math_tolerance",
           "interpret_lowered", "same_results", "random_arguments", "check_pass",
           "CompareBeforeAfter", "assert_image_matches", "buffer_reads"]


def device_features(device_or_target) -> frozenset:
    """The feature names of an opened device, a DeviceInfo or a vkir.Target."""
    info = getattr(device_or_target, "info", device_or_target)
    return frozenset(info.features)


def missing_features(device_or_target, *features: str) -> list[str]:
    """The names among `features` that the device (or target) lacks, in the order given."""
    have = device_features(device_or_target)
    return [f for f in features if f not in have]


def expect_features(device_or_target, *features: str):
    """A context manager: where the device has every one of `features` it does nothing; where it
    lacks one, the block must raise vkir.UnsupportedError naming a missing feature (the block
    stops there, so checks after the failing call do not run)."""
    missing = missing_features(device_or_target, *features)
    if not missing:
        return contextlib.nullcontext()
    import re

    import pytest

    from .errors import UnsupportedError

    return pytest.raises(UnsupportedError, match="|".join(re.escape(f) for f in missing))


# (rtol, atol) per intrinsic: Vulkan's bounds are absolute 2^-11 for sin/cos on [-pi, pi], 3 ULP
# (plus 2|x| ULP for exp) for exp/log and friends, and "inherited from" the formula that defines
# tan, the hyperbolic and inverse functions, which compounds those errors
_EXACTISH = (1e-5, 1e-5)
_MATH_TOLERANCE = {
    "sin": (0.0, 2.0 ** -11), "cos": (0.0, 2.0 ** -11),
    "tan": (2e-3, 2e-3),
    "asin": (2e-3, 2e-3), "acos": (2e-3, 2e-3), "atan": (1e-4, 1e-4), "atan2": (1e-4, 1e-4),
    "sinh": (2e-3, 2e-3), "cosh": (2e-3, 2e-3), "tanh": (2e-3, 2e-3),
    "asinh": (2e-3, 2e-3), "acosh": (2e-3, 2e-3), "atanh": (2e-3, 2e-3),
    "exp": (1e-5, 1e-6), "exp2": (1e-5, 1e-6), "log": (1e-5, 2.0 ** -21), "log2": (1e-5, 2.0 ** -21),
    "pow": (1e-4, 1e-5), "erf": (2e-3, 2e-3), "sigmoid": (1e-4, 1e-5),
}


def buffer_reads(asm: str, scalar: str = "%float", vector: str = "%v4float") -> tuple[int, int]:
    """(scalar reads, vector reads) of buffer elements in a kernel's disassembly: OpLoads of the
    `scalar` and `vector` types, plus texel fetches where codegen reads a read-only buffer as a
    uniform texel buffer (llvmpipe: quirk storage_loads_per_lane), classified by the texel
    buffer's format (one channel: a scalar read; four: a vector read)."""
    import re

    image_formats = dict(re.findall(r"(%\w+) = OpTypeImage %\w+ Buffer \d \d \d \d (\w+)", asm))
    result_types = {m.group(1): m.group(2) for m in
                    re.finditer(r"^\s*(%\w+) = Op(?!Type)\w+ (%\w+)", asm, re.M)}
    # a fetch whose texel is indexed by lane (OpVectorExtractDynamic) reads one scalar element
    # of a 4-channel view (a parameter also read through a 4-lane cast)
    lane_read = set(re.findall(r"= OpVectorExtractDynamic %\w+ (%\w+) ", asm))
    fetched = [("R" if texel in lane_read else image_formats.get(result_types.get(image), ""))
               for texel, image in re.findall(r"(%\w+) = OpImageFetch %\w+ (%\w+) ", asm)]
    one = sum(f.startswith("R") and not f.startswith(("Rg", "Rgb")) for f in fetched)
    four = sum(f.startswith("Rgba") for f in fetched)
    return (len(re.findall(rf"= OpLoad {scalar} ", asm)) + one,
            len(re.findall(rf"= OpLoad {vector} ", asm)) + four)


def math_tolerance(op: str) -> tuple[float, float]:
    """(rtol, atol) within which any conformant Vulkan device computes the float32 intrinsic
    `op` (e.g. "sin") for moderate arguments; exact-ish (1e-5) for the correctly rounded ones."""
    return _MATH_TOLERANCE.get(op, _EXACTISH)


def interpret_lowered(lowered, *args, original=None, **options) -> None:
    """vkir.interpret on a function lowered for a target without 8-bit support, with the
    arguments of the original function: EmulateInt8 made each 8-bit (or bool) parameter a uint32
    word buffer, so such arrays are passed as their bytes padded to whole words, and the bytes
    are copied back afterwards; EmulateInt64 made each int64/uint64 buffer a uint32x2 one, which
    takes the same bytes as uint32 words, and each int64/uint64 scalar parameter two uint32 ones
    of its name (the low word in its place, the high word after all the other parameters, in
    the order of the 64-bit ones), so such a value is passed as its two words, as a Kernel does.
    Other functions are interpreted as they are (bool arrays as int8 where BoolToInt8 retyped
    them).

    A symbolic size that only 8-bit buffers had is named by no lowered argument shape: a word
    buffer of (n + 3) // 4 words holds 4 sizes of n. As a Kernel does, such sizes are bound on
    the signature of `original` (the function before lowering; required for them, an
    ArgumentError says so) and passed to the lowered function as extra trailing scalars."""
    from dataclasses import replace

    import numpy as np

    from .errors import ArgumentError
    from .interpreter import interpret

    args, high_words = _split_wide_scalars(lowered, args, original)
    views, copies = [], []
    for p, a in zip(lowered.params, args):
        buf = lowered.buffer_map.get(p)
        if buf is not None and isinstance(a, np.ndarray) and a.dtype.itemsize == 1:
            if str(buf.dtype) == "uint32":
                raw = np.zeros(-(-a.size // 4) * 4, np.uint8)
                raw[:a.size] = np.ascontiguousarray(a).view(np.uint8).ravel()
                copies.append((a, raw))
                a = raw.view(np.uint32)
            elif a.dtype == np.bool_ and str(buf.dtype) == "int8":
                a = a.view(np.int8)
        elif buf is not None and isinstance(a, np.ndarray) and a.dtype.kind in "iu" \
                and a.dtype.itemsize == 8 and str(buf.dtype) == "uint32x2":
            words = np.ascontiguousarray(a).view(np.uint32)   # EmulateInt64's word pairs
            copies.append((a, words))
            a = words
        views.append(a)
    views += high_words
    hidden = _hidden_sizes(lowered)
    if hidden:
        if original is None:
            raise ArgumentError(f"interpret_lowered: symbolic size(s) "
                                f"{', '.join(v.name for v in hidden)} of {lowered.name} are "
                                "named by no argument shape (only 8-bit buffers, now words, "
                                "had them): pass original=, the function before lowering")
        sizes = _sizes_by_name(original, args)
        missing = [v.name for v in hidden if v.name not in sizes]
        if missing:
            raise ArgumentError(f"interpret_lowered: {original.name} has no symbolic size named "
                                f"{', '.join(missing)}")
        lowered = replace(lowered, params=lowered.params + hidden)
        views += [sizes[v.name] for v in hidden]
    interpret(lowered, *views, **options)
    for a, raw in copies:
        a[...] = raw.view(np.uint8)[:a.nbytes].view(a.dtype).reshape(a.shape)


def _split_wide_scalars(lowered, args: tuple, original) -> tuple:
    """(`args` with each 64-bit scalar argument's low word in its place, the high words in
    order): where EmulateInt64 gave `lowered` trailing uint32 parameters past the user's, each
    named as an earlier uint32 scalar parameter (its low word). A value outside int64 and
    uint64 (outside its type in `original`, where given) is an ArgumentError, as for a Kernel."""
    from .errors import ArgumentError
    from .ir.dtype import type_range

    trailing = lowered.params[len(args):]
    lows = {p.name: k for k, p in enumerate(lowered.params[:len(args)])
            if p not in lowered.buffer_map and str(p.dtype) == "uint32"}
    if not trailing or any(str(p.dtype) != "uint32" or p in lowered.buffer_map
                           or p.name not in lows for p in trailing):
        return args, []
    declared = {} if original is None else {p.name: p.dtype for p in original.params
                                            if p not in original.buffer_map}
    args, high_words = list(args), []
    for p in trailing:
        k = lows[p.name]
        value = int(args[k])
        lo, hi = (-2**63, 2**64 - 1) if p.name not in declared else type_range(declared[p.name])
        if not lo <= value <= hi:
            raise ArgumentError(f"interpret_lowered: {p.name} = {value} does not fit "
                                f"{declared.get(p.name, 'int64 or uint64')}")
        args[k] = value & 0xFFFFFFFF
        high_words.append((value >> 32) & 0xFFFFFFFF)
    return tuple(args), high_words


def _hidden_sizes(func) -> tuple:
    """The symbolic sizes of `func` that no buffer or image parameter's shape names as a dim of
    its own (so that binding arguments cannot infer them), in order."""
    from .ir import Var
    from .ir.image_type import ImageType

    named = set()
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is not None:
            named.update(d for d in buf.shape if isinstance(d, Var))
        elif isinstance(p.dtype, ImageType):
            named.update(d for d in p.dtype.shape if isinstance(d, Var))
    return tuple(v for v in func.size_vars if v not in named)


def _sizes_by_name(func, args: tuple) -> dict:
    """{name: value} of the symbolic sizes of `func` bound on its signature by `args` (the
    interpreter's argument rules)."""
    from .binding import Signature
    from .interpreter import evaluate

    sig = Signature(func, evaluate, exact=False)
    values = dict(zip(sig.env_vars, sig.bind(args).values))
    return {v.name: values[v] for v in sig.size_vars}


def same_results(before, after, arguments=None, seeds=range(3), rtol: float = 0.0,
                 **options) -> None:
    """Assert that PrimFuncs `before` and `after` (a function and its transformed form) compute
    the same in vkir.interpret: for each seed, `arguments(seed)` gives fresh arguments (by
    default `random_arguments(before, seed)`), each function runs on its own copy, and every
    array must come out equal (within `rtol` when it is not 0). `options` go to vkir.interpret
    (e.g. subgroup_size)."""
    import numpy as np

    from .interpreter import interpret

    if arguments is None:
        arguments = lambda seed: random_arguments(before, seed)  # noqa: E731
    for seed in seeds:
        want = list(arguments(seed))
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in want]
        interpret(before, *want, **options)
        interpret(after, *got, **options)
        for w, g in zip(want, got):
            if rtol:
                np.testing.assert_allclose(g, w, rtol=rtol, atol=0)
            else:
                np.testing.assert_array_equal(g, w)


def random_arguments(func, seed, scalar_high: int = 4, scalars=None, *, sizes=None,
                     int_range=(-50, 50), float_range=None, lanes: str = "flat") -> list:
    """Random numpy arguments for the parameters of PrimFunc `func`, one per parameter in order.

    `seed`: an int, or a numpy Generator to draw from (a test that draws more from it).
    Buffers: floats from a standard normal (uniform in `float_range` = (lo, hi) when given),
    integers uniform in the half-open `int_range` (None: the dtype's whole range), bools 0 or 1.
    A vector-typed buffer is the array of its lanes: its last dimension times the lanes with
    `lanes="flat"` (what vkir.interpret takes), an extra last axis with `lanes="axis"`.
    Symbolic sizes take `sizes`: one int for all, or a mapping from size name (or Var) to int.
    Scalar parameters take, in this order: `scalars` (a mapping by name, or a function of the
    parameter Var), the value `sizes` maps their name to, else a small non-negative int below
    `scalar_high` (floats: a standard normal, bools: True)."""
    import numpy as np

    from .errors import ArgumentError
    from .ir import IntImm
    from .interpreter import evaluate

    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if lanes not in ("flat", "axis"):
        raise ArgumentError(f"random_arguments: lanes must be 'flat' or 'axis', got {lanes!r}")
    env = {}
    for v in func.size_vars:
        value = sizes if isinstance(sizes, int) else None
        if isinstance(sizes, dict):
            value = sizes.get(v, sizes.get(v.name))
        if value is None:
            raise ArgumentError(f"random_arguments: {func.name} has symbolic size {v.name!r}; "
                                f"pass sizes= (an int, or a dict naming it)")
        env[v] = int(value)
    named = {v.name: n for v, n in env.items()}
    if isinstance(sizes, dict):
        named.update((k, v) for k, v in sizes.items() if isinstance(k, str))
    args = []
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None:
            args.append(_scalar_argument(p, rng, scalars, named, scalar_high))
            continue
        shape = [d.value if isinstance(d, IntImm) else int(evaluate(d, env)) for d in buf.shape]
        if buf.dtype.lanes > 1:
            if lanes == "axis":
                shape.append(buf.dtype.lanes)
            else:
                shape = shape[:-1] + [shape[-1] * buf.dtype.lanes] if shape else [buf.dtype.lanes]
        elem = buf.dtype.element_of()
        dt = elem.numpy_dtype()
        if elem.is_bool:
            values = rng.integers(0, 2, shape).astype(bool)
        elif elem.is_float:
            values = (rng.standard_normal(shape) if float_range is None
                      else rng.uniform(*float_range, shape))
        elif int_range is None:
            info = np.iinfo(dt)
            values = rng.integers(info.min, info.max, shape, endpoint=True, dtype=dt)
        else:
            values = rng.integers(*int_range, shape)
        args.append(values.astype(dt))
    return args


def _scalar_argument(p, rng, scalars, named: dict, scalar_high: int):
    """The value of scalar parameter `p` for random_arguments (`named`: sizes by name)."""
    if callable(scalars):
        return scalars(p)
    if scalars is not None and p.name in scalars:
        return scalars[p.name]
    if p.name in named:
        return named[p.name]
    if p.dtype.is_bool:
        return True
    if p.dtype.is_float:
        return float(rng.standard_normal())
    return int(rng.integers(0, scalar_high))


def check_pass(transform, before, expected, checks: bool = True):
    """Apply `transform` (a vkir.transform Pass, or any PrimFunc -> PrimFunc function) to
    `before` and assert that the result is structurally equal to `expected`; a mismatch names
    the transform, the first differing node and both scripts. With `checks`, the output must
    also pass the explicit-cast checker and the well-formedness checker. Returns the output."""
    from .analysis import verify_types, verify_well_formed
    from .ir.structural import assert_structural_equal

    after = transform(before)
    if checks:
        verify_types(after)
        verify_well_formed(after)
    try:
        assert_structural_equal(after, expected)
    except AssertionError as exc:
        name = getattr(transform, "name", None) or type(transform).__name__
        raise AssertionError(f"{name} on {before.name}: output (lhs) differs from expected "
                             f"(rhs)\n{exc}") from None
    return after


class CompareBeforeAfter:
    """A base for pytest test classes that state a pass test as data: a subclass named `Test...`
    sets `transform` (a Pass), `before` and `expected` (PrimFuncs, e.g. `@T.prim_func` defs in
    the class body) and inherits `test_compare`, which runs `check_pass`. `expected` may instead
    be an exception class, which the transform must raise; `checks = False` skips the checkers,
    and `same_results = True` also compares before and after in the interpreter on random
    arguments (`arguments`: options for random_arguments, e.g. {"sizes": 16}; `rtol`: the
    comparison's relative tolerance, 0 for equal arrays).

        class TestFoldsConstants(CompareBeforeAfter):
            transform = vkir.transform.Simplify()

            @T.prim_func
            def before(A: T.Buffer((1,), "int32")):
                A[0] = 2 + 3

            @T.prim_func
            def expected(A: T.Buffer((1,), "int32")):
                A[0] = 5
    """

    transform = None
    before = None
    expected = None
    checks = True
    same_results = False
    arguments = None
    rtol = 0.0

    def test_compare(self):
        """Apply `transform` to `before` and compare with `expected` (see the class)."""
        import pytest

        cls = type(self)
        transform, before, expected = cls.transform, cls.before, cls.expected
        assert transform is not None and before is not None and expected is not None, \
            f"{cls.__name__} must set transform, before and expected"
        if isinstance(expected, type) and issubclass(expected, BaseException):
            with pytest.raises(expected):
                transform(before)
            return
        after = check_pass(transform, before, expected, checks=cls.checks)
        if cls.same_results:
            options = cls.arguments or {}
            same_results(before, after, lambda seed: random_arguments(before, seed, **options),
                         rtol=cls.rtol)
