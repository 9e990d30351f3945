"""The interpreter takes the target's float behaviour as a parameter: `denormals="flush"` computes
what a device that flushes denormals computes, so a check compares like with like."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ArgumentError
from vkir.pytest_plugin import check
from vkir.target import Target

TINY = np.float32(1e-45)   # the smallest float32 denormal


@T.prim_func
def floor_divide(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32"),
                 c: T.Buffer((4,), "float32")):
    for i in T.thread_binding(4, "threadIdx.x"):
        c[i] = T.floordiv(a[i], b[i])


@T.prim_func
def halve(a: T.Buffer((4,), "float32"), c: T.Buffer((4,), "float32"), d: T.Buffer((4,), "int32")):
    for i in T.thread_binding(4, "threadIdx.x"):
        c[i] = a[i] * T.float32(0.5)
        d[i] = T.if_then_else(a[i] > T.float32(0), T.int32(1), T.int32(0))


def run(func, *arrays, **options):
    arrays = [np.array(a, dtype=np.asarray(a).dtype if np.asarray(a).dtype.kind == "i" else np.float32)
              for a in arrays]
    vkir.interpret(func, *arrays, **options)
    return arrays


def test_preserve_is_ieee():
    _, _, c = run(floor_divide, [0.0, 1.0, TINY, -TINY], [TINY, 2.0, 1.0, 1.0], np.zeros(4, np.float32))
    np.testing.assert_array_equal(c, [0.0, 0.0, 0.0, -1.0])


def test_flush_treats_denormal_operands_and_results_as_signed_zeros():
    _, _, c = run(floor_divide, [0.0, 1.0, TINY, -TINY], [TINY, 2.0, 1.0, 1.0],
                  np.zeros(4, np.float32), denormals="flush")
    assert np.isnan(c[0])                       # 0 // 1e-45 is 0 // 0 once 1e-45 is flushed
    np.testing.assert_array_equal(c[1:], [0.0, 0.0, -0.0])
    a = np.array([np.float32(2.0e-38), 1.0, TINY, -TINY], np.float32)
    _, c, d = run(halve, a, np.zeros(4, np.float32), np.zeros(4, np.int32), denormals="flush")
    np.testing.assert_array_equal(c, [0.0, 0.5, 0.0, -0.0])   # 1e-38 is a denormal result
    assert np.signbit(c[3])
    np.testing.assert_array_equal(d, [1, 1, 0, 0])            # a flushed operand compares as 0
    _, c, d = run(halve, a, np.zeros(4, np.float32), np.zeros(4, np.int32))
    assert c[0] == np.float32(1.0e-38) and d[2] == 1


def test_denormals_is_checked():
    with pytest.raises(ArgumentError, match=r"denormals must be one of \('preserve', 'flush'\)"):
        vkir.interpret(halve, np.zeros(4, np.float32), np.zeros(4, np.float32),
                       np.zeros(4, np.int32), denormals="ftz")


def test_target_names_its_behaviour():
    assert Target.lavapipe().denormals == "preserve"
    assert Target.vulkan("vulkan1.3", quirks={"flushes_denormals"}).denormals == "flush"


@pytest.mark.device
def test_check_compares_like_with_like_on_every_driver():
    """On SwiftShader (which flushes) the device gives NaN for 0 // 1e-45, as the interpreter does
    when told the device flushes; on lavapipe both give 0."""
    out, = [c for c in check(floor_divide, np.array([0.0, 1.0, 3.0, -3.0], np.float32),
                             np.array([TINY, 2.0, 2.0, 2.0], np.float32), np.zeros(4, np.float32))][2:]
    flushes = "flushes_denormals" in vkir.device().info.quirks
    assert np.isnan(out[0]) == flushes
    np.testing.assert_array_equal(out[1:], [0.0, 1.0, -2.0])
