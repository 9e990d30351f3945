"""VectorTypeRewrite: aligned ramp accesses become vector-typed buffers (params, flat aliases,
shared and local allocations), aligned scalar reads become lane extracts, and every refusal case
leaves the buffer scalar. Each output passes the explicit-cast checker and computes what its
input computes (interpreter, random inputs)."""

import numpy as np
from hypothesis import given, settings, strategies as st

import vkir
from vkir.testing import CompareBeforeAfter, check_pass, same_results
from vkir import T, ir
from vkir.analysis import verify_types
from vkir.transform import VectorTypeRewrite
from vkir.arith import ModularSet
from vkir.transform.vector_type_rewrite import rewritten_buffers, split_index


def _check(before, expected):
    """check_pass (the expected script, both checkers), then the same results."""
    after = check_pass(VectorTypeRewrite(), before, expected)
    same_results(before, after)
    return after


class _RewriteCase(CompareBeforeAfter):
    """VectorTypeRewrite turns `before` into `expected`, which passes the checkers and computes
    the same."""

    transform = VectorTypeRewrite()
    same_results = True


def _param_dtype(func, name):
    (buf,) = [b for b in func.buffer_map.values() if b.name == name]
    assert buf.data.dtype.element == buf.dtype
    return str(buf.dtype)


# ----------------------------------------------------------------------------------------------
# rewrites


@T.prim_func
def vadd(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"),
         C: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        C[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4, 1, 4)] + B[T.ramp(i * 4, 1, 4)]


@T.prim_func
def vadd_vector(A: T.Buffer((4,), "float32x4"), B: T.Buffer((4,), "float32x4"),
                C: T.Buffer((4,), "float32x4")):
    for i in T.serial(4):
        C[i] = A[i] + B[i]


def test_params_become_vector_buffers():
    after = _check(vadd, vadd_vector)
    for p in after.params:
        assert after.buffer_map[p].data is p
        assert p.dtype == ir.PointerType("float32x4", "global")


@T.prim_func
def flat_alias(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    A_flat = T.decl_buffer((32,), "float32", data=A.data)
    B_flat = T.decl_buffer((32,), "float32", data=B.data)
    for i in T.serial(8):
        B_flat[T.ramp(i * 4, 1, 4)] = A_flat[T.ramp(i * 4, 1, 4)] * 2.0


@T.prim_func
def flat_alias_vector(A: T.Buffer((4, 2), "float32x4"), B: T.Buffer((4, 2), "float32x4")):
    A_flat = T.decl_buffer((8,), "float32x4", data=A.data)
    B_flat = T.decl_buffer((8,), "float32x4", data=B.data)
    for i in T.serial(8):
        B_flat[i] = A_flat[i] * 2.0


def test_flat_alias_and_param_change_together():
    after = _check(flat_alias, flat_alias_vector)
    aliases = [n.buffer for n in ir.walk(after) if isinstance(n, ir.DeclBuffer)]
    assert [a.data for a in aliases] == list(after.params)


@T.prim_func
def symbolic_rows(A: T.Buffer(("n", 4), "float32"), B: T.Buffer(("n", 4), "float32")):
    A_flat = T.decl_buffer((n * 4,), "float32", data=A.data)
    B_flat = T.decl_buffer((n * 4,), "float32", data=B.data)
    for i in T.serial(n):
        B_flat[T.ramp(i * 4, 1, 4)] = A_flat[T.ramp(i * 4, 1, 4)] + 1.0


@T.prim_func
def symbolic_rows_vector(A: T.Buffer(("n", 1), "float32x4"), B: T.Buffer(("n", 1), "float32x4")):
    A_flat = T.decl_buffer((n,), "float32x4", data=A.data)
    B_flat = T.decl_buffer((n,), "float32x4", data=B.data)
    for i in T.serial(n):
        # i < n < 2**31 does not keep i * 4 from wrapping: the quotient stays a floor division
        B_flat[i * 4 // 4] = A_flat[i * 4 // 4] + 1.0


def test_symbolic_extent_with_constant_factor():
    after = check_pass(VectorTypeRewrite(), symbolic_rows, symbolic_rows_vector)
    a = np.random.default_rng(0).standard_normal((5, 4)).astype("float32")
    b1, b2 = np.zeros_like(a), np.zeros_like(a)
    vkir.interpret(symbolic_rows, a, b1)
    vkir.interpret(after, a, b2)
    np.testing.assert_array_equal(b2, a + 1)
    np.testing.assert_array_equal(b1, b2)


@T.prim_func
def staged(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(16, "threadIdx.x"):
        S = T.alloc_buffer((64,), "float32", scope="shared")
        L = T.alloc_buffer((4,), "float32", scope="local")
        S[T.ramp(tx * 4, 1, 4)] = A[T.ramp(tx * 4, 1, 4)]
        T.barrier()
        L[T.ramp(0, 1, 4)] = S[T.ramp((15 - tx) * 4, 1, 4)]
        B[T.ramp(tx * 4, 1, 4)] = L[T.ramp(0, 1, 4)]


@T.prim_func
def staged_vector(A: T.Buffer((16,), "float32x4"), B: T.Buffer((16,), "float32x4")):
    for tx in T.thread_binding(16, "threadIdx.x"):
        S = T.alloc_buffer((16,), "float32x4", scope="shared")
        L = T.alloc_buffer((1,), "float32x4", scope="local")
        S[tx] = A[tx]
        T.barrier()
        L[0] = S[15 - tx]
        B[tx] = L[0]


def test_shared_and_local_allocations():
    after = _check(staged, staged_vector)
    scopes = {n.buffer.scope: n.buffer.data.dtype for n in ir.walk(after)
              if isinstance(n, ir.AllocBuffer)}
    assert scopes == {"shared": ir.PointerType("float32x4", "shared"),
                      "local": ir.PointerType("float32x4", "local")}


@T.prim_func
def lane_reads(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        j = i * 4 + 3
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4, 1, 4)] + T.broadcast(
            A[j] + A[(i * 4 + 6) % 16] + A[i * 4 + 1] + A[0], 4)


@T.prim_func
def lane_reads_vector(A: T.Buffer((4,), "float32x4"), B: T.Buffer((4,), "float32x4")):
    for i in T.serial(4):
        j = i * 4 + 3
        B[i] = A[i] + T.broadcast(
            T.shuffle([A[j // 4]], [3]) + T.shuffle([A[(i * 4 + 6) % 16 // 4]], [2])
            + T.shuffle([A[i]], [1]) + T.shuffle([A[0]], [0]), 4)


class TestAlignedScalarReadsBecomeLaneExtracts(_RewriteCase):
    before, expected = lane_reads, lane_reads_vector


@T.prim_func
def lanes_of_one_element(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4, 1, 4)] * A[T.ramp(i * 4 + 3, -1, 4)] + T.broadcast(
            T.shuffle([A[T.ramp(i * 4 + 1, 2, 2)]], [1]), 4)


@T.prim_func
def lanes_of_one_element_vector(A: T.Buffer((4,), "float32x4"), B: T.Buffer((4,), "float32x4")):
    for i in T.serial(4):
        B[i] = A[i] * T.shuffle([A[i]], [3, 2, 1, 0]) + T.broadcast(
            T.shuffle([T.shuffle([A[i]], [1, 3])], [1]), 4)


class TestReadsWithinOneElementBecomeShuffles(_RewriteCase):
    before, expected = lanes_of_one_element, lanes_of_one_element_vector


@T.prim_func
def two_widths_two_buffers(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "int32"),
                           C: T.Buffer((16,), "float32"), D: T.Buffer((16,), "int32")):
    for i in T.serial(8):
        C[T.ramp(i * 2, 1, 2)] = A[T.ramp(i * 2, 1, 2)]
    for i in T.serial(4):
        D[T.ramp(i * 4, 1, 4)] = B[T.ramp(i * 4, 1, 4)] * 3


def test_each_storage_gets_its_own_width():
    after = VectorTypeRewrite()(two_widths_two_buffers)
    verify_types(after)
    assert [_param_dtype(after, n) for n in "ABCD"] == ["float32x2", "int32x4", "float32x2",
                                                        "int32x4"]
    same_results(two_widths_two_buffers, after)


def test_split_index_is_exact_under_wrap_around():
    i = ir.Var("i")
    four = ir.IntImm("int32", 4)
    # for an unknown int32 i, i*8 may wrap: only the floor division is exact
    assert split_index(i * 8 + 5, 4) == (ir.FloorDiv(i * 8 + 5, four), 1)
    # in a loop range it cannot wrap and the quotient is taken term by term
    q, k = split_index(i * 8 + 5, 4, var_ranges={i: (0, 99)})
    assert k == 1
    vkir.assert_structural_equal(q, i * 2 + 1)
    q, k = split_index(i * 4 - 8, 4, var_ranges={i: (0, 99)})
    assert k == 0
    vkir.assert_structural_equal(q, i - 2)
    assert split_index(i * 2, 4) is None
    assert split_index(i, 4, {i: ModularSet(4, 2)}) == (ir.FloorDiv(i, four), 2)
    # the residue survives wrap-around for powers of two only
    assert split_index(i * 3, 3) is None


# ----------------------------------------------------------------------------------------------
# refusals: the buffer stays scalar, the output still checks and computes the same


def _refused(func, name, reason, **options):
    after = VectorTypeRewrite(**options)(func)
    verify_types(after)
    assert _param_dtype(after, name) == _param_dtype(func, name)
    assert reason in rewritten_buffers(func, **options)[name]
    same_results(func, after)
    return after


@T.prim_func
def mixed_widths(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4, 1, 4)]
    for i in T.serial(8):
        B[T.ramp(i * 2, 1, 2)] = B[T.ramp(i * 2, 1, 2)] + A[T.ramp(i * 2, 1, 2)]


def test_refuses_mixed_widths():
    after = _refused(mixed_widths, "A", "mixed vector widths")
    assert _param_dtype(after, "B") == "float32"


@T.prim_func
def unaligned(A: T.Buffer((20,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4 + 1, 1, 4)]


def test_refuses_unaligned_base_and_keeps_the_aligned_buffer():
    after = _refused(unaligned, "A", "not provably a multiple of 4")
    assert _param_dtype(after, "B") == "float32x4"


@T.prim_func
def indivisible(A: T.Buffer((18,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4, 1, 4)]


def test_refuses_indivisible_extent():
    _refused(indivisible, "A", "extent 18 is not a provable multiple of 4")


@T.prim_func
def symbolic_extent(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32")):
    for i in T.serial(n // 4):
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4, 1, 4)]


def test_refuses_symbolic_extent_without_a_factor():
    check_pass(VectorTypeRewrite(), symbolic_extent, symbolic_extent)
    assert "not a provable multiple" in rewritten_buffers(symbolic_extent)["A"]


@T.prim_func
def strided(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i, 4, 4)]


def test_refuses_strided_ramp():
    after = _refused(strided, "A", "not a stride-1 ramp")
    assert _param_dtype(after, "B") == "float32x4"


@T.prim_func
def reversed_across(A: T.Buffer((20,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4, 1, 4)] + A[T.ramp(i * 4 + 5, -1, 4)]


def test_refuses_reads_reaching_over_two_elements():
    after = _refused(reversed_across, "A", "reaches over several elements")
    assert _param_dtype(after, "B") == "float32x4"


@T.prim_func
def strided_store(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4, 1, 4)]
    for i in T.serial(2):
        B[T.ramp(i * 4 + 3, -1, 4)] = A[T.ramp(i * 4, 1, 4)]


def test_refuses_strided_store_even_within_an_element():
    after = _refused(strided_store, "B", "not a stride-1 ramp")
    assert _param_dtype(after, "A") == "float32x4"


@T.prim_func
def scalar_store(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4, 1, 4)]
        B[i * 4] = 0.0


def test_refuses_scalar_store():
    after = _refused(scalar_store, "B", "scalar store")
    assert _param_dtype(after, "A") == "float32x4"


@T.prim_func
def unknown_lane(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), k: T.int32):
    for i in T.serial(4):
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4, 1, 4)] + T.broadcast(A[k], 4)


def test_refuses_scalar_read_of_unknown_lane():
    _refused(unknown_lane, "A", "no provable lane")


@T.prim_func
def explicit_cast(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    A_x2 = T.decl_buffer((8,), "float32x2", data=A.data)
    for i in T.serial(4):
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4, 1, 4)]
        B[T.ramp(i * 4, 1, 2)] = A_x2[i * 2]


def test_refuses_storage_aliased_by_an_explicit_cast():
    after = _refused(explicit_cast, "A", "pointer cast")
    assert _param_dtype(after, "B") == "float32"  # mixed widths on B


@T.prim_func
def wide(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(2):
        B[T.ramp(i * 8, 1, 8)] = A[T.ramp(i * 8, 1, 8)]


def test_refuses_widths_vulkan_vectors_lack():
    _refused(wide, "A", "width 8")
    after = VectorTypeRewrite(allowed_lanes=(8,))(wide)
    assert _param_dtype(after, "A") == "float32x8"


@T.prim_func
def bool_mask(M: T.Buffer((16,), "bool"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        B[T.ramp(i * 4, 1, 4)] = T.select(M[T.ramp(i * 4, 1, 4)], T.broadcast(1.0, 4),
                                          T.broadcast(0.0, 4))


def test_leaves_bool_storage_to_bool_to_int8():
    after = _refused(bool_mask, "M", "not a scalar int or float")
    assert _param_dtype(after, "B") == "float32x4"


@T.prim_func
def two_d_access(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32")):
    for i in T.serial(4):
        B[i, T.ramp(0, 1, 4)] = A[i, T.ramp(0, 1, 4)]


def test_refuses_unflattened_access():
    _refused(two_d_access, "A", "2-d access")


# ----------------------------------------------------------------------------------------------
# random offsets and widths: rewritten exactly when aligned, same results either way


def _offset_kernel(lanes, offset, vectors):
    """B[ramp(i*L + offset)] = A[ramp(i*L + offset)] * 2 + A[i*L + offset] (scalar lane read)."""
    n = lanes * vectors + offset
    A = ir.decl_buffer((n,), "float32", "A")
    B = ir.decl_buffer((n,), "float32", "B")
    i = ir.Var("i")
    base = i * lanes + offset
    value = ir.Add(ir.Mul(A[ir.Ramp(base, 1, lanes)], ir.const(2.0, f"float32x{lanes}")),
                   ir.Broadcast(A[base], lanes))
    body = ir.For(i, 0, vectors, "serial", B.store(value, ir.Ramp(base, 1, lanes)))
    return ir.PrimFunc((A.data, B.data), body, {A.data: A, B.data: B})


@settings(max_examples=30, deadline=None)
@given(lanes=st.sampled_from([2, 4]), offset=st.integers(0, 5), vectors=st.integers(1, 4),
       seed=st.integers(0, 2**16))
def test_random_offsets(lanes, offset, vectors, seed):
    before = _offset_kernel(lanes, offset, vectors)
    after = VectorTypeRewrite()(before)
    verify_types(after)
    aligned = offset % lanes == 0
    want = f"float32x{lanes}" if aligned else "float32"
    assert _param_dtype(after, "A") == want and _param_dtype(after, "B") == want
    same_results(before, after, seeds=[seed])


# ----------------------------------------------------------------------------------------------
# model check: random mixes of access patterns on one input buffer; the pass rewrites it exactly
# when the rule says so, and the output always checks and computes the same


_PATTERN = st.tuples(st.sampled_from([1, 2, 4, 4]),                          # statement width W
                     st.sampled_from(["ramp", "ramp", "lane", "unknown"]),   # how it reads A
                     st.sampled_from([0, 0, 4, 2, 1, 3, 5]))                 # offset of the read


def _mixed_kernel(stmts, vectors, pad):
    """for i < vectors: C_j[i*W .. +W] = read_j(A) for each statement j = (W, kind, offset):
    "ramp" reads A[Ramp(i*W + offset, 1, W)] (a lane read when W is 1), "lane" reads
    A[i*W + offset] and "unknown" reads A[k] (broadcast to W lanes). Returns the function, the
    reads as (W, kind, offset) and A's extent: the largest index read + 1, rounded up to a
    multiple of `pad` (1 keeps it)."""
    i, k = ir.Var("i"), ir.Var("k")
    reads = [(w, "lane" if kind == "ramp" and w == 1 else kind, off) for w, kind, off in stmts]
    top = max(4 if kind == "unknown" else (vectors - 1) * w + off + (w if kind == "ramp" else 1)
              for w, kind, off in reads)
    n = -(-top // pad) * pad
    A = ir.decl_buffer((n,), "float32", "A")
    outs, stores = [], []
    for j, (w, kind, off) in enumerate(reads):
        C = ir.decl_buffer((vectors * w,), "float32", f"C{j}")
        if kind == "ramp":
            value = A[ir.Ramp(i * w + off, 1, w)]
        else:
            value = A[k] if kind == "unknown" else A[i * w + off]
            if w > 1:
                value = ir.Broadcast(value, w)
        stores.append(C.store(value, ir.Ramp(i * w, 1, w) if w > 1 else i))
        outs.append(C)
    loop = ir.For(i, 0, vectors, "serial", ir.seq(*stores))
    params = (A.data, *(C.data for C in outs), k)
    return ir.PrimFunc(params, loop, {A.data: A, **{C.data: C for C in outs}}), reads, n


def _model_width(reads, n):
    """The width the rule gives A, or None when A must stay scalar."""
    widths = {w for w, kind, _ in reads if kind == "ramp"}
    if len(widths) != 1:
        return None
    (lanes,) = widths
    for w, kind, off in reads:
        if kind == "ramp" and off % lanes:
            return None
        if kind == "lane" and w % lanes:  # i*w + off: its lane mod L is known iff L divides w
            return None
        if kind == "unknown":
            return None
    return lanes if n % lanes == 0 else None


@settings(max_examples=50, deadline=None)
@given(stmts=st.lists(_PATTERN, min_size=1, max_size=3), vectors=st.integers(1, 3),
       pad=st.sampled_from([1, 4, 4, 6]), seed=st.integers(0, 2**16))
def test_model_of_the_rule(stmts, vectors, pad, seed):
    before, reads, n = _mixed_kernel(stmts, vectors, pad)
    after = VectorTypeRewrite()(before)
    verify_types(after)
    lanes = _model_width(reads, n)
    assert _param_dtype(after, "A") == ("float32" if lanes is None else f"float32x{lanes}")
    for j, (w, _, _) in enumerate(reads):
        assert _param_dtype(after, f"C{j}") == ("float32" if w == 1 else f"float32x{w}")
    same_results(before, after, seeds=[seed])
