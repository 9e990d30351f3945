"""Bit-for-bit comparison of a device's results with the interpreter's, as the campaign judges
them: floats by bit pattern (0.0 and -0.0 differ), every NaN equal to every NaN."""

from __future__ import annotations

import numpy as np


def equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per element of the flattened arrays: whether `a` and `b` hold the same value."""
    a, b = a.ravel(), b.ravel()
    if a.dtype.kind == "f":
        u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
        return (a.view(u) == b.view(u)) | (np.isnan(a) & np.isnan(b))
    return a == b


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether every element of `a` and `b` is the same value."""
    return bool(equal(a, b).all())


def same_results(want: list, have: list) -> bool:
    """Whether two argument lists (arrays and scalars) hold the same arrays."""
    return all(same_bits(w, h) for w, h in zip(want, have) if isinstance(w, np.ndarray))
