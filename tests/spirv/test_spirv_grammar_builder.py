"""The grammar tables come from the Khronos JSON; the builder deduplicates and derives
capabilities/extensions from the grammar."""

from __future__ import annotations

import runpy
import struct

from vkir.spirv import assemble, disassemble, validate
from vkir.spirv.builder import ModuleBuilder
from vkir.spirv.khronos_grammar import cmeel_prefix, grammar


def _spv_header_tables():
    """The generated spirv.py header shipped next to the grammar (an independent source)."""
    path = cmeel_prefix() / "include" / "spirv" / "unified1" / "spirv.py"
    return runpy.run_path(str(path))["spv"]


def test_grammar_matches_generated_header():
    g = grammar()
    spv = _spv_header_tables()
    for name, value in spv["Op"].items():
        assert g.opcode(name) == value, name
    for kind in ("Capability", "Decoration", "StorageClass", "BuiltIn", "ExecutionMode", "Scope"):
        for name, value in spv[kind].items():
            assert g.enum(kind, name) == value, (kind, name)
    assert g.magic == spv["MagicNumber"]


def test_grammar_bit_enums_and_glsl():
    g = grammar()
    spv = _spv_header_tables()
    sem = spv["MemorySemanticsMask"]
    assert g.bits("MemorySemantics", "AcquireRelease", "WorkgroupMemory") == (
        sem["AcquireRelease"] | sem["WorkgroupMemory"])
    assert g.glsl["Exp"] != g.glsl["Log"] and g.glsl["InverseSqrt"] > 0
    assert g.enumerant("Capability", "StorageBuffer8BitAccess").extensions == (
        "SPV_KHR_8bit_storage",)


def test_types_and_constants_are_deduplicated():
    b = ModuleBuilder((1, 3))
    f32 = b.type_float(32)
    assert b.type_float(32) == f32
    assert b.type_vector(f32, 4) == b.type_vector(f32, 4)
    assert b.type_pointer("StorageBuffer", f32) == b.type_pointer("StorageBuffer", f32)
    assert b.type_pointer("Function", f32) != b.type_pointer("StorageBuffer", f32)
    i32 = b.type_int(32, True)
    assert b.constant(i32, "int", 32, 7) == b.constant(i32, "int", 32, 7)
    assert b.constant(f32, "float", 32, 1.0) != b.constant(i32, "int", 32, 1)
    assert b.constant_bool(True) == b.constant_bool(True) != b.constant_bool(False)
    assert b.type_struct(f32) != b.type_struct(f32)  # structs carry their own decorations


def test_capabilities_and_extensions_follow_version():
    old = ModuleBuilder((1, 3))
    old.capability("StorageBuffer8BitAccess")
    old.capability("StorageBuffer16BitAccess")
    assert list(old.extensions) == ["SPV_KHR_8bit_storage"]  # 16-bit storage is core in 1.3
    new = ModuleBuilder((1, 5))
    new.capability("StorageBuffer8BitAccess")
    assert not new.extensions
    b = ModuleBuilder((1, 3))
    b.type_int(8, True), b.type_float(16), b.type_int(64, False)
    assert list(b.capabilities) == ["Shader", "Int8", "Float16", "Int64"]


def test_narrow_signed_constants_are_sign_extended():
    b = ModuleBuilder((1, 3))
    i8 = b.type_int(8, True)
    b.constant(i8, "int", 8, -1)
    u8 = b.type_int(8, False)
    b.constant(u8, "uint", 8, 255)
    i64 = b.type_int(64, True)
    b.constant(i64, "int", 64, -(1 << 40))
    words = struct.unpack(f"<{len(b.globals)}I", struct.pack(f"<{len(b.globals)}I", *b.globals))
    assert 0xFFFFFFFF in words and 255 in words


def test_minimal_module_validates():
    b = ModuleBuilder((1, 3))
    void = b.type_void()
    main, label = b.new_id(), b.new_id()
    b.encode(b.functions, "OpFunction", void, main, 0, b.type_function(void))
    b.encode(b.functions, "OpLabel", label)
    b.encode(b.functions, "OpReturn")
    b.encode(b.functions, "OpFunctionEnd")
    b.encode(b.entry_points, "OpEntryPoint", b.enum("ExecutionModel", "GLCompute"), main, "k")
    b.encode(b.exec_modes, "OpExecutionMode", main, b.enum("ExecutionMode", "LocalSize"), 1, 1, 1)
    b.name(main, "k")
    b.name(main, "ignored")  # one name per id
    words = b.to_bytes()
    validate(words, "vulkan1.1")
    text = disassemble(words)
    assert '%k = OpFunction' in text and "ignored" not in text
    again = assemble(text, "vulkan1.1")
    validate(again, "vulkan1.1")
    assert len(again) == len(words)  # same instructions (the assembler renumbers ids)
