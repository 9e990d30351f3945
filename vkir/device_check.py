"""The device against the reference: `check(func, *args)` runs a kernel on a device and in the
interpreter (or a shader against a Python reference) on copies of the same arguments and asserts
that every array agrees. The pytest plugin's `vkir_check` fixture and a fleet's `check` (which runs
it inside each device's actor) both use it; it needs no pytest.
"""

from __future__ import annotations

import inspect

import numpy as np

__all__ = ["FLOAT_TOLERANCE", "assert_agree", "check"]

# relative and absolute tolerance for floats, by bits: a few units in the last place of results
# that went through a handful of operations, with room for reassociated sums
FLOAT_TOLERANCE = {16: (2e-3, 1e-3), 32: (1e-5, 1e-6), 64: (1e-12, 1e-13)}


def _copy(a):
    from vkir.api import DeviceArray

    if isinstance(a, DeviceArray):
        return a.numpy()
    if isinstance(a, np.ndarray):
        return a.copy()
    return a


def _build(func, device):
    """(kernel, checked): vkir.build(func) with device-side bounds checks where this vkir offers
    them (`checked`), else without."""
    import vkir

    params = inspect.signature(vkir.build).parameters
    if "check_bounds" in params:
        return vkir.build(func, device=device, check_bounds=True), True
    return vkir.build(func, device=device), False


def assert_agree(got, want, name: str, rtol=None, atol=None) -> None:
    """Assert that array `got` equals `want`: exactly for integers and bools, within
    (rtol, atol) for floats (default: FLOAT_TOLERANCE of the dtype)."""
    if got.dtype.kind == "f":
        r, a = FLOAT_TOLERANCE.get(got.dtype.itemsize * 8, FLOAT_TOLERANCE[32])
        np.testing.assert_allclose(got, want, rtol=r if rtol is None else rtol,
                                   atol=a if atol is None else atol, equal_nan=True,
                                   err_msg=f"{name}: the device and the reference differ")
    else:
        np.testing.assert_array_equal(got, want, err_msg=f"{name}: the device and the reference differ")


def check(func, *args, device=None, reference=None, rtol=None, atol=None, **call_options):
    """Run `func` on the device and as the reference on copies of `args`; assert that every
    array agrees; return the device's arrays (one per array argument, in order).

    `func` is a PrimFunc (built with vkir.build; the reference is vkir.interpret) or anything
    callable on arrays, such as a ShaderKernel (then `reference(*copies)` computes the expected
    arrays in place, and `call_options`, e.g. grid= and push=, go to `func`)."""
    import vkir
    from vkir.ir import PrimFunc

    dev = device if device is not None else vkir.device()
    on_device = [_copy(a) for a in args]
    expected = [_copy(a) for a in args]
    if isinstance(func, PrimFunc):
        if reference is not None or call_options:
            raise TypeError("vkir_check: a PrimFunc is checked against the interpreter; "
                            "reference= and call options are for shaders")
        kernel, checked = _build(func, dev)
        # the interpreter computes as this device does: its subgroup size and float behaviour
        info = getattr(dev, "info", None)
        like = dict(subgroup_size=getattr(kernel, "subgroup_size", None)
                    or func.attrs.get("subgroup_size") or getattr(info, "subgroup_size", None) or 32,
                    denormals="flush" if "flushes_denormals" in getattr(info, "quirks", ()) else "preserve")
        if checked:   # an out-of-bounds access is skipped on the device and raises after it
            kernel(*on_device)
            vkir.interpret(func, *expected, **like)
        else:         # the interpreter raises before the device could write out of bounds
            vkir.interpret(func, *expected, **like)
            kernel(*on_device)
        names = [func.buffer_map[p].name if p in func.buffer_map else p.name for p in func.params]
    else:
        if reference is None:
            raise TypeError("vkir_check: give reference=callable computing the expected arrays "
                            f"in place for {func!r} (only a PrimFunc has the interpreter)")
        func(*on_device, **call_options)
        reference(*expected)
        names = [f"argument {i}" for i in range(len(args))]
    out = []
    for name, got, want in zip(names, on_device, expected):
        if isinstance(got, np.ndarray):
            assert_agree(got, np.asarray(want), name, rtol, atol)
            out.append(got)
    return tuple(out)
