"""TVM's own LLM tutorial (docs/how_to/tutorials/optimize_llm.py of apache-tvm 0.27) on
`tvm.vulkan(0)` after `vkir.tvm.install()`, as its user writes it: a Llama model built with
`tvm.relax.frontend.nn` (fused QKV and gate/up projections, RMSNorm, attention through
TIRPagedKVCache with RoPE), the target from `Target.from_device(dev)`, the tutorial's own Relax
pipeline with dlight's GPU rules, `tvm.compile`, then embed, prefill and decode steps through the
paged KV cache's builtins. A tiny configuration with random weights stands in for TinyLlama; the
greedy tokens and the logits equal those of TVM's llvm target.

Also the two things the tutorial needed of vkir: the Vulkan target properties TVM's
`Target.from_device` reads, and warp syncs under a lane condition (TVM's reductions for a target
whose warp is wider than one invocation) read as uniform barriers."""

import dataclasses

import numpy as np
import pytest

import vkir

pytest.importorskip("tvm.runtime")   # not the namespace package tests/tvm makes without TVM
import tvm  # noqa: E402
from tvm import relax, te  # noqa: E402
from tvm.relax.frontend import nn  # noqa: E402
from tvm.relax.frontend.nn import op  # noqa: E402
from tvm.relax.frontend.nn.llm.kv_cache import PagedKVCache, TIRPagedKVCache  # noqa: E402
from tvm.runtime import ShapeTuple  # noqa: E402
from tvm.s_tir import dlight  # noqa: E402


@dataclasses.dataclass
class TinyLlama:
    """The tutorial's LlamaConfig fields, at a size the CPU drivers run in seconds."""

    hidden_size: int = 64
    intermediate_size: int = 96
    num_attention_heads: int = 4
    num_hidden_layers: int = 2
    rms_norm_eps: float = 1e-5
    vocab_size: int = 120
    rope_theta: int = 10000
    num_key_value_heads: int = 2
    head_dim: int = 16


class FeedForward(nn.Module):
    """SwiGLU with the gate and up projections fused into one Linear."""

    def __init__(self, c: TinyLlama):
        self.gate_up_proj = nn.Linear(c.hidden_size, 2 * c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        gate, up = op.split(self.gate_up_proj(x), 2, axis=-1)
        return self.down_proj(op.silu(gate) * up)


class Attention(nn.Module):
    """Fused QKV projection, attention in the paged KV cache, output projection."""

    def __init__(self, c: TinyLlama):
        self.head_dim, self.q_heads, self.kv_heads = (c.head_dim, c.num_attention_heads,
                                                      c.num_key_value_heads)
        self.qkv_proj = nn.Linear(c.hidden_size, (self.q_heads + 2 * self.kv_heads) * c.head_dim,
                                  bias=False)
        self.o_proj = nn.Linear(self.q_heads * c.head_dim, c.hidden_size, bias=False)

    def forward(self, x, cache: PagedKVCache, layer: int):
        b, s, _ = x.shape
        qkv = op.reshape(self.qkv_proj(x), (b, s, self.q_heads + 2 * self.kv_heads,
                                            self.head_dim))
        out = cache.attention_with_fused_qkv(layer, qkv, self.q_heads,
                                             sm_scale=self.head_dim ** -0.5)
        return self.o_proj(op.reshape(out, (b, s, self.q_heads * self.head_dim)))


class DecoderLayer(nn.Module):
    def __init__(self, c: TinyLlama):
        self.self_attn = Attention(c)
        self.mlp = FeedForward(c)
        self.input_layernorm = nn.RMSNorm(c.hidden_size, -1, c.rms_norm_eps, bias=False)
        self.post_attention_layernorm = nn.RMSNorm(c.hidden_size, -1, c.rms_norm_eps,
                                                   bias=False)

    def forward(self, h, cache: PagedKVCache, layer: int):
        h += self.self_attn(self.input_layernorm(h), cache, layer)
        h += self.mlp(self.post_attention_layernorm(h))
        return h


class Decoder(nn.Module):
    def __init__(self, c: TinyLlama):
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList([DecoderLayer(c) for _ in range(c.num_hidden_layers)])
        self.norm = nn.RMSNorm(c.hidden_size, -1, c.rms_norm_eps, bias=False)

    def forward(self, h, cache: PagedKVCache):
        for layer, block in enumerate(self.layers):
            h = block(h, cache, layer)
        return self.norm(h)


class CausalLM(nn.Module):
    """The tutorial's LlamaForCasualLM: embed, prefill (logits of the last position), decode
    and the constructor of its TIRPagedKVCache (RoPE applied as keys enter the cache), whose
    kernels are generated for `target`."""

    def __init__(self, c: TinyLlama, target, dtype: str = "float32"):
        self.model = Decoder(c)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        self.config, self.target, self.dtype = c, target, dtype
        self.to(dtype)   # the tutorial runs TinyLlama in float16

    def embed(self, input_ids):
        return self.model.embed_tokens(input_ids)

    def prefill(self, input_embed, paged_kv_cache: PagedKVCache):
        def last(x: te.Tensor):
            b, s, d = x.shape
            return te.compute((b, 1, d), lambda i, _, k: x[i, s - 1, k], name="index")

        hidden = op.tensor_expr_op(last, name_hint="index",
                                   args=[self.model(input_embed, paged_kv_cache)])
        return self.lm_head(hidden), paged_kv_cache

    def decode(self, input_embed, paged_kv_cache: PagedKVCache):
        return self.lm_head(self.model(input_embed, paged_kv_cache)), paged_kv_cache

    def create_tir_paged_kv_cache(self, max_batch_size, max_total_seq_len, prefill_chunk_size,
                                  page_size):
        c = self.config
        return TIRPagedKVCache(
            attn_kind="mha", max_batch_size=max_batch_size, max_total_seq_len=max_total_seq_len,
            prefill_chunk_size=prefill_chunk_size, page_size=page_size,
            support_sliding_window=0, layer_partition=relax.ShapeExpr([0, c.num_hidden_layers]),
            num_hidden_layers=c.num_hidden_layers, num_attention_heads=c.num_attention_heads,
            num_key_value_heads=c.num_key_value_heads, qk_head_dim=c.head_dim,
            v_head_dim=c.head_dim, mla_original_qk_head_dim=0, mla_original_v_head_dim=0,
            rope_mode=1, rope_scale=1, rope_theta=c.rope_theta, rope_scaling={},
            rope_ext_factors=relax.prim_value(0), rotary_dim=c.head_dim, dtype=self.dtype,
            target=self.target, enable_disaggregation=False)

    def spec(self):
        packed = {"param_mode": "packed", "effect_mode": "none"}
        hidden = self.config.hidden_size
        cache = nn.spec.Object(object_type=PagedKVCache)
        return nn.spec.ModuleSpec.from_raw({
            "embed": {"input_ids": nn.spec.Tensor(["seq_len"], "int32"), "$": packed},
            "prefill": {"input_embed": nn.spec.Tensor([1, "seq_len", hidden], self.dtype),
                        "paged_kv_cache": cache, "$": packed},
            "decode": {"input_embed": nn.spec.Tensor([1, 1, hidden], self.dtype),
                       "paged_kv_cache": cache, "$": packed},
            "create_tir_paged_kv_cache": {"max_batch_size": int, "max_total_seq_len": int,
                                          "prefill_chunk_size": int, "page_size": int,
                                          "$": {"param_mode": "none", "effect_mode": "none"}},
        }, self)


def opt_llm_pipeline():
    """The tutorial's Relax pipeline: graph passes, legalization and fusion, dlight's GPU
    schedules, then lowering to VM bytecode."""
    @tvm.transform.module_pass(opt_level=0)
    def pipeline(mod, _ctx):
        return tvm.transform.Sequential([
            relax.transform.FuseTransposeMatmul(),
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FoldConstant(),
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
            relax.transform.DeadCodeElimination(),
            dlight.ApplyDefaultSchedule(dlight.gpu.Matmul(), dlight.gpu.GEMV(),
                                        dlight.gpu.Reduction(), dlight.gpu.GeneralReduction(),
                                        dlight.gpu.Fallback()),
            relax.transform.RewriteDataflowReshape(),
            relax.transform.ToNonDataflow(),
            relax.transform.RemovePurityChecking(),
            relax.transform.CallTIRRewrite(),
            relax.transform.StaticPlanBlockMemory(),
            relax.transform.RewriteCUDAGraph(),
            relax.transform.LowerAllocTensor(),
            relax.transform.KillAfterLastUse(),
            relax.transform.LowerRuntimeBuiltin(),
            relax.transform.VMShapeLower(),
            relax.transform.AttachGlobalSymbol(),
        ])(mod)

    return pipeline


def generate(dev, prompt, steps: int, dtype: str = "float32"):
    """(tokens, logits of each step): the prompt prefilled, then `steps` greedy decode steps,
    on `dev` (tvm.cpu(): TVM's llvm target and default pipeline; else the tutorial's)."""
    gpu = dev != tvm.cpu()
    target = tvm.target.Target.from_device(dev)
    model = CausalLM(TinyLlama(), target, dtype)
    mod, named = model.export_tvm(spec=model.spec())
    with target:
        ex = tvm.compile(mod, target, relax_pipeline=opt_llm_pipeline() if gpu else "default")
    vm = relax.VirtualMachine(ex, dev)
    rng = np.random.default_rng(0)
    params = [tvm.runtime.tensor((0.2 * rng.standard_normal([int(d) for d in p.shape]))
                                 .astype(dtype), device=dev) for _, p in named]
    cache = vm["create_tir_paged_kv_cache"](ShapeTuple([1]), ShapeTuple([64]), ShapeTuple([32]),
                                            ShapeTuple([16]))
    view = tvm.get_global_func("vm.builtin.reshape")
    begin = tvm.get_global_func("vm.builtin.kv_state_begin_forward")
    end = tvm.get_global_func("vm.builtin.kv_state_end_forward")

    def embed(ids):
        e = vm["embed"](tvm.runtime.tensor(np.array(ids, np.int32), device=dev), params)
        return view(e, ShapeTuple([1, e.shape[0], e.shape[1]]))

    tvm.get_global_func("vm.builtin.kv_state_add_sequence")(cache, 0)
    tokens, logits_seen, step_ids = [], [], list(prompt)
    for _ in range(steps + 1):
        begin(cache, ShapeTuple([0]), ShapeTuple([len(step_ids)]))
        fn = "prefill" if not tokens else "decode"
        logits, cache = vm[fn](embed(step_ids), cache, params)
        end(cache)
        logits_seen.append(logits.numpy().astype(np.float32))
        tokens.append(int(np.argmax(logits_seen[-1])))
        step_ids = [tokens[-1]]
    return tokens, logits_seen


@pytest.fixture(scope="module")
def vulkan(_vulkan_device):
    vkir.tvm.install(_vulkan_device)
    return tvm.vulkan(0)


@pytest.mark.full   # compiles the tutorial's ~40 kernels for the device (20+ s on 2 CPUs)
@pytest.mark.parametrize("dtype,tol", [("float32", 1e-4), ("float16", 2e-2)])
def test_optimize_llm_tutorial_generates_the_tokens_of_llvm(vulkan, _vulkan_device, dtype, tol):
    """float16 as the tutorial runs TinyLlama, where the device has it; elsewhere the build
    names the feature."""
    prompt = [5, 17, 42, 9, 77, 3]
    if dtype == "float16" and "float16" not in _vulkan_device.info.features:
        with pytest.raises(vkir.UnsupportedError, match=f"device feature '{dtype}'"):
            generate(vulkan, prompt, 4, dtype)
        return
    want, want_logits = generate(tvm.cpu(), prompt, 4, dtype)
    got, got_logits = generate(vulkan, prompt, 4, dtype)
    assert got == want
    for w, g in zip(want_logits, got_logits):
        assert g.shape == w.shape == (1, 1, TinyLlama().vocab_size)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_target_from_device_has_the_device_features(vulkan, _vulkan_device):
    """TVM's Target.from_device(tvm.vulkan(0)) reads "device_api.vulkan.get_target_property":
    the vkir device's features, its subgroup size as the warp."""
    target = tvm.target.Target.from_device(vulkan)
    info = _vulkan_device.info
    assert target.kind.name == "vulkan"
    assert int(target.attrs["thread_warp_size"]) == info.subgroup_size
    assert int(target.attrs["max_shared_memory_per_block"]) == info.limits.max_shared_memory_bytes
    for prop, feature in (("supports_int64", "int64"), ("supports_float16", "float16"),
                          ("supports_8bit_buffer", "storage_buffer_8bit"),
                          ("supports_16bit_buffer", "storage_buffer_16bit")):
        assert bool(target.attrs[prop]) == (feature in info.features), prop


def test_warp_syncs_under_a_lane_condition(device):
    """TVM's reduction tail for a warp of 8: the first lanes add pairs with warp syncs under
    `if tx < 4`. vkir splits the condition around workgroup barriers, carrying each let value
    (w4 is read two steps after it is bound) in local memory."""
    from tvm.script import tirx as T

    @T.prim_func
    def tail_sum(A: T.Buffer((64,), "float32"), B: T.Buffer((8,), "float32")):
        for g in T.thread_binding(8, thread="blockIdx.x"):
            for tx in T.thread_binding(8, thread="threadIdx.x"):
                red = T.alloc_shared((8,), "float32")
                red[tx] = A[g * 8 + tx]
                T.tvm_storage_sync("shared")
                if tx < 4:
                    w4: T.let[T.float32] = red[tx] + red[tx + 4]
                    T.tvm_storage_sync("warp")
                    red[tx] = w4
                    T.tvm_storage_sync("warp")
                    w2: T.let[T.float32] = red[tx] + red[tx + 2]
                    T.tvm_storage_sync("warp")
                    red[tx] = w2
                    T.tvm_storage_sync("warp")
                    w1: T.let[T.float32] = red[tx] + red[tx + 1]
                    T.tvm_storage_sync("warp")
                    red[tx] = w1 + T.float32(0.5) * w4
                T.tvm_storage_sync("shared")
                if tx == 0:
                    B[g] = red[0]

    func = vkir.from_tvm(tail_sum, device=device, lower=False)
    a = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    b = np.zeros(8, np.float32)
    vkir.build(func, device=device)(a, b)
    rows = a.reshape(8, 8)
    np.testing.assert_allclose(b, rows.sum(1) + 0.5 * (rows[:, 0] + rows[:, 4]), rtol=1e-5,
                               atol=1e-5)


def test_a_warp_sync_under_a_condition_on_memory_is_refused(device):
    """A condition that reads memory may change between the steps: not split, refused by name."""
    from tvm.script import tirx as T

    @T.prim_func
    def gated(A: T.Buffer((8,), "float32")):
        for tx in T.thread_binding(8, thread="threadIdx.x"):
            if A[tx] > T.float32(0):
                A[tx] = T.float32(1)
                T.tvm_storage_sync("warp")
                A[tx] = T.float32(2)

    with pytest.raises(vkir.UnsupportedError, match="barrier in non-uniform control flow"):
        vkir.from_tvm(gated, device=device, lower=False)
