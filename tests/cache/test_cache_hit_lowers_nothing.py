"""A compile-cache hit does no lowering: the entry holds the lowered function, so the first
call (the loop budget of a driver with a loop limit), a split variant for sizes past that limit
and `Kernel.ir` all come from it (vkir.cache.ir_codec)."""

import numpy as np
import pytest

import vkir
import vkir.lowering
from vkir.cache import ir_codec
from vkir.quirks import LOOP_TRIP_LIMIT

SOURCE = '''
@T.prim_func
def rowsum(x: T.Buffer(("n", "m"), "float32"), y: T.Buffer(("n",), "float32"), s: T.float32):
    for bx in T.thread_binding(n, "blockIdx.x"):
        acc = T.alloc_buffer((1,), "float32", scope="local")
        acc[0] = T.float32(0)
        for j in T.serial(m):
            acc[0] = acc[0] + x[bx, j] * s
        y[bx] = acc[0] + T.float32(-0.0)
'''


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    return tmp_path / "kernels"


def _lowerings(monkeypatch) -> list:
    """Every call of vkir.lowering.lower from now on (each records its function's name)."""
    calls = []
    original = vkir.lowering.lower

    def counting(func, *args, **kwargs):
        calls.append(func.name)
        return original(func, *args, **kwargs)

    monkeypatch.setattr(vkir.lowering, "lower", counting)
    return calls


def _check(k, n, m):
    x = np.ones((n, m), np.float32)
    y = np.zeros(n, np.float32)
    k(x, y, 0.5)
    np.testing.assert_array_equal(y, np.full(n, m * 0.5, np.float32))


def test_disk_hit_lowers_nothing(device, cache, monkeypatch):
    first = vkir.build(vkir.from_script(SOURCE), device=device)
    assert not first._compiled.cached
    lowerings = _lowerings(monkeypatch)
    k = vkir.build(vkir.from_script(SOURCE), device=device)   # as a new process would
    assert k._compiled.cached
    _check(k, 3, 100)            # the first call: the loop budget of llvmpipe's loop limit
    _check(k, 2, 70000)          # more iterations than llvmpipe runs: a split variant there
    if LOOP_TRIP_LIMIT in device.info.quirks:
        assert k._variants       # made from the stored function
    vkir.assert_structural_equal(k.ir, first.ir)
    assert lowerings == []


def test_function_the_encoding_cannot_hold_is_lowered_on_demand(device, cache, monkeypatch):
    """An entry without the lowered function still serves the module; `ir` lowers then."""
    def refuse(*args):
        raise ir_codec.NotStorable("test")

    monkeypatch.setattr(ir_codec, "encode", refuse)
    vkir.build(vkir.from_script(SOURCE), device=device)
    lowerings = _lowerings(monkeypatch)
    k = vkir.build(vkir.from_script(SOURCE), device=device)
    assert k._compiled.cached and lowerings == []
    _check(k, 3, 100)
    k.ir
    assert lowerings == ["rowsum"]


def test_encoding_round_trip_keeps_floats_and_user_vars():
    """-0.0 and the user's Vars come back as they were (the stored function names the caller's
    sizes and scalars, so a call's values bind it directly)."""
    import json

    func = vkir.from_script(SOURCE)
    lowered = vkir.lowering.lower(func)
    from vkir.cache.compile import _aliases

    data = json.loads(json.dumps(ir_codec.encode(lowered, func, _aliases(func, lowered))))
    back = ir_codec.decode(data, func)
    vkir.assert_structural_equal(back, lowered)
    assert back.params == func.params
    assert ["f", "-0x0.0p+0"] in _values(data)


def _values(data) -> list:
    """Every list inside `data` (the encoded nodes and values)."""
    out, todo = [], [data]
    while todo:
        d = todo.pop()
        if isinstance(d, dict):
            todo.extend(d.values())
        elif isinstance(d, list):
            out.append(d)
            todo.extend(d)
    return out
