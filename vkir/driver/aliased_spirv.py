"""The variant of a SPIR-V module that runs when one memory is bound to several of its buffers.

SPIR-V lets a driver assume that buffer variables without the Aliased decoration never overlap
(Mesa, lavapipe's compiler, takes them as restrict), so a dispatch whose written buffer shares
memory with another binding (vkir.aliasing) must run code that assumes nothing of the kind:
`aliased(words)` is the module with every descriptor-bound variable decorated Aliased (a Restrict
decoration on one is dropped: the two exclude each other), and without NonWritable and
NonReadable decorations on block members: they say that the MODULE does not write (read) the
memory, which no longer holds when another binding writes it (NVIDIA reads NonWritable buffers
through a cache that does not see the invocation's own writes through the other name). The
result is validated before use.
"""

from __future__ import annotations

import numpy as np

_MAGIC = 0x07230203
_OP_DECORATE, _OP_MEMBER_DECORATE = 71, 72
_RESTRICT, _ALIASED, _NON_WRITABLE, _NON_READABLE, _BINDING = 19, 20, 24, 25, 33


def aliased(words: bytes, env: str) -> bytes:
    """`words` (a SPIR-V module) with every variable that has a Binding decorated Aliased and
    no NonWritable or NonReadable member decorations, validated for `env`."""
    from ..spirv import validate

    code = np.frombuffer(words, "<u4")
    if code[0] != _MAGIC:        # a big-endian module
        code = np.frombuffer(words, ">u4")
    assert code[0] == _MAGIC, "not a SPIR-V module"
    instructions = []
    pos = 5
    while pos < len(code):
        count = int(code[pos]) >> 16
        assert count > 0 and pos + count <= len(code), "truncated SPIR-V instruction"
        instructions.append([int(w) for w in code[pos:pos + count]])
        pos += count
    bound, already = set(), set()
    for ins in instructions:
        if ins[0] & 0xFFFF == _OP_DECORATE and len(ins) >= 3:
            if ins[2] == _BINDING:
                bound.add(ins[1])
            elif ins[2] == _ALIASED:
                already.add(ins[1])
    out = [int(w) for w in code[:5]]
    for ins in instructions:
        decorate = ins[0] & 0xFFFF == _OP_DECORATE and len(ins) >= 3 and ins[1] in bound
        if decorate and ins[2] in (_RESTRICT, _NON_WRITABLE, _NON_READABLE):
            continue
        if ins[0] & 0xFFFF == _OP_MEMBER_DECORATE and len(ins) >= 4 \
                and ins[3] in (_NON_WRITABLE, _NON_READABLE):
            continue
        out.extend(ins)
        if decorate and ins[2] == _BINDING and ins[1] not in already:
            out.extend(((3 << 16) | _OP_DECORATE, ins[1], _ALIASED))
    result = np.array(out, "<u4").tobytes()
    validate(result, env)
    return result
