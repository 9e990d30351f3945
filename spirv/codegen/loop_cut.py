"""Loop-cut checks in codegen: a loop that a driver may stop early (llvmpipe's loop limit) reports
it after it exits.

The driver's loop-cut instrumentation (vkir.driver.loop_cut) gives a kernel an int32 parameter
buffer named RECORD and marks each `For` loop it wants checked with the annotation SITE (the
loop's site number). Codegen keeps `done`, one past the last iteration that ran (the end before
the first), stored at the end of each iteration's body, and emits after the loop
`if done < end: claim(site)`: a serial loop leaves only at its end, so iterations short of it
mean the driver cut the loop. `claim` writes site + 1 into the record's first word unless a
report is there already (the first cut wins). The check costs a store per iteration (a register
once the driver promotes the variable) and one compare after the loop.

Not the loop variable itself: llvmpipe cuts a loop at its back edge, and its compiler may reuse
the loop header's last `i < end` for an equal test after the loop, which is stale after a cut
at the very last iteration (a false report of a loop that ran whole).
"""

from __future__ import annotations

from vkir.ir import BufferLoad, Call, DataType, Evaluate, IntImm

SITE = "vkir.loop_cut_site"   # For annotation: the loop's site number (int)
RECORD = "vkir_loop_record"   # the int32 parameter buffer the reports go to
INT32 = DataType("int", 32)


def record_buffer(func):
    """The parameter buffer named RECORD of `func`, or None when it has none."""
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is not None and buf.name == RECORD:
            return buf
    return None


def claim(record, site: int):
    """The statement that records loop `site` as cut, unless another report came first."""
    return Evaluate(Call(INT32, "atomic_compare_exchange",
                         (BufferLoad(record, (IntImm(INT32, 0),)), IntImm(INT32, 0),
                          IntImm(INT32, site + 1))))
