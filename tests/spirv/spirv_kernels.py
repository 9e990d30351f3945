"""Hand-built, already-lowered kernels (1-d buffers) used by the SPIR-V backend tests.

Each `k_*` function returns a PrimFunc; `ALL` lists them with the target features they need.
"""

from __future__ import annotations

from vkir.ir import (Add, AllocBuffer, AsyncCommitQueue, AsyncScope, AsyncWaitQueue, Barrier,
                     Broadcast, BufferLoad, BufferStore, Call, Cast, DeclBuffer, Div, EQ,
                     Evaluate, FloorDiv, FloorMod, For, GE, IfThenElse, LT, Let, LetStmt,
                     Max, Min, Mod, Mul, NE, Not, Or, And, PrimFunc, Ramp, Select, Shuffle, Sub,
                     Var, const, decl_buffer, seq)
from vkir.ir import OPS

ALL_FEATURES = frozenset({"float16", "float64", "int8", "int16", "int64", "storage_buffer_8bit",
                          "storage_buffer_16bit"})


def kernel(name, params, body) -> PrimFunc:
    """A PrimFunc from a list of Buffers (buffer parameters) and Vars (scalar parameters)."""
    bmap = {p.data: p for p in params if not isinstance(p, Var)}
    plist = [p if isinstance(p, Var) else p.data for p in params]
    return PrimFunc(plist, body, bmap, {"global_symbol": name})


def grid1d(n, block, body_fn, name="i"):
    """blockIdx.x/threadIdx.x loops over [0, n) with a bounds check; body_fn(i) -> Stmt."""
    bx, tx, i = Var("bx"), Var("tx"), Var(name)
    guarded = IfThenElse(LT(i, n), body_fn(i))
    inner = LetStmt(i, Add(Mul(bx, block), tx), guarded)
    return For(bx, 0, FloorDiv(Add(n, block - 1), block), "thread_binding",
               For(tx, 0, block, "thread_binding", inner, thread="threadIdx.x"),
               thread="blockIdx.x")


def k_vadd():
    n = Var("n")
    a, b, c = (decl_buffer((n,), "float32", x) for x in "ABC")
    return kernel("vadd", [a, b, c], grid1d(n, 64, lambda i: BufferStore(
        c, Add(BufferLoad(a, (i,)), BufferLoad(b, (i,))), (i,))))


def k_saxpy():
    n, alpha = Var("n"), Var("alpha", "float32")
    x = decl_buffer((n,), "float32", "X")
    y = decl_buffer((n,), "float32", "Y")
    return kernel("saxpy", [alpha, x, y], grid1d(n, 128, lambda i: BufferStore(
        y, Add(Mul(alpha, BufferLoad(x, (i,))), BufferLoad(y, (i,))), (i,))))


def k_vec4_buffers():
    """float32x4 element buffers (ArrayStride 16)."""
    n = Var("n")
    a = decl_buffer((n,), "float32x4", "A")
    b = decl_buffer((n,), "float32x4", "B")
    return kernel("vec4_scale", [a, b], grid1d(n, 32, lambda i: BufferStore(
        b, Mul(BufferLoad(a, (i,)), Broadcast(const(2.0, "float32"), 4)), (i,))))


def k_vec3_buffers():
    """float32x3 element buffers: kept as packed scalars in storage."""
    n = Var("n")
    a = decl_buffer((n,), "float32x3", "A")
    b = decl_buffer((n,), "float32x3", "B")
    return kernel("vec3_copy", [a, b], grid1d(n, 32, lambda i: BufferStore(
        b, Add(BufferLoad(a, (i,)), BufferLoad(a, (i,))), (i,))))


def k_ramp_scalar_buffer():
    """A[Ramp(4i, 1, 4)] on a scalar buffer: one access per lane, never a wider access."""
    n = Var("n")
    a = decl_buffer((n,), "float32", "A")
    b = decl_buffer((n,), "float32", "B")
    return kernel("ramp_copy", [a, b], grid1d(FloorDiv(n, 4), 64, lambda i: BufferStore(
        b, Add(BufferLoad(a, (Ramp(Mul(i, 4), 1, 4),)), Broadcast(const(1.0, "float32"), 4)),
        (Ramp(Mul(i, 4), 1, 4),))))


def k_ramp_vector_buffer():
    """A float32x2 buffer indexed by a 2-lane Ramp: 4 lanes per access (N*M rule)."""
    n = Var("n")
    a = decl_buffer((n,), "float32x2", "A")
    b = decl_buffer((n,), "float32x2", "B")
    idx = lambda i: Ramp(Mul(i, 2), 1, 2)  # noqa: E731
    return kernel("ramp_vec2", [a, b], grid1d(FloorDiv(n, 2), 64, lambda i: BufferStore(
        b, Call("float32x4", "sqrt", (BufferLoad(a, (idx(i),)),)), (idx(i),))))


def k_gather():
    """A non-Ramp vector index (gather) and a strided Ramp with a symbolic stride."""
    n, s = Var("n"), Var("s")
    a = decl_buffer((n,), "int32", "A")
    idx = decl_buffer((n,), "int32x4", "Idx")
    out = decl_buffer((n,), "int32x4", "Out")
    return kernel("gather", [s, a, idx, out], grid1d(n, 64, lambda i: BufferStore(
        out, Add(BufferLoad(a, (BufferLoad(idx, (i,)),)),
                 BufferLoad(a, (Ramp(i, s, 4),))), (i,))))


def k_pointer_cast():
    """An explicit pointer cast: A (float32) read as float32x4 through a DeclBuffer."""
    n = Var("n")
    a = decl_buffer((n,), "float32", "A")
    b = decl_buffer((n,), "float32", "B")
    a4 = decl_buffer((FloorDiv(n, 4),), "float32x4", "A_x4", data=a.data)
    b4 = decl_buffer((FloorDiv(n, 4),), "float32x4", "B_x4", data=b.data)
    body = grid1d(FloorDiv(n, 4), 64, lambda i: BufferStore(
        b4, Add(BufferLoad(a4, (i,)), Broadcast(BufferLoad(a, (Mul(i, 4),)), 4)), (i,)))
    return kernel("cast_x4", [a, b], DeclBuffer(a4, DeclBuffer(b4, body)))


def k_flatten_view():
    """A 2-d parameter flattened through a same-dtype DeclBuffer view (no new binding)."""
    m, n = Var("m"), Var("n")
    a = decl_buffer((m, n), "float32", "A")
    b = decl_buffer((m, n), "float32", "B")
    a1 = decl_buffer((Mul(m, n),), "float32", "A_flat", data=a.data)
    b1 = decl_buffer((Mul(m, n),), "float32", "B_flat", data=b.data)
    body = grid1d(Mul(m, n), 64, lambda i: BufferStore(
        b1, Call("float32", "exp", (BufferLoad(a1, (i,)),)), (i,)))
    return kernel("flat_exp", [a, b], DeclBuffer(a1, DeclBuffer(b1, body)))


def k_2d_param():
    """A 2-d parameter buffer accessed with two indices (row-major), blockIdx.y/threadIdx.y."""
    m, n = Var("m"), Var("n")
    a = decl_buffer((m, n), "float32", "A")
    b = decl_buffer((n, m), "float32", "B")
    by, bx, ty, tx = Var("by"), Var("bx"), Var("ty"), Var("tx")
    r, c = Var("r"), Var("c")
    store = IfThenElse(And(LT(r, m), LT(c, n)),
                       BufferStore(b, BufferLoad(a, (r, c)), (c, r)))
    body = LetStmt(r, Add(Mul(by, 8), ty), LetStmt(c, Add(Mul(bx, 8), tx), store))
    for var, ext, tag in ((tx, 8, "threadIdx.x"), (ty, 8, "threadIdx.y"),
                          (bx, FloorDiv(Add(n, 7), 8), "blockIdx.x"),
                          (by, FloorDiv(Add(m, 7), 8), "blockIdx.y")):
        body = For(var, 0, ext, "thread_binding", body, thread=tag)
    return kernel("transpose", [a, b], body)


def k_shared_reduce():
    """Workgroup sum with shared memory, barriers, and a serial tree loop."""
    n = Var("n")
    a = decl_buffer((n,), "float32", "A")
    out = decl_buffer((n,), "float32", "Out")
    sh = decl_buffer((64,), "float32", "partial", scope="shared")
    bx, tx, k = Var("bx"), Var("tx"), Var("k")
    i = Add(Mul(bx, 64), tx)
    load = BufferStore(sh, Call("float32", "if_then_else",
                                (LT(i, n), BufferLoad(a, (i,)), const(0.0, "float32"))), (tx,))
    step = Var("step")
    tree = For(k, 0, 6, "serial", LetStmt(step, Call("int32", "shift_right",
                                                     (const(32, "int32"), k)), seq(
        IfThenElse(LT(tx, step), BufferStore(sh, Add(BufferLoad(sh, (tx,)),
                                                     BufferLoad(sh, (Add(tx, step),))), (tx,))),
        Barrier())))
    write = IfThenElse(EQ(tx, 0), BufferStore(out, BufferLoad(sh, (0,)), (bx,)))
    body = For(bx, 0, FloorDiv(Add(n, 63), 64), "thread_binding", For(
        tx, 0, 64, "thread_binding", AllocBuffer(sh, seq(load, Barrier(), tree, write)),
        thread="threadIdx.x"), thread="blockIdx.x")
    return kernel("block_sum", [a, out], body)


def k_local_loops():
    """A local array, serial / unrolled / vectorized loops, and a LetStmt chain."""
    n = Var("n")
    a = decl_buffer((n,), "int32", "A")
    acc = decl_buffer((4,), "int32", "acc", scope="local")
    j, k, v = Var("j"), Var("k"), Var("v")

    def body(i):
        fill = For(j, 0, 4, "unrolled", BufferStore(acc, Mul(j, i), (j,)))
        summ = For(k, 1, 3, "serial", BufferStore(
            acc, Add(BufferLoad(acc, (0,)), BufferLoad(acc, (k,))), (0,)))
        vec = For(v, 0, 2, "vectorized", BufferStore(acc, Sub(BufferLoad(acc, (v,)), 1), (v,)))
        return AllocBuffer(acc, seq(fill, summ, vec, BufferStore(a, BufferLoad(acc, (0,)), (i,))))
    return kernel("local_loops", [a], grid1d(n, 64, body))


def k_int_ops():
    """Integer division/modulo of every flavour, min/max, bitwise ops, on int32 and uint32."""
    n = Var("n")
    a = decl_buffer((n,), "int32", "A")
    b = decl_buffer((n,), "int32", "B")
    u = decl_buffer((n,), "uint32", "U")
    o = decl_buffer((n,), "int32", "O")
    ou = decl_buffer((n,), "uint32", "OU")

    def body(i):
        x, y, w = BufferLoad(a, (i,)), BufferLoad(b, (i,)), BufferLoad(u, (i,))
        s = FloorDiv(x, y) + FloorMod(x, y) + Div(x, y) + Mod(x, y) + Min(x, y) + Max(x, y)
        s = s + Call("int32", "bitwise_and", (x, y)) + Call("int32", "bitwise_xor", (x, y))
        s = s + Call("int32", "shift_right", (x, const(2, "int32")))
        s = s + Call("int32", "bitwise_not", (x,)) + Call("int32", "fabs", (x,))
        t = FloorDiv(w, w) + FloorMod(w, w) + Div(w, w) + Mod(w, w) + Min(w, w)
        t = t + Call("uint32", "shift_right", (w, w)) + Call("uint32", "shift_left", (w, w))
        t = t + Call("uint32", "bitwise_or", (w, w)) + Call("uint32", "fabs", (w,))
        return seq(BufferStore(o, s, (i,)), BufferStore(ou, t, (i,)))
    return kernel("int_ops", [a, b, u, o, ou], grid1d(n, 64, body))


def k_vector_int_ops():
    """FloorDiv/FloorMod and comparisons on int32x4 vectors, vector Select."""
    n = Var("n")
    a = decl_buffer((n,), "int32x4", "A")
    o = decl_buffer((n,), "int32x4", "O")

    def body(i):
        x = BufferLoad(a, (i,))
        three = Broadcast(const(-3, "int32"), 4)
        q = Add(FloorDiv(x, three), FloorMod(x, three))
        return BufferStore(o, Select(GE(x, q), q, Mod(x, three)), (i,))
    return kernel("vector_int_ops", [a, o], grid1d(n, 64, body))


def k_float_math():
    """Every float math intrinsic in vkir.ir.op on float32 (and float32x2)."""
    n = Var("n")
    a = decl_buffer((n,), "float32", "A")
    o = decl_buffer((n,), "float32", "O")
    flags = decl_buffer((n,), "int32", "F")

    def body(i):
        x = BufferLoad(a, (i,))
        total = const(0.0, "float32")
        for name, info in sorted(OPS.items()):
            if info.kind not in ("math_float", "math_abs"):
                continue
            total = Add(total, Call("float32", name, (x,) * info.arity))
        v2 = Call("float32x2", "erf", (Broadcast(x, 2),))
        total = Add(total, Shuffle((v2,), (1,)))
        nan = Or(Call("bool", "isnan", (x,)), Call("bool", "isinf", (x,)))
        return seq(BufferStore(o, Add(total, Div(x, const(3.0, "float32"))), (i,)),
                   BufferStore(flags, Cast("int32", Not(nan)), (i,)))
    return kernel("float_math", [a, o, flags], grid1d(n, 64, body))


def k_float_divmod():
    n = Var("n")
    a = decl_buffer((n,), "float32", "A")
    o = decl_buffer((n,), "float32", "O")
    return kernel("float_divmod", [a, o], grid1d(n, 64, lambda i: BufferStore(
        o, Add(FloorDiv(BufferLoad(a, (i,)), const(0.7, "float32")),
               Add(FloorMod(BufferLoad(a, (i,)), const(-0.7, "float32")),
                   Mod(BufferLoad(a, (i,)), const(0.7, "float32")))), (i,))))


CAST_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64", "bool"]


def k_casts():
    """Casts between all int/uint/float widths and bool, and reinterpret: O[i, k] is chain k
    (src, dst) applied to A[i], `float64(dst(src(A[i])))`, the last column a reinterpret."""
    n = Var("n")
    chains = [(src, dst) for src in CAST_TYPES for dst in CAST_TYPES]
    a = decl_buffer((n,), "float32", "A")
    o = decl_buffer((n, len(chains) + 1), "float64", "O")

    def body(i):
        x = BufferLoad(a, (i,))
        stores = [BufferStore(o, Cast("float64", Cast(dst, Cast(src, x))), (i, k))
                  for k, (src, dst) in enumerate(chains)]
        bits = Call("int32", "reinterpret", (x,))
        back = Call("float32", "reinterpret", (Add(bits, const(1, "int32")),))
        stores.append(BufferStore(o, Cast("float64", back), (i, len(chains))))
        return seq(*stores)
    return kernel("casts", [a, o], grid1d(n, 64, body))


def k_narrow_storage():
    """int8 / uint16 / float16 storage buffers and int64 / float64 values."""
    n = Var("n")
    a = decl_buffer((n,), "int8", "A")
    b = decl_buffer((n,), "float16", "B")
    c = decl_buffer((n,), "uint16", "C")
    d = decl_buffer((n,), "int64", "D")
    h = Var("h", "float16")

    def body(i):
        x = Cast("float16", BufferLoad(a, (i,)))
        y = Add(Mul(x, h), BufferLoad(b, (i,)))
        return seq(BufferStore(b, Call("float16", "exp", (y,)), (i,)),
                   BufferStore(c, Cast("uint16", y), (i,)),
                   BufferStore(d, Mul(Cast("int64", BufferLoad(c, (i,))),
                                      const(1 << 40, "int64")), (i,)),
                   BufferStore(a, Cast("int8", Min(BufferLoad(a, (i,)), const(100, "int8"))),
                               (i,)))
    return kernel("narrow", [h, a, b, c, d], grid1d(n, 64, body))


def k_half_vectors():
    """float16x4 and int8x4 vector buffers."""
    n = Var("n")
    a = decl_buffer((n,), "float16x4", "A")
    b = decl_buffer((n,), "int8x4", "B")
    return kernel("half_vectors", [a, b], grid1d(n, 64, lambda i: BufferStore(
        b, Cast("int8x4", Mul(BufferLoad(a, (i,)), BufferLoad(a, (i,)))), (i,))))


def k_select_shuffle():
    """Select (scalar and vector conditions), Shuffle, Broadcast, Ramp, Let, if_then_else."""
    n = Var("n")
    a = decl_buffer((n,), "float32x4", "A")
    o = decl_buffer((n,), "float32x4", "O")
    t = Var("t", "float32x4")

    def body(i):
        x = BufferLoad(a, (i,))
        rev = Shuffle((x,), (3, 2, 1, 0))
        mix = Shuffle((x, rev), (0, 5, 2, 7))
        pick = Shuffle((Shuffle((x,), (0,)), Shuffle((rev,), (1, 2)), const(1.0, "float32")),
                       (0, 1, 2, 3))
        vcond = LT(x, rev)
        s1 = Select(vcond, mix, pick)
        s2 = Select(LT(i, 3), s1, Broadcast(Shuffle((x,), (2,)), 4))
        ramp = Cast("float32x4", Ramp(i, 2, 4))
        lazy = Call("float32x4", "if_then_else", (vcond, Div(x, rev), ramp))
        lazy2 = Call("float32x4", "if_then_else", (NE(i, 0), BufferLoad(a, (Sub(i, 1),)), x))
        return BufferStore(o, Let(t, Add(s2, ramp), Add(Add(t, t), Add(lazy, lazy2))), (i,))
    return kernel("select_shuffle", [a, o], grid1d(n, 64, body))


def k_async():
    """AsyncScope / commit / wait statements that were not lowered (synchronous emission)."""
    n = Var("n")
    a = decl_buffer((n,), "float32", "A")
    o = decl_buffer((n,), "float32", "O")
    sh = decl_buffer((64,), "float32", "stage", scope="shared")
    bx, tx = Var("bx"), Var("tx")
    i = Add(Mul(bx, 64), tx)
    copy = AsyncCommitQueue(0, AsyncScope(BufferStore(sh, BufferLoad(a, (i,)), (tx,))))
    use = AsyncWaitQueue(0, 0, BufferStore(o, Mul(BufferLoad(sh, (Sub(63, tx),)), 2.0), (i,)))
    body = For(bx, 0, FloorDiv(n, 64), "thread_binding", For(
        tx, 0, 64, "thread_binding", AllocBuffer(sh, seq(copy, use, Evaluate(0))),
        thread="threadIdx.x"), thread="blockIdx.x")
    return kernel("async_copy", [a, o], body)


def k_nested_control():
    """Nested ifs with else, loops inside ifs, an if inside a loop, thread loops used twice."""
    n = Var("n")
    a = decl_buffer((n,), "int32", "A")
    bx, tx, tx2, j = Var("bx"), Var("tx"), Var("tx2"), Var("j")
    first = For(tx, 0, 32, "thread_binding", IfThenElse(
        LT(Add(Mul(bx, 32), tx), n),
        For(j, 0, 3, "serial", IfThenElse(
            EQ(FloorMod(j, 2), 0),
            BufferStore(a, Add(BufferLoad(a, (Add(Mul(bx, 32), tx),)), j), (Add(Mul(bx, 32), tx),)),
            BufferStore(a, Sub(BufferLoad(a, (Add(Mul(bx, 32), tx),)), 1),
                        (Add(Mul(bx, 32), tx),)))),
        None), thread="threadIdx.x")
    second = For(tx2, 0, 32, "thread_binding", IfThenElse(
        LT(Add(Mul(bx, 32), tx2), n), Evaluate(Call("int32", "bitwise_not", (tx2,)))),
        thread="threadIdx.x")
    body = For(bx, 0, FloorDiv(Add(n, 31), 32), "thread_binding", seq(first, Barrier(), second),
               thread="blockIdx.x")
    return kernel("nested", [a], body)


def k_scalar_params():
    """Push constants of several widths: int8 / bool / float16 widened, float64 / int64."""
    n = Var("n")
    flag, small, big, d, hf = (Var("flag", "bool"), Var("small", "int8"), Var("big", "int64"),
                               Var("d", "float64"), Var("hf", "float16"))
    o = decl_buffer((n,), "float64", "O")
    return kernel("scalars", [flag, small, big, d, hf, o], grid1d(n, 64, lambda i: BufferStore(
        o, Select(flag, Add(d, Cast("float64", Add(Cast("int64", small), big))),
                  Cast("float64", hf)), (i,))))


# (kernel factory, features needed)
ALL = [
    (k_vadd, ()), (k_saxpy, ()), (k_vec4_buffers, ()), (k_vec3_buffers, ()),
    (k_ramp_scalar_buffer, ()), (k_ramp_vector_buffer, ()), (k_gather, ()),
    (k_pointer_cast, ()), (k_flatten_view, ()), (k_2d_param, ()), (k_shared_reduce, ()),
    (k_local_loops, ()), (k_int_ops, ()), (k_vector_int_ops, ()), (k_float_math, ()),
    (k_float_divmod, ()), (k_casts, ALL_FEATURES), (k_narrow_storage, ALL_FEATURES),
    (k_half_vectors, ALL_FEATURES), (k_select_shuffle, ()), (k_async, ()),
    (k_nested_control, ()), (k_scalar_params, ALL_FEATURES),
]
