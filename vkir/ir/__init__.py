"""The vkir IR: data types, immutable expression/statement nodes, buffers and PrimFunc."""

from .base import FrozenDict, Node, PrimExpr, Span, Stmt, show
from .buffer import Buffer, decl_buffer
from .dtype import DataType, PointerType, SCOPES
from .expr import (
    BINARY_OPS, Add, And, BinaryOp, Broadcast, BufferLoad, Call, Cast, CmpOp, Div, EQ, FloatImm,
    FloorDiv, FloorMod, GE, GT, IntImm, LE, LT, Let, Max, Min, Mod, Mul, NE, Not, Or, Ramp, Select,
    Shuffle, Sub, Var, const, convert,
)
from .function import PrimFunc
from .image import IMAGE_NODES, ImageLoad, ImageSample, ImageSize, ImageStore
from .image_type import ImageType, is_image
from .functor import Mutator, Visitor, children
from .op import OPS, SUBGROUP_OPS, OpInfo, is_atomic, is_pure, is_subgroup
from .stmt import (
    FOR_KINDS, THREAD_TAGS, AllocBuffer, AsyncCommitQueue, AsyncScope, AsyncWaitQueue, Barrier,
    BufferStore, DeclBuffer, Evaluate, For, IfThenElse, LetStmt, SeqStmt, SubgroupBarrier, While,
    seq,
)
from .substitution import substitute
from .traversal import walk


__all__ = ["FrozenDict", "Node", "PrimExpr", "Span", "Stmt", "show", "Buffer", "decl_buffer",
           "DataType", "PointerType", "SCOPES", "BINARY_OPS", "Add", "And", "BinaryOp",
           "Broadcast", "BufferLoad", "Call", "Cast", "CmpOp", "Div", "EQ", "FloatImm",
           "FloorDiv", "FloorMod", "GE", "GT", "IntImm", "LE", "LT", "Let", "Max", "Min", "Mod",
           "Mul", "NE", "Not", "Or", "Ramp", "Select", "Shuffle", "Sub", "Var", "const",
           "convert", "PrimFunc", "Mutator", "Visitor", "children", "OPS", "OpInfo", "is_pure",
           "FOR_KINDS", "THREAD_TAGS", "AllocBuffer", "AsyncCommitQueue", "AsyncScope",
           "AsyncWaitQueue", "Barrier", "BufferStore", "DeclBuffer", "Evaluate", "For",
           "IfThenElse", "LetStmt", "SeqStmt", "SubgroupBarrier", "While", "seq", "substitute", "walk", "structural_equal",
           "IMAGE_NODES", "ImageLoad", "ImageSample", "ImageSize", "ImageStore", "ImageType", "is_image",
           "assert_structural_equal"]


def __getattr__(name):
    if name in ("structural_equal", "assert_structural_equal"):
        from . import structural

        return getattr(structural, name)
    raise AttributeError(f"module 'vkir.ir' has no attribute {name!r}")
