"""The parameters of an imported TVM kernel, settled once its body is read (vkir.tvm.importer):
sizes TVM left free in a kernel made one per buffer (`unshared_sizes`), and the lowered
kernel's flat buffers given the shapes and order of the function the user wrote
(`user_signature`)."""

from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.functor import Mutator
from ..ir.traversal import walk


def unshared_sizes(params, buffer_map: dict, body, declared) -> tuple:
    """`buffer_map` (and `body`) with the sizes that TVM left free in the kernel made one per
    buffer: a size Var declared in a buffer parameter's shape (`cse_v1`, `s27 * 96`) but
    neither a parameter nor used by the body or another buffer. TVM's memory planner pools
    allocations and rounds them up, so buffers TVM declares with one such size arrive with
    different sizes, and a size like `s27 * 96` names no value the kernel could be given;
    the kernel never reads it, so each such dimension becomes a size of its own buffer."""
    used = {v for v in walk(body) if isinstance(v, E.Var)} | set(params)
    params_of = {id(b) for b in buffer_map.values()}
    for buf in declared:
        if id(buf) not in params_of:
            for e in (*buf.shape, *buf.strides, buf.elem_offset):
                used |= {v for v in walk(e) if isinstance(v, E.Var)}
    for buf in buffer_map.values():
        for e in (*buf.strides, buf.elem_offset):
            used |= {v for v in walk(e) if isinstance(v, E.Var)}
    owners: dict = {}
    for buf in buffer_map.values():
        for d in buf.shape:
            if isinstance(d, E.Var):
                owners[d] = owners.get(d, 0) + 1
    renamed: dict = {}   # id of a buffer -> the buffer with sizes of its own
    for buf in buffer_map.values():
        shape = []
        for k, d in enumerate(buf.shape):
            free = [v for v in walk(d) if isinstance(v, E.Var) and v not in used]
            if free and not (isinstance(d, E.Var) and owners[d] == 1):
                d = E.Var(f"{buf.name}_{d.name if isinstance(d, E.Var) else k}", d.dtype)
            shape.append(d)
        if any(a is not b for a, b in zip(shape, buf.shape)):
            renamed[id(buf)] = Buffer(buf.name, buf.data, buf.dtype, tuple(shape),
                                      buf.strides, buf.elem_offset, buf.scope)
    if not renamed:
        return buffer_map, body
    out = {data: renamed.get(id(buf), buf) for data, buf in buffer_map.items()}
    return out, _BufferSwap(renamed).visit(body)


def user_signature(signature, params, buffer_map: dict, body) -> tuple:
    """(params, body) with the parameters in the order of the user's function (`signature`,
    from vkir.tvm.importer.signature), and each flattened buffer parameter in the user's shape
    again, its symbolic sizes named as the user named them (the flat view becomes an explicit
    DeclBuffer; a scalar parameter TVM made for the flat size, e.g. `cse_v1`, is bound to the
    product of the user's dimensions), so that the kernel takes the arrays the TVM function
    took."""
    if not signature:
        return params, body
    index = {name: k for k, (name, _, _) in enumerate(signature)}

    def user_name(p):
        name = buffer_map[p].name if p in buffer_map else p.name
        return name if name in index else name.removesuffix("_ptr")

    params = sorted(params, key=lambda p: index.get(user_name(p), len(index)))
    scalars = {p.name: p for p in params if p not in buffer_map}
    sizes: dict = {}      # the user's size name -> its vkir Var
    bound: dict = {}      # a flat-size scalar parameter -> the product it stands for
    for p in params:
        buf = buffer_map.get(p)
        if buf is None or user_name(p) not in index:
            continue
        _, shape, dtype = signature[index[user_name(p)]]
        if dtype != buf.dtype or buf.strides or len(buf.shape) != 1 or None in shape:
            continue
        flat = buf.shape[0]
        if isinstance(flat, E.IntImm):
            if len(shape) == 1 or _static_size(shape) != flat.value:
                continue
            user_shape = shape
        else:
            user_shape = tuple(d if isinstance(d, int) else
                               sizes.setdefault(d, scalars.get(d, E.Var(d, flat.dtype)))
                               for d in shape)
            if tuple(user_shape) == (flat,):
                continue   # already the user's
            product = _product(user_shape, flat.dtype)
            index_type = next((d.dtype for d in user_shape if isinstance(d, E.Var)),
                              flat.dtype)   # constant dimensions typed like the sizes
            user_shape = tuple(E.IntImm(index_type, d) if isinstance(d, int) else d
                               for d in user_shape)
            if isinstance(flat, E.Var) and flat.name in scalars and flat.name not in sizes:
                # TVM's name for the flat size (cse_v1): bound to the product
                if not _same(bound.setdefault(flat, product), product):
                    continue   # one flat size, two user shapes: keep the flat view
            elif not _same(flat, product):   # e.g. n * 128, over the user's sizes
                continue
        user = Buffer(user_name(p), p, buf.dtype, user_shape, scope=buf.scope)
        body = S.DeclBuffer(buf, body)
        buffer_map[p] = user
    for flat, product in bound.items():
        body = S.LetStmt(flat, product, body)
        params = [p for p in params if p is not flat]
    return params, body


class _BufferSwap(Mutator):
    """A statement with the buffers of `renamed` (id -> new buffer) replaced."""

    def __init__(self, renamed: dict):
        self.renamed = renamed

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return self.renamed.get(id(buffer), buffer)


def _same(a, b) -> bool:
    from ..ir.structural import structural_equal

    return a is b or structural_equal(a, b)


def _product(shape, dtype) -> E.PrimExpr:
    """The product of the dimensions `shape` (ints and Vars) in `dtype`."""
    out = None
    for d in shape:
        if isinstance(d, int):
            d = E.IntImm(dtype, d)
        elif d.dtype != dtype:
            d = E.Cast(dtype, d)
        out = d if out is None else E.Mul(out, d)
    return out


def _static_size(shape) -> int | None:
    size = 1
    for d in shape:
        if not isinstance(d, (int, E.IntImm)):
            return None
        size *= d if isinstance(d, int) else d.value
    return size
