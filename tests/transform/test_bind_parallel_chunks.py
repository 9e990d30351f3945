"""BindParallel's chunked form (vkir.transform.parallel_chunks): 16 consecutive iterations per
invocation on drivers with the storage_loads_per_lane quirk. Which loops qualify, that codegen
emits valid SPIR-V for it, and exact results against numpy and the interpreter at every size
class (tails included) on the device (forced with `elements=16` where the driver lacks the
quirk, so SwiftShader runs the same form)."""

import dataclasses

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.ir import stmt as S
from vkir.ir.traversal import walk
from vkir.quirks import STORAGE_LOADS_PER_LANE
from vkir.spirv import codegen
from vkir.target import Target
from vkir.transform import BindParallel
from vkir.transform.bind_parallel import CHUNKABLE, elements_per_invocation

QUIRKED = dataclasses.replace(Target(), quirks=frozenset({STORAGE_LOADS_PER_LANE}))
SIZES = (1, 3, 15, 16, 17, 1000, 2 ** 20 + 3)


@T.prim_func
def vadd(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32"),
         c: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        c[i] = a[i] + b[i]


@T.prim_func
def mixed(x: T.Buffer(("n",), "float32"), k: T.Buffer(("n",), "int32"),
          y: T.Buffer(("n",), "float32"), m: T.Buffer(("n",), "uint32")):
    for i in T.parallel(n):
        s = x[i] * T.float32(0.5) + T.cast(k[i], "float32")
        if k[i] > 0:
            y[i] = T.max(s, y[i]) + T.cast(i, "float32")
        else:
            y[i] = s
        m[i] = m[i] ^ T.uint32(0x5A5A5A5A)


@T.prim_func
def fixed(a: T.Buffer((1003,), "float32"), c: T.Buffer((1003,), "float32")):
    for i in T.parallel(1003):
        c[i] = a[i] * a[i]


@T.prim_func
def shifted(a: T.Buffer(("n",), "float32"), c: T.Buffer(("n",), "float32")):
    for i in T.parallel(n - 1):
        c[i] = a[i + 1]


def _loop_kinds(func):
    return [n.kind for n in walk(func.body) if isinstance(n, S.For)]


def _bound(func, target, **kwargs):
    """`func` bound (one iteration per invocation, marked), then chunked where `target` wants:
    the pass's two runs in vkir.build and its lowering."""
    return BindParallel(target=target, **kwargs)(BindParallel(target=target)(func))


def test_the_target_chooses_the_elements_per_invocation():
    assert elements_per_invocation(QUIRKED) == 16
    assert elements_per_invocation(Target()) == 1
    assert "vectorized" in _loop_kinds(_bound(vadd, QUIRKED))
    assert "vectorized" not in _loop_kinds(_bound(vadd, Target()))
    assert "vectorized" in _loop_kinds(_bound(vadd, Target(), elements=16))


def test_binding_marks_and_a_later_run_chunks():
    # the first run keeps one iteration per invocation (the kernel's function: what the
    # interpreter and vkir.Tape's adjoints see), its blockIdx.x loop marked
    once = BindParallel(target=QUIRKED)(vadd)
    assert _loop_kinds(once) == ["thread_binding", "thread_binding"]
    assert once.body.annotations.get(CHUNKABLE) == 1
    assert "vectorized" in _loop_kinds(BindParallel(target=QUIRKED)(once))


def test_only_loops_indexed_by_their_variable_are_chunked():
    # a[i + 1] is not the loop variable: one iteration per invocation, not marked
    once = BindParallel(target=QUIRKED)(shifted)
    assert CHUNKABLE not in once.body.annotations
    assert "vectorized" not in _loop_kinds(_bound(shifted, QUIRKED))
    assert "vectorized" in _loop_kinds(_bound(mixed, QUIRKED))


@pytest.mark.parametrize("func", [vadd, mixed, fixed], ids=lambda f: f.name)
def test_codegen_of_the_chunked_form_passes_spirv_val(func):
    lowered = vkir.lower(BindParallel(target=QUIRKED)(func), QUIRKED)
    assert "vectorized" not in _loop_kinds(lowered) and "unrolled" in _loop_kinds(lowered)
    codegen(lowered, QUIRKED)   # validated by spirv-val in codegen


def _chunked(func, dev):
    """`func` built for `dev` in the chunked form, whatever the driver's quirks."""
    return vkir.build(_bound(func, Target.from_device(dev), elements=16), device=dev)


def test_vadd_is_exact_at_every_size(_vulkan_device):
    k = _chunked(vadd, _vulkan_device)
    plain = vkir.build(vadd, device=_vulkan_device)
    rng = np.random.default_rng(0)
    for n in SIZES:
        a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        for kernel in (k, plain):
            c = np.full(n, np.nan, np.float32)
            kernel(a, b, c)
            np.testing.assert_array_equal(c, a + b, err_msg=f"n={n}")


def test_lets_ifs_and_integer_buffers_match_the_interpreter(_vulkan_device):
    k = _chunked(mixed, _vulkan_device)
    rng = np.random.default_rng(1)
    for n in (1, 17, 1000):
        x = rng.standard_normal(n, dtype=np.float32)
        ki = rng.integers(-5, 5, n).astype(np.int32)
        y = rng.standard_normal(n, dtype=np.float32)
        m = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
        want_y, want_m = y.copy(), m.copy()
        vkir.interpret(mixed, x, ki, want_y, want_m)
        k(x, ki, y, m)
        np.testing.assert_array_equal(y, want_y, err_msg=f"n={n}")
        np.testing.assert_array_equal(m, want_m, err_msg=f"n={n}")


def test_a_constant_size_with_a_tail(_vulkan_device):
    a = np.random.default_rng(2).standard_normal(1003, dtype=np.float32)
    for k in (_chunked(fixed, _vulkan_device), vkir.build(fixed, device=_vulkan_device)):
        c = np.zeros(1003, np.float32)
        k(a, c)
        np.testing.assert_array_equal(c, a * a)
