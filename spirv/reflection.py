"""Reflection: what a SPIR-V compute module needs from its caller, read from the binary.

`reflect(words, entry="main")` returns a `ShaderInfo`: the entry points, the local size (the
LocalSize or LocalSizeId execution mode, overridden by a constant decorated with the
WorkgroupSize builtin, as glslang emits for `layout(local_size_x_id = 0) in;`), the descriptor
bindings the entry point uses (set, binding, storage or uniform buffer, NonWritable/NonReadable,
the element type and array stride of a trailing runtime array), the images, samplers and
texel buffers (kind, dimensionality, format: image_reflection.py), the push-constant block members
(names from OpMemberName, types, offsets) and the specialization constants (SpecId, name, type,
default). Opcodes and enumerants come from the Khronos grammar (vkir.spirv.khronos_grammar), so nothing
here is a hand-copied table. The module is assumed valid (validate it with SPIRV-Tools first);
what reflection cannot describe raises UnsupportedError. The reflected types live in
reflected_types.py (re-exported here), the parsing of the module in parsed_module.py.
"""

from __future__ import annotations

from ..errors import ArgumentError, UnsupportedError
from .image_reflection import ImageBinding, image_binding
from .khronos_grammar import grammar
from .parsed_module import ParsedModule, enumerant_names, module_words
from .reflected_types import (DescriptorBinding, EntryPoint, ReflectedPushConstant, ShaderInfo,
                              SpecConstant, SpirvMember, SpirvType)

__all__ = ["reflect", "ShaderInfo", "DescriptorBinding", "ImageBinding", "ReflectedPushConstant",
           "SpecConstant", "EntryPoint", "SpirvType", "SpirvMember", "module_words"]


def reflect(data, entry: str = "main", specialization=None) -> ShaderInfo:
    """The ShaderInfo of entry point `entry` (bytes, or a sequence of words); sizes that depend
    on specialization constants use `specialization` ({SpecId: value}) where it names them, else
    the defaults."""
    m = ParsedModule(module_words(data), specialization)
    points = tuple(EntryPoint(name, model) for model, _, name, _ in m.entry_points)
    chosen = [e for e in m.entry_points if e[2] == entry]
    if not chosen:
        found = ", ".join(f"{p.name!r} ({p.execution_model})" for p in points) or "none"
        raise ArgumentError(f"the module has no entry point named {entry!r} (found: {found})")
    model, fid, name, interface = chosen[0]
    local, ids = _local_size(m, fid)
    size_id = any(t == fid and mode == "LocalSizeId" for t, mode, _ in m.mode_ids)
    # what the code uses, and the entry point's inputs and outputs: from SPIR-V 1.4 on the
    # interface also lists every buffer, used or not, and the buffers a call takes must not
    # depend on the module's version
    in_code = _used_ids(m, fid, ())
    io = {vid for vid, _, storage in m.variables if storage in ("Input", "Output")}
    used = in_code | (set(interface) & io)
    bindings, push, push_block, shared, plain_inputs, others = [], [], "", 0, [], []
    workgroup, images = [], []
    for vid, ptype_id, storage in m.variables:
        if vid not in used:
            continue
        ptype = m.type(ptype_id)
        if storage in ("StorageBuffer", "Uniform", "UniformConstant"):
            b = _binding(m, vid, ptype_id, storage)
            if b is not None:
                bindings.append(b)
            elif storage == "UniformConstant":
                image = image_binding(m, vid, ptype_id)
                if image is not None:
                    images.append(image)
                else:
                    others.append(_other_descriptor(m, vid, ptype_id))
        elif storage == "Workgroup":
            shared += ptype.element.size
            workgroup.append(ptype_id)
        elif storage == "Input" and "BuiltIn" not in m.decorations.get(vid, {}) and \
                not _block_of_builtins(m, ptype.element):
            plain_inputs.append(m.names.get(vid, "") or f"%{vid}")
        elif storage == "PushConstant":
            block = ptype.element
            push_block = m.names.get(vid, "") or block.name
            push = [ReflectedPushConstant(mem.name or f"member{i}", mem.type, mem.offset,
                                          mem.type.size)
                    for i, mem in enumerate(block.members)]
    bindings.sort(key=lambda b: (b.set, b.binding))
    specs = {}   # one per SpecId (glslang may emit two constants with the same SpecId)
    for cid, (code, ops) in m.insts.items():
        spec_id = m.decorations.get(cid, {}).get("SpecId")
        if spec_id is None:
            continue
        own = m.names.get(cid, "")
        spec = SpecConstant(spec_id[0], own, m.type(ops[0]), m.constant(cid),
                            tuple(n for n in m.all_names.get(cid, ()) if n != own))
        if spec.id not in specs or (spec.name and not specs[spec.id].name):
            specs[spec.id] = spec
    size = max((p.offset + p.size for p in push), default=0)
    return ShaderInfo(EntryPoint(name, model), points, local, ids, tuple(bindings), tuple(push),
                      size, tuple(specs[i] for i in sorted(specs)), tuple(m.capabilities), tuple(m.extensions), m.version,
                      push_block, size_id, shared, tuple(plain_inputs), tuple(sorted(others)),
                      m, tuple(workgroup),
                      tuple(sorted(images, key=lambda i: (i.set, i.binding))))


_IMAGE_KINDS = {0: "image", 1: "sampled image", 2: "storage image"}


def _other_descriptor(m: ParsedModule, vid: int, ptype_id: int) -> tuple:
    """(set, binding, name, kind) of a descriptor that is not a buffer block: an image, a sampler,
    a combined image sampler, a texel buffer, an acceleration structure, ..."""
    deco = m.decorations.get(vid, {})
    tid = m.insts[ptype_id][1][1]
    code, ops = m.insts.get(tid, (None, ()))
    opname = grammar().opnames.get(code, "")
    while opname in ("OpTypeArray", "OpTypeRuntimeArray"):
        tid = ops[0]
        code, ops = m.insts.get(tid, (None, ()))
        opname = grammar().opnames.get(code, "")
    if opname == "OpTypeImage":
        dim = enumerant_names("Dim").get(ops[1], "")
        kind = _IMAGE_KINDS.get(ops[5], "image")
        if dim == "Buffer":
            kind = "storage texel buffer" if ops[5] == 2 else "uniform texel buffer"
    elif opname == "OpTypeSampledImage":
        kind = "combined image sampler"
    elif opname == "OpTypeSampler":
        kind = "sampler"
    else:
        kind = opname[len("OpType"):].lower() or "descriptor"
    return (deco.get("DescriptorSet", (0,))[0], deco.get("Binding", (0,))[0],
            m.names.get(vid, "") or f"%{vid}", kind)


def _block_of_builtins(m: ParsedModule, t) -> bool:
    """Whether type `t` is a struct whose members are all BuiltIn-decorated (a gl_PerVertex-like
    block), which counts as a built-in input."""
    if getattr(t, "kind", None) != "struct":
        return False
    tid = next((k for k, v in m.types.items() if v is t), None)
    count = len(t.members)
    return tid is not None and count > 0 and all(
        "BuiltIn" in m.member_decorations.get((tid, i), {}) for i in range(count))


def _binding(m: ParsedModule, vid: int, ptype_id: int, storage: str) -> DescriptorBinding | None:
    deco = m.decorations.get(vid, {})
    struct_id = m.insts[ptype_id][1][1]
    block, count = m.type(struct_id), 1
    if block.kind == "array":
        struct_id = m.insts[struct_id][1][0]
        block, count = block.element, block.count
    elif block.kind == "runtime_array":
        raise UnsupportedError(f"binding {m.names.get(vid, vid)!r} is a runtime-sized array of "
                               "descriptors, which vkir cannot bind")
    if block.kind != "struct":
        if storage == "UniformConstant":
            return None  # samplers and images are not buffers (reflected elsewhere, not here)
        raise UnsupportedError(f"binding {m.names.get(vid, vid)!r} is not a block")
    block_deco = m.decorations.get(struct_id, {})
    kind = "uniform" if storage == "Uniform" and "BufferBlock" not in block_deco else "storage"
    members = block.members
    readonly = "NonWritable" in deco or (bool(members) and all(x.readonly for x in members))
    writeonly = "NonReadable" in deco or (bool(members) and all(x.writeonly for x in members))
    element, stride, offset = None, 0, 0
    if members and members[-1].type.kind == "runtime_array":
        last = members[-1]
        element, stride, offset = last.type.element, last.type.stride, last.offset
    name = m.names.get(vid, "") or block.name
    return DescriptorBinding(deco.get("DescriptorSet", (0,))[0], deco.get("Binding", (0,))[0], kind, name,
                   block, readonly, writeonly, element, stride,
                   offset, count)


def _local_size(m: ParsedModule, fid: int) -> tuple[tuple, tuple]:
    """(local size with defaults, SpecId per axis or None) for the entry function `fid`."""
    size, ids = (1, 1, 1), (None, None, None)
    for target, mode, lits in m.modes:
        if target == fid and mode == "LocalSize":
            size = tuple(int(v) for v in lits[:3])
    for target, mode, operands in m.mode_ids:
        if target == fid and mode == "LocalSizeId":
            size, ids = _composite_axes(m, operands[:3])
    for cid, deco in m.decorations.items():
        if deco.get("BuiltIn", (None,))[0] == grammar().enum("BuiltIn", "WorkgroupSize") \
                and cid in m.insts:
            code, ops = m.insts[cid]
            size, ids = _composite_axes(m, ops[1:4])
    return size, ids


def _composite_axes(m: ParsedModule, ids) -> tuple[tuple, tuple]:
    values, spec_ids = [], []
    for cid in ids:
        values.append(int(m.constant(cid)))
        code, _ = m.insts[cid]
        spec = m.decorations.get(cid, {}).get("SpecId")
        spec_ids.append(spec[0] if spec and grammar().opnames[code].startswith("OpSpec") else None)
    return tuple(values), tuple(spec_ids)


def _used_ids(m: ParsedModule, fid: int, interface: tuple) -> set:
    """Ids the entry point may use: its interface plus every id named in the functions it
    reaches (a word of an instruction that equals an id counts; over-approximating is safe)."""
    used = set(interface)
    seen, todo = set(), [fid]
    while todo:
        f = todo.pop()
        if f in seen or f not in m.functions:
            continue
        seen.add(f)
        body = m.functions[f]
        used |= body
        todo.extend(x for x in body if x in m.functions)
    return used
