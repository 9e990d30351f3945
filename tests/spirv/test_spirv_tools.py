"""The in-process SPIRV-Tools binding: validate / disassemble / assemble and error context."""

from __future__ import annotations

import re

import pytest

from vkir import SpirvValidationError
from vkir.spirv import assemble, codegen, disassemble, validate

import spirv_kernels as K

BROKEN = """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
        %int = OpTypeInt 32 1
      %float = OpTypeFloat 32
      %int_1 = OpConstant %int 1
    %float_2 = OpConstant %float 2
       %main = OpFunction %void None %fn
      %entry = OpLabel
       %good = OpIAdd %int %int_1 %int_1
        %bad = OpIAdd %int %int_1 %float_2
               OpReturn
               OpFunctionEnd
"""


def test_validation_error_carries_message_and_disassembly_context():
    words = assemble(BROKEN, "vulkan1.1")
    with pytest.raises(SpirvValidationError) as info:
        validate(words, "vulkan1.1")
    msg = str(info.value)
    assert "vulkan1.1" in msg and "IAdd" in msg
    marked = [line for line in msg.splitlines() if line.startswith("-->")]
    assert len(marked) == 1 and "OpIAdd %int %int_1 %float_2" in marked[0]
    assert "%good = OpIAdd" in msg or "OpIAdd %int %int_1 %int_1" in msg  # lines around it


def test_corrupted_codegen_output_is_reported():
    """A truncated module (no OpReturn/OpFunctionEnd): SpirvValidationError, not a crash."""
    words = bytearray(codegen(K.k_vadd()).words)
    with pytest.raises(SpirvValidationError):
        validate(bytes(words[:-8]), "vulkan1.1")


def test_env_matters():
    mod = codegen(K.k_vadd(), None)
    validate(mod.words, "vulkan1.3")  # 1.3 modules are fine for newer environments
    from vkir.spirv import Target

    newer = codegen(K.k_vadd(), Target.vulkan13())
    with pytest.raises(SpirvValidationError):
        validate(newer.words, "vulkan1.1")  # SPIR-V 1.6 is too new for Vulkan 1.1


def test_unknown_env():
    with pytest.raises(ValueError, match="target environment"):
        validate(codegen(K.k_vadd()).words, "vulkan9.9")


def test_disassemble_and_assemble_round_trip():
    words = codegen(K.k_saxpy()).words
    text = disassemble(words)
    assert "OpEntryPoint GLCompute %saxpy" in text
    again = assemble(text, "vulkan1.1")
    validate(again, "vulkan1.1")
    unnamed = re.compile(r"%\d+")  # the assembler renumbers ids that have no name
    assert (unnamed.sub("%N", disassemble(again, header=False))
            == unnamed.sub("%N", disassemble(words, header=False)))


def test_assemble_error():
    with pytest.raises(SpirvValidationError, match="assemble"):
        assemble("%x = OpNotAnOpcode", "vulkan1.1")
