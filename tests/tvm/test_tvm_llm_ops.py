"""The operators of TVM's LLM path on `relax.VirtualMachine(ex, tvm.vulkan(0))` after
`vkir.tvm.install()`, each against TVM's own llvm target: symbolic batch and sequence lengths
(pooled allocations bound with the size the kernel's shape needs), cumsum, argmax, sort, bool
tensors across kernel boundaries, and a transpose over a symbolic dimension."""

import numpy as np
import pytest

import vkir

pytest.importorskip("tvm.runtime")   # not the namespace package tests/tvm makes without TVM
import tvm  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend import nn  # noqa: E402
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402


@pytest.fixture(scope="module")
def vulkan(_vulkan_device):
    vkir.tvm.install(_vulkan_device)
    return tvm.vulkan(0)


def _results(mod, inputs_list, vulkan, fn="main"):
    """(llvm's, vulkan's) results of `fn` of `mod` for each input list, one build per target."""
    pairs = []
    vms = {t: relax.VirtualMachine(tvm.compile(mod, target=t), d)
           for t, d in (("llvm", tvm.cpu()), ("vulkan", vulkan))}
    for inputs in inputs_list:
        got = []
        for t, d in (("llvm", tvm.cpu()), ("vulkan", vulkan)):
            out = vms[t][fn](*[tvm.runtime.tensor(a, device=d) for a in inputs])
            got.append(out.numpy())
        pairs.append(tuple(got))
    return pairs


def _check(mod, inputs_list, vulkan, fn="main", tol=1e-5):
    for want, got in _results(mod, inputs_list, vulkan, fn):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


class _MLP(nn.Module):
    def __init__(self):
        self.a = nn.Linear(64, 128)
        self.b = nn.Linear(128, 64)

    def forward(self, x):
        return self.b(nn.relu(self.a(x)))


class _NormSoftmax(nn.Module):
    def __init__(self):
        self.norm = nn.LayerNorm(64)

    def forward(self, x):
        return nn.softmax(self.norm(x), axis=-1)


def _params(params, rng):
    return [(0.1 * rng.standard_normal([int(d) for d in p.shape])).astype(np.float32)
            for _, p in params]


def test_a_symbolic_batch_runs_for_each_length(vulkan):
    """The intermediate of Linear -> relu comes from a pooled allocation larger than n * 128."""
    rng = np.random.default_rng(1)
    mod, params = _MLP().export_tvm(spec={"forward": {"x": nn.spec.Tensor(("n", 64),
                                                                           "float32")}})
    weights = _params(params, rng)
    _check(mod, [[rng.standard_normal((n, 64)).astype(np.float32)] + weights
                 for n in (1, 3, 17)], vulkan, "forward")


def test_a_symbolic_sequence_runs_for_each_length(vulkan):
    rng = np.random.default_rng(2)
    mod, params = _NormSoftmax().export_tvm(
        spec={"forward": {"x": nn.spec.Tensor((1, "s", 64), "float32")}})
    weights = _params(params, rng)
    _check(mod, [[rng.standard_normal((1, s, 64)).astype(np.float32)] + weights
                 for s in (1, 3, 17)], vulkan, "forward")


@I.ir_module
class _Cumsum:
    @R.function
    def main(x: R.Tensor((2, 8), "int32")):
        return R.cumsum(x, axis=1)


def test_cumsum_with_static_shapes(vulkan):
    """TVM's scan kernels declare their buffers with one free size (cse_v1) that the memory
    planner's pools do not share."""
    x = np.arange(16, dtype=np.int32).reshape(2, 8) - 5
    _check(_Cumsum, [[x]], vulkan)
