"""TVM kernels with int64 indices (as Relax and dlight write them) compute the right values on
every driver, through both import paths: lavapipe compares int64 exactly (its
"int64_signed_compare" quirk), a device without int64 gets the kernel narrowed to int32."""

import numpy as np
import pytest

import vkir

pytest.importorskip("tvm.runtime")   # not the namespace package tests/tvm makes without TVM
import tvm  # noqa: E402
from tvm.script import tirx as T  # noqa: E402


@T.prim_func
def guarded_double(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n, T.int64(8)), "float32")
    B = T.match_buffer(b, (n, T.int64(8)), "float32")
    for bx in T.thread_binding((n * 8 + 63) // 64, thread="blockIdx.x"):
        for tx in T.thread_binding(T.int64(64), thread="threadIdx.x"):
            if bx * 64 + tx < n * 8:
                B[(bx * 64 + tx) // 8, (bx * 64 + tx) % 8] = \
                    A[(bx * 64 + tx) // 8, (bx * 64 + tx) % 8] * 2.0


@T.prim_func
def first_half(A: T.Buffer((T.int64(64),), "int32")):
    for tx in T.thread_binding(T.int64(64), thread="threadIdx.x"):
        if tx < T.int64(32):
            A[tx] = 1


X = np.arange(5 * 8, dtype=np.float32).reshape(5, 8)


def test_from_tvm_int64_kernels_are_exact(device):
    kernel = vkir.build(vkir.from_tvm(guarded_double, device=device), device=device)
    a, b = vkir.array(X, device=device), vkir.array(np.zeros((5, 8), np.float32), device=device)
    kernel(a, b)   # the user's (n, 8) buffers; n inferred from the arrays
    np.testing.assert_array_equal(b.numpy(), 2 * X)
    half = vkir.array(np.zeros(64, np.int32), device=device)
    vkir.build(vkir.from_tvm(first_half, device=device), device=device)(half)
    np.testing.assert_array_equal(half.numpy(), np.arange(64) < 32)


def test_tvm_compile_int64_kernels_are_exact(device):
    vkir.tvm.install(device)
    target = vkir.tvm.target(device)
    ex = tvm.compile(tvm.IRModule({"main": guarded_double}), target=target)
    out = vkir.tvm.empty((5, 8), "float32", device=device)
    ex["main"](vkir.tvm.tensor(X, device=device), out)
    np.testing.assert_array_equal(vkir.tvm.numpy(out), 2 * X)
    ex = tvm.compile(tvm.IRModule({"main": first_half}), target=target)
    half = vkir.tvm.tensor(np.zeros(64, np.int32), device=device)
    ex["main"](half)
    np.testing.assert_array_equal(vkir.tvm.numpy(half), np.arange(64) < 32)


def test_int64_indices_are_narrowed_only_where_the_device_lacks_int64(device):
    """TVM's NarrowDataType(32) runs where the device has no int64 (the kernel's index math in
    int32); where it has int64 the kernel keeps TVM's int64 index arithmetic as written."""
    from vkir.tvm.lowering import device_functions

    target = vkir.tvm.target(device)
    (func,) = device_functions(tvm.IRModule({"main": guarded_double}), target).values()
    has_int64 = "int64" in device.info.features
    assert bool(target.attrs["supports_int64"]) == has_int64
    assert ("T.int64" in func.script()) == has_int64
