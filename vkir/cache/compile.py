"""The on-disk compile cache of `vkir.build`: a new process builds a kernel it has built before
without lowering, code generation or SPIRV-Tools.

An entry is keyed by a hash of what determines the result: the user's PrimFunc (its script
text), the build options, the Target (`Target.key()`) and the compiler itself (vkir's version and
the size and modification time of every source file of the installed package, so an edited
compiler never serves stale code). It stores the validated SPIR-V words (with their SHA-256) and
the dispatch description a Kernel needs (bindings, push constants, grid and workgroup size), its
expressions written in terms of the user's own symbolic sizes and scalar parameters, one
SHA-256 digest over the whole entry, and the entry's seal (vkir.store.mac: an HMAC of its name
and digest under a per-user key kept apart from the cache, so an entry planted or copied from
another key does not verify). A load verifies everything it reads: the format version, the key,
the digest (which covers the words' SHA-256) and the seal. The words were validated by SPIRV-Tools
before the entry was sealed, and the key covers the validator's version with the compiler's, so
a verified entry holds exactly words that passed validation: a hit does not load SPIRV-Tools
again (that alone cost a second process some 80 ms, most of a hit). The entry also holds the lowered
function (vkir.cache.ir_codec), decoded on first access of `Compiled.ir`: a hit never lowers, not
for `Kernel.ir`, nor for the loop facts and split variants a call on a driver with a loop limit
needs (vkir.driver.loop_budget). Only a function the encoding cannot express is left out of its
entry, and lowered again on first access.

Entries live in `$VKIR_CACHE_DIR/kernels` (default: the platform's user cache directory;
"" or "0" turns the cache off), read and written through vkir.store: a folder another user could
write to is not used, writes are atomic (a temporary file in the same directory, then
os.replace), so concurrent processes see a whole entry or none, and the cache root has a size
cap; an entry that cannot be read, parsed or verified is ignored and rebuilt (and overwritten),
never an error.
"""

from __future__ import annotations

import binascii
import contextlib
import contextvars
import functools
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import store as disk
from . import ir_codec
from .root import cache_root
from ..abi import Binding, ImageParam, PushConstant, SpirvModule
from ..ir import (
    Add, Buffer, Call, Cast, DataType, FloorDiv, FloorMod, IntImm, Max, Min, Mul, PrimFunc, Sub, Var,
)

FORMAT = 7   # version of the entry layout: an entry of another format is a miss

_OPS = {"add": Add, "sub": Sub, "mul": Mul, "floordiv": FloorDiv, "floormod": FloorMod,
        "min": Min, "max": Max}
_NAMES = {cls: name for name, cls in _OPS.items()}
# integer intrinsics a dispatch expression may hold (TVM's ceil-divisions by a power of two
# arrive as shifts: a grid of (n + 63) >> 6 workgroups)
_CALLS = frozenset({"shift_right", "shift_left", "bitwise_and", "bitwise_or"})


def cache_dir() -> Path | None:
    """The directory of compiled kernels: $VKIR_CACHE_DIR/kernels, else the platform's user
    cache directory for vkir; None (no disk cache) when VKIR_CACHE_DIR is "" or "0"."""
    root = cache_root()
    return None if root is None else root / "kernels"


@functools.cache
@functools.cache
def _validator_version() -> str:
    """The SPIRV-Tools library that validates modules, by path, size and modification time
    (entries validated by another library are other entries)."""
    from ..spirv.khronos_grammar import spirv_tools_library

    library = spirv_tools_library()
    st = library.stat()
    return f"{library}:{st.st_size}:{st.st_mtime_ns}"


def compiler_fingerprint() -> str:
    """A hash of vkir's version, the validator's and every source file of the installed compiler
    (path, size, modification time): it changes whenever the code that produced or validated an
    entry may have."""
    import importlib.util

    from .. import __version__

    h = hashlib.sha256(f"vkir {__version__} format {FORMAT} spirv-tools "
                       f"{_validator_version()}".encode())
    folders = [root for package in ("vkir", "vkir.spirv")
               for root in importlib.util.find_spec(package).submodule_search_locations or ()]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name.endswith(".py"):
                    st = entry.stat()
                    h.update(f"{entry.path}:{st.st_size}:{st.st_mtime_ns}\n".encode())
                elif entry.is_dir() and entry.name != "__pycache__":
                    folders.append(entry.path)
    return h.hexdigest()


def cache_key(func: PrimFunc, target, options: dict) -> str:
    """The entry name of `func` built for `target` with `options` (sorted name -> value)."""
    return _key(compiler_fingerprint(), func, target, options)


def job_key(func: PrimFunc, target, options: dict) -> str:
    """The name of an entry built for another process (`entry`, `prebuilt`): what it compiles
    and the vkir release and entry format that compiled it, not which install (the job's
    processes may run from other folders). A process of another release misses and compiles
    the kernel itself: the entry's SPIR-V follows its compiler's conventions."""
    from .. import __version__

    return _key(f"job {__version__} format {FORMAT}", func, target, options)


def _key(compiler: str, func: PrimFunc, target, options: dict) -> str:
    text = "\n".join([compiler, target.key(), repr(sorted(options.items())), func.script()])
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Compiled:
    """A kernel compiled for Vulkan: its SpirvModule, the map from the lowered function's Vars to
    the user's (`aliases`, empty when loaded from the cache: the module names the user's Vars),
    whether it came from the disk cache, and the lowered IR (on a hit, decoded from the entry on
    first access; `lower` gives it)."""

    module: SpirvModule
    aliases: dict
    cached: bool
    lower: object = field(repr=False)   # () -> the lowered PrimFunc
    _ir: PrimFunc | None = field(default=None, repr=False)
    prebuilt: bool = False   # taken from an entry built elsewhere (`prebuilt`), not this process
    encoded_ir: dict | None = field(default=None, repr=False)   # a hit's stored IR, as stored

    @property
    def ir(self) -> PrimFunc:
        """The lowered PrimFunc."""
        if self._ir is None:
            self._ir = self.lower()
        return self._ir


def compile_vulkan(func: PrimFunc, target, *, pointer_casts: bool = False,
                   lower=None) -> Compiled:
    """`func` lowered and compiled to validated SPIR-V for `target`, through the disk cache.
    `lower()` gives the lowered function (default: vkir.lowering.lower with these options); it
    runs on a miss only, or on a hit whose entry could not hold the lowered function."""
    options = {"pointer_casts": bool(pointer_casts)}

    if lower is None:
        def lower():
            from ..lowering import lower as lower_

            return lower_(func, target, pointer_casts=pointer_casts)

    given = _PREBUILT.get()
    if given:
        name = job_key(func, target, options)
        got = _given(given.get(name), name, func, target.env)
        if got is not None:
            module, stored_ir = got
            return Compiled(module, {}, True, _stored(stored_ir, func, lower), prebuilt=True,
                            encoded_ir=stored_ir)
    directory = cache_dir()
    key = cache_key(func, target, options) if directory is not None else None
    if key is not None:
        got = load(directory / f"{key}.json", key, func)
        if got is not None:
            module, stored_ir = got
            return Compiled(module, {}, True, _stored(stored_ir, func, lower),
                            encoded_ir=stored_ir)
    from ..spirv import codegen

    ir = lower()
    # codegen validates every module with SPIRV-Tools before returning it (its contract)
    module = codegen(ir, target)
    aliases = _aliases(func, ir)
    if key is not None:
        store(directory / f"{key}.json", key, func, module, aliases, ir)
    return Compiled(module, aliases, False, lower, ir)


# entries built by another process for this one (a fleet job's kernels, built where the job
# started): key -> entry, set for the extent of a `prebuilt` block
_PREBUILT: contextvars.ContextVar = contextvars.ContextVar("vkir_prebuilt_kernels", default=None)


def entry(func: PrimFunc, target, *, pointer_casts: bool = False) -> tuple | None:
    """(key, entry) of `func` compiled for `target` here, in the disk cache's format: what a
    process elsewhere (which may not share this one's compiler install or cache key) builds
    from inside a `prebuilt` block without lowering or code generation. None where the module
    cannot be written as an entry (that process then compiles it itself)."""
    compiled = compile_vulkan(func, target, pointer_casts=pointer_casts)
    key = job_key(func, target, {"pointer_casts": bool(pointer_casts)})
    try:
        return key, _record(key, func, compiled.module, compiled.aliases, compiled.ir)
    except _NotStorable:
        return None


def recorded(func: PrimFunc, target, compiled: Compiled, *,
             pointer_casts: bool = False) -> tuple | None:
    """(key, entry) as `entry` gives them, of a kernel this process already compiled:
    `compiled` is what `compile_vulkan(func, target, pointer_casts=...)` returned. Nothing is
    lowered or compiled again: the entry holds the lowered function where `compiled` has it at
    hand (built here, or stored in the cache entry it came from), else none (a process building
    from the entry lowers on first access of `Kernel.ir`, as for any entry without it)."""
    key = job_key(func, target, {"pointer_casts": bool(pointer_casts)})
    try:
        return key, _record(key, func, compiled.module, compiled.aliases, compiled._ir,
                            encoded=compiled.encoded_ir if compiled._ir is None else None)
    except _NotStorable:
        return None


@contextlib.contextmanager
def prebuilt(entries: dict):
    """Within the block, `compile_vulkan` takes a kernel whose key is in `entries` (key -> entry,
    from `entry` in another process) from there. The entries' digests and checksums are verified;
    their seal is not (it is the other process's user key): pass only entries from a trusted
    channel, such as the job that asked for the kernels, whose own codegen validated them."""
    token = _PREBUILT.set(dict(entries))
    try:
        yield
    finally:
        _PREBUILT.reset(token)


def _given(rec, name: str, func: PrimFunc, env: str) -> tuple | None:
    """(module, encoded IR) of the prebuilt entry `rec` for `func`, or None (a miss: the kernel
    is compiled here) where there is none or it does not verify: another key, format or
    function, edited or corrupted, or SPIR-V that does not validate for `env`. An entry that does
    not fit never becomes a kernel."""
    if rec is None:
        return None
    try:
        got = _module(rec, name, func, sealed=False)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, binascii.Error) as exc:
        _log().warning("compile cache: ignoring a prebuilt entry for %s: %s", func.name, exc)
        return None
    # the entry is not sealed by this user's key (it came from another process, or from a file
    # such as an exported TVM library): its words are validated here before any driver sees them
    from ..spirv.tools import diagnose

    problem = diagnose(got[0].words, env)
    if problem is not None:
        _log().warning("compile cache: ignoring a prebuilt entry for %s: SPIR-V does not "
                       "validate: %s", func.name, problem.report())
        return None
    return got


def _stored(data, func: PrimFunc, lower):
    """() -> the lowered function: decoded from an entry's `data`, or `lower()` where the entry
    holds none (an entry that verified holds what ir_codec wrote: decoding cannot fail on it)."""
    if data is None:
        return lower
    return lambda: ir_codec.decode(data, func)


def _aliases(func: PrimFunc, lowered: PrimFunc) -> dict:
    """Lowered-function Vars that stand for a different Var of the user's function: parameters
    by position (and the high words of emulated 64-bit scalars by name), symbolic sizes by
    name."""
    out = {}
    for orig, low in zip(func.params, lowered.params):
        if orig is not low:
            out[low] = orig
    # EmulateInt64 (devices without int64) appends each 64-bit scalar's high word as a
    # parameter of the same name: it stands for that scalar too
    scalars = {p.name: p for p in func.params if p not in func.buffer_map}
    for low in lowered.params[len(func.params):]:
        if low.name in scalars:
            out[low] = scalars[low.name]
    sizes = {v.name: v for v in func.size_vars}
    for v in lowered.size_vars:
        if v.name in sizes and sizes[v.name] is not v:
            out[v] = sizes[v.name]
    return out


def _log():
    """The cache's logger (logging is imported only when something goes wrong)."""
    import logging

    return logging.getLogger("vkir.cache.compile")


# -- entries -------------------------------------------------------------------------------------
class _NotStorable(Exception):
    """The module names something the entry format cannot express: it is simply not cached."""


def _names(func: PrimFunc) -> dict:
    """The user's Vars an entry may refer to, by name: symbolic sizes and scalar parameters."""
    out = {}
    for v in (*func.size_vars, *(p for p in func.params if p not in func.buffer_map)):
        if out.setdefault(v.name, v) is not v:
            raise _NotStorable(f"two variables named {v.name!r}")
    return out


def _dump_expr(e, aliases: dict, names: dict):
    t = type(e)
    if t is IntImm:
        return ["int", str(e.dtype), e.value]
    if t is Var:
        v = aliases.get(e, e)
        if names.get(v.name) is not v:
            raise _NotStorable(f"variable {v.name!r} is not a size or scalar parameter")
        return ["var", v.name, str(v.dtype)]
    if t is Cast:
        return ["cast", str(e.dtype), _dump_expr(e.value, aliases, names)]
    if t in _NAMES:
        return [_NAMES[t], _dump_expr(e.a, aliases, names), _dump_expr(e.b, aliases, names)]
    if t is Call and e.op in _CALLS:
        return ["call", e.op, str(e.dtype), [_dump_expr(a, aliases, names) for a in e.args]]
    raise _NotStorable(f"expression {t.__name__}")


def _load_expr(d, names: dict):
    tag = d[0]
    if tag == "int":
        return IntImm(DataType.parse(d[1]), int(d[2]))
    if tag == "var":
        v = names[d[1]]
        if str(v.dtype) != d[2]:
            raise ValueError(f"variable {d[1]} changed type")
        return v
    if tag == "cast":
        return Cast(DataType.parse(d[1]), _load_expr(d[2], names))
    if tag == "call":
        if d[1] not in _CALLS:
            raise ValueError(f"intrinsic {d[1]!r} in a dispatch expression")
        return Call(DataType.parse(d[2]), d[1], tuple(_load_expr(a, names) for a in d[3]))
    return _OPS[tag](_load_expr(d[1], names), _load_expr(d[2], names))


def _record(key: str, func: PrimFunc, module: SpirvModule, aliases: dict, ir=None,
            encoded: dict | None = None) -> dict:
    """The entry of `module` (`func` compiled) under `key`, with the lowered function `ir`
    encoded, or `encoded`, an encoding read back from another entry of the same function."""
    names = _names(func)
    bindings = []
    for b in module.bindings:
        bindings.append({"binding": b.binding, "param": b.param_index, "readable": b.readable,
                         "writable": b.writable, "name": b.buffer.name,
                         "dtype": str(b.buffer.dtype), "scope": b.buffer.scope,
                         "shape": [_dump_expr(s, aliases, names) for s in b.buffer.shape],
                         "texel": b.texel})
    rec = {
        "format": FORMAT, "key": key, "entry_point": module.entry_point,
        "words": binascii.b2a_base64(module.words, newline=False).decode(),
        "sha256": hashlib.sha256(module.words).hexdigest(),
        "local_size": list(module.local_size),
        "grid": [_dump_expr(g, aliases, names) for g in module.grid],
        "bindings": bindings,
        "push_constants": [{"var": _dump_expr(pc.var, aliases, names), "offset": pc.offset,
                            "dtype": str(pc.dtype)} for pc in module.push_constants],
        "push_constant_size": module.push_constant_size,
        "shared_memory_bytes": module.shared_memory_bytes,
        "required_features": sorted(module.required_features),
        "folds_grid": bool(module.folds_grid),
        "images": [_dump_image(im) for im in module.images],
        "ir": encoded if encoded is not None else _stored_ir(ir, func, aliases),
    }
    rec["digest"] = _digest(rec)
    rec["mac"] = disk.mac(_entry_name(key), rec["digest"].encode())
    return rec


_IMAGE_FIELDS = ("binding", "param_index", "kind", "name", "dim", "arrayed", "format",
                 "image_format", "lane", "readonly", "writeonly")


def _dump_image(im: ImageParam) -> dict:
    """An image parameter's descriptor as entry fields (plain values only)."""
    return {f: getattr(im, f) for f in _IMAGE_FIELDS}


def _load_image(d: dict, func: PrimFunc) -> ImageParam:
    """The ImageParam of entry fields `d`, checked against `func`'s image parameter."""
    im = ImageParam(**{f: d[f] for f in _IMAGE_FIELDS})
    param = func.params[int(im.param_index)]
    itype = param.dtype
    if getattr(itype, "format", None) != im.image_format or param.name != im.name or \
            im.kind != ("combined_image_sampler" if itype.sampled else "storage_image"):
        raise ValueError(f"image binding {im.name!r} does not match the kernel's parameter")
    return im


def _stored_ir(ir, func: PrimFunc, aliases: dict):
    """The entry's encoding of the lowered function `ir`, or None (not stored) where there is
    none or it holds what the encoding cannot express."""
    if ir is None:
        return None
    try:
        return ir_codec.encode(ir, func, aliases)
    except ir_codec.NotStorable as exc:
        _log().debug("compile cache: %s stored without its lowered IR: %s", func.name, exc)
        return None


def _entry_name(key: str) -> str:
    """The name an entry is sealed under: its cache and key."""
    return f"kernels/{key}"


def _digest(rec: dict) -> str:
    """SHA-256 of the whole entry (everything but its "digest" and "mac" fields), canonically
    written."""
    body = {k: v for k, v in rec.items() if k not in ("digest", "mac")}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _module(rec: dict, key: str, func: PrimFunc, sealed: bool = True) -> tuple:
    if not isinstance(rec, dict) or rec.get("format") != FORMAT or rec.get("key") != key:
        raise ValueError("entry of another format or key")
    if rec.get("digest") != _digest(rec):
        raise ValueError("the entry does not match its digest (edited or corrupted)")
    if sealed and not disk.verify(_entry_name(key), rec["digest"].encode(), rec.get("mac")):
        raise ValueError("the entry's seal does not verify (not written by this user's vkir "
                         "for this key)")
    words = binascii.a2b_base64(rec["words"])
    if hashlib.sha256(words).hexdigest() != rec["sha256"] or len(words) % 4:
        raise ValueError("SPIR-V words do not match their checksum")
    names = _names(func)
    bindings = []
    for b in rec["bindings"]:
        param = func.params[b["param"]]
        data = func.buffer_map[param].data
        buf = Buffer(b["name"], data, DataType.parse(b["dtype"]),
                     tuple(_load_expr(s, names) for s in b["shape"]), scope=b["scope"])
        texel = b["texel"]
        if not isinstance(texel, str):
            raise ValueError(f"binding {b['name']!r}: texel format {texel!r} is not a string")
        bindings.append(Binding(int(b["binding"]), int(b["param"]), buf, bool(b["readable"]),
                                bool(b["writable"]), texel))
    pcs = []
    for pc in rec["push_constants"]:
        var = _load_expr(pc["var"], names)
        if type(var) is not Var:
            raise ValueError("a push constant that is not a variable")
        pcs.append(PushConstant(var, int(pc["offset"]), DataType.parse(pc["dtype"])))
    local = tuple(int(n) for n in rec["local_size"])
    grid = tuple(_load_expr(g, names) for g in rec["grid"])
    if len(local) != 3 or len(grid) != 3:
        raise ValueError("workgroup size and grid need three axes")
    stored_ir = rec["ir"]
    if stored_ir is not None and not isinstance(stored_ir, dict):
        raise ValueError("the lowered IR is not an encoded function")
    module = SpirvModule(words=words, entry_point=str(rec["entry_point"]), local_size=local,
                         grid=grid, bindings=tuple(bindings), push_constants=tuple(pcs),
                         push_constant_size=int(rec["push_constant_size"]),
                         shared_memory_bytes=int(rec["shared_memory_bytes"]),
                         required_features=frozenset(rec["required_features"]),
                         folds_grid=bool(rec["folds_grid"]),
                         images=tuple(_load_image(d, func) for d in rec["images"]))
    return module, stored_ir


def load(path: Path, key: str, func: PrimFunc) -> tuple | None:
    """(the module stored at `path` for `func`, the encoded lowered function or None), or None
    when there is none or it is unusable (unreadable, not UTF-8 or JSON, truncated, another
    format or key, a digest or seal that does not verify): the caller rebuilds it. Everything
    read is verified."""
    raw = disk.read(path)
    if raw is None:
        return None
    try:
        return _module(json.loads(raw.decode("utf-8")), key, func)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, binascii.Error) as exc:
        _log().debug("compile cache: ignoring unusable entry %s: %s", path, exc)
        return None


def store(path: Path, key: str, func: PrimFunc, module: SpirvModule, aliases: dict,
          ir: PrimFunc | None = None) -> bool:
    """Write the entry atomically (vkir.store.write), with the lowered function `ir` where
    given; False when the module cannot be expressed in the entry format or the directory is
    unsafe or cannot be written (the build goes on)."""
    try:
        text = json.dumps(_record(key, func, module, aliases, ir), separators=(",", ":"))
    except _NotStorable as exc:
        _log().debug("compile cache: not caching %s: %s", func.name, exc)
        return False
    return disk.write(path, text.encode())
