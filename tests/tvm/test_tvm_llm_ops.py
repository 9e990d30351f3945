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
    """(llvm's, vulkan's) results of `fn` of `mod` for each input list, one build per target
    (a tuple of arrays where `fn` returns a tuple)."""
    pairs = []
    vms = {t: relax.VirtualMachine(tvm.compile(mod, target=t), d)
           for t, d in (("llvm", tvm.cpu()), ("vulkan", vulkan))}
    for inputs in inputs_list:
        got = []
        for t, d in (("llvm", tvm.cpu()), ("vulkan", vulkan)):
            out = vms[t][fn](*[tvm.runtime.tensor(a, device=d) for a in inputs])
            got.append(out.numpy() if hasattr(out, "numpy") else tuple(o.numpy() for o in out))
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


@I.ir_module
class _Argmax:
    @R.function
    def main(x: R.Tensor((3, 10), "float32")):
        return R.argmax(x, axis=1)


def test_argmax(vulkan):
    """argmax reduces an int64 index, which TVM's NarrowDataType cannot narrow: the kernel
    keeps it, native where the device has int64 and in pairs of 32-bit words where it does
    not (EmulateInt64); the same indices as llvm either way."""
    x = np.random.default_rng(3).standard_normal((3, 10)).astype(np.float32)
    _check(_Argmax, [[x]], vulkan)


@I.ir_module
class _Masks:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), y: R.Tensor((4, 8), "float32")):
        less = R.less(x, y)
        both = R.bitwise_and(less, R.greater(x, R.const(0.0)))
        either = R.bitwise_or(R.isnan(x), R.isinf(y))
        return R.where(R.bitwise_or(both, either), x, y)


@I.ir_module
class _Mask:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), y: R.Tensor((4, 8), "float32")):
        return R.less(x, y)


def test_bool_tensors_cross_kernel_boundaries(vulkan):
    """Masks as TVM stores them (one byte per element) between kernels and as a result."""
    rng = np.random.default_rng(4)
    x, y = (rng.standard_normal((4, 8)).astype(np.float32) for _ in range(2))
    x[0, 1], y[1, 2], y[3, 3] = np.nan, np.inf, -np.inf
    _check(_Masks, [[x, y]], vulkan)
    ((want, got),) = _results(_Mask, [[x, y]], vulkan)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axes", [[3, 2, 1, 0], [0, 2, 1, 3]])
def test_a_transpose_over_a_symbolic_dimension(vulkan, axes):
    """TVM's index arithmetic binds its let variable `rmod` twice in one expression."""
    @I.ir_module
    class Transpose:
        @R.function
        def main(x: R.Tensor(("b", "s", 2, 8), "float32")):
            return R.permute_dims(x, axes)

    rng = np.random.default_rng(5)
    _check(Transpose, [[rng.standard_normal((b, s, 2, 8)).astype(np.float32)]
                       for b, s in ((1, 1), (2, 3))], vulkan)


@I.ir_module
class _Sort:
    @R.function
    def main(x: R.Tensor((2, 16), "float32")):
        s = R.sort(x, axis=1, descending=True)
        i = R.argsort(x, axis=1, descending=True, dtype="int32")
        return R.tuple(s, i)


def test_sort_and_argsort(vulkan):
    x = np.random.default_rng(6).permutation(32).astype(np.float32).reshape(2, 16)
    pairs = _results(_Sort, [[x]], vulkan)
    for want, got in zip(*pairs[0]):
        np.testing.assert_array_equal(got, want)


class _TopP(nn.Module):
    def forward(self, logits, top_p, top_k, uniform):
        prob = nn.softmax(logits, axis=-1)
        ranked = nn.op.sort(prob, axis=-1, descending=True)
        index = nn.op.argsort(prob, axis=-1, descending=True, dtype="int32")
        return nn.op.sample_top_p_top_k_from_sorted_prob(ranked, index, top_p, top_k, uniform)


def test_top_p_sampling_and_position_ids(vulkan):
    """Sampling as LLM decoders do it (softmax, sort, argsort, cumsum over the sorted
    probabilities), and position ids as a cumsum of the attention mask."""
    spec = {"logits": nn.spec.Tensor((2, 32), "float32"),
            "top_p": nn.spec.Tensor((2, 1), "float32"), "top_k": nn.spec.Tensor((2, 1), "int32"),
            "uniform": nn.spec.Tensor((2, 1), "float32")}
    mod, _ = _TopP().export_tvm(spec={"forward": spec})
    logits = 3 * np.random.default_rng(7).standard_normal((2, 32)).astype(np.float32)
    picks = [[logits, np.array([[p], [0.5]], np.float32), np.array([[32], [k]], np.int32),
              np.array([[u], [0.8]], np.float32)] for p, k, u in ((0.9, 5, 0.3), (0.2, 32, 0.7))]
    for want, got in _results(mod, picks, vulkan, "forward"):
        np.testing.assert_array_equal(got, want)

    class Positions(nn.Module):
        def forward(self, mask):
            return nn.op.cumsum(mask, axis=1) - 1

    mod, _ = Positions().export_tvm(spec={"forward": {"mask": nn.spec.Tensor((1, "s"),
                                                                           "int32")}})
    _check(mod, [[np.ones((1, s), np.int32)] for s in (1, 5)], vulkan, "forward")


def test_thread_invariant_hint_is_the_identity(device):
    """TVM's paged KV cache marks conditions with tvm_thread_invariant, a hint for its own
    passes: vkir reads the condition itself."""
    from tvm.script import tirx as T

    @T.prim_func
    def fill_if(A: T.Buffer((64,), "float32"), n: T.int32):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            if T.tvm_thread_invariant(n > 3):
                A[tx] = T.float32(1)

    kernel = vkir.build(vkir.from_tvm(fill_if, device=device), device=device)
    for n in (2, 5):
        a = np.zeros(64, np.float32)
        kernel(a, n)
        np.testing.assert_array_equal(a, np.full(64, float(n > 3), np.float32))


class _DecodeStep(nn.Module):
    """One decode step of two-head attention with a KV cache of symbolic length t: the new
    token's key and value appended, attention over t + 1 positions."""

    def __init__(self, d=16, heads=2):
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.heads = heads

    def forward(self, x, k_cache, v_cache):
        d = x.shape[-1]
        h = self.heads

        def split(t):   # (1, s, d) -> (1, h, s, d / h)
            return nn.permute_dims(nn.reshape(t, (1, t.shape[1], h, d // h)), [0, 2, 1, 3])

        k = nn.concat([k_cache, self.k(x)], dim=1)
        v = nn.concat([v_cache, self.v(x)], dim=1)
        scores = nn.matmul(split(self.q(x)), nn.permute_dims(split(k), [0, 1, 3, 2]))
        y = nn.matmul(nn.softmax(scores * (1.0 / (d // h) ** 0.5), axis=-1), split(v))
        y = nn.reshape(nn.permute_dims(y, [0, 2, 1, 3]), (1, 1, d))
        return self.o(y), k, v


def test_a_decode_loop_with_a_kv_cache(vulkan):
    """Five steps, each feeding the caches the last step returned, equal to llvm's."""
    rng = np.random.default_rng(8)
    spec = {"x": nn.spec.Tensor((1, 1, 16), "float32"),
            "k_cache": nn.spec.Tensor((1, "t", 16), "float32"),
            "v_cache": nn.spec.Tensor((1, "t", 16), "float32")}
    mod, params = _DecodeStep().export_tvm(spec={"forward": spec})
    weights = _params(params, rng)
    steps = {}
    for t, d in (("llvm", tvm.cpu()), ("vulkan", vulkan)):
        vm = relax.VirtualMachine(tvm.compile(mod, target=t), d)
        caches = [np.zeros((1, 1, 16), np.float32)] * 2
        rows = []
        for step in range(5):
            x = np.random.default_rng(step).standard_normal((1, 1, 16)).astype(np.float32)
            y, k, v = vm["forward"](*[tvm.runtime.tensor(a, device=d)
                                      for a in [x, *caches, *weights]])
            caches = [k.numpy(), v.numpy()]
            rows.append(y.numpy())
        steps[t] = rows, caches
    for want, got in zip(steps["llvm"][0], steps["vulkan"][0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for want, got in zip(steps["llvm"][1], steps["vulkan"][1]):
        assert got.shape == want.shape == (1, 6, 16)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@I.ir_module
class _Bytes:
    @R.function
    def main(x: R.Tensor((4, 7), "uint8"), y: R.Tensor((4, 7), "int8")):
        total = R.add(R.astype(x, "float32"), R.astype(y, "float32"))
        return R.tuple(R.astype(total, "int8"), R.add(x, x))


def test_8bit_tensors(vulkan):
    """uint8/int8 tensors as TVM stores them, also where the device has no 8-bit storage
    (SwiftShader: vkir's kernels read words and extract bytes)."""
    rng = np.random.default_rng(9)
    x = rng.integers(0, 255, (4, 7)).astype(np.uint8)
    y = rng.integers(-50, 50, (4, 7)).astype(np.int8)
    ((want, got),) = _results(_Bytes, [[x, y]], vulkan)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("kernel", ["decode", "prefill", "merge_state"])
def test_paged_kv_cache_kernels_build(device, kernel):
    """The attention kernels of TVM's TIRPagedKVCache (its optimize_llm tutorial's cache) import
    and build: they mark conditions with tvm_thread_invariant."""
    from tvm.relax.frontend.nn.llm import kv_cache

    target = vkir.tvm.target(device)
    make = {"decode": lambda: kv_cache._attention_decode(2, 4, 16, "float32", False, {},
                                                          target),
            "prefill": lambda: kv_cache._attention_prefill(2, 4, 16, "float32", False, {},
                                                            target),
            "merge_state": lambda: kv_cache._merge_state_inplace(4, 16, "float32", target)}
    out = vkir.from_tvm(make[kernel](), device=device)
    for func in (out.values() if isinstance(out, dict) else [out]):
        assert vkir.build(func, device=device).spirv
