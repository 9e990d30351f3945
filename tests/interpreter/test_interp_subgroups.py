"""Subgroup operations in the interpreter, against a plain-Python model: a subgroup is
`subgroup_size` consecutive invocations of the linear local index (x + X * y), and inside
divergent control flow only the active invocations take part."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ArgumentError
from vkir.interpreter import InterpreterError, interpret

rng = np.random.default_rng(5)
SIZES = [4, 8, 16, 32, 64]


def _unary_kernel(op: str, dtype: str, guard: str):
    """96 invocations (3 x 32, linear index tx + 32 * ty) apply `op` to x where `guard` holds."""
    return vkir.from_script(f"""
@T.prim_func
def k(x: T.Buffer((96,), "{dtype}"), y: T.Buffer((96,), "{dtype}")):
    for ty in T.thread_binding(3, "threadIdx.y"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            i = ty * 32 + tx
            if {guard}:
                y[i] = T.subgroup_{op}(x[i])
""")


def _model(op, values, active, size):
    """Plain-Python result per active invocation."""
    out = {}
    for start in range(0, len(values), size):
        lanes = [i for i in range(start, start + size) if i < len(values) and active[i]]
        vals = [values[i] for i in lanes]
        if not vals:
            continue
        kind = op.split("_")[-1]
        f = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "min": min, "max": max,
             "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}[kind]
        if op.startswith(("inclusive", "exclusive")):
            acc = None
            for i, v in zip(lanes, vals):
                if op.startswith("exclusive"):
                    ident = {"add": 0, "mul": 1, "min": np.iinfo(np.int32).max,
                             "max": np.iinfo(np.int32).min}[kind]
                    out[i] = ident if acc is None else acc
                acc = v if acc is None else f(acc, v)
                if op.startswith("inclusive"):
                    out[i] = acc
        else:
            total = vals[0]
            for v in vals[1:]:
                total = f(total, v)
            for i in lanes:
                out[i] = total
    return out


ARITH = ["add", "mul", "min", "max", "and", "or", "xor", "inclusive_add", "exclusive_add",
         "inclusive_mul", "exclusive_mul", "inclusive_min", "exclusive_min", "inclusive_max",
         "exclusive_max"]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op", ARITH)
def test_arithmetic_matches_model_with_divergence(op, size):
    x = rng.integers(-3, 4, 96).astype(np.int32)
    x[x == 0] = 1
    guard = "x[i] != 2 and i != 37"
    y = np.full(96, -99, np.int32)
    interpret(_unary_kernel(op, "int32", guard), x, y, subgroup_size=size)
    active = [int(v) != 2 and i != 37 for i, v in enumerate(x)]
    model = _model(op, [int(v) for v in x], active, size)
    for i in range(96):
        want = model.get(i, -99)
        assert int(y[i]) == (want + 2**31) % 2**32 - 2**31, (i, op)  # int32 wraps


@pytest.mark.parametrize("size", SIZES)
def test_float_vector_reduction_is_lane_wise(size):
    @T.prim_func
    def k(x: T.Buffer((64,), "float32x4"), y: T.Buffer((64,), "float32x4")):
        for tx in T.thread_binding(64, "threadIdx.x"):
            y[tx] = T.subgroup_max(x[tx]) + T.subgroup_add(x[tx])

    x = rng.standard_normal(256).astype(np.float32)
    y = np.zeros(256, np.float32)
    interpret(k, x, y, subgroup_size=size)
    g = x.reshape(64 // size, size, 4)
    want = np.repeat(g.max(axis=1) + g.sum(axis=1), size, axis=0).reshape(-1)
    np.testing.assert_allclose(y, want, rtol=1e-6)


@T.prim_func
def ids(out: T.Buffer((6, 96), "int32")):
    for ty in T.thread_binding(3, "threadIdx.y"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            i = ty * 32 + tx
            out[0, i] = T.subgroup_size()
            out[1, i] = T.subgroup_invocation_id()
            out[2, i] = T.subgroup_id()
            out[3, i] = T.num_subgroups()
            if tx % 3 != 0:
                out[4, i] = T.cast(T.subgroup_elect(), "int32")
                out[5, i] = T.subgroup_broadcast_first(i)


@pytest.mark.parametrize("size", SIZES)
def test_ids_elect_and_broadcast_first(size):
    out = np.full((6, 96), -1, np.int32)
    interpret(ids, out, subgroup_size=size)
    lid = np.arange(96)
    np.testing.assert_array_equal(out[0], size)
    np.testing.assert_array_equal(out[1], lid % size)
    np.testing.assert_array_equal(out[2], lid // size)
    np.testing.assert_array_equal(out[3], -(-96 // size))
    active = lid % 32 % 3 != 0
    first = {}
    for i in lid[active]:
        first.setdefault(i // size, i)
    for i in range(96):
        if active[i]:
            assert out[4, i] == int(first[i // size] == i)
            assert out[5, i] == first[i // size]
        else:
            assert out[4, i] == -1 and out[5, i] == -1


@T.prim_func
def votes(x: T.Buffer((64,), "int32"), out: T.Buffer((3, 64), "int32"),
          mask: T.Buffer((64,), "uint32x4")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        p = x[tx] > 0
        out[0, tx] = T.cast(T.subgroup_all(p), "int32")
        out[1, tx] = T.cast(T.subgroup_any(p), "int32")
        mask[tx] = T.subgroup_ballot(p)
        out[2, tx] = T.subgroup_broadcast(x[tx], 1)


@pytest.mark.parametrize("size", SIZES)
def test_votes_ballot_broadcast(size):
    x = rng.integers(-1, 6, 64).astype(np.int32)
    out = np.zeros((3, 64), np.int32)
    mask = np.zeros(256, np.uint32)
    interpret(votes, x, out, mask, subgroup_size=size)
    for s in range(64 // size):
        part = x[s * size:(s + 1) * size]
        sl = slice(s * size, (s + 1) * size)
        np.testing.assert_array_equal(out[0, sl], int((part > 0).all()))
        np.testing.assert_array_equal(out[1, sl], int((part > 0).any()))
        np.testing.assert_array_equal(out[2, sl], part[1])
        bits = sum(1 << k for k in range(size) if part[k] > 0)
        words = [(bits >> (32 * w)) & 0xFFFFFFFF for w in range(4)]
        for k in range(size):
            assert list(mask[4 * (s * size + k):4 * (s * size + k) + 4]) == words


@T.prim_func
def shuffles(x: T.Buffer((64,), "float32"), out: T.Buffer((4, 64), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        out[0, tx] = T.subgroup_shuffle(x[tx], (tx * 5 + 3) % T.subgroup_size())
        out[1, tx] = T.subgroup_shuffle_xor(x[tx], 1)
        out[2, tx] = T.subgroup_shuffle_up(x[tx], 2)
        out[3, tx] = T.subgroup_shuffle_down(x[tx], 3)


@pytest.mark.parametrize("size", SIZES)
def test_shuffles(size):
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros((4, 64), np.float32)
    interpret(shuffles, x, out, subgroup_size=size)
    for i in range(64):
        base, lane = i - i % size, i % size
        assert out[0, i] == x[base + (i * 5 + 3) % size]
        assert out[1, i] == x[base + (lane ^ 1)]
        if lane >= 2:   # lanes outside the subgroup are undefined on a GPU
            assert out[2, i] == x[i - 2]
        if lane + 3 < size:
            assert out[3, i] == x[i + 3]


def test_subgroup_size_must_be_a_power_of_two():
    with pytest.raises(ArgumentError, match="power of two"):
        interpret(ids, np.zeros((6, 96), np.int32), subgroup_size=12)


def test_subgroup_op_outside_thread_loops_is_refused():
    @T.prim_func
    def outside(y: T.Buffer((64,), "int32")):
        s = T.subgroup_add(1)
        for tx in T.thread_binding(64, "threadIdx.x"):
            y[tx] = s

    with pytest.raises(InterpreterError, match="outside the threadIdx loops"):
        interpret(outside, np.zeros(64, np.int32))


def test_broadcast_lane_must_be_uniform_per_subgroup():
    @T.prim_func
    def per_subgroup(x: T.Buffer((64,), "int32"), y: T.Buffer((64,), "int32")):
        for tx in T.thread_binding(64, "threadIdx.x"):
            y[tx] = T.subgroup_broadcast(x[tx], T.subgroup_id() % 4)

    @T.prim_func
    def varying(x: T.Buffer((64,), "int32"), y: T.Buffer((64,), "int32")):
        for tx in T.thread_binding(64, "threadIdx.x"):
            y[tx] = T.subgroup_broadcast(x[tx], tx % 2)

    x, y = np.arange(64, dtype=np.int32) * 3, np.zeros(64, np.int32)
    interpret(per_subgroup, x, y, subgroup_size=8)  # differs between subgroups only: fine
    sg = np.arange(64) // 8
    np.testing.assert_array_equal(y, x[sg * 8 + sg % 4])
    with pytest.raises(InterpreterError, match="lane differs between the invocations of a"):
        interpret(varying, x, y, subgroup_size=8)
