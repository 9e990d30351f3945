"""Loops whose extent is a bounded expression of the call's scalars (shifts, products, bitwise
and/or/xor/not, bit counts, int64 and uint32 scalars) run whole: the loop budget bounds each
by the call's values, so on llvmpipe (quirk loop_trip_limit_65535) a call past 65535 iterations
runs a split variant instead of being refused, and elsewhere the plain loop runs."""

import numpy as np
import pytest

import vkir
from vkir.driver.loop_budget import LOOP_BUDGET, loops_for_call
from vkir.errors import UnsupportedError
from vkir.target import Target

# (scalar parameters, extent, the call's scalars, iterations)
EXTENTS = [
    ("s: T.int32", "1 << s", (17,), 1 << 17),
    ("m: T.int32", "m * m", (300,), 90_000),
    ("m: T.int32, k: T.int32", "m ^ k", (70_000, 5), 70_005),
    ("m: T.int32, k: T.int32", "m & k", (70_000, 0x1FFFF), 70_000),
    ("m: T.int32, k: T.int32", "m | k", (65_536, 5_000), 70_536),
    ("m: T.int32, s: T.int32", "m >> s", (140_000, 1), 70_000),
    ("m: T.int32", "~m", (-70_001,), 70_000),
    ("m: T.int32", "T.popcount(m) * 5000", (0xFFFFF,), 100_000),
    ("n: T.int64", "n", (70_000,), 70_000),
    ("n: T.int64", "n // 3", (210_000,), 70_000),
    ("n: T.int64", "n * n", (300,), 90_000),
    ("s: T.int64", "T.int64(1) << s", (17,), 1 << 17),
    ("n: T.uint32", "n", (70_000,), 70_000),
    ("m: T.int32, k: T.int32", "T.min(m, k)", (70_000, 80_000), 70_000),
]


def _kernel(params: str, extent: str):
    return vkir.from_script(f'''
@T.prim_func
def extent(a: T.Buffer((1,), "int32"), {params}):
    for j in T.serial({extent}):
        a[0] = a[0] + 1
''')


@pytest.mark.parametrize("params, extent, scalars, count", EXTENTS,
                         ids=[e[1] for e in EXTENTS])
def test_the_budget_bounds_the_extent_by_the_call_values(params, extent, scalars, count):
    func = _kernel(params, extent)
    lowered = vkir.lower(func, Target(features={"int64"}))   # int64 native: no EmulateInt64
    env = {p: v for p, v in zip(lowered.params[1:], scalars)}
    (loop,) = loops_for_call(lowered, env)
    assert (loop.trips, loop.starts) == (count, 1)


@pytest.mark.device
@pytest.mark.filterwarnings("ignore:kernel extent runs as a single invocation")
def test_bounded_extents_run_whole(device):
    limited = "loop_trip_limit_65535" in device.info.quirks
    for params, extent, scalars, count in EXTENTS:
        if "int64" in params and "int64" not in device.info.features:
            continue   # (SwiftShader has no 64-bit integers)
        k = vkir.build(_kernel(params, extent), device=device)
        a = np.zeros(1, np.int32)
        k(a, *scalars)
        assert a[0] == count, extent
        assert len(k._variants) == (1 if limited and count > LOOP_BUDGET else 0), extent


@pytest.mark.device
@pytest.mark.filterwarnings("ignore:kernel extent runs as a single invocation")
def test_an_extent_past_every_split_is_still_refused(device):
    k = vkir.build(_kernel("s: T.int32", "1 << s"), device=device)
    a = np.zeros(1, np.int32)
    if "loop_trip_limit_65535" not in device.info.quirks:
        # a driver without the limit (SwiftShader, Mesa 25's llvmpipe) refuses nothing: the
        # plain loop runs whole
        k(a, 24)
        assert a[0] == 1 << 24 and not k._variants
        return
    with pytest.raises(UnsupportedError, match="loops run up to 1073741824 iterations"):
        k(a, 30)
    assert a[0] == 0   # refused before the dispatch
