"""64-bit division and modulo by a run-time divisor where the device has no int64: floor and
truncating, signed and unsigned, exact against numpy and the interpreter on every pair of edge
values (zero divisors, -2**63 / -1, divisors either side of 2**32, digit-correction cases) and
random ones; natively on lavapipe and emulated on SwiftShader with the same results."""

import itertools

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.analysis import verify_types, verify_well_formed
from vkir.transform import EmulateInt64

N = 1024
EDGES = [0, 1, -1, 2, -2, 3, -7, 7, 2**16 - 1, 2**16, 2**31 - 1, -2**31, 2**31, 2**32 - 1, 2**32,
         2**32 + 1, -2**32, 2**48 + 12345, -(2**33) + 5, 2**62, 2**63 - 1, -2**63, -2**63 + 1,
         0x1_0000_FFFF, 0x7FFF_8000_0000_0001, 0xFFFF_0000_0001 * 3]


def _operands(seed: int) -> tuple:
    """(a, b): every pair of edge values, then random dividends over random divisors of every
    magnitude (a random 64-bit number shifted right by 0..62 bits)."""
    pairs = list(itertools.product(EDGES, EDGES))
    rng = np.random.default_rng(seed)
    n = N - len(pairs)
    a = rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)
    b = rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64) >> rng.integers(0, 63, n)
    return (np.array([p[0] for p in pairs] + list(a), np.int64),
            np.array([p[1] for p in pairs] + list(b), np.int64))


@T.prim_func
def divisions(a: T.Buffer((1024,), "int64"), b: T.Buffer((1024,), "int64"),
              out: T.Buffer((1024, 4), "int64"), uout: T.Buffer((1024, 2), "uint64")):
    for bx in T.thread_binding(16, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            x = a[bx * 64 + tx]
            y = b[bx * 64 + tx]
            out[bx * 64 + tx, 0] = x // y
            out[bx * 64 + tx, 1] = x % y
            out[bx * 64 + tx, 2] = T.truncdiv(x, y)
            out[bx * 64 + tx, 3] = T.truncmod(x, y)
            uout[bx * 64 + tx, 0] = T.cast(x, "uint64") // T.cast(y, "uint64")
            uout[bx * 64 + tx, 1] = T.cast(x, "uint64") % T.cast(y, "uint64")


def _numpy(a: np.ndarray, b: np.ndarray) -> tuple:
    """numpy's answers, with vkir's definitions where numpy has none: 0 and 0 for a zero
    divisor, -2**63 // -1 wrapping to -2**63."""
    safe = np.where(b == 0, 1, b)
    with np.errstate(over="ignore"):
        floor_q, floor_r = a // safe, a % safe
        ua, ub = a.view(np.uint64), np.where(b == 0, 1, b).view(np.uint64)
        uq, ur = ua // ub, ua % ub
    trunc_r = np.fmod(a, safe)
    trunc_q = np.where(floor_r != 0, floor_q + ((a < 0) != (b < 0)), floor_q)
    out = np.stack([floor_q, floor_r, trunc_q, trunc_r], axis=1)
    uout = np.stack([uq, ur], axis=1)
    out[b == 0], uout[b == 0] = 0, 0
    return out, uout


def _run(fn, a, b) -> tuple:
    out, uout = np.zeros((N, 4), np.int64), np.zeros((N, 2), np.uint64)
    fn(a, b, out, uout)
    return out, uout


def _words(*arrays):
    return [x.view(np.uint32) for x in arrays]


def test_the_interpreter_divides_as_numpy_does():
    a, b = _operands(0)
    for got, want in zip(_run(lambda *x: vkir.interpret(divisions, *x), a, b), _numpy(a, b)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", [0, 1])
def test_emulated_division_is_exact_on_edge_and_random_values(seed):
    after = EmulateInt64()(divisions)
    verify_types(after)
    verify_well_formed(after)
    a, b = _operands(seed)
    out, uout = np.zeros((N, 4), np.int64), np.zeros((N, 2), np.uint64)
    vkir.interpret(after, *_words(a, b, out, uout))
    want = _numpy(a, b)
    np.testing.assert_array_equal(out, want[0])
    np.testing.assert_array_equal(uout, want[1])


def test_a_constant_power_of_two_divisor_stays_a_shift():
    """Floor division and modulo by 2**k are a shift and a mask (no 32-bit division emitted);
    by 3 the general code divides."""
    from vkir.ir import expr as E
    from vkir.ir import walk

    def divides(k: int) -> int:
        func = vkir.from_script(f'''
def by_constant(a: T.Buffer((4,), "int64"), out: T.Buffer((4, 2), "int64")):
    for i in T.serial(4):
        out[i, 0] = a[i] // T.int64({k})
        out[i, 1] = a[i] % T.int64({k})
''')
        after = EmulateInt64()(func)
        a = np.array([-2**63, -1025, 7, 2**63 - 1], np.int64)
        out = np.zeros((4, 2), np.int64)
        vkir.interpret(after, *_words(a, out))
        np.testing.assert_array_equal(out, np.stack([a // k, a % k], axis=1))
        return sum(isinstance(n, (E.Div, E.FloorDiv)) for n in walk(after.body))

    assert divides(1024) == 0
    assert divides(3) > 0


@pytest.mark.device
def test_division_on_the_device_matches_numpy(device):
    """Natively where the device has int64, emulated where not; the emulated function itself
    runs on either: all three give numpy's values. A zero divisor gives 0 and 0 through the
    emulation; a native division by zero may give anything (as for 32 bits), so those rows of
    the native result are not compared."""
    a, b = _operands(2)
    want = _numpy(a, b)
    built = _run(vkir.build(divisions, device=device), a, b)
    out, uout = np.zeros((N, 4), np.int64), np.zeros((N, 2), np.uint64)
    vkir.build(EmulateInt64()(divisions), device=device)(*_words(a, b, out, uout))
    np.testing.assert_array_equal(out, want[0])
    np.testing.assert_array_equal(uout, want[1])
    defined = b != 0
    emulated = "int64" not in device.info.features
    for got, w in zip(built, want):
        np.testing.assert_array_equal(got[defined], w[defined])
        if emulated:
            np.testing.assert_array_equal(got, w)


CONSTANTS = [3, -3, 7, -1, 1, 0, 10, 1000000007, 2**31, 2**32 - 1, 2**32 + 1, -(2**32), 2**63 - 1,
             -2**63, 768]


def test_division_by_constants():
    """Constant divisors (sign and size known, so only the code their case needs is emitted):
    exact against numpy for edge and random dividends, signed and, as uint64, unsigned."""
    lines = []
    for k, c in enumerate(CONSTANTS):
        lines += [f"out[tx, {k}, 0] = a[tx] // T.int64({c})",
                  f"out[tx, {k}, 1] = a[tx] % T.int64({c})",
                  f"out[tx, {k}, 2] = T.truncdiv(a[tx], T.int64({c}))",
                  f"out[tx, {k}, 3] = T.truncmod(a[tx], T.int64({c}))",
                  f"uout[tx, {k}, 0] = T.cast(a[tx], 'uint64') // T.uint64({c % 2**64})",
                  f"uout[tx, {k}, 1] = T.cast(a[tx], 'uint64') % T.uint64({c % 2**64})"]
    body = "\n        ".join(lines)
    m = len(CONSTANTS)
    func = vkir.from_script(f'''
def by_constants(a: T.Buffer(({N},), "int64"), out: T.Buffer(({N}, {m}, 4), "int64"),
                 uout: T.Buffer(({N}, {m}, 2), "uint64")):
    for tx in T.thread_binding({N}, "threadIdx.x"):
        {body}
''')
    a = _operands(4)[0]
    out, uout = np.zeros((N, m, 4), np.int64), np.zeros((N, m, 2), np.uint64)
    vkir.interpret(EmulateInt64()(func), *_words(a, out, uout))
    for k, c in enumerate(CONSTANTS):
        want = _numpy(a, np.full(N, c, np.int64))
        np.testing.assert_array_equal(out[:, k], want[0], err_msg=f"by {c}")
        np.testing.assert_array_equal(uout[:, k], want[1], err_msg=f"by {c} as uint64")
