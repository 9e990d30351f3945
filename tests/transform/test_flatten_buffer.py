"""FlattenBuffer: N-d accesses become 1-d through flat aliases (parameters keep their N-d
buffer_map entry and get a DeclBuffer over the same data at the top of the body), allocations
become flat allocations, strides and elem_offset are honored, vector indices stay in the last
position and vector element types are kept. Each output passes the explicit-cast checker and
computes what its input computes (interpreter, random inputs)."""

import pytest
from hypothesis import given, settings, strategies as st

from vkir.testing import check_pass, random_arguments, same_results
from vkir import T
from vkir.ir import walk
from vkir.analysis import verify_types, verify_well_formed
from vkir.errors import TransformError
from vkir.transform import FlattenBuffer


def _same_results(before, after, sizes=None, seeds=range(3)):
    same_results(before, after, lambda seed: random_arguments(before, seed, sizes=sizes), seeds)


def _check(before, expected, sizes=None, run=True):
    after = check_pass(FlattenBuffer(), before, expected)
    assert after.params == before.params and after.buffer_map == before.buffer_map
    if run:
        _same_results(before, after, sizes)
    return after


def test_parameters_get_flat_aliases():
    @T.prim_func
    def before(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
        for i, j in T.grid(8, 4):
            B[i, j] = A[i, j] * 2.0

    @T.prim_func
    def expected(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
        A_flat = T.decl_buffer((32,), "float32", data=A.data)
        B_flat = T.decl_buffer((32,), "float32", data=B.data)
        for i, j in T.grid(8, 4):
            B_flat[i * 4 + j] = A_flat[i * 4 + j] * 2.0

    _check(before, expected)


def test_symbolic_shape():
    @T.prim_func
    def before(A: T.Buffer(("n", "m"), "float32"), B: T.Buffer(("n", "m"), "float32")):
        for i, j in T.grid(n, m):
            B[i, j] = A[i, j] + 1.0

    @T.prim_func
    def expected(A: T.Buffer(("n", "m"), "float32"), B: T.Buffer(("n", "m"), "float32")):
        A_flat = T.decl_buffer((n * m,), "float32", data=A.data)
        B_flat = T.decl_buffer((n * m,), "float32", data=B.data)
        for i, j in T.grid(n, m):
            B_flat[i * m + j] = A_flat[i * m + j] + 1.0

    _check(before, expected, sizes={"n": 3, "m": 5})


def test_explicit_strides_and_offset():
    @T.prim_func
    def before(A: T.Buffer((4, 4), "float32", strides=(8, 1), elem_offset=2),
               B: T.Buffer((4, 4), "float32")):
        for i, j in T.grid(4, 4):
            B[i, j] = A[i, j]

    @T.prim_func
    def expected(A: T.Buffer((4, 4), "float32", strides=(8, 1), elem_offset=2),
                 B: T.Buffer((4, 4), "float32")):
        A_flat = T.decl_buffer((30,), "float32", data=A.data)  # 2 + 3*8 + 3*1 + 1
        B_flat = T.decl_buffer((16,), "float32", data=B.data)
        for i, j in T.grid(4, 4):
            B_flat[i * 4 + j] = A_flat[i * 8 + j + 2]

    _check(before, expected, run=False)


def test_vector_index_stays_last_and_vector_elements_are_kept():
    @T.prim_func
    def before(A: T.Buffer((8, 4), "float32"), V: T.Buffer((8, 2), "float32x4")):
        for i in T.serial(8):
            V[i, 1] = A[i, T.ramp(0, 1, 4)]
            A[i, T.ramp(0, 1, 4)] = V[i, 0]

    @T.prim_func
    def expected(A: T.Buffer((8, 4), "float32"), V: T.Buffer((8, 2), "float32x4")):
        A_flat = T.decl_buffer((32,), "float32", data=A.data)
        V_flat = T.decl_buffer((16,), "float32x4", data=V.data)
        for i in T.serial(8):
            V_flat[i * 2 + 1] = A_flat[T.ramp(i * 4, 1, 4)]
            A_flat[T.ramp(i * 4, 1, 4)] = V_flat[i * 2]

    _check(before, expected)


def test_allocations_become_flat():
    @T.prim_func
    def before(A: T.Buffer((4, 8), "float32")):
        S = T.alloc_buffer((4, 8), "float32", scope="shared")
        L = T.alloc_buffer((2, 2), "float32", scope="local")
        for i, j in T.grid(4, 8):
            S[i, j] = A[i, j]
        for i, j in T.grid(4, 8):
            L[1, 1] = S[3 - i, j]
            A[i, j] = L[1, 1] * 3.0

    @T.prim_func
    def expected(A: T.Buffer((4, 8), "float32")):
        A_flat = T.decl_buffer((32,), "float32", data=A.data)
        S = T.alloc_buffer((32,), "float32", scope="shared")
        L = T.alloc_buffer((4,), "float32", scope="local")
        for i, j in T.grid(4, 8):
            S[i * 8 + j] = A_flat[i * 8 + j]
        for i, j in T.grid(4, 8):
            L[3] = S[j - i * 8 + 24]
            A_flat[i * 8 + j] = L[3] * 3.0

    _check(before, expected)


def test_body_declarations_become_flat():
    @T.prim_func
    def before(A: T.Buffer((16,), "float32")):
        A2 = T.decl_buffer((4, 4), "float32", data=A.data)
        for i in T.serial(4):
            A2[i, i] = 1.0

    @T.prim_func
    def expected(A: T.Buffer((16,), "float32")):
        A2 = T.decl_buffer((16,), "float32", data=A.data)
        for i in T.serial(4):
            A2[i * 5] = 1.0

    _check(before, expected)


def test_flat_function_is_unchanged():
    @T.prim_func
    def f(A: T.Buffer((16,), "float32")):
        for i in T.serial(16):
            A[i] = A[i] + 1.0

    assert FlattenBuffer()(f) is f


def test_vector_index_in_other_dimension_is_refused():
    @T.prim_func
    def f(A: T.Buffer((4, 4), "float32")):
        A[T.ramp(0, 1, 4), 0] = T.broadcast(1.0, 4)

    with pytest.raises(TransformError, match="only the last index may be a vector"):
        FlattenBuffer()(f)


# --- property: random shapes, with or without a vector last index ---------------------------------

@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=3), st.booleans(), st.booleans())
def test_random_shapes(shape, vector_last, shared_copy):
    from vkir.ir import AllocBuffer, For, PrimFunc, Ramp, Var, decl_buffer, seq

    *outer, last = shape
    lanes = 4
    A = decl_buffer((*outer, last * lanes), "float32", "A")
    B = decl_buffer((*outer, last * lanes), "float32", "B")
    S = decl_buffer((*outer, last * lanes), "float32", "S", scope="local")
    last_extent = last if vector_last else last * lanes

    def nest(make_store):
        """A loop nest over the buffer with fresh loop vars (IR is SSA) around one store."""
        loop_vars = [Var(f"i{k}") for k in range(len(outer))]
        j = Var("j")
        last_index = Ramp(j * lanes, 1, lanes) if vector_last else j
        rev = [ext - 1 - v for v, ext in zip(loop_vars, outer)]
        stmt = For(j, 0, last_extent, "serial", make_store(loop_vars, rev, last_index))
        for v, ext in reversed(list(zip(loop_vars, outer))):
            stmt = For(v, 0, ext, "serial", stmt)
        return stmt

    if shared_copy:
        body = AllocBuffer(S, seq(
            nest(lambda iv, rev, li: S.store(A[(*rev, li)] * 2.0, *iv, li)),
            nest(lambda iv, rev, li: B.store(S[(*iv, li)], *iv, li))))
    else:
        body = nest(lambda iv, rev, li: B.store(A[(*rev, li)] * 2.0, *iv, li))
    before = PrimFunc([A.data, B.data], body, {A.data: A, B.data: B})
    after = FlattenBuffer()(before)
    verify_types(after)
    verify_well_formed(after)
    assert all(len(n.indices) == 1 for n in walk(after.body)
               if type(n).__name__ in ("BufferLoad", "BufferStore"))
    _same_results(before, after, seeds=[0])
