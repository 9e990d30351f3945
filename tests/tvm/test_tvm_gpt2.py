"""transformers' GPT2LMHeadModel (a tiny random configuration built from a GPT2Config, nothing
downloaded) through torch.export and TVM's Relax frontend on `relax.VirtualMachine(ex,
tvm.vulkan(0))`: symbolic sequence length, an attention mask and argmax in the module, greedy
decoding token for token equal to TVM's llvm target. Token ids are int64: native where the
device has int64, in pairs of 32-bit words where it does not (vkir's EmulateInt64)."""

import numpy as np
import pytest

import vkir

pytest.importorskip("tvm.runtime")   # not the namespace package tests/tvm makes without TVM
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
import tvm  # noqa: E402
from tvm import relax  # noqa: E402


class _NextToken(torch.nn.Module):
    """The greedy next token of the last position (argmax inside the module)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, mask):
        logits = self.model(input_ids=ids, attention_mask=mask, use_cache=False).logits
        return logits[:, -1:, :].argmax(-1)


def gpt2_module(layers: int = 2):
    """The Relax module of a tiny random GPT-2's next-token function over (1, s) ids."""
    from tvm.relax.frontend.torch import from_exported_program

    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=96, n_positions=64, n_embd=32, n_layer=layers,
                                     n_head=2, initializer_range=0.2,
                                     attn_implementation="eager")
    model = _NextToken(transformers.GPT2LMHeadModel(config).eval())
    ids = torch.tensor([[3, 14, 15, 9, 2]])
    s = torch.export.Dim("s", min=2, max=60)
    program = torch.export.export(model, (ids, torch.ones_like(ids)),
                                  dynamic_shapes={"ids": {1: s}, "mask": {1: s}})
    return from_exported_program(program, keep_params_as_input=False)


def greedy(vm, dev, prompt, tokens: int) -> list:
    """`prompt` and `tokens` greedy tokens; the first prompt token masked out."""
    seq = list(prompt)
    for _ in range(tokens):
        ids = np.array([seq], np.int64)
        mask = np.ones_like(ids)
        mask[0, 0] = 0
        out = vm["main"](tvm.runtime.tensor(ids, device=dev), tvm.runtime.tensor(mask, device=dev))
        seq.append(int(out[0].numpy().ravel()[0]))
    return seq


def test_gpt2_greedy_decoding_matches_llvm(_vulkan_device):
    vkir.tvm.install(_vulkan_device)
    mod = gpt2_module()
    prompt = [3, 14, 15, 9, 2]
    want = greedy(relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu()), tvm.cpu(),
                  prompt, 4)
    dev = tvm.vulkan(0)
    got = greedy(relax.VirtualMachine(tvm.compile(mod, target="vulkan"), dev), dev, prompt, 4)
    assert got == want
