"""The kernel emitter: one GLCompute entry point for one lowered PrimFunc.

It owns the module builder, the function body being written (current block, Function
variables), the SSA value of every bound Var and the memory of every buffer. Expressions,
statements, accesses and intrinsics are mixins (expr.py, stmt.py, access.py, intrinsics.py).
"""

from __future__ import annotations

from contextlib import contextmanager

from vkir.arith import type_range
from vkir.arith.bound import value_range
from vkir.arith.ranges import RangeScope
from vkir.errors import TypeCheckError, UnsupportedError, WellFormedError
from vkir.ir import Buffer, BufferLoad, Call, DataType, IntImm, PrimExpr, PrimFunc, Var, show

from vkir.ir.image import ImageLoad, ImageSample, ImageSize, ImageStore
from vkir.ir.op import is_atomic
from vkir.ir.traversal import walk

from ..builder import ModuleBuilder
from ..module import Binding
from ..target import Target
from .access import AccessMixin, Memory
from .expr import ExprMixin
from .flat_workgroup import FlatWorkgroupMixin, flat_size, needs_flat_workgroup
from .interface import Interface, analyze
from .images import ImageMixin
from .intrinsics import IntrinsicMixin
from .stmt import StmtMixin
from .sync import SyncMixin
from .texel_reads import TexelReadMixin
from .types import Types

_BUILTINS = {"blockIdx": "WorkgroupId", "threadIdx": "LocalInvocationId"}
MIN_WORKGROUP_COUNT = 65535   # maxComputeWorkGroupCount per dimension on every Vulkan device
_AXES = {"x": 0, "y": 1, "z": 2}
_INT32 = DataType("int", 32)
_UINT32 = DataType("uint", 32)


# float arithmetic a driver may contract (fuse) or reassociate unless decorated NoContraction
_FLOAT_ARITHMETIC = frozenset({"OpFAdd", "OpFSub", "OpFMul", "OpFDiv", "OpFRem", "OpFMod",
                               "OpFNegate", "OpVectorTimesScalar"})
# conversions are always decorated: without it Mesa folds int64(float32(x)) to x
_CONVERSIONS = frozenset({"OpConvertFToS", "OpConvertFToU", "OpConvertSToF", "OpConvertUToF",
                          "OpFConvert"})


class KernelEmitter(ExprMixin, StmtMixin, AccessMixin, IntrinsicMixin, SyncMixin, ImageMixin,
                    FlatWorkgroupMixin,
                    TexelReadMixin):
    """Emits one GLCompute entry point for a lowered PrimFunc: interface, types, code."""

    _expr_methods = {**ExprMixin._expr_methods, ImageLoad: ImageMixin.e_image_load,
                     ImageSample: ImageMixin.e_image_sample, ImageSize: ImageMixin.e_image_size}
    _stmt_methods = {**StmtMixin._stmt_methods, ImageStore: ImageMixin.s_image_store}

    def __init__(self, func: PrimFunc, target: Target):
        self.func = func
        self.target = target
        self.b = ModuleBuilder(target.spirv_version)
        self.types = Types(self.b, target, func.name)
        self.iface: Interface = analyze(func, target.limits.max_push_constant_bytes,
                                        cas_float_add=not target.has("atomic_float32_add_buffer"))
        self.values: dict[Var, int] = {}
        self.memory: dict[tuple, Memory] = {}       # (data var, dtype) -> Memory
        self.texels: dict = {}    # (data var, dtype) -> TexelMemory of a texel-read parameter
        self.local_memory: dict[Var, Buffer] = {}   # data var of shared/local -> its allocation
        self.code: list[int] = []
        self.fvars: list[int] = []
        self.label = 0
        self.interface_vars: list[tuple[int, str]] = []  # (variable id, storage class)
        self.builtins: dict[str, int] = {}
        self.thread_ids: dict[str, int] = {}
        self.shared_bytes = 0
        self.shared_buffers: list = []   # (bytes, "'name': shape x dtype") of each shared array
        self.images: dict = {}                      # image parameter Var -> its descriptor
        self.ranges = RangeScope()
        # NoSignedWrap/NoUnsignedWrap are core from SPIR-V 1.4 (an extension before)
        self.wrap_decorations = target.spirv_version >= (1, 4)
        self.precise = target.precise
        # a barrier also orders storage-buffer memory when atomics update it (see sync.py)
        self.global_atomics = any(
            isinstance(n, Call) and is_atomic(n.op) and isinstance(n.args[0], BufferLoad)
            and n.args[0].buffer.scope == "global" for n in walk(func.body))
        self._one_row: bool | None = None   # runs as one row (flat_workgroup.py), found once

    # -- emission primitives -------------------------------------------------------------------

    def ty(self, dt: DataType) -> int:
        """The SPIR-V type id of a vkir dtype."""
        return self.types.of(dt)

    def op(self, opname: str, result_type: int, *operands) -> int:
        """Emit an instruction with a result of `result_type`; return the result id."""
        rid = self.b.new_id()
        self.b.encode(self.code, opname, result_type, rid, *operands)
        if opname in _CONVERSIONS or (self.precise and opname in _FLOAT_ARITHMETIC):
            self.b.decorate(rid, "NoContraction")
        return rid

    def do(self, opname: str, *operands) -> None:
        """Emit an instruction without a result."""
        self.b.encode(self.code, opname, *operands)

    def int_op(self, opname: str, e: PrimExpr, result_type: int, a: int, b: int) -> int:
        """An integer OpIAdd/OpISub/OpIMul computing the IR node `e`, decorated NoSignedWrap
        and/or NoUnsignedWrap where the ranges in scope prove the operation cannot wrap."""
        rid = self.op(opname, result_type, a, b)
        if self.wrap_decorations:
            nsw, nuw = self.ranges.no_wrap(e)
            if nsw:
                self.b.decorate(rid, "NoSignedWrap")
            if nuw:
                self.b.decorate(rid, "NoUnsignedWrap")
        return rid

    def glsl(self, name: str, result_type: int, *args: int) -> int:
        """Emit a GLSL.std.450 extended instruction `name`; return the result id."""
        return self.op("OpExtInst", result_type, self.b.glsl_std_450(), self.b.g.glsl[name],
                       *args)

    def const(self, dt: DataType, value) -> int:
        """The id of a constant of `dt` (a vector constant for several lanes)."""
        if dt.lanes > 1:
            return self.const_vector(dt.element_of(), [value] * dt.lanes)
        if dt.is_bool:
            return self.b.constant_bool(bool(value))
        return self.b.constant(self.ty(dt), dt.code, dt.bits, value)

    def const_vector(self, sdt: DataType, values: list) -> int:
        """The id of a vector constant with one value per lane."""
        parts = tuple(self.const(sdt, v) for v in values)
        return self.b.constant_composite(self.ty(sdt.with_lanes(len(values))), parts)

    def start_block(self, label: int) -> None:
        """Begin the block labelled `label`."""
        self.b.encode(self.code, "OpLabel", label)
        self.label = label

    def function_variable(self, pointer_type: int) -> int:
        """A Function-storage OpVariable (emitted at the top of the entry block)."""
        vid = self.b.new_id()
        self.b.encode(self.fvars, "OpVariable", pointer_type, vid,
                      self.b.enum("StorageClass", "Function"))
        return vid

    @contextmanager
    def bound(self, var: Var, value: int):
        """Bind `var` to the SSA id `value` (named after it) within the block."""
        if var in self.values:
            raise WellFormedError(f"kernel {self.func.name!r}: variable {var.name!r} is bound "
                                  "twice")
        if value not in self.b.constant_ids:
            self.b.name(value, var.name)
        self.values[var] = value
        try:
            yield
        finally:
            del self.values[var]

    def branch_value(self, cond: int, then: PrimExpr | None, other: PrimExpr | None,
                     dt: DataType) -> int:
        """cond ? then : other, evaluating only the taken side (a None side is zero)."""
        t_label, f_label, merge = self.b.new_id(), self.b.new_id(), self.b.new_id()
        self.do("OpSelectionMerge", merge, 0)
        self.do("OpBranchConditional", cond, t_label, f_label)
        results = []
        for label, e in ((t_label, then), (f_label, other)):
            self.start_block(label)
            v = self.const(dt, 0) if e is None else self.expr(e)
            results += [v, self.label]
            self.do("OpBranch", merge)
        self.start_block(merge)
        return self.op("OpPhi", self.ty(dt), *results)

    def barrier(self, scope: str = "Workgroup") -> None:
        """OpControlBarrier(scope, scope, AcquireRelease | WorkgroupMemory)."""
        wg = self.const(_UINT32, self.b.enum("Scope", scope))
        storage = ("WorkgroupMemory", "UniformMemory") if self.global_atomics else \
            ("WorkgroupMemory",)
        if self.images:   # a barrier also orders image texels (writes and atomics)
            storage += ("ImageMemory",)
        sem = self.const(_UINT32, self.b.g.bits("MemorySemantics", "AcquireRelease", *storage))
        self.do("OpControlBarrier", wg, wg, sem)

    # -- memory --------------------------------------------------------------------------------

    def memory_of(self, buffer: Buffer) -> Memory:
        """The storage (variable and layout) behind a buffer, by its data pointer and type."""
        mem = self.memory.get((buffer.data, buffer.dtype))
        if mem is None:
            raise TypeCheckError(
                f"kernel {self.func.name!r}: buffer {buffer.name!r} ({buffer.dtype}) is accessed "
                f"without a declaration over its data {buffer.data.name!r} with that element "
                "type (an implicit pointer cast, typing rule 2)")
        return mem

    def _storage_buffers(self) -> None:
        shared_params = {}
        for sb in self.iface.bindings.values():
            shared_params[sb.param_index] = shared_params.get(sb.param_index, 0) + 1
        for sb in self.iface.bindings.values():
            dt = sb.dtype
            texel = self.texel_eligible(sb, shared_params[sb.param_index] > 1)
            if texel:   # read through a uniform texel buffer (texel_reads.py)
                self.texel_binding(sb, texel)
                continue
            what = f"buffer {sb.buffer.name!r}"
            self.types.storage_element(dt, what)
            elem = dt.element_of() if dt.lanes == 3 else dt
            stride = elem.bits // 8 * elem.lanes
            rt = self.b.type_runtime_array(self.ty(elem), stride)
            struct = self.b.type_struct(rt)
            self.b.decorate(struct, "Block")
            self.b.member_decorate(struct, 0, "Offset", 0)
            if not sb.writable:
                self.b.member_decorate(struct, 0, "NonWritable")
            if not sb.readable:
                self.b.member_decorate(struct, 0, "NonReadable")
            self.b.name(struct, f"{sb.buffer.name}_block")
            self.b.member_name(struct, 0, "data")
            var = self.b.global_variable(self.b.type_pointer("StorageBuffer", struct),
                                         "StorageBuffer")
            self.b.name(var, sb.buffer.name)
            self.b.decorate(var, "DescriptorSet", 0)
            self.b.decorate(var, "Binding", sb.binding)
            if shared_params[sb.param_index] > 1:
                self.b.decorate(var, "Aliased")
            self.interface_vars.append((var, "StorageBuffer"))
            self.memory[(sb.data, dt)] = Memory(var, "StorageBuffer", elem, True)

    def allocate(self, buffer: Buffer) -> None:
        """A "shared" buffer becomes a Workgroup array, a "local" one a Function array."""
        scope = buffer.scope
        if scope == "global":
            raise UnsupportedError(f"kernel {self.func.name!r}: buffer {buffer.name!r} is "
                                   "allocated in global memory inside the kernel: give it scope "
                                   "'shared' (one per workgroup) or 'local' (one per invocation), "
                                   "or pass it as a parameter")
        size = 1
        for extent in buffer.shape:
            if not isinstance(extent, IntImm):
                raise UnsupportedError(f"kernel {self.func.name!r}: {scope} buffer "
                                       f"{buffer.name!r} has non-constant shape "
                                       f"{show(buffer.shape)}")
            size *= extent.value
        if buffer.dtype.is_handle:
            raise UnsupportedError(f"kernel {self.func.name!r}: handle buffer {buffer.name!r}")
        array_type = self.b.type_array(self.ty(buffer.dtype), max(size, 1))
        if scope == "shared":
            var = self.b.global_variable(self.b.type_pointer("Workgroup", array_type),
                                         "Workgroup")
            self.interface_vars.append((var, "Workgroup"))
            lanes = 4 if buffer.dtype.lanes == 3 else buffer.dtype.lanes  # vec3 pads to vec4
            nbytes = size * buffer.dtype.with_lanes(lanes).bytes
            self.shared_bytes += nbytes
            self.shared_buffers.append(
                (nbytes, f"{buffer.name!r}: {show(buffer.shape)} x {buffer.dtype}, {nbytes} bytes"))
            if self.shared_bytes > self.target.limits.max_shared_memory_bytes:
                largest = sorted(self.shared_buffers, key=lambda b: -b[0])[:3]
                raise UnsupportedError(
                    f"kernel {self.func.name!r} needs {self.shared_bytes} bytes of shared "
                    f"memory; the device allows {self.target.limits.max_shared_memory_bytes} "
                    f"(shared buffer {'; '.join(text for _, text in largest)})")
            storage = "Workgroup"
        else:
            var = self.function_variable(self.b.type_pointer("Function", array_type))
            storage = "Function"
        self.b.name(var, buffer.name)
        self.memory[(buffer.data, buffer.dtype)] = Memory(var, storage, buffer.dtype, False)
        self.local_memory[buffer.data] = buffer

    def declare(self, buffer: Buffer) -> None:
        """A DeclBuffer: a view (same element type) or, over a parameter, a cast binding."""
        key = (buffer.data, buffer.dtype)
        if key in self.memory or key in self.texels:
            return
        owner = self.local_memory.get(buffer.data)
        if owner is not None:
            raise UnsupportedError(
                f"kernel {self.func.name!r}: buffer {buffer.name!r} casts {owner.scope} memory "
                f"{owner.name!r} from {owner.dtype} to {buffer.dtype}; pointer casts of "
                "shared/local memory are not supported on Vulkan (logical addressing)")
        raise TypeCheckError(f"kernel {self.func.name!r}: buffer {buffer.name!r} declares data "
                             f"{buffer.data.name!r}, which is neither a parameter nor allocated")

    # -- interface: push constants and builtins ------------------------------------------------

    def _push_constants(self) -> None:
        pcs = self.iface.push_constants
        if not pcs:
            return
        members = [self.ty(pc.dtype) for pc in pcs]
        struct = self.b.type_struct(*members)
        self.b.decorate(struct, "Block")
        self.b.name(struct, "PushConstants")
        for i, pc in enumerate(pcs):
            self.b.member_decorate(struct, i, "Offset", pc.offset)
            self.b.member_name(struct, i, pc.var.name)
        var = self.b.global_variable(self.b.type_pointer("PushConstant", struct), "PushConstant")
        self.b.name(var, "push_constants")
        self.interface_vars.append((var, "PushConstant"))
        for i, pc in enumerate(pcs):
            t = self.ty(pc.dtype)
            ptr = self.op("OpAccessChain", self.b.type_pointer("PushConstant", t), var,
                          self.const(_INT32, i))
            v = self.op("OpLoad", t, ptr)
            v = self.convert(v, pc.dtype, pc.var.dtype)
            self.b.name(v, pc.var.name)
            self.values[pc.var] = v

    def thread_id(self, tag: str) -> int:
        """The int32 value of blockIdx.* / threadIdx.*, loaded in the entry block."""
        return self.thread_ids[tag]

    folds_grid = False   # set by _load_thread_ids

    def _grid_folds(self) -> bool:
        """Whether blockIdx.x is linearized over two dispatch dimensions: the kernel uses only
        blockIdx.x, and its extent may exceed 65535, the workgroup count every Vulkan device
        launches per dimension."""
        threads = self.iface.threads
        if "blockIdx.x" not in threads or "blockIdx.y" in threads or "blockIdx.z" in threads:
            return False
        extent = threads["blockIdx.x"]
        if isinstance(extent, IntImm):
            return extent.value > MIN_WORKGROUP_COUNT
        hi = value_range(extent, {v: (0, type_range(v.dtype)[1]) for v in self._extent_vars()})[1]
        return hi is None or hi > MIN_WORKGROUP_COUNT

    def _builtin_vector(self, builtin: str) -> int:
        """The uvec3 value of a builtin input, loaded once in the entry block."""
        if builtin not in self.builtins:
            uvec3 = DataType("uint", 32, 3)
            var = self.b.global_variable(self.b.type_pointer("Input", self.ty(uvec3)), "Input")
            self.b.decorate(var, "BuiltIn", self.b.enum("BuiltIn", builtin))
            self.b.name(var, builtin)
            self.interface_vars.append((var, "Input"))
            self.builtins[builtin] = self.op("OpLoad", self.ty(uvec3), var)
        return self.builtins[builtin]

    def _load_thread_ids(self) -> None:
        self.folds_grid = self._grid_folds()
        u32 = self.ty(_UINT32)
        sizes = self.thread_sizes()
        flat = self.runs_as_one_row()
        for tag in sorted(self.iface.threads):
            kind, axis = tag.split(".")
            ids = self._builtin_vector(_BUILTINS[kind])
            one_row = flat and kind == "threadIdx"   # a one-row workgroup (flat_workgroup.py)
            comp = self.op("OpCompositeExtract", u32, ids, _AXES["x" if one_row else axis])
            if one_row:
                comp = self.flat_thread_id(axis, comp, sizes)
            if tag == "blockIdx.x" and self.folds_grid:   # x + y * (workgroups along x)
                counts = self._builtin_vector("NumWorkgroups")
                row = self.op("OpIMul", u32, self.op("OpCompositeExtract", u32, ids, 1),
                              self.op("OpCompositeExtract", u32, counts, 0))
                comp = self.op("OpIAdd", u32, comp, row)
            self.thread_ids[tag] = self.op("OpBitcast", self.ty(_INT32), comp)

    def _extent_vars(self) -> list[Var]:
        """Symbolic sizes that are themselves an extent of a parameter buffer (so never
        negative: the host binds them from array shapes)."""
        sizes = set(self.func.size_vars)
        out = []
        for buf in self.func.buffer_map.values():
            for extent in buf.shape:
                if isinstance(extent, Var) and extent in sizes and extent not in out:
                    out.append(extent)
        return out

    def local_size(self) -> tuple[int, int, int]:
        """The workgroup size (x, y, z) the module declares: the threadIdx loops' extents, or
        one row of them where the target splits subgroups by rows (flat_workgroup.py)."""
        sizes = self.thread_sizes()
        if self.runs_as_one_row():
            return flat_size(self.func, self.target, sizes)
        return sizes

    def runs_as_one_row(self) -> bool:
        """needs_flat_workgroup for this kernel (its body walked once per emitter)."""
        if self._one_row is None:
            self._one_row = needs_flat_workgroup(self.func, self.target, self.thread_sizes())
        return self._one_row

    def thread_sizes(self) -> tuple[int, int, int]:
        """The workgroup size (x, y, z) from the threadIdx loops."""
        sizes = []
        for axis in "xyz":
            extent = self.iface.threads.get(f"threadIdx.{axis}")
            if extent is None:
                sizes.append(1)
            elif isinstance(extent, IntImm) and extent.value >= 1:
                sizes.append(extent.value)
            else:
                raise UnsupportedError(f"kernel {self.func.name!r}: threadIdx.{axis} extent "
                                       f"{extent} must be a positive constant (the workgroup "
                                       "size is fixed in SPIR-V)")
        total = sizes[0] * sizes[1] * sizes[2]
        if total > self.target.limits.max_workgroup_invocations:
            raise UnsupportedError(f"kernel {self.func.name!r}: workgroup of {total} invocations "
                                   f"{tuple(sizes)}; the device allows "
                                   f"{self.target.limits.max_workgroup_invocations}")
        return tuple(sizes)

    def grid(self) -> tuple:
        """The workgroup counts (x, y, z) as expressions of sizes and scalars."""
        return tuple(self.iface.threads.get(f"blockIdx.{a}", IntImm("int32", 1)) for a in "xyz")

    def bindings(self) -> tuple[Binding, ...]:
        """The buffer parameters' bindings (storage or texel buffers), in binding order."""
        texels = self.texels
        return tuple(Binding(sb.binding, sb.param_index, sb.buffer, sb.readable, sb.writable,
                             texels[(sb.data, sb.dtype)].format
                             if (sb.data, sb.dtype) in texels else "")
                     for sb in self.iface.bindings.values())

    # -- the whole kernel ----------------------------------------------------------------------

    def run(self) -> bytes:
        """Emit the whole module; return its words as bytes."""
        b = self.b
        local_size = self.local_size()
        self._storage_buffers()
        self._image_params()
        void = b.type_void()
        main = b.new_id()
        entry = b.new_id()
        self.label = entry
        self._push_constants()
        self._load_thread_ids()
        for var in self._extent_vars():
            self.ranges.assume(var, 0, type_range(var.dtype)[1])
        self.stmt(self.func.body)
        self.do("OpReturn")

        fn: list[int] = []
        b.encode(fn, "OpFunction", void, main, b.enum("FunctionControl", "None"),
                 b.type_function(void))
        b.encode(fn, "OpLabel", entry)
        fn.extend(self.fvars)
        fn.extend(self.code)
        b.encode(fn, "OpFunctionEnd")
        b.functions.extend(fn)
        b.name(main, self.func.name)

        if b.version >= (1, 4):
            interface = [v for v, _ in self.interface_vars]
        else:
            interface = [v for v, sc in self.interface_vars if sc in ("Input", "Output")]
        b.encode(b.entry_points, "OpEntryPoint", b.enum("ExecutionModel", "GLCompute"), main,
                 self.func.name, *interface)
        b.encode(b.exec_modes, "OpExecutionMode", main, b.enum("ExecutionMode", "LocalSize"),
                 *local_size)
        self._preserve_inf_nan(main)
        return b.to_bytes()

    def _preserve_inf_nan(self, main: int) -> None:
        """Float controls for the float widths the kernel computes with, where the target
        allows them (SPIR-V 1.4+, where float controls are core):
        - SignedZeroInfNanPreserve: otherwise drivers may fold x * 0.0 to 0.0 for an infinite or
          NaN x (lavapipe does), and the interpreter's IEEE results are lost;
        - DenormPreserve: otherwise a driver may flush denormal inputs and results to zero
          (SwiftShader does: 0.0 // 1e-45 became 0 / 0);
        - RoundingModeRTE: round-to-nearest-even, the interpreter's rounding, for conversions
          and arithmetic.
        A kernel without floats declares none: SwiftShader miscompiles an integer max in a
        module that declares SignedZeroInfNanPreserve."""
        b = self.b
        if b.version < (1, 4):
            return
        used = _float_widths(self.func)
        for mode, feature in (("SignedZeroInfNanPreserve", "inf_nan_preserve"),
                              ("DenormPreserve", "denorm_preserve"),
                              ("RoundingModeRTE", "rounding_rte")):
            widths = [w for w in sorted(used) if f"float{w}_{feature}" in self.target.features]
            if widths:
                b.capability(mode)
            for w in widths:
                b.encode(b.exec_modes, "OpExecutionMode", main, b.enum("ExecutionMode", mode), w)


def _float_widths(func) -> set:
    """The bit widths of the float values and buffers `func` uses."""
    from vkir.ir import walk

    widths = set()
    for node in walk(func.body):
        dt = getattr(node, "dtype", None)
        if isinstance(dt, DataType) and dt.is_float:
            widths.add(dt.bits)
        buf = getattr(node, "buffer", None)
        if buf is not None and buf.dtype.is_float:
            widths.add(buf.dtype.bits)
    for buf in func.buffer_map.values():
        if buf.dtype.is_float:
            widths.add(buf.dtype.bits)
    return widths
