"""A sweep of every vkir atomic on the device: does the driver compile it, and does it compute
what vkir defines?

`python -m benchmarks.atomic_sweep [--only SUBSTRING ...] [--no-quirks] [--json FILE]` (the device
from VKIR_DEVICE, VKIR_VALIDATION=1 to collect validation messages) builds one small kernel per case,
    atomic op (vkir.ir.op.ATOMIC_BINARY and atomic_compare_exchange) x element dtype (int32,
    uint32, int64, uint64, float32) x memory ("global": a storage buffer, "shared": workgroup
    memory, "image": an r32ui/r32i storage image, 32-bit integers only) x context,
where the context says which element each invocation updates ("own": its own, "one": all on one
element, "few": i % 3 or i % 4), whether the old value is stored, ignored or carried through a
T.serial loop (a local accumulator feeding the next trip's operand), and the layout:
    straight, ignored, if (under a lane-dependent condition), loop, loop_if (carried),
    contend, contend_ignored, contend_if, contend_loop (all on one element),
    2d (5 x 4 workgroups: x not a multiple of any subgroup size), 2d_contend, groups (16
    workgroups of 8 on four elements), idle_loop, idle_contend_loop (a loop that only the first
    12 invocations of each 32-wide workgroup enter, with a trip count known at run time: whole
    8-lane rows skip it, as the out-of-bounds rows of a small grid do; llvmpipe before Mesa 25
    stopped such workgroups in the loop's second trip, quirk memory_barrier_ends_loops).
Combinations vkir does not define (float and/or/xor/sub/exchange/compare-exchange; float32 or
64-bit atomics on a device without the feature) must be refused with an UnsupportedError naming
the Vulkan feature: the sweep records the message ("rejected") and a refusal that does not name
the feature with its detail starting "IMPRECISE".

Compared (docs/semantics.md, "Atomics"): every final element value whose updates commute (add,
sub, min, max, and, or, xor; exchange and compare-exchange on an element one invocation updates),
exactly, against vkir.interpret; float values are small integers, so float sums are exact in any
order. Old values where one invocation updates the element: exactly. Under contention the order
is undefined, so only what every order implies is checked: add/sub/exchange (distinct
contributions) olds form one chain from the initial to the final value; compare-exchange (all
expecting the initial value) has exactly one winner that saw it, the others see the winner's
value; min/max olds lie between the initial and final value and are values the element held;
or/and olds hold the initial bits and lie within the final ones (and the reverse). xor olds are
not checked. Crash isolation, confirmation and the table: benchmarks.case_runner.

Outcomes: ok, mismatch, crash, validation, rejected, timeout. --only keeps the cases whose name
contains one of the given substrings ("a+b": both a and b).
"""

from __future__ import annotations


import numpy as np

from benchmarks.case_runner import command_line

K = 3                      # loop trips
OPS = ("atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_and", "atomic_or",
       "atomic_xor", "atomic_exchange", "atomic_compare_exchange")
DTYPES = ("int32", "uint32", "int64", "uint64", "float32")
MEMORIES = ("global", "shared", "image")
# context -> (address, old value, loop, condition, layout)
CONTEXTS = {
    "straight": ("own", "used", False, False, "1d"),
    "ignored": ("own", "ignored", False, False, "1d"),
    "if": ("own", "used", False, True, "1d"),
    "loop": ("own", "carried", True, False, "1d"),
    "loop_if": ("own", "carried", True, True, "1d"),
    "contend": ("one", "used", False, False, "1d"),
    "contend_ignored": ("one", "ignored", False, False, "1d"),
    "contend_if": ("one", "used", False, True, "1d"),
    "contend_loop": ("one", "ignored", True, False, "1d"),
    "2d": ("own", "used", False, False, "2d"),
    "2d_contend": ("few", "used", False, False, "2d"),
    "groups": ("few", "used", False, False, "groups"),
    "idle_loop": ("own", "carried", True, False, "idle"),
    "idle_contend_loop": ("one", "ignored", True, False, "idle"),
}
_LAYOUT = {"1d": (3, 32), "2d": (3, 20), "groups": (16, 8), "idle": (K, 32)}   # workgroups, width
_FEW = {"1d": 3, "2d": 3, "groups": 4, "idle": 3}
IDLE = 12   # the invocations of each workgroup that run the "idle" layout's loop


def cases():
    """Every case name: op:dtype:memory:context."""
    out = []
    for op in OPS:
        for dt in DTYPES:
            for mem in MEMORIES:
                if mem == "image" and dt not in ("int32", "uint32"):
                    continue
                out += [f"{op}:{dt}:{mem}:{ctx}" for ctx in CONTEXTS]
    return out


class _Case:
    def __init__(self, case: str):
        self.op, self.dt, self.mem, self.ctx = case.split(":")
        self.addr, self.old, self.loop, self.cond, self.layout = CONTEXTS[self.ctx]
        self.groups, self.width = _LAYOUT[self.layout]
        self.n = self.groups * self.width
        self.kind = self.op[len("atomic_"):]

    def addresses(self) -> np.ndarray:
        """The element each invocation updates, as (workgroup-or-0, index) keys: shared
        elements belong to their workgroup."""
        i = np.arange(self.n)
        t = i % self.width
        local = {"own": t, "one": 0 * t, "few": t % _FEW[self.layout]}[self.addr]
        if self.mem == "shared":
            return (i // self.width) * self.width + local
        return {"own": i, "one": 0 * i, "few": i % _FEW[self.layout]}[self.addr]

    def active(self, k: int) -> np.ndarray:
        t = np.arange(self.n) % self.width
        if self.layout == "idle":
            return t < IDLE
        return (t + k) % 3 != 0 if self.cond else np.ones(self.n, bool)


def source(case: str) -> str:
    """The T script of one case."""
    c = _Case(case)
    dt = c.dt
    k = "k" if c.loop else "1"
    if c.mem == "image":
        fmt = "r32ui" if dt == "uint32" else "r32i"
        target_param = f'C: T.Image(({c.n},), "{fmt}")'
    else:
        target_param = f'C: T.Buffer(({c.n},), "{dt}")'
    few = _FEW[c.layout]
    if c.mem == "shared":
        elem = {"own": "S[t]", "one": "S[0]", "few": f"S[t % {few}]"}[c.addr]
    else:
        elem = {"own": "C[i]", "one": "C[0]", "few": f"C[i % {few}]"}[c.addr]
    value = "A[i]"
    if c.old == "carried":
        value = "A[i] + acc[0]"
    elif c.loop:
        value = f'A[i] + T.cast(k, "{dt}")'
    if c.op == "atomic_compare_exchange":
        expected = "acc[0]" if c.old == "carried" else "E[i]"
        desired = f'A[i] + T.cast(k, "{dt}")' if c.old == "carried" else value
        args = f"{expected}, {desired}"
    else:
        args = value
    call = f"T.{c.op}({elem}, {args})"
    body = {"used": [f"O[i] = {call}"], "ignored": [call], "carried": [f"acc[0] = {call}"]}[c.old]
    if c.cond:
        body = [f"if (t + {k}) % 3 != 0:"] + ["    " + b for b in body]
    if c.loop:
        # the idle layout's trip count is known only at run time (A's size n = K * 32 is a
        # push constant): llvmpipe's early exit needs such a loop, a constant one is unrolled
        trips = f"n // {c.width}" if c.layout == "idle" else f"{K}"
        body = [f"for k in T.serial({trips}):"] + ["    " + b for b in body]
    if c.old == "carried":
        first = "E[i]" if c.op == "atomic_compare_exchange" else f'T.cast(0, "{dt}")'
        body = [f'acc = T.alloc_buffer((1,), "{dt}", scope="local")', f"acc[0] = {first}"] + \
            body + ["O[i] = acc[0]"]
    if c.layout == "idle":   # whole rows of the workgroup skip the loop (not its barriers)
        body = [f"if t < {IDLE}:"] + ["    " + b for b in body]
    if c.mem == "shared":
        body = ["S[t] = C[i]", "T.barrier()"] + body + ["T.barrier()", "C[i] = S[t]"]
    size = '"n"' if c.layout == "idle" else c.n
    lines = [
        "@T.prim_func",
        f'def sweep(A: T.Buffer(({size},), "{dt}"), E: T.Buffer(({c.n},), "{dt}"),',
        f'          {target_param}, O: T.Buffer(({c.n},), "{dt}")):',
        f'    for bx in T.thread_binding({c.groups}, thread="blockIdx.x"):',
    ]
    pad = " " * 8
    if c.mem == "shared":
        lines.append(pad + f'S = T.alloc_buffer(({c.width},), "{dt}", scope="shared")')
    if c.layout == "2d":
        lines += [pad + 'for ty in T.thread_binding(4, thread="threadIdx.y"):',
                  pad + '    for tx in T.thread_binding(5, thread="threadIdx.x"):',
                  pad + "        t = ty * 5 + tx"]
        pad += " " * 8
    else:
        lines.append(pad + f'for t in T.thread_binding({c.width}, thread="threadIdx.x"):')
        pad += " " * 4
    lines += [pad + f"i = bx * {c.width} + t"] + [pad + b for b in body]
    return "\n".join(lines) + "\n"


def _values(c: _Case, rng, count: int) -> np.ndarray:
    """Operands: distinct where chains are checked, full-range bits for min/max/and/or/xor."""
    dt = np.dtype(c.dt)
    if dt.kind == "f":
        if c.kind in ("min", "max"):
            return rng.integers(-1000, 1000, count).astype(dt)
        return rng.permutation(np.arange(1, count + 1)).astype(dt)   # small integers: exact sums
    info = np.iinfo(dt)
    if c.kind in ("add", "sub", "exchange", "compare_exchange"):
        step = (1 << 32) + 1 if dt.itemsize == 8 else 1            # 64-bit: carries into the high word
        return (rng.permutation(np.arange(1, count + 1)) * step + (step - 1) * 3).astype(dt)
    return rng.integers(info.min, info.max, count, dtype=dt, endpoint=True)


def inputs(case: str):
    """A, E (expected values), C (the updated elements' initial values), O (old values)."""
    c = _Case(case)
    rng = np.random.default_rng(11)
    dt = np.dtype(c.dt)
    a = _values(c, rng, c.n)
    init = _values(c, rng, c.n)
    if c.kind in ("add", "sub"):
        init = np.full(c.n, (1 << 32) - 500 if dt.itemsize == 8 else 1 << 20, dt)
    if c.kind in ("exchange", "compare_exchange"):   # distinct from every operand
        init = (-np.arange(1, c.n + 1)).astype(dt) if dt.kind != "u" else \
            (dt.type(np.iinfo(dt).max) - np.arange(c.n, dtype=dt))
    addr = c.addresses()
    e = init[addr].copy()
    if c.addr == "own":
        e[1::2] += dt.type(1)   # odd invocations expect another value: their exchange fails
    o = np.full(c.n, 77, dt)
    if c.mem == "image":
        init = init.reshape(c.n, 1)
    return a, e, init, o


def _chain(kind, init, final, olds, vals) -> str:
    """'' where the olds of one element's updates are explainable by some order, else why not."""
    if kind in ("add", "sub", "exchange"):
        left = {}
        for o, v in zip(olds.tolist(), vals.tolist()):
            left.setdefault(o, []).append(v)
        cur = init
        for _ in range(len(olds)):
            nxt = left.get(cur)
            if not nxt:
                return f"no update saw {cur!r} (olds {sorted(left)[:4]}...)"
            v = nxt.pop()
            cur = {"add": lambda: np.add(cur, v, dtype=olds.dtype),
                   "sub": lambda: np.subtract(cur, v, dtype=olds.dtype),
                   "exchange": lambda: olds.dtype.type(v)}[kind]()
            cur = cur.item() if hasattr(cur, "item") else cur
        return "" if cur == final else f"chain ends at {cur!r}, element holds {final!r}"
    if kind == "compare_exchange":   # all expected `init`
        winners = olds == init
        if winners.sum() != 1:
            return f"{int(winners.sum())} updates saw the initial value"
        if final != vals[winners][0] or not (olds[~winners] == final).all():
            return f"winner wrote {vals[winners][0]!r}, element {final!r}, olds {olds[:4]}"
        return ""
    if kind in ("min", "max"):
        lo, hi = (final, init) if kind == "min" else (init, final)
        held = set(vals.tolist()) | {init}
        if not ((olds >= lo) & (olds <= hi)).all() or not set(olds.tolist()) <= held:
            return f"olds {olds[:4]} outside [{lo!r}, {hi!r}] or never held"
        return ""
    if kind in ("or", "and"):
        big, small = (olds.dtype.type(x) for x in ((final, init) if kind == "or" else (init, final)))
        if ((olds & small) != small).any() or ((olds & ~big) != 0).any():
            return f"olds {olds[:4]} not between {small!r} and {big!r} bitwise"
    return ""


def compare(case: str, got, want, a, e, init) -> list:
    """What vkir defines of the results that the device got wrong: a list of messages."""
    c = _Case(case)
    bad = []
    g_c, w_c = got[2].ravel(), want[2].ravel()
    addr = c.addresses()
    trips = range(K) if c.loop else (1,)
    act = np.zeros(c.n, bool)
    for k in trips:
        act |= c.active(k)
    single = c.addr == "own"
    commutes = c.kind not in ("exchange", "compare_exchange")
    if single or commutes:
        diff = np.flatnonzero(g_c != w_c)
        if diff.size:
            bad.append(f"final C[{diff[0]}] device {g_c[diff[0]]!r} interp {w_c[diff[0]]!r} "
                       f"({diff.size} differ)")
    if single or c.old == "ignored":   # olds (or their absence) are defined
        diff = np.flatnonzero(got[3] != want[3])
        if diff.size:
            bad.append(f"O[{diff[0]}] device {got[3][diff[0]]!r} interp {want[3][diff[0]]!r} "
                       f"({diff.size} differ)")
        return bad
    for where in np.unique(addr[act]):
        who = np.flatnonzero((addr == where) & act)
        final = g_c[where].item()
        if not commutes:   # the final value is one invocation's operand
            operands = np.concatenate([a[who] + np.asarray(k if c.loop else 0).astype(a.dtype)
                                       for k in trips])
            if final not in operands.tolist():
                bad.append(f"element {where}: final {final!r} is no invocation's operand")
        if c.old != "used":
            continue
        why = _chain(c.kind, init.ravel()[where].item(), final, got[3][who], a[who])
        if why:
            bad.append(f"element {where}: {why}")
    if not (got[3][~act] == 77).all():
        bad.append("an inactive invocation wrote its old value")
    return bad


def run_case(case: str, device) -> dict:
    """One case in this process: {"case", "outcome", "detail"}."""
    import vkir
    from vkir import runtime
    from vkir.errors import UnsupportedError, VkirError

    try:
        func = vkir.from_script(source(case))
        kernel = vkir.build(func, device=device)
    except UnsupportedError as err:
        text = str(err)
        precise = any(w in text for w in ("needs the device feature '", "no Vulkan instruction",
                                          "image atomics need", "on an image texel"))
        return {"case": case, "outcome": "rejected",
                "detail": ("" if precise else "IMPRECISE ") + f"{type(err).__name__}: {text}"}
    except VkirError as err:   # the type checker: an op the element type does not have
        precise = "needs a buffer element of type" in str(err)
        return {"case": case, "outcome": "rejected",
                "detail": ("" if precise else "IMPRECISE ") + f"{type(err).__name__}: {err}"}
    a, e, init, o = inputs(case)
    want = [a.copy(), e.copy(), init.copy(), o.copy()]
    got = [a.copy(), e.copy(), init.copy(), o.copy()]
    try:
        vkir.interpret(func, *want)
    except VkirError as err:
        return {"case": case, "outcome": "rejected", "detail": f"IMPRECISE interpreter: {err}"}
    kernel(*got)
    messages = runtime.validation_messages()
    if messages:
        return {"case": case, "outcome": "validation", "detail": "; ".join(messages[:2])}
    bad = compare(case, got, want, a, e, init)
    if bad:
        return {"case": case, "outcome": "mismatch", "detail": "; ".join(bad[:3])}
    return {"case": case, "outcome": "ok", "detail": ""}


def main(argv=None) -> None:
    """Command line: see the module docstring."""
    command_line(argv, __doc__, "benchmarks.atomic_sweep", cases, run_case, source,
                 {"op:dtype:memory": lambda case: ":".join(case.split(":")[:3])})

if __name__ == "__main__":
    main()
