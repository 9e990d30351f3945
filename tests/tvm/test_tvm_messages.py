"""What a TVM user is told when vkir cannot run a kernel as scheduled: each message names the
construct and the fix, vkir's error types come out of `tvm.compile` unchanged, and
`vkir.tvm.dlight` never hands back a schedule that the device's shared memory cannot hold."""

import numpy as np
import pytest

import vkir
from vkir.errors import ArgumentError, UnsupportedError
from vkir.ir.dtype import DataType

pytest.importorskip("tvm.runtime")   # not the namespace package tests/tvm makes without TVM
import tvm  # noqa: E402
from tvm import te  # noqa: E402


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_narrow_float_formats_are_unsupported_not_invalid(dtype):
    with pytest.raises(UnsupportedError, match=f"dtype '{dtype}' is not supported"):
        DataType.parse(dtype)
    with pytest.raises(ArgumentError, match="invalid dtype"):
        DataType.parse("float8")   # a misspelling stays an argument error
    A = te.placeholder((64,), dtype, name="A")
    B = te.compute((64,), lambda i: A[i], name="B")
    with pytest.raises(UnsupportedError, match=f"buffer 'A': dtype '{dtype}'"):
        vkir.from_tvm(te.create_prim_func([A, B]))


def _staged_in_global_memory(scope=None):
    """B = A * 2 computed per thread into an intermediate TVM leaves in global memory inside
    the kernel, unless `scope` is set on the block that writes it."""
    A = te.placeholder((256,), "float32", name="A")
    Bc = te.compute((256,), lambda i: A[i] * 2.0, name="Bc")
    C = te.compute((256,), lambda i: Bc[i] + 1.0, name="C")
    sch = tvm.s_tir.Schedule(te.create_prim_func([A, C]))
    bx, tx = sch.split(sch.get_loops(sch.get_sblock("C"))[0], [4, 64])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.compute_at(sch.get_sblock("Bc"), tx)
    if scope is not None:
        sch.set_scope(sch.get_sblock("Bc"), 0, scope)
    return sch.mod


def test_a_global_allocation_in_a_kernel_suggests_set_scope(device):
    with pytest.raises(UnsupportedError, match=r"buffer 'Bc' is allocated in global memory.*"
                                               r"sch\.set_scope\(block, 0, 'shared'\) or 'local'"):
        vkir.from_tvm(_staged_in_global_memory())
    k = vkir.build(vkir.from_tvm(_staged_in_global_memory("local")))   # the suggested fix
    a = np.arange(256, dtype=np.float32)
    c = np.zeros(256, np.float32)
    k(a, c)
    np.testing.assert_array_equal(c, a * 2 + 1)


def test_vkir_errors_keep_their_type_through_tvm_compile(device):
    vkir.tvm.install(device)
    with pytest.raises(UnsupportedError, match="buffer 'Bc' is allocated in global memory"):
        tvm.compile(_staged_in_global_memory(), target=vkir.tvm.target(device))


def _gemv(n=16, m=1024):
    """y = A @ x written A[i, k] * x[k]: dlight's GEMV rule stages whole rows of A in shared
    memory (66 KB here)."""
    A = te.placeholder((n, m), "float32", name="A")
    x = te.placeholder((m,), "float32", name="x")
    k = te.reduce_axis((0, m), name="k")
    y = te.compute((n,), lambda i: te.sum(A[i, k] * x[k], axis=k), name="y")
    return te.create_prim_func([A, x, y])


def test_the_shared_memory_refusal_names_the_buffer(device):
    from tvm.s_tir import dlight as dl

    with vkir.tvm.target(device):
        mod = dl.ApplyDefaultSchedule(dl.gpu.GEMV())(tvm.IRModule({"main": _gemv()}))
    limit = device.info.limits.max_shared_memory_bytes
    with pytest.raises(UnsupportedError, match=rf"the device allows {limit} \(shared buffer "
                                               r"'A_shared': \(\d+,\) x float32"):
        vkir.build(vkir.from_tvm(mod), device=device)


def test_dlight_falls_back_to_a_gemv_schedule_that_fits(device):
    f = vkir.from_tvm(vkir.tvm.dlight(_gemv(), device=device), device=device)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((16, 1024)).astype(np.float32)
    x = rng.standard_normal(1024).astype(np.float32)
    y = np.zeros(16, np.float32)
    vkir.build(f, device=device)(a, x, y)
    np.testing.assert_allclose(y, a.astype(np.float64) @ x, rtol=1e-4, atol=1e-4)
