"""Hostile inputs end in a VkirError (or a defined result), never in a UnicodeDecodeError,
OverflowError or MemoryError from deep inside."""

import numpy as np
import pytest

import vkir
from vkir.errors import ArgumentError
from vkir.interpreter import OutOfBoundsError
from vkir.spirv import assemble, disassemble


def module_with_name(raw_name: bytes) -> bytes:
    words = bytearray(assemble("""
OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 1 1 1
OpName %main "abcd"
%void = OpTypeVoid
%fn = OpTypeFunction %void
%main = OpFunction %void None %fn
%l = OpLabel
OpReturn
OpFunctionEnd
"""))
    at = words.find(b"abcd")
    words[at:at + 4] = raw_name
    return bytes(words)


@pytest.mark.device
def test_a_non_utf8_name_is_shown_escaped():
    data = module_with_name(b"\xff\xfe\xfd\xfc")
    assert "\\xff\\xfe\\xfd\\xfc" in disassemble(data)
    k = vkir.load_spirv(data)
    assert "\\xff" in k.asm
    k(grid=(1, 1, 1))


MULTIPLY = """
@T.prim_func
def f(a: T.Buffer((4,), "float32"), s: T.float32):
    for i in T.serial(4):
        a[i] = a[i] * s * 1e308
"""


@pytest.mark.device
def test_a_literal_too_large_for_its_type_is_a_signed_infinity_everywhere():
    f = vkir.from_script(MULTIPLY)
    x = np.array([1, -1, 0.5, 2], np.float32)
    want = x.copy()
    vkir.interpret(f, want, 1.0)
    got = x.copy()
    vkir.build(f)(got, 1.0)
    np.testing.assert_array_equal(want, [np.inf, -np.inf, np.inf, np.inf])
    np.testing.assert_array_equal(got, want)


@pytest.mark.device
def test_a_huge_python_int_for_a_float_scalar_is_an_argument_error():
    f = vkir.from_script(MULTIPLY)
    with pytest.raises(ArgumentError, match="out of range for float32"):
        vkir.build(f)(np.ones(4, np.float32), 10 ** 400)
    with pytest.raises(ArgumentError, match="out of range for float32"):
        vkir.interpret(f, np.ones(4, np.float32), 10 ** 400)


def test_a_huge_serial_loop_is_interpreted_lazily():
    f = vkir.from_script("""
@T.prim_func
def f(a: T.Buffer((4,), "int32")):
    for i in T.serial(2147483647):
        a[i] = i
""")
    a = np.zeros(4, np.int32)
    with pytest.raises(OutOfBoundsError, match="index 4"):   # not MemoryError first
        vkir.interpret(f, a)
    np.testing.assert_array_equal(a, [0, 1, 2, 3])
