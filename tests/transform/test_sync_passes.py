"""Passes on atomics and subgroup operations, which are impure calls: CSE never commons them (nor
the loads marking an atomic's element), VectorizeLoop keeps a loop containing them serial,
VectorTypeRewrite leaves a buffer updated by atomics scalar, FlattenBuffer flattens the indices
of their elements. Each output is compared structurally with the expected script and with the
interpreter's results on random inputs."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.analysis import verify_types, verify_well_formed
from vkir.testing import check_pass
from vkir.transform import (CommonSubexprElim, FlattenBuffer, Simplify, VectorizeLoop,
                            VectorTypeRewrite)

rng = np.random.default_rng(9)


@T.prim_func
def twice(x: T.Buffer((4, 64), "int32"), h: T.Buffer((4, 8), "int32"),
          y: T.Buffer((4, 64), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        for r in T.vectorized(4):
            T.atomic_add(h[r, x[r, tx] % 8], x[r, tx] * 2 + 1)
            T.atomic_add(h[r, x[r, tx] % 8], x[r, tx] * 2 + 1)
            y[r, tx] = T.subgroup_add(x[r, tx] * 2 + 1) + T.subgroup_add(x[r, tx] * 2 + 1)


def _inputs():
    return [rng.integers(0, 100, (4, 64)).astype(np.int32), np.zeros((4, 8), np.int32),
            np.zeros((4, 64), np.int32)]


def _same(before, after):
    args = _inputs()
    copies = [a.copy() for a in args]
    for size in (4, 32):
        vkir.interpret(before, *args, subgroup_size=size)
        vkir.interpret(after, *copies, subgroup_size=size)
        for a, b in zip(args, copies):
            np.testing.assert_array_equal(a, b)
    verify_types(after)
    verify_well_formed(after)


def test_vectorize_keeps_atomics_and_subgroups_serial():
    @T.prim_func
    def expected(x: T.Buffer((4, 64), "int32"), h: T.Buffer((4, 8), "int32"),
                 y: T.Buffer((4, 64), "int32")):
        for tx in T.thread_binding(64, "threadIdx.x"):
            for r in T.serial(4):
                T.atomic_add(h[r, x[r, tx] % 8], x[r, tx] * 2 + 1)
                T.atomic_add(h[r, x[r, tx] % 8], x[r, tx] * 2 + 1)
                y[r, tx] = T.subgroup_add(x[r, tx] * 2 + 1) + T.subgroup_add(x[r, tx] * 2 + 1)

    after = check_pass(VectorizeLoop(), twice, expected)
    _same(twice, after)


def test_cse_never_commons_atomics_or_subgroup_ops():
    @T.prim_func
    def before(x: T.Buffer((64,), "int32"), h: T.Buffer((8,), "int32"),
               y: T.Buffer((64,), "int32")):
        for tx in T.thread_binding(64, "threadIdx.x"):
            y[tx] = T.atomic_add(h[(tx * 3 + 1) % 8], 1) + T.atomic_add(h[(tx * 3 + 1) % 8], 1) \
                + T.subgroup_max(tx * 3 + 1) + T.subgroup_max(tx * 3 + 1)

    @T.prim_func
    def expected(x: T.Buffer((64,), "int32"), h: T.Buffer((8,), "int32"),
                 y: T.Buffer((64,), "int32")):
        for tx in T.thread_binding(64, "threadIdx.x"):
            cse_v1 = tx * 3 + 1
            cse_v2 = cse_v1 % 8
            y[tx] = T.atomic_add(h[cse_v2], 1) + T.atomic_add(h[cse_v2], 1) \
                + T.subgroup_max(cse_v1) + T.subgroup_max(cse_v1)

    after = check_pass(CommonSubexprElim(), before, expected)
    args = [np.zeros(64, np.int32), np.zeros(8, np.int32), np.zeros(64, np.int32)]
    copies = [a.copy() for a in args]
    vkir.interpret(before, *args)
    vkir.interpret(after, *copies)
    np.testing.assert_array_equal(args[1], copies[1])
    np.testing.assert_array_equal(args[2], copies[2])


def test_simplify_keeps_atomics_whose_value_is_unused():
    @T.prim_func
    def before(h: T.Buffer((8,), "int32"), y: T.Buffer((64,), "int32")):
        for tx in T.thread_binding(64, "threadIdx.x"):
            y[tx] = T.atomic_add(h[tx % 8], 1) * 0 + tx

    after = Simplify()(before)
    assert "T.atomic_add(h[tx % 8], 1)" in after.script()
    h = np.zeros(8, np.int32)
    vkir.interpret(after, h, np.zeros(64, np.int32))
    np.testing.assert_array_equal(h, 8)


def test_flatten_buffer_flattens_atomic_elements():
    @T.prim_func
    def expected(x: T.Buffer((4, 64), "int32"), h: T.Buffer((4, 8), "int32"),
                 y: T.Buffer((4, 64), "int32")):
        x_flat = T.decl_buffer((256,), "int32", data=x.data)
        h_flat = T.decl_buffer((32,), "int32", data=h.data)
        y_flat = T.decl_buffer((256,), "int32", data=y.data)
        for tx in T.thread_binding(64, "threadIdx.x"):
            for r in T.vectorized(4):
                T.atomic_add(h_flat[r * 8 + x_flat[r * 64 + tx] % 8], x_flat[r * 64 + tx] * 2 + 1)
                T.atomic_add(h_flat[r * 8 + x_flat[r * 64 + tx] % 8], x_flat[r * 64 + tx] * 2 + 1)
                y_flat[r * 64 + tx] = T.subgroup_add(x_flat[r * 64 + tx] * 2 + 1) \
                    + T.subgroup_add(x_flat[r * 64 + tx] * 2 + 1)

    after = check_pass(FlattenBuffer(), twice, expected)
    _same(twice, after)


def test_vector_type_rewrite_leaves_atomic_buffers_scalar():
    @T.prim_func
    def before(a: T.Buffer((64,), "int32"), h: T.Buffer((64,), "int32")):
        for tx in T.thread_binding(16, "threadIdx.x"):
            for k in T.vectorized(4):
                a[tx * 4 + k] = h[tx * 4 + k] + 1
            T.atomic_add(h[tx * 4], 1)

    vec = VectorizeLoop()(before)
    after = VectorTypeRewrite()(vec)
    text = after.script()
    assert "T.atomic_add(h[tx * 4], 1)" in text       # h stays a scalar buffer
    assert "int32x4" in text                           # a became a vector buffer
    a, h = np.zeros(64, np.int32), rng.integers(0, 9, 64).astype(np.int32)
    a2, h2 = a.copy(), h.copy()
    vkir.interpret(before, a, h)
    vkir.interpret(after, a2, h2)
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(h, h2)
