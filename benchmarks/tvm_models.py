"""Whole TVM models on Vulkan through vkir, beside TVM's own llvm target on the same CPU: a
`relax.frontend.nn` MLP, a pre-norm attention block and (with transformers) a tiny random
GPT-2's next token over a symbolic sequence length, compiled with unchanged TVM code
(`tvm.compile(mod, target="vulkan")` after `vkir.tvm.install()`) and run on
`relax.VirtualMachine`. For each: the compile, the first call (VM creation, first forward and
the result read back) and the warm call (median), each result checked against llvm's first.

    python -m benchmarks.tvm_models [--repeat N]

Needs the `vkir[tvm]` extra (apache-tvm 0.27) and a C++ compiler (vkir's TVM device API).
On lavapipe both columns use the same CPU cores: the comparison is of the generated code and
the runtime's overhead per kernel launch, not of a GPU against a CPU.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def models() -> dict:
    """name -> (nn.Module, input shape): the MLP and the attention block."""
    from tvm.relax.frontend import nn

    class MLP(nn.Module):
        def __init__(self, d=256, hidden=1024):
            self.fc1 = nn.Linear(d, hidden)
            self.fc2 = nn.Linear(hidden, d)

        def forward(self, x):
            return self.fc2(nn.relu(self.fc1(x)))

    class Attention(nn.Module):
        def __init__(self, d=128, heads=4):
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.norm = nn.LayerNorm(d)
            self.heads = heads

        def forward(self, x):
            b, s, d = x.shape
            h = self.norm(x)

            def split(t):
                return nn.permute_dims(nn.reshape(t, (b, s, self.heads, d // self.heads)),
                                       [0, 2, 1, 3])

            q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
            scale = 1.0 / (d // self.heads) ** 0.5
            scores = nn.matmul(q, nn.permute_dims(k, [0, 1, 3, 2])) * scale
            y = nn.matmul(nn.softmax(scores, axis=-1), v)
            return x + self.o(nn.reshape(nn.permute_dims(y, [0, 2, 1, 3]), (b, s, d)))

    return {"mlp 64x256-1024-256": (MLP(), (64, 256)),
            "attention 1x128x128, 4 heads": (Attention(), (1, 128, 128))}


def gpt2(layers: int = 2):
    """(Relax module, inputs) of a tiny random transformers GPT2LMHeadModel's next-token
    function (symbolic sequence length, attention mask, argmax in the module), or None
    without transformers."""
    try:
        import torch
        import transformers
    except ImportError:
        return None
    from tvm.relax.frontend.torch import from_exported_program

    class NextToken(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, ids, mask):
            logits = self.model(input_ids=ids, attention_mask=mask, use_cache=False).logits
            return logits[:, -1:, :].argmax(-1)

    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=512, n_positions=128, n_embd=128,
                                     n_layer=layers, n_head=4, bos_token_id=0,
                                     eos_token_id=0, attn_implementation="eager")
    model = NextToken(transformers.GPT2LMHeadModel(config).eval())
    ids = torch.arange(1, 33).reshape(1, 32)
    s = torch.export.Dim("s", min=2, max=120)
    program = torch.export.export(model, (ids, torch.ones_like(ids)),
                                  dynamic_shapes={"ids": {1: s}, "mask": {1: s}})
    mod = from_exported_program(program, keep_params_as_input=False)
    return mod, [ids.numpy(), np.ones((1, 32), np.int64)]


def _run(tvm, relax, mod, inputs, target, dev, repeat: int, fn: str = "forward") -> tuple:
    """(compile s, first call s, warm call s (median), result) of `mod` on `target`."""
    t0 = time.perf_counter()
    ex = tvm.compile(mod, target=target)
    compiled = time.perf_counter() - t0
    t0 = time.perf_counter()
    vm = relax.VirtualMachine(ex, dev)
    args = [tvm.runtime.tensor(a, device=dev) for a in inputs]
    out = _value(vm[fn](*args))
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        _value(vm[fn](*args))
        times.append(time.perf_counter() - t0)
    return compiled, first, statistics.median(times), out


def _value(out) -> np.ndarray:
    """The numpy value of a VM result (the first tensor of a tuple)."""
    return out.numpy() if hasattr(out, "numpy") else out[0].numpy()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    import tvm
    from tvm import relax

    import vkir

    dev = vkir.device()
    vkir.tvm.install(dev)
    print(f"vulkan: vkir on {dev.info.name}; llvm: TVM's CPU target, same machine")
    print(f"{'model':30} {'target':7} {'compile s':>10} {'first ms':>10} {'warm ms':>9} "
          f"{'max err':>9}")
    rng = np.random.default_rng(0)
    for name, (module, shape) in models().items():
        mod, params = module.export_tvm(spec={"forward": {"x": relax.frontend.nn.spec.Tensor(
            shape, "float32")}})
        inputs = [rng.standard_normal(shape).astype(np.float32)] + \
            [(0.05 * rng.standard_normal([int(d) for d in p.shape])).astype(np.float32)
             for _, p in params]
        rows = {"llvm": _run(tvm, relax, mod, inputs, "llvm", tvm.cpu(), args.repeat),
                "vulkan": _run(tvm, relax, mod, inputs, "vulkan", tvm.vulkan(0), args.repeat)}
        _report(name, rows)
    built = gpt2()
    if built is not None and "int64" in dev.info.features:   # token ids are int64
        mod, inputs = built
        rows = {"llvm": _run(tvm, relax, mod, inputs, "llvm", tvm.cpu(), args.repeat, "main"),
                "vulkan": _run(tvm, relax, mod, inputs, "vulkan", tvm.vulkan(0), args.repeat,
                               "main")}
        _report("gpt2 2x128, 32 tokens -> next", rows)


def _report(name: str, rows: dict) -> None:
    """One line per target: times, and the largest difference from llvm's result."""
    want = rows["llvm"][3]
    for target, (compiled, first, warm, out) in rows.items():
        err = float(np.abs(out.astype(np.float64) - want).max())
        np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-3)
        print(f"{name:30} {target:7} {compiled:10.2f} {first * 1e3:10.2f} "
              f"{warm * 1e3:9.2f} {err:9.1e}")


if __name__ == "__main__":
    main()
