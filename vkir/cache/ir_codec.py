"""The lowered PrimFunc of a compile-cache entry as JSON data, so that a cache hit needs no
lowering: the loop facts a call on a driver with a loop limit computes (vkir.driver.loop_budget),
the split variants made from them and `Kernel.ir` all come from the stored function.

`encode(lowered, func, aliases)` writes every node as [class name, field values...] with each
Var and Buffer once in a table (identity matters for them), floats by their hex text and spans
once each. The user's own variables (parameters by position, symbolic sizes by name, through
`aliases` where a pass renewed one) are written as references, so `decode(data, func)` gives a
function over the Vars of the user's `func` in the new process, as a cache hit's dispatch
description is. Only IR classes of vkir.ir are ever built (by name, from a fixed table), and
objects are made field by field as they were written (no constructor rewrites them); anything
else in the function raises NotStorable (the entry then holds no IR).
"""

from __future__ import annotations

import dataclasses
import functools

from ..ir import PrimFunc
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.base import FrozenDict, Node, Span
from ..ir.buffer import Buffer
from ..ir.dtype import DataType, PointerType
from ..ir.structural import recursion_headroom


class NotStorable(Exception):
    """The function holds something the encoding cannot express."""


@functools.cache
def _classes() -> dict:
    """IR node classes by name: every dataclass Node of vkir.ir.expr and vkir.ir.stmt, and
    PrimFunc (Var and Buffer are tables of their own)."""
    out = {"PrimFunc": PrimFunc}
    for module in (E, S):
        for name, cls in vars(module).items():
            if isinstance(cls, type) and issubclass(cls, Node) and dataclasses.is_dataclass(cls) \
                    and cls.__module__ == module.__name__ and cls not in (E.Var,):
                out[name] = cls
    return out


@functools.cache
def _fields(cls) -> tuple:
    return tuple(f.name for f in dataclasses.fields(cls))


def _user_keys(func: PrimFunc) -> dict:
    """The user's variables an encoding refers to by key: "p<i>" for parameter i, "s<name>"
    for a symbolic size."""
    out = {p: f"p{i}" for i, p in enumerate(func.params)}
    for v in func.size_vars:
        out.setdefault(v, f"s{v.name}")
    return out


class _Encoder:
    def __init__(self, func: PrimFunc, aliases: dict):
        self.user = _user_keys(func)
        self.aliases = aliases
        self.vars: dict = {}      # Var -> index in var_rows
        self.var_rows: list = []
        self.buffers: dict = {}   # Buffer -> index in buffer_rows
        self.buffer_rows: list = []
        self.spans: dict = {}
        self.span_rows: list = []

    def value(self, v):
        t = type(v)
        if v is None or t is str or t is bool or t is int:
            return v
        if t is float:
            return ["f", v.hex()]
        if t is tuple:
            return ["t", [self.value(x) for x in v]]
        if t is DataType:
            return ["d", str(v)]
        if t is PointerType:
            return ["ptr", str(v.element), v.scope]
        if t is FrozenDict:
            return ["m", [[self.value(k), self.value(x)] for k, x in v.items()]]
        if t is Span:
            return ["span", self.span(v)]
        if t is E.Var:
            return self.var(v)
        if t is Buffer:
            return ["b", self.buffer(v)]
        if t.__name__ in _classes() and _classes()[t.__name__] is t:
            return ["n", t.__name__, [self.value(getattr(v, f)) for f in _fields(t)]]
        if isinstance(v, str):   # a str subclass (tvm_ffi's String in an imported TVM kernel)
            return str(v)
        raise NotStorable(f"a {t.__name__} in the lowered function")

    def var(self, v):
        v = self.aliases.get(v, v)
        key = self.user.get(v)
        if key is not None:
            return ["u", key]
        i = self.vars.get(v)
        if i is None:
            i = self.vars[v] = len(self.var_rows)
            self.var_rows.append(None)
            self.var_rows[i] = [v.name, self.value(v.dtype), self.value(v.span)]
        return ["v", i]

    def buffer(self, b) -> int:
        i = self.buffers.get(b)
        if i is None:
            i = self.buffers[b] = len(self.buffer_rows)
            self.buffer_rows.append(None)
            self.buffer_rows[i] = [self.value(getattr(b, f)) for f in _fields(Buffer)]
        return i

    def span(self, s) -> int:
        i = self.spans.get(s)
        if i is None:
            i = self.spans[s] = len(self.span_rows)
            self.span_rows.append([s.file, s.line, s.col, s.source_line])
        return i


def encode(lowered: PrimFunc, func: PrimFunc, aliases: dict) -> dict:
    """`lowered` (the lowering of the user's `func`; `aliases` maps its Vars that stand for a
    user's Var to that Var) as JSON data; NotStorable when it holds what cannot be written."""
    enc = _Encoder(func, aliases)
    with recursion_headroom():   # long expression chains nest deeply
        body = enc.value(lowered)
    return {"vars": enc.var_rows, "buffers": enc.buffer_rows, "spans": enc.span_rows,
            "func": body}


def _make(cls, values: dict):
    """An instance of frozen dataclass `cls` with exactly these field values (no __init__: the
    stored function is rebuilt as it was, not normalized again)."""
    obj = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(obj, name, value)
    return obj


class _Decoder:
    def __init__(self, data: dict, func: PrimFunc):
        self.data = data
        self.user = {key: v for v, key in _user_keys(func).items()}
        self.vars: dict = {}
        self.buffers: dict = {}
        self.spans: dict = {}

    def value(self, d):
        if d is None or type(d) in (str, bool, int):
            return d
        tag = d[0]
        if tag == "n":
            cls = _classes()[d[1]]
            names = _fields(cls)
            if len(names) != len(d[2]):
                raise ValueError(f"{d[1]} with {len(d[2])} fields")
            return _make(cls, {n: self.value(x) for n, x in zip(names, d[2])})
        if tag == "v":
            return self.var(d[1])
        if tag == "u":
            return self.user[d[1]]
        if tag == "b":
            return self.buffer(d[1])
        if tag == "t":
            return tuple(self.value(x) for x in d[1])
        if tag == "d":
            return DataType.parse(d[1])
        if tag == "f":
            return float.fromhex(d[1])
        if tag == "ptr":
            return PointerType(DataType.parse(d[1]), d[2])
        if tag == "m":
            return FrozenDict({self.value(k): self.value(x) for k, x in d[1]})
        if tag == "span":
            return self.span(d[1])
        raise ValueError(f"unknown tag {tag!r}")

    def var(self, i: int):
        v = self.vars.get(i)
        if v is None:
            name, dtype, span = self.data["vars"][i]
            v = self.vars[i] = _make(E.Var, {"name": name, "dtype": self.value(dtype),
                                             "span": self.value(span)})
        return v

    def buffer(self, i: int):
        b = self.buffers.get(i)
        if b is None:
            row = self.data["buffers"][i]
            names = _fields(Buffer)
            if len(names) != len(row):
                raise ValueError(f"a buffer with {len(row)} fields")
            b = self.buffers[i] = _make(Buffer, {n: self.value(x) for n, x in zip(names, row)})
        return b

    def span(self, i: int):
        s = self.spans.get(i)
        if s is None:
            file, line, col, text = self.data["spans"][i]
            s = self.spans[i] = Span(file, int(line), int(col), text)
        return s


def decode(data: dict, func: PrimFunc) -> PrimFunc:
    """The lowered function `encode` wrote, over the Vars of the user's `func` (ValueError,
    KeyError, IndexError or TypeError for data it did not write)."""
    with recursion_headroom():
        out = _Decoder(data, func).value(data["func"])
    if type(out) is not PrimFunc:
        raise ValueError("the stored IR is not a function")
    return out
