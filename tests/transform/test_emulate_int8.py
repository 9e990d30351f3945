"""EmulateInt8: on devices without 8-bit integers or 8-bit storage (SwiftShader), every int8/uint8
value becomes 32-bit with 8-bit wrap-around, and 8-bit parameter buffers are read and written as
bytes of uint32 words. The output has no 8-bit type left, passes both checkers, and computes what
the interpreter computes for the original (the word buffers get the same bytes as uint32 views);
on the device, bool and int8 kernels run on every driver."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.analysis import verify_types, verify_well_formed
from vkir.ir import PointerType, walk
from vkir.transform import BoolToInt8, EmulateInt8
from vkir.transform.emulate_int8 import is_narrow
from vkir.testing import interpret_lowered, random_arguments


@T.prim_func
def int8_arith(a: T.Buffer((64,), "int8"), b: T.Buffer((64,), "int8"), u: T.Buffer((64,), "uint8"),
               f: T.Buffer((64,), "float32"), out: T.Buffer((64,), "int8"),
               uout: T.Buffer((64,), "uint8"), wide: T.Buffer((64,), "int32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            i = bx * 32 + tx
            x = a[i] * b[i] + T.int8(100)             # wraps at 8 bits
            y = T.shift_left(a[i], b[i]) ^ (x >> T.int8(2))
            q = a[i] // T.select(b[i] == T.int8(0), T.int8(1), b[i])
            out[i] = x + y - q
            uout[i] = u[i] * T.uint8(7) + T.cast(f[i], "uint8")
            wide[i] = T.cast(a[i], "int32") * 1000 + T.cast(T.cast(f[i] * T.float32(100), "int8"), "int32")


@T.prim_func
def neighbours(a: T.Buffer((4, 16), "int8"), out: T.Buffer((4, 16), "int8")):
    # each invocation writes one byte: neighbouring bytes of one word come from other invocations
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(16, "threadIdx.x"):
            out[bx, 15 - tx] = a[bx, tx] + T.int8(1)


@T.prim_func
def words(a: T.Buffer((32,), "int8x4"), out: T.Buffer((32,), "int8x4")):
    for tx in T.thread_binding(32, "threadIdx.x"):
        out[tx] = a[tx] * T.broadcast(T.int8(3), 4)


@T.prim_func
def masks(a: T.Buffer((50,), "float32"), m: T.Buffer((50,), "bool"), s: T.Buffer((1,), "int32")):
    for tx in T.thread_binding(50, "threadIdx.x"):
        m[tx] = a[tx] > T.float32(0.5)
        local = T.alloc_buffer((2,), "int8", scope="local")
        local[0] = T.cast(m[tx], "int8") * T.int8(127)
        local[1] = local[0] + local[0]
        T.atomic_add(s[0], T.cast(local[1], "int32"))


def _as_words(arr: np.ndarray) -> np.ndarray:
    """The uint32 words of an 8-bit array (what the emulated function's word buffer holds)."""
    raw = np.ascontiguousarray(arr).view(np.uint8).ravel()
    padded = np.zeros(-(-raw.size // 4) * 4, np.uint8)
    padded[:raw.size] = raw
    return padded.view(np.uint32)


# arguments: integers over their whole range (8-bit wrap-around is what is tested), floats in [-3, 3)
_VALUES = dict(int_range=None, float_range=(-3, 3))


def _emulated(func):
    return EmulateInt8()(BoolToInt8()(func))


@pytest.mark.parametrize("func", [int8_arith, neighbours, words, masks], ids=lambda f: f.name)
def test_emulated_function_has_no_8bit_type_and_passes_the_checkers(func):
    after = _emulated(func)
    verify_types(after)
    verify_well_formed(after)
    for node in walk(after.body):
        dt = getattr(node, "dtype", None)
        assert not is_narrow(dt) and not (isinstance(dt, PointerType) and is_narrow(dt.element)), node
    for p in after.params:
        buf = after.buffer_map[p]
        assert not is_narrow(buf.dtype)


@pytest.mark.parametrize("func", [int8_arith, neighbours, words, masks], ids=lambda f: f.name)
def test_emulated_function_computes_what_the_original_does(func):
    after = _emulated(func)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        want = random_arguments(func, rng, **_VALUES)
        got = [a.copy() for a in want]
        vkir.interpret(func, *want)
        words_args = [_as_words(a.view(np.int8) if a.dtype == np.bool_ else a)
                      if a.dtype.itemsize == 1 else a for a in got]
        vkir.interpret(after, *words_args)
        for w, g in zip(want, words_args):
            if w.dtype.itemsize == 1:
                g = g.view(np.uint8)[:w.size].view(w.dtype).reshape(w.shape)
            np.testing.assert_array_equal(g, w)


def test_byte_stores_use_word_atomics_and_whole_elements_plain_stores():
    """A byte store updates its byte with atomic and/or (neighbours may be written concurrently);
    an int8x4 element fills its word, so it is one plain store."""
    ops = [n.op for n in walk(_emulated(neighbours).body) if isinstance(n, vkir.ir.Call)]
    assert ops.count("atomic_and") == 1 and ops.count("atomic_or") == 1
    ops = [n.op for n in walk(_emulated(words).body) if isinstance(n, vkir.ir.Call)]
    assert "atomic_and" not in ops and "atomic_or" not in ops


def test_the_pipeline_emulates_only_where_the_target_lacks_8bit_support():
    from vkir.lowering import pipeline
    from vkir.target import Target

    names = lambda t: [p.name for p in pipeline(t).passes]
    assert "EmulateInt8" not in names(Target.lavapipe())
    assert "EmulateInt8" in names(Target.vulkan13())
    assert "EmulateInt8" not in names(Target.interp())


def test_reinterpret_of_8bit_values_is_refused_by_name():
    @T.prim_func
    def bits(a: T.Buffer((4,), "int8x4"), out: T.Buffer((4,), "int32")):
        for tx in T.thread_binding(4, "threadIdx.x"):
            out[tx] = T.reinterpret(a[tx], "int32")

    with pytest.raises(vkir.UnsupportedError, match="reinterpret"):
        _emulated(bits)


@pytest.mark.parametrize("func", [int8_arith, neighbours, words, masks], ids=lambda f: f.name)
def test_8bit_kernels_run_on_the_device_like_the_interpreter(device, func):
    """On lavapipe natively, on SwiftShader through the emulation: the same bytes either way."""
    rng = np.random.default_rng(7)
    want = random_arguments(func, rng, **_VALUES)
    got = [a.copy() for a in want]
    vkir.interpret(func, *want)
    vkir.build(func, device=device)(*got)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_absolute_value_of_int8_minimum_wraps():
    @T.prim_func
    def absolute(a: T.Buffer((4,), "int8"), out: T.Buffer((4,), "int8")):
        for tx in T.thread_binding(4, "threadIdx.x"):
            out[tx] = T.fabs(a[tx])

    a = np.array([-128, -5, 0, 127], np.int8)
    want, got = np.zeros(4, np.int8), np.zeros(4, np.int8)
    vkir.interpret(absolute, a, want)
    words = _as_words(got)
    vkir.interpret(_emulated(absolute), _as_words(a), words)
    np.testing.assert_array_equal(words.view(np.int8)[:4], want)


@T.prim_func
def symbolic_bytes(a: T.Buffer(("n",), "int8")):
    # n is named only by an 8-bit buffer: after the pass, by a word buffer of (n + 3) // 4 words
    for i in T.parallel(n):
        a[i] = a[i] + T.int8(1)


def test_a_size_only_8bit_buffers_name_is_bound_on_the_original_signature():
    """Found by the property suite (a bool/int8-only kernel of symbolic size, n = 1): the word
    view's (n + 3) // 4 names no n of its own, so interpreting the emulated function alone
    evaluated that shape with n unbound ("variable n is used outside its scope"). A Kernel binds
    n on the user's signature; interpret_lowered does too, given `original`, and the binder
    says which size is unbound instead of failing in the evaluator."""
    after = _emulated(symbolic_bytes)
    assert [str(b.shape[0]) for b in after.buffer_map.values()] == ["(n + 3) // 4"]
    with pytest.raises(vkir.ArgumentError, match="symbolic size n is not bound by any argument"):
        vkir.interpret(after, _as_words(np.zeros(1, np.int8)))
    with pytest.raises(vkir.ArgumentError, match="pass original="):
        interpret_lowered(after, np.zeros(1, np.int8))
    for n in (1, 4, 5, 6):
        want = np.arange(n, dtype=np.int8) + np.int8(126)
        got = want.copy()
        vkir.interpret(symbolic_bytes, want)
        interpret_lowered(after, got, original=symbolic_bytes)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [1, 5, 6])
def test_a_size_only_8bit_buffers_name_runs_on_the_device(device, n):
    """The same kernel on the device (lavapipe natively, SwiftShader through the emulation), the
    interpreter on it and on its lowered form: the same bytes."""
    want = np.arange(n, dtype=np.int8) + np.int8(126)
    got, lowered = want.copy(), want.copy()
    vkir.interpret(symbolic_bytes, want)
    k = vkir.build(symbolic_bytes, device=device)
    k(got)
    interpret_lowered(k.ir, lowered, original=symbolic_bytes)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(lowered, want)
