"""vkir's own dlight-style schedule rules (vkir.tvm.rules): the register-tile Matmul rule on CPU
devices, its schedules' results against TVM's llvm build of the same function, and the Relax
pipeline `vkir.tvm.install()` gives `tvm.compile(mod, target="vulkan")`."""

import dataclasses

import numpy as np
import pytest

import vkir

pytest.importorskip("tvm.runtime")   # not the namespace package tests/tvm makes without TVM
import tvm  # noqa: E402
from tvm import te, topi  # noqa: E402
from tvm.s_tir import dlight as dl  # noqa: E402

from vkir.tvm import rules  # noqa: E402
from vkir.tvm.rules.matmul import Matmul, config  # noqa: E402
from vkir.tvm.lowering import shared_bytes  # noqa: E402


def _llvm(func, inputs, out_shape):
    y = tvm.runtime.tensor(np.zeros(out_shape, np.float32))
    tvm.compile(func, target="llvm")(*[tvm.runtime.tensor(x) for x in inputs], y)
    return y.numpy()


def _conv():
    X = te.placeholder((1, 8, 11, 11), "float32", name="X")
    W = te.placeholder((12, 8, 3, 3), "float32", name="W")
    return te.create_prim_func([X, W, topi.nn.conv2d_nchw(X, W, 2, 1, 1)]), \
        [(1, 8, 11, 11), (12, 8, 3, 3)], (1, 12, 6, 6)


def _dense():   # nn.Linear's x @ W^T, sizes that are no multiple of the tiles
    A = te.placeholder((37, 20), "float32", name="A")
    B = te.placeholder((19, 20), "float32", name="B")
    k = te.reduce_axis((0, 20), name="k")
    C = te.compute((37, 19), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    return te.create_prim_func([A, B, C]), [(37, 20), (19, 20)], (37, 19)


@pytest.mark.parametrize("case", [_conv, _dense], ids=["conv2d", "dense"])
def test_the_matmul_rule_matches_llvm_without_shared_memory(case, device):
    func, shapes, out_shape = case()
    tgt = vkir.tvm.target(device)
    with tgt:
        mod = dl.ApplyDefaultSchedule(Matmul(config(device.info)))(tvm.IRModule({"main": func}))
    assert mod["main"].attrs["tirx.is_scheduled"]
    assert shared_bytes(mod, tgt) == 0            # register tiles, no barriers
    kernel = vkir.build(vkir.from_tvm(mod, device=device), device=device)
    assert kernel.module.local_size[0] == 8     # llvmpipe's 8 SIMD lanes along x
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    out = vkir.empty(out_shape, "float32", device=device)
    kernel(*[vkir.array(x, device=device) for x in inputs], out)
    np.testing.assert_allclose(out.numpy(), _llvm(func, inputs, out_shape), rtol=1e-5,
                               atol=1e-5)


def test_vkir_rules_are_for_cpu_devices(device):
    info = device.info
    gpu = dataclasses.replace(info, kind="discrete") if dataclasses.is_dataclass(info) else None
    assert [type(r) for r in rules.vkir_rules(info)] == \
        ([Matmul] if info.kind == "cpu" else [])
    if gpu is not None:
        assert rules.vkir_rules(gpu) == ()
    assert isinstance(rules.default_rules(info)[-1], dl.gpu.Fallback)


def test_install_schedules_vulkan_relax_modules_with_vkir_rules(device):
    from vkir.tvm import bridge

    vkir.tvm.install(device)
    ours = tvm.relax.get_default_pipeline(tvm.target.Target("vulkan"))
    assert ours.info.name == "vkir.tvm.RelaxPipeline"
    llvm = tvm.relax.get_default_pipeline(tvm.target.Target("llvm"))
    assert llvm.info.name != "vkir.tvm.RelaxPipeline"
    assert bridge._INSTALLED["pipeline"] is not tvm.relax.get_default_pipeline


def test_tiles_fit_the_extents_they_pad_least():
    from vkir.tvm.rules.matmul import CONFIG, fitted, matmul_extents

    assert fitted(CONFIG, None) == CONFIG
    conv16 = fitted(CONFIG, (1, 16384, 16, 144))        # 16 output channels: 4x4-wide tiles
    assert (conv16.micro_size_x, conv16.block_size_y) == (8, 4)
    tokens = fitted(CONFIG, (1, 32, 384, 128))          # 32 rows: 4 per invocation
    assert (tokens.micro_size_x, tokens.block_size_y) == (4, 8)
    assert fitted(CONFIG, (1, None, None, 64)) == CONFIG  # symbolic: as configured
    assert matmul_extents(_conv()[0]) == (1, 36, 12, 72)
    assert matmul_extents(_dense()[0]) == (1, 37, 19, 20)
