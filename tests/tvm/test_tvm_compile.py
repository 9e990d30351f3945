"""`tvm.compile(mod, target=vkir.tvm.target())` after `vkir.tvm.install()`: TVM's host code runs
each device kernel through vkir on tensors that live in vkir memory (DLPack, kDLVulkan)."""

import gc

import numpy as np
import pytest

import vkir
from vkir.driver import dlpack

pytest.importorskip("tvm.runtime")   # not the namespace package tests/tvm makes without TVM
import tvm  # noqa: E402
from tvm import te, topi  # noqa: E402


@pytest.fixture(scope="module")
def dlight_schedule():
    """schedule(func) -> IRModule: TVM's dlight default GPU schedules for vkir's device."""
    return vkir.tvm.dlight



def test_device_arrays_export_through_dlpack(device):
    a = vkir.array(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    assert dlpack.vulkan_device(a) == (dlpack.KDL_VULKAN, device.info.index)
    t = tvm.runtime.from_dlpack(a.__dlpack__(dl_device=dlpack.vulkan_device(a)))
    assert str(t.device) == f"vulkan:{device.info.index}" and tuple(t.shape) == (3, 4)
    assert dlpack.array_of_handle(t.data_ptr()) is a
    np.testing.assert_array_equal(vkir.tvm.numpy(t), a.numpy())
    live = len(dlpack._EXPORTS.live)
    del t
    gc.collect()
    assert len(dlpack._EXPORTS.live) == live - 1   # TVM's deleter released the export


@pytest.mark.parametrize("op", ["softmax", "matmul"])
def test_tvm_compile_runs_dlight_kernels_through_vkir(op, device, dlight_schedule):
    vkir.tvm.install(device)
    vkir.tvm.install(device)   # idempotent
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 128)).astype(np.float32)
    X = te.placeholder((64, 128), "float32", name="X")
    if op == "softmax":
        func = te.create_prim_func([X, topi.nn.softmax(X)])
        args, shape = [x], (64, 128)
        e = np.exp(x - x.max(1, keepdims=True))
        want = e / e.sum(1, keepdims=True)
    else:
        W = te.placeholder((128, 32), "float32", name="W")
        k = te.reduce_axis((0, 128), name="k")
        Y = te.compute((64, 32), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
        func = te.create_prim_func([X, W, Y])
        w = rng.standard_normal((128, 32)).astype(np.float32)
        args, shape, want = [x, w], (64, 32), x.astype(np.float64) @ w
    ex = tvm.compile(dlight_schedule(func), target=vkir.tvm.target(device))
    out = vkir.tvm.empty(shape, "float32", device=device)
    ex["main"](*[vkir.tvm.tensor(a, device=device) for a in args], out)
    np.testing.assert_allclose(vkir.tvm.numpy(out), want, rtol=1e-4, atol=1e-4)


def test_other_targets_are_left_alone(device):
    vkir.tvm.install(device)
    X = te.placeholder((16,), "float32", name="X")
    ex = tvm.compile(te.create_prim_func([X, topi.add(X, X)]), target="llvm")
    a = tvm.runtime.tensor(np.arange(16, dtype=np.float32))
    b = tvm.runtime.tensor(np.zeros(16, np.float32))
    ex["main"](a, b)
    np.testing.assert_array_equal(b.numpy(), 2 * np.arange(16, dtype=np.float32))


def test_a_tensor_from_elsewhere_is_refused_by_name(device, dlight_schedule):
    vkir.tvm.install(device)
    with pytest.raises(vkir.ArgumentError, match="made by vkir.tvm.tensor/empty"):
        vkir.tvm.numpy(tvm.runtime.tensor(np.zeros(4, np.float32)))


def test_each_kernel_is_lowered_once_per_compile(device, dlight_schedule, tmp_path, monkeypatch):
    """The library entries `tvm.compile` embeds are recorded from the kernel its build compiled:
    a cold compile lowers each device kernel once, and the entry holds the lowered function."""
    import json

    import vkir.lowering
    from vkir.tvm import bridge

    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    lowered = []
    real = vkir.lowering.lower
    monkeypatch.setattr(vkir.lowering, "lower",
                        lambda func, *a, **k: lowered.append(func.name) or real(func, *a, **k))
    vkir.tvm.install(device)
    X = te.placeholder((64, 128), "float32", name="X")
    func = te.create_prim_func([X, topi.nn.softmax(X)])
    kernels = []
    real_entries = bridge._entries
    monkeypatch.setattr(bridge, "_entries",
                        lambda *a: kernels.append(json.loads(real_entries(*a))) or
                        json.dumps(kernels[-1]))
    tvm.compile(dlight_schedule(func), target=vkir.tvm.target(device))
    assert kernels and len(lowered) == len(kernels)
    for entries in kernels:
        (entry,) = entries.values()
        assert entry["ir"] is not None and entry["words"]


def test_dispatch_shifts_are_stored_in_cache_entries():
    """TVM's ceil-divisions of a symbolic size by a power of two reach the grid as shifts
    ((n + 63) >> 6): the entry writes and reads them back, so such kernels (GPT-2's over a
    symbolic sequence length) hit the compile cache in a new process."""
    from vkir.cache import compile as cc
    from vkir.ir import Add, Call, IntImm, Var

    n = Var("n", "int32")
    grid = Call("int32", "shift_right", (Add(n, IntImm("int32", 63)), IntImm("int32", 6)))
    data = cc._dump_expr(grid, {}, {"n": n})
    assert data[0] == "call"
    back = cc._load_expr(data, {"n": n})
    assert type(back) is Call and back.op == "shift_right" and str(back) == str(grid)
    with pytest.raises(ValueError, match="intrinsic"):
        cc._load_expr(["call", "exp", "float32", []], {})
