"""64-bit atomics where the device has no int64: add, sub, and, or and xor on int64/uint64
buffers are word atomics (the add and sub with a carry into the high word), exact under
contention: thousands of invocations updating one element give numpy's wrapped sum exactly.
The atomics that need both words indivisibly, and any use of an emulated atomic's old value,
are refused by name."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.analysis import verify_types, verify_well_formed
from vkir.transform import EmulateInt64

BLOCKS, THREADS = 32, 64
N = BLOCKS * THREADS


@T.prim_func
def contended(v: T.Buffer((2048,), "int64"), acc: T.Buffer((8,), "int64"),
              uacc: T.Buffer((2,), "uint64")):
    for bx in T.thread_binding(32, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            x = v[bx * 64 + tx]
            T.atomic_add(acc[0], x)
            T.atomic_sub(acc[1], x)
            T.atomic_add(acc[2 + tx % 4], x * T.int64(3))
            T.atomic_or(acc[6], T.shift_left(T.int64(1), T.cast(bx + tx, "int64")))
            T.atomic_xor(acc[7], x)
            T.atomic_and(uacc[0], T.cast(x, "uint64") | T.uint64(0x8000000000000001))
            T.atomic_add(uacc[1], T.cast(x, "uint64"))


def _values(seed: int) -> np.ndarray:
    """Addends that carry and borrow across the word boundary all the time: values near
    +-2**32, near +-2**63, and random ones."""
    rng = np.random.default_rng(seed)
    near = np.array([2**32 - 1, 2**32 + 1, -(2**32) + 3, 0xFFFFFFFF, 1, -1, 2**63 - 1, -2**63],
                    np.int64)
    v = rng.integers(-2**63, 2**63 - 1, N, dtype=np.int64)
    v[::3] = near[rng.integers(0, len(near), len(v[::3]))]
    v[1::7] = rng.integers(-2**33, 2**33, len(v[1::7]))
    return v


def _expected(v: np.ndarray, acc: np.ndarray, uacc: np.ndarray) -> tuple:
    """The final values (numpy, wrapping at 64 bits) from the initial `acc` and `uacc`."""
    acc, uacc = acc.copy(), uacc.copy()
    with np.errstate(over="ignore"):
        acc[0] += v.sum()
        acc[1] -= v.sum()
        tx = np.arange(N) % THREADS
        for k in range(4):
            acc[2 + k] += (v[tx % 4 == k] * 3).sum()
        bits = (np.arange(N) // THREADS + tx) % 64
        acc[6] |= np.bitwise_or.reduce(np.left_shift(np.int64(1), bits.astype(np.int64)))
        acc[7] ^= np.bitwise_xor.reduce(v)
        uacc[0] &= np.bitwise_and.reduce(v.view(np.uint64) | np.uint64(0x8000000000000001))
        uacc[1] += v.view(np.uint64).sum(dtype=np.uint64)
    return acc, uacc


def _initial() -> tuple:
    acc = np.array([2**32 - 5, -3, 7, 2**40, -(2**40), 0, 0x10, -1], np.int64)
    uacc = np.array([2**64 - 1, 2**63 + 2**32 - 1], np.uint64)
    return acc, uacc


def test_emulated_atomics_are_word_atomics_and_exact_in_the_interpreter():
    after = EmulateInt64()(contended)
    verify_types(after)
    verify_well_formed(after)
    assert [str(b.dtype) for b in after.buffer_map.values()] == ["uint32x2", "uint32", "uint32"]
    v = _values(0)
    acc, uacc = _initial()
    want = _expected(v, acc, uacc)
    vkir.interpret(after, v.view(np.uint32), acc.view(np.uint32), uacc.view(np.uint32))
    np.testing.assert_array_equal(acc, want[0])
    np.testing.assert_array_equal(uacc, want[1])


@pytest.mark.device
@pytest.mark.parametrize("seed", [1, 2])
def test_contended_64bit_atomics_on_the_device_give_the_exact_sum(device, seed):
    """2048 invocations adding into one element (carries in flight in all of them): the exact
    sum, natively where the device has int64 atomics and through word atomics elsewhere (the
    emulated function itself runs on either)."""
    v = _values(seed)
    for func in (contended, EmulateInt64()(contended)):
        acc, uacc = _initial()
        want = _expected(v, acc, uacc)
        args = (v, acc, uacc) if func is contended else \
            (v.view(np.uint32), acc.view(np.uint32), uacc.view(np.uint32))
        vkir.build(func, device=device)(*args)
        np.testing.assert_array_equal(acc, want[0], err_msg=f"{func.name}")
        np.testing.assert_array_equal(uacc, want[1], err_msg=f"{func.name}")


@pytest.mark.parametrize("body, what", [
    ("T.atomic_min(a[0], a[1])", "T.atomic_min on the int64 buffer 'a'"),
    ("T.atomic_max(a[0], a[1])", "T.atomic_max"),
    ("T.atomic_exchange(a[0], a[1])", "T.atomic_exchange"),
    ("T.atomic_compare_exchange(a[0], a[1], T.int64(2))", "T.atomic_compare_exchange"),
    ("a[1] = T.atomic_add(a[0], T.int64(1))", "old value of T.atomic_add"),
])
def test_atomics_that_cannot_be_word_atomics_are_refused_by_name(body, what):
    func = vkir.from_script(f'''
def refused(a: T.Buffer((2,), "int64")):
    {body}
''')
    with pytest.raises(vkir.UnsupportedError, match=what):
        EmulateInt64()(func)


@T.prim_func
def shared_sums(v: T.Buffer((256,), "int64"), out: T.Buffer((4, 2), "int64")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            s = T.alloc_buffer((2,), "int64", scope="shared")
            if tx < 2:
                s[tx] = T.int64(4294967295) * T.cast(tx, "int64")
            T.barrier()
            T.atomic_add(s[0], v[bx * 64 + tx])
            T.atomic_sub(s[1], v[bx * 64 + tx] * T.int64(5))
            T.barrier()
            if tx < 2:
                out[bx, tx] = s[tx]


def test_shared_memory_64bit_atomics(device):
    """Workgroup-shared int64 elements updated by every invocation of a workgroup: word atomics
    on shared words, exact sums per workgroup (interpreter, device, emulated on the device)."""
    v = _values(3)[:256]
    with np.errstate(over="ignore"):
        sums = v.reshape(4, 64).sum(axis=1)
        want = np.stack([sums, np.int64(2**32 - 1) - sums * 5], axis=1)
    got = np.zeros((4, 2), np.int64)
    vkir.interpret(EmulateInt64()(shared_sums), v.view(np.uint32), got.view(np.uint32))
    np.testing.assert_array_equal(got, want)
    for func in (shared_sums, EmulateInt64()(shared_sums)):
        got = np.zeros((4, 2), np.int64)
        words = func is not shared_sums
        vkir.build(func, device=device)(*((v.view(np.uint32), got.view(np.uint32)) if words
                                          else (v, got)))
        np.testing.assert_array_equal(got, want, err_msg=func.name)
