"""Messages of the interpreter's race checker: where an access is (`Site`), who made it (threads
and workgroups by their index names) and the `DataRaceError` naming both sides of a race."""

from __future__ import annotations

from .errors import DataRaceError
from .race_records import (ALL, AXES, COLLECTIVE, MASK, MULTI, NONE, UNBOUND, shift)

class Site:
    """A load or store of the program, for messages."""

    __slots__ = ("kind", "node", "span")

    def __init__(self, kind: str, node, span):
        self.kind = kind
        self.node = node
        self.span = span if getattr(node, "span", None) is None else node.span

    def describe(self) -> str:
        """Where the access is, for a message: the source position, else the node in script form.
        """
        if self.span is not None:
            return f"at {self.span}"
        from ..ir.print_expr import ExprPrinter

        printer = ExprPrinter()
        node = self.node
        if self.kind in ("read", "atomic"):
            return f"in `{printer.expr(node)}`"
        if self.kind == "write":
            return f"in `{node.buffer.name}[{printer.indices(node.indices)}] = ...`"
        return f"in {type(node).__name__}"


class RaceMessages:
    """The message half of `RaceChecker` (a mixin: it reads the checker's `names`, `sites`,
    `multi_wg` and `block_multi`)."""

    def _who(self, key: int, wg: int) -> str:
        if key == COLLECTIVE:
            who = "an async copy (retired)"
        else:
            parts = []
            for axis in AXES:
                name = self.names.get(f"threadIdx.{axis}")
                if name is None:
                    continue
                if key & UNBOUND[axis]:
                    parts.append(f"{name}=*")
                else:
                    parts.append(f"{name}={(key >> shift(axis)) & MASK}")
            if parts:
                noun = "threads" if key & MULTI else "thread"
                who = f"{noun} ({', '.join(parts)})"
            else:
                who = "several threads" if key & MULTI else "the invocation"
        if self.multi_wg:
            if wg == ALL:
                who = "every workgroup" if who == "the invocation" else \
                    who + " of every workgroup"
            else:
                parts = [f"{self.names.get(f'blockIdx.{a}', 'blockIdx.' + a)}="
                         f"{(wg >> shift(a)) & MASK}" for a in AXES if a in self.block_multi]
                who += f" of workgroup ({', '.join(parts)})"
        return who

    def _where(self, site: int) -> str:
        if 0 <= site < len(self.sites):
            return self.sites[site].describe()
        return "at the end of the kernel"

    def _report(self, bb, sh, unit_pos, ratio, first, second, several=False):
        element = element_name(bb, int(unit_pos) // ratio)
        scope = sh.scope
        kind1, key1, wg1, site1 = first
        kind2, key2, wg2, site2 = second
        verb = {"read": "read", "write": "written", "atomic": "updated atomically"}
        if several:
            name = next((self.names[t] for t in ("threadIdx.x", "threadIdx.y", "threadIdx.z")
                         if t in self.names), None)
            hint = f" (let one of them do it, e.g. under `if {name} == 0:`)" if name else ""
            msg = (f"data race on {scope} buffer {element}: written by several invocations "
                   f"({self._who(key2, wg2)}) {self._where(site2)}: each stores to the same "
                   f"element{hint}")
        else:
            if wg1 != wg2 and NONE not in (wg1, wg2) or ALL in (wg1, wg2):
                why = ("in different workgroups (nothing orders the workgroups of a "
                       "dispatch)")
            else:
                why = "with no T.barrier() between"
            msg = (f"data race on {scope} buffer {element}: {verb[kind1]} by "
                   f"{self._who(key1, wg1)} {self._where(site1)} and {verb[kind2]} by "
                   f"{self._who(key2, wg2)} {self._where(site2)} {why}")
        hint = self._atomic_hint(site1) if kind1 == kind2 == "write" and site1 == site2 else ""
        raise DataRaceError(msg + hint)

    def _atomic_hint(self, site: int) -> str:
        """A hint when invocations race storing to one element from its own value (`h[i] += 1`
        at the same statement): an atomic does that."""
        from ..ir.expr import BufferLoad
        from ..ir.stmt import BufferStore
        from ..ir.traversal import walk

        node = self.sites[site].node if 0 <= site < len(self.sites) else None
        if isinstance(node, BufferStore) and any(
                isinstance(n, BufferLoad) and n.buffer.data is node.buffer.data
                for n in walk(node.value)):
            return (f" (a read-modify-write of {node.buffer.name}: to update an element from "
                    f"several invocations use an atomic, e.g. "
                    f"T.atomic_add({node.buffer.name}[...], v))")
        return ""


def element_name(bb, flat: int) -> str:
    """`name[i, j]` for flat position `flat` of `bb`'s view (lanes named when vector)."""
    lanes = bb.lanes
    elem, lane = divmod(flat, lanes)
    rel = elem - bb.offset_int
    idx = []
    for st in bb.strides_int:
        if st <= 0:
            idx = None
            break
        i, rel = divmod(rel, st)
        idx.append(i)
    if idx is None or rel != 0 or not all(0 <= i < s for i, s in zip(idx, bb.shape)):
        text = f"{bb.name}[element {elem}]"
    else:
        text = f"{bb.name}[{', '.join(map(str, idx))}]"
    return text + (f" (lane {lane})" if lanes > 1 else "")
