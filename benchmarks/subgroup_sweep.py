"""A sweep of every vkir subgroup operation on the device: does the driver compile it, and does it
compute the interpreter's result?

`python -m benchmarks.subgroup_sweep [--only SUBSTRING ...] [--no-quirks] [--json FILE]` (the device from
VKIR_DEVICE, VKIR_VALIDATION=1 to collect validation messages) builds one small kernel per case,
    subgroup op (vkir.ir.op.SUBGROUP_OPS) x operand dtype (int32, uint32, float32, float32x4,
    int32x4, bool, where the op takes it) x context x lane operand (broadcast and shuffles:
    a constant or one read from a buffer),
where the context is where the operand is computed and the operation runs: "straight" (straight-line
code), "loop" (inside a T.serial loop, the operand depending on the loop variable), "if" (under
a lane-dependent condition: non-uniform control flow), "loop_if" (both), "acc" (in the loop,
the result added to a local accumulator carried to the next iteration), "acc_if" (the same
under the condition), "uniform" and "uniform_acc" (an operand that is one value per workgroup),
"partial" and "partial_acc" (13-invocation workgroups: a partial last subgroup) or "2d" (a 4 x 8
workgroup, subgroups spanning its rows). Each case runs on the
device and in vkir.interpret at the kernel's subgroup size, on the same inputs, and the outputs
are compared where vkir defines them: a shuffle or broadcast from an inactive or out-of-range lane
has no defined value (docs/semantics.md), so those elements are left out; floats within
vkir.device_check's tolerance (subgroup sums may combine in another order).

Why a child process: a driver that cannot compile a shader may abort the whole process (llvmpipe's
"LLVM ERROR: Cannot select"). Cases run in child processes (benchmarks.case_runner): a crash is
recorded for the case that was running, confirmed alone in a fresh child, and the sweep goes on.

Outcomes: ok, mismatch, crash, validation (a validation-layer message), rejected (vkir refused the
combination with a precise error), timeout. The table printed at the end counts them per op.
"""

from __future__ import annotations


import numpy as np

from benchmarks.case_runner import command_line

G, K = 2, 3                 # workgroups, loop trips
DTYPES = ("int32", "uint32", "float32", "float32x4", "int32x4", "bool")
CONTEXTS = ("straight", "loop", "if", "loop_if", "acc", "acc_if", "uniform", "uniform_acc",
            "partial", "partial_acc", "2d")
_NO_OPERAND = ("subgroup_size", "subgroup_invocation_id", "subgroup_id", "num_subgroups",
               "subgroup_elect")
_VOTES = ("subgroup_all", "subgroup_any", "subgroup_ballot")
_LANE_OPS = {"subgroup_broadcast": 1, "subgroup_shuffle": 3, "subgroup_shuffle_xor": 1,
             "subgroup_shuffle_up": 1, "subgroup_shuffle_down": 2}   # op -> constant lane


def _dtypes_of(op: str):
    if op in _NO_OPERAND:
        return ("-",)
    if op in _VOTES:
        return ("bool",)
    if op in _LANE_OPS or op == "subgroup_broadcast_first":
        return DTYPES
    kind = op.rsplit("_", 1)[-1]
    if kind in ("and", "or", "xor"):
        return ("int32", "uint32", "int32x4", "bool")
    return ("int32", "uint32", "float32", "float32x4", "int32x4")


def cases():
    """Every case name: op:dtype:context[:const|:dyn]."""
    from vkir.ir.op import SUBGROUP_OPS

    out = []
    for op in SUBGROUP_OPS:
        for dt in _dtypes_of(op):
            for ctx in CONTEXTS:
                for lane in (("const", "dyn") if op in _LANE_OPS else ("",)):
                    out.append(":".join(p for p in (op, dt, ctx, lane) if p))
    return out


def _parse(case: str):
    parts = case.split(":")
    return parts[0], parts[1], parts[2], (parts[3] if len(parts) > 3 else "")


class _Shape:
    """The kernel's geometry and structure for a context."""

    def __init__(self, ctx: str):
        self.width = 13 if ctx.startswith("partial") else 32      # invocations per workgroup
        self.n = self.width * G
        self.two_d = ctx == "2d"
        self.acc = ctx.endswith("acc") or ctx.startswith("acc")
        self.loop = self.acc or ctx.startswith("loop")
        self.cond = ctx.endswith("if")
        self.uniform = ctx.startswith("uniform")
        self.trips = K if self.loop and not self.acc else 1


def _lanes(dt: str) -> int:
    return 4 if dt.endswith("x4") else 1


def _result_dtype(op: str, dt: str) -> str:
    if op in ("subgroup_size", "subgroup_invocation_id", "subgroup_id", "num_subgroups"):
        return "int32"
    if op in ("subgroup_elect", "subgroup_all", "subgroup_any"):
        return "bool"
    if op == "subgroup_ballot":
        return "uint32x4"
    return dt


def _condition(t, k):
    """Where the `if` contexts run the operation (t: local index, k: trip or 1)."""
    return (t + k) % 3 != 0


def source(case: str) -> str:
    """The T script of one case."""
    op, dt, ctx, lane = _parse(case)
    sh = _Shape(ctx)
    lanes = _lanes(dt)
    elem = {"bool": "int32", "-": "int32"}.get(dt, dt.split("x")[0])
    k = "k" if sh.loop else "1"
    at = "bx" if sh.uniform else "i"      # uniform: one value per workgroup
    idx = at if lanes == 1 else f"T.ramp({at} * 4, 1, 4)"
    a = f"A[{idx}]"
    kk = f'T.cast({k}, "{elem}")'
    if lanes > 1:
        kk = f"T.broadcast({kk}, 4)"
    value = {"int32": f"{a} * 3 + {kk}", "uint32": f"{a} * T.uint32(3) + {kk}",
             "float32": f"{a} * {a} + {kk}", "float32x4": f"{a} * {a} + {kk}",
             "int32x4": f"{a} * 3 + {kk}", "bool": f"(A[{at}] + {k}) % 3 == 0", "-": ""}[dt]
    args = [value] if value else []
    if op in _LANE_OPS:
        if lane == "const":
            args.append(str(_LANE_OPS[op]))
        else:
            args.append(f"B[bx * {sh.width}]" if op == "subgroup_broadcast" else "B[i]")
    call = f"T.{op}({', '.join(args)})"
    rdt = _result_dtype(op, dt)
    rl = 4 if rdt.endswith("x4") else 1
    out_elem = "int32" if rdt == "bool" else rdt.split("x")[0]
    slot = f"{k} * {sh.n} + i" if sh.trips > 1 else "i"
    store_idx = f"({slot})" if rl == 1 else f"T.ramp(({slot}) * 4, 1, 4)"
    rhs = f"T.select({call}, T.int32(1), T.int32(0))" if rdt == "bool" else call
    body = [f"acc[0] = acc[0] + {rhs}" if sh.acc else f"C[{store_idx}] = {rhs}"]
    if sh.cond:
        body = [f"if (t + {k}) % 3 != 0:"] + ["    " + b for b in body]
    if sh.loop:
        body = [f"for k in T.serial({K}):"] + ["    " + b for b in body]
    if sh.acc:   # the result is carried from one iteration to the next
        t = "int32" if rdt == "bool" else rdt
        zero = f'T.cast(0, "{out_elem}")' if rl == 1 else f'T.broadcast(T.cast(0, "{out_elem}"), 4)'
        body = [f'acc = T.alloc_buffer((1,), "{t}", scope="local")', f"acc[0] = {zero}"] + \
            body + [f"C[{store_idx}] = acc[0]"]
    lines = [
        "@T.prim_func",
        f'def sweep(A: T.Buffer(({sh.n * lanes},), "{elem}"), B: T.Buffer(({sh.n},), "int32"),',
        f'          C: T.Buffer(({sh.trips * sh.n * rl},), "{out_elem}")):',
        f'    for bx in T.thread_binding({G}, thread="blockIdx.x"):',
    ]
    pad = " " * 8
    if sh.two_d:   # 8 rows of 4: a subgroup spans rows
        lines += [pad + 'for ty in T.thread_binding(8, thread="threadIdx.y"):',
                  pad + '    for tx in T.thread_binding(4, thread="threadIdx.x"):',
                  pad + "        t = ty * 4 + tx"]
        pad += " " * 8
    else:
        lines += [pad + f'for t in T.thread_binding({sh.width}, thread="threadIdx.x"):']
        pad += " " * 4
    lines += [pad + f"i = bx * {sh.width} + t"] + [pad + b for b in body]
    return "\n".join(lines) + "\n"


def _inputs(case: str, size: int):
    op, dt, ctx, lane = _parse(case)
    sh = _Shape(ctx)
    rng = np.random.default_rng(7)
    count = sh.n * _lanes(dt)
    if dt.startswith("float"):
        a = rng.uniform(0.5, 1.5, count).astype(np.float32)
    elif dt.startswith("uint"):
        a = rng.integers(0, 1 << 32, count, dtype=np.uint64).astype(np.uint32)
    else:
        a = rng.integers(-1000, 1000, count).astype(np.int32)
    b = rng.integers(0, size, sh.n).astype(np.int32)
    rdt = _result_dtype(op, dt)
    rl = 4 if rdt.endswith("x4") else 1
    out = {"bool": np.int32, "-": np.int32}.get(rdt, None) or np.dtype(rdt.split("x")[0])
    c = np.full(sh.trips * sh.n * rl, 77, out)   # kept where the `if` leaves an invocation out
    return a, b, c


def defined(case: str, size: int, b: np.ndarray) -> np.ndarray:
    """Per output element, whether vkir defines it: a shuffle's source lane is active (in the
    workgroup, and inside the `if`) and in range."""
    op, dt, ctx, lane = _parse(case)
    sh = _Shape(ctx)
    rl = 4 if _result_dtype(op, dt).endswith("x4") else 1
    trips = K if sh.loop else 1
    ok = np.ones((trips, sh.n), bool)
    if op in _LANE_OPS:
        i = np.arange(sh.n)
        t = i % sh.width
        own = t % size
        base = i - own
        k_arg = np.full(sh.n, _LANE_OPS[op]) if lane == "const" else (
            b[(i // sh.width) * sh.width] if op == "subgroup_broadcast" else b)
        src = {"subgroup_broadcast": k_arg, "subgroup_shuffle": k_arg,
               "subgroup_shuffle_xor": own ^ k_arg, "subgroup_shuffle_up": own - k_arg,
               "subgroup_shuffle_down": own + k_arg}[op]
        inside = (src >= 0) & (src < size) & (t - own + src < sh.width)
        srci = np.where(inside, base + src, 0)
        for trip in range(trips):
            active = _condition(t, trip if sh.loop else 1) if sh.cond else np.ones(sh.n, bool)
            ok[trip] = inside & active[srci]
    if sh.acc:   # the sum is defined where every term is
        ok = ok.all(axis=0, keepdims=True)
    return np.repeat(ok.ravel(), rl)


def run_case(case: str, device) -> dict:
    """One case in this process: {"case", "outcome", "detail"}."""
    import vkir
    from vkir import runtime
    from vkir.device_check import assert_agree
    from vkir.errors import VkirError

    try:
        func = vkir.from_script(source(case))
        kernel = vkir.build(func, device=device)
    except VkirError as err:
        return {"case": case, "outcome": "rejected", "detail": f"{type(err).__name__}: {err}"}
    size = kernel.subgroup_size or device.info.subgroup_size
    a, b, c = _inputs(case, size)
    want = [a.copy(), b.copy(), c.copy()]
    got = [a.copy(), b.copy(), c.copy()]
    try:
        vkir.interpret(func, *want, subgroup_size=size)
    except VkirError as err:
        return {"case": case, "outcome": "rejected", "detail": f"interpreter: {err}"}
    kernel(*got)
    messages = runtime.validation_messages()
    if messages:
        return {"case": case, "outcome": "validation", "detail": "; ".join(messages[:2])}
    mask = defined(case, size, b)
    try:
        assert_agree(got[2][mask], want[2][mask], "C")
    except AssertionError as err:
        bad = np.flatnonzero(mask)[np.flatnonzero(got[2][mask] != want[2][mask])[:4]]
        sample = ", ".join(f"C[{j}] device {got[2][j]!r} interp {want[2][j]!r}" for j in bad)
        return {"case": case, "outcome": "mismatch",
                "detail": f"{int(mask.sum())} compared; {sample}; {str(err).splitlines()[-1][:120]}"}
    return {"case": case, "outcome": "ok", "detail": f"{int(mask.sum())}/{mask.size} compared"}


def main(argv=None) -> None:
    """Command line: see the module docstring."""
    command_line(argv, __doc__, "benchmarks.subgroup_sweep", cases, run_case, source)

if __name__ == "__main__":
    main()
