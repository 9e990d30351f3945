"""Signed 64-bit ordering compares are exact on every driver: llvmpipe (lavapipe) evaluates
`tx < 32` false for an int64 thread index sign-extended from the invocation id (the
"int64_signed_compare" quirk), so vkir compares such values on their 32-bit words there; a device
without int64 compares the word pairs of its emulation (EmulateInt64)."""

import numpy as np

import vkir
from vkir import T
from vkir.quirks import INT64_SIGNED_COMPARE, LAVAPIPE


@T.prim_func
def guarded_store(A: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(T.int64(64), "threadIdx.x"):
        if tx < T.int64(32):
            A[tx] = 1


@T.prim_func
def every_ordering(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int64")):
    for tx in T.thread_binding(T.int64(64), "threadIdx.x"):
        A[tx] = T.if_then_else(tx <= T.int64(31), 1, 0) + T.if_then_else(T.int64(32) > tx, 2, 0) \
            + T.if_then_else(tx >= T.int64(40), 4, 0) + T.if_then_else(tx < B[tx], 8, 0) \
            + T.if_then_else(B[tx] <= tx, 16, 0)


def test_lavapipe_has_the_quirk_that_codegen_works_around():
    from vkir.spirv.codegen import wide_compare

    assert INT64_SIGNED_COMPARE in LAVAPIPE and wide_compare.QUIRK == INT64_SIGNED_COMPARE


def test_int64_compares_of_thread_indices_are_exact(device, vkir_check):
    b = np.array([-(2**40), 2**40, 2**32 + 1, -1, 5, 2**31, -(2**31) - 1, 33] * 8, np.int64)
    got, = vkir_check(guarded_store, np.zeros(64, np.int32))
    np.testing.assert_array_equal(got, np.arange(64) < 32)   # all 64 before the quirk's fix
    got, _ = vkir_check(every_ordering, np.zeros(64, np.int32), b)
    tx = np.arange(64)
    want = (tx <= 31) * 1 + (32 > tx) * 2 + (tx >= 40) * 4 + (tx < b) * 8 + (b <= tx) * 16
    np.testing.assert_array_equal(got, want)
