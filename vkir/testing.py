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
"""

from __future__ import annotations

import contextlib

__all__ = ["device_features", "missing_features", "expect_features", "math_tolerance",
           "interpret_lowered", "same_results", "random_arguments"]


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


def math_tolerance(op: str) -> tuple[float, float]:
    """(rtol, atol) within which any conformant Vulkan device computes the float32 intrinsic
    `op` (e.g. "sin") for moderate arguments; exact-ish (1e-5) for the correctly rounded ones."""
    return _MATH_TOLERANCE.get(op, _EXACTISH)


def interpret_lowered(lowered, *args, **options) -> None:
    """vkir.interpret on a function lowered for a target without 8-bit support, with the
    arguments of the original function: EmulateInt8 made each 8-bit (or bool) parameter a uint32
    word buffer, so such arrays are passed as their bytes padded to whole words, and the bytes
    are copied back afterwards. Other functions are interpreted as they are (bool arrays as int8
    where BoolToInt8 retyped them)."""
    import numpy as np

    from .interpreter import interpret

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
        views.append(a)
    interpret(lowered, *views, **options)
    for a, raw in copies:
        a[...] = raw[:a.size].view(a.dtype).reshape(a.shape)


def same_results(before, after, arguments, seeds=range(3), rtol: float = 0.0, **options) -> None:
    """Assert that PrimFuncs `before` and `after` (a function and its transformed form) compute
    the same in vkir.interpret: for each seed, `arguments(seed)` gives fresh arguments, each
    function runs on its own copy, and every array must come out equal (within `rtol` when it
    is not 0). `options` go to vkir.interpret (e.g. subgroup_size)."""
    import numpy as np

    from .interpreter import interpret

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


def random_arguments(func, seed: int, scalar_high: int = 4, scalars=None) -> list:
    """Random numpy arguments for a PrimFunc of constant shapes: floats from a standard normal,
    integers from [-50, 50), a vector-typed buffer as the array of its lanes; scalar parameters
    from `scalars` (by name) or small non-negative ints below `scalar_high`."""
    import numpy as np

    rng = np.random.default_rng(seed)
    args = []
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None:
            args.append(scalars[p.name] if scalars else int(rng.integers(0, scalar_high)))
            continue
        shape = tuple(int(s.value) for s in buf.shape)
        dt = buf.dtype.element_of().numpy_dtype()
        if buf.dtype.lanes > 1:
            shape = shape[:-1] + (shape[-1] * buf.dtype.lanes,)
        args.append(rng.standard_normal(shape).astype(dt) if dt.kind == "f"
                    else rng.integers(-50, 50, shape).astype(dt))
    return args

