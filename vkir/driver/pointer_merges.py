"""Existing shaders whose buffer_reference pointers a driver's compiler cannot take, refused
before the driver sees them (the "buffer_reference_merge_crash" quirk, vkir.quirks).

SwiftShader's compiler crashes the process (SIGSEGV in vkCreateComputePipelines) on a
PhysicalStorageBuffer pointer that takes different values on different control-flow paths: an
OpPhi of such a pointer, or a Function variable holding one that is stored in more than one
block (`Node n = head; if (c) n = n.next;`, a linked-list walk `while (...) n = n.next;`), which
its own optimizer turns into such a phi. A pointer stored in one block only, or an address
carried as a uvec2 (GL_EXT_buffer_reference_uvec2) and made a pointer where it is used, compile
fine. The scan reads the words once, with opcodes and enumerants from the Khronos grammar.
"""

from __future__ import annotations

from ..errors import UnsupportedError
from ..quirks import BUFFER_REFERENCE_MERGE_CRASH

__all__ = ["check_pointer_merges"]


def check_pointer_merges(words: tuple, capabilities, quirks, names: dict, name: str,
                         device: str) -> None:
    """UnsupportedError where module `words` (its capabilities given) merges buffer_reference
    pointers across control flow on a device with the crash quirk (`quirks`); `names` maps ids
    to OpNames for the message, `name` and `device` name the shader and the device."""
    if BUFFER_REFERENCE_MERGE_CRASH not in quirks or \
            "PhysicalStorageBufferAddresses" not in capabilities:
        return
    what = _merged_pointer(words)
    if what is None:
        return
    shown = names.get(what, "") or f"%{what}"
    raise UnsupportedError(
        f"{name}: the buffer_reference pointer {shown!r} takes different values on different "
        f"control-flow paths (assigned in a branch or a loop), which crashes the compiler of "
        f"{device!r}; keep the address as a uvec2 (GL_EXT_buffer_reference_uvec2) and make the "
        "pointer where it is used, or run on another device")


def _merged_pointer(words: tuple) -> int | None:
    """The id of the first OpPhi of a PhysicalStorageBuffer pointer, or of a Function variable
    holding one that is stored in two or more blocks; None when there is none."""
    from ..spirv.khronos_grammar import grammar

    g = grammar()
    op = {n: g.opcode(n) for n in ("OpTypePointer", "OpVariable", "OpStore", "OpLabel", "OpPhi",
                                   "OpTypeForwardPointer")}
    psb = g.enum("StorageClass", "PhysicalStorageBuffer")
    function = g.enum("StorageClass", "Function")
    addresses, holders, stores = set(), {}, {}
    block, i = None, 5
    while i < len(words):
        count, code = words[i] >> 16, words[i] & 0xFFFF
        ops = words[i + 1:i + count]
        if count == 0:
            break
        if code == op["OpTypePointer"]:
            if ops[1] == psb:
                addresses.add(ops[0])
            elif ops[1] == function and ops[2] in addresses:
                holders[ops[0]] = True
        elif code == op["OpTypeForwardPointer"] and ops[1] == psb:
            addresses.add(ops[0])
        elif code == op["OpVariable"] and ops[0] in holders and ops[2] == function:
            stores[ops[1]] = set()
        elif code == op["OpLabel"]:
            block = ops[0]
        elif code == op["OpPhi"] and ops[0] in addresses:
            return ops[1]
        elif code == op["OpStore"] and ops[0] in stores:
            stores[ops[0]].add(block)
            if len(stores[ops[0]]) > 1:
                return ops[0]
        i += count
    return None
