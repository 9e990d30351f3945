"""vkir.build(f, check_bounds=True): device-side bounds checks raise vkir.OutOfBoundsError with
the buffer, index, invocation and source line, skip the offending access, and leave correct
kernels' results unchanged."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.driver.bounds_check import instrument

pytestmark = pytest.mark.device


@T.prim_func
def shifted_read(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            i = bx * 32 + tx
            b[i] = a[i + 1] * T.float32(2)


@T.prim_func
def shifted_write(a: T.Buffer((8, 8), "int32"), b: T.Buffer((8, 8), "int32")):
    for ty in T.thread_binding(8, "threadIdx.y"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            b[ty, tx + 1] = a[ty, tx]


@T.prim_func
def guarded(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 31) // 32, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            i = bx * 32 + tx
            if i < n:
                b[i] = T.if_then_else(i + 1 < n, a[i + 1], T.float32(0)) + a[i]


@T.prim_func
def shared_overrun(a: T.Buffer((32,), "int32"), out: T.Buffer((32,), "int32")):
    for tx in T.thread_binding(32, "threadIdx.x"):
        s = T.alloc_buffer((16,), "int32", scope="shared")
        if tx < 17:
            s[tx] = a[tx]
        T.barrier()
        out[tx] = a[tx]


@T.prim_func
def histogram(x: T.Buffer((64,), "int32"), h: T.Buffer((8,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        T.atomic_add(h[x[tx]], 1)


def test_read_past_the_end_names_buffer_index_invocation_and_line():
    k = vkir.build(shifted_read, check_bounds=True)
    a = np.arange(64, dtype="float32")
    b = np.full(64, -1, "float32")
    with pytest.raises(vkir.OutOfBoundsError) as info:
        k(a, b)
    err = info.value
    assert err.buffer == "a" and err.index == 64
    assert err.invocation == {"blockIdx.x": 1, "threadIdx.x": 31}
    assert err.location is not None and err.location.startswith(__file__ + ":")
    assert err.location.split(":")[-2] == str(_line("b[i] = a[i + 1]"))
    assert "b[i] = a[i + 1] * T.float32(2)" in str(err)
    # every in-bounds invocation still ran; the bad one read a clamped element, not past the end
    np.testing.assert_array_equal(b[:63], (np.arange(64, dtype="float32")[1:]) * 2)


def test_profile_reports_an_out_of_bounds_access_as_a_call_does():
    """Kernel.profile of a bounds-checked kernel raises for a violation in its runs (it
    returned timings and said nothing)."""
    k = vkir.build(shifted_read, check_bounds=True)
    with pytest.raises(vkir.OutOfBoundsError, match="buffer a: index 64"):
        k.profile(np.arange(64, dtype="float32"), np.zeros(64, "float32"), repeat=1, warmup=0)


def test_out_of_bounds_store_is_skipped_and_reported():
    k = vkir.build(shifted_write, check_bounds=True)
    a = np.arange(64, dtype="int32").reshape(8, 8)
    b = np.full((8, 8), -7, "int32")
    with pytest.raises(vkir.OutOfBoundsError) as info:
        k(a, b)
    err = info.value
    assert err.buffer == "b" and err.index == (err.invocation["threadIdx.y"], 8)
    assert err.invocation["threadIdx.x"] == 7
    np.testing.assert_array_equal(b[:, 1:], a[:, :7])
    np.testing.assert_array_equal(b[:, 0], -7)


def test_correct_kernel_with_guarded_loads_passes_and_matches_numpy():
    k = vkir.build(guarded, check_bounds=True)
    for n in (1, 31, 100):
        a = np.random.rand(n).astype("float32")
        b = np.zeros(n, "float32")
        k(a, b=b)  # keyword arguments bind as for any kernel
        want = a + np.append(a[1:], np.float32(0))
        np.testing.assert_allclose(b, want, rtol=1e-6)
        ref = np.zeros(n, "float32")
        vkir.interpret(guarded, a, ref)
        np.testing.assert_allclose(b, ref, rtol=1e-6)


def test_shared_memory_overrun_is_caught():
    k = vkir.build(shared_overrun, check_bounds=True)
    a = np.arange(32, dtype="int32")
    out = np.zeros(32, "int32")
    with pytest.raises(vkir.OutOfBoundsError) as info:
        k(a, out)
    assert info.value.buffer == "s" and info.value.index == 16
    assert info.value.invocation == {"threadIdx.x": 16}
    with pytest.raises(vkir.OutOfBoundsError):
        vkir.interpret(shared_overrun, a, np.zeros(32, "int32"))


def test_atomic_on_a_bad_element_is_skipped():
    k = vkir.build(histogram, check_bounds=True)
    x = np.arange(64, dtype="int32") % 8
    h = np.zeros(8, "int32")
    k(x, h)
    np.testing.assert_array_equal(h, np.bincount(x, minlength=8))
    x[5] = 9
    h = np.zeros(8, "int32")
    with pytest.raises(vkir.OutOfBoundsError) as info:
        k(x, h)
    assert info.value.buffer == "h" and info.value.index == 9
    assert h.sum() == 63  # the bad update did not land anywhere


@T.prim_func
def fetch_add(x: T.Buffer((8,), "int32"), h: T.Buffer((8,), "int32"),
              old: T.Buffer((8,), "int32")):
    for tx in T.thread_binding(8, "threadIdx.x"):
        old[tx] = T.atomic_add(h[x[tx]], 5) + 1


def test_atomic_whose_value_is_used_on_a_bad_element_is_skipped_and_gives_zero():
    """An atomic in an expression (its old value used) on an element out of bounds is not
    performed (it updated the clamped element, h[7], before)."""
    k = vkir.build(fetch_add, check_bounds=True)
    x = np.array([0, 1, 2, 3, 4, 5, 6, 9], "int32")
    h, old = np.zeros(8, "int32"), np.full(8, -1, "int32")
    with pytest.raises(vkir.OutOfBoundsError) as info:
        k(x, h, old)
    assert info.value.buffer == "h" and info.value.index == 9
    assert info.value.invocation == {"threadIdx.x": 7}
    np.testing.assert_array_equal(h, [5, 5, 5, 5, 5, 5, 5, 0])
    np.testing.assert_array_equal(old, [1] * 8)


def test_unchecked_build_is_unchanged_and_the_record_is_an_extra_parameter():
    checked, sites = instrument(shifted_read)
    assert len(checked.params) == len(shifted_read.params) + 1
    assert [s.buffer for s in sites] == ["a", "b"]
    plain = vkir.build(shifted_read)
    assert "vkir_bounds_record" not in plain.asm
    assert "vkir_bounds_record" in vkir.build(shifted_read, check_bounds=True).asm


def _line(text: str) -> int:
    with open(__file__) as f:
        return 1 + next(i for i, line in enumerate(f) if text in line and "_line" not in line)
