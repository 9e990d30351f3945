"""The state the interpreter's closures run on: a `Frame` holds the slot values of the invocations
executing in lockstep (vkir.interpreter.compiler), a `RunState` what one interpretation shares
(async queues, per-invocation storages, the race checker)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from .errors import InterpreterError


class RunState:
    """Mutable state of one interpretation: async queues, live per-invocation storages, and the
    race checker (`races`, a RaceChecker, or None when races are not checked)."""

    __slots__ = ("queues", "group", "local_storages", "value_ndims", "committed", "races",
                 "subgroup_size", "extents")

    def __init__(self, value_ndims: list, races=None, subgroup_size: int = 32):
        self.subgroup_size = subgroup_size
        self.extents = {"x": 1, "y": 1, "z": 1}  # largest threadIdx extents seen (linear ids)
        self.queues = defaultdict(list)
        self.group = None
        self.local_storages = []
        self.value_ndims = value_ndims
        self.committed = []
        self.races = races

    def finish(self):
        """Retire every group still in flight, oldest first."""
        for group in self.committed:
            group.retire(self.races)
        self.committed = []
        self.queues.clear()


class Frame:
    """Slot values of the active invocations: `tid` is None for a single uniform invocation, else
    the ids (rows of local storage) of the K active invocations. `key` identifies the
    invocations for the race checker (an int, or one per row: see races.py). `coords` holds the
    threadIdx (x, y, z) of each row (shape (K, 3)), for subgroup operations."""

    __slots__ = ("slots", "tid", "state", "group_size", "key", "coords", "wgrow")

    def __init__(self, slots: list, tid, state: RunState, group_size: int = 1, key=0,
                 coords=None, wgrow=None):
        self.slots = slots
        self.tid = tid
        self.state = state
        self.group_size = group_size  # invocations of the workgroup (active or not)
        self.key = key
        self.coords = coords
        self.wgrow = wgrow   # each row's workgroup where workgroups run together (merge.py)

    def subset(self, mask) -> "Frame":
        """The frame restricted to the invocations where `mask` holds."""
        mask = np.flatnonzero(mask)   # found once, then a gather per value
        nds = self.state.value_ndims
        slots = [v[mask] if nd >= 0 and v is not None and v.ndim > nd else v
                 for v, nd in zip(self.slots, nds)]
        key = self.key[mask] if self.key.__class__ is np.ndarray else self.key
        coords = self.coords[mask] if self.coords is not None else None
        wgrow = self.wgrow[mask] if self.wgrow is not None else None
        return Frame(slots, self.tid[mask], self.state, self.group_size, key, coords, wgrow)

    def take(self, owner) -> "Frame":
        """A frame of len(owner) invocations, invocation c copying the values of owner[c]."""
        nds = self.state.value_ndims
        slots = [v[owner] if nd >= 0 and v is not None and v.ndim > nd else v
                 for v, nd in zip(self.slots, nds)]
        coords = self.coords[owner] if self.coords is not None else None
        wgrow = self.wgrow[owner] if self.wgrow is not None else None
        return Frame(slots, None, self.state, len(owner), coords=coords, wgrow=wgrow)



def is_uniform(value) -> bool:
    """Whether `value` is one value for every invocation (a scalar, not one row per invocation)."""
    return np.ndim(value) == 0


def need_uniform(value, what: str):
    """`value`, which must be uniform; InterpreterError naming `what` where it differs between
    invocations."""
    if np.ndim(value) != 0:
        raise InterpreterError(f"{what} differs between invocations")
    return value
