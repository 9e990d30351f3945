"""Whole TVM models on Vulkan through vkir, beside TVM's own llvm target on the same CPU: a
`relax.frontend.nn` MLP, a pre-norm attention block, (with torch) ResNet-18 (224x224), a small
U-Net (128x128) and an MLP-Mixer (224x224, 4 blocks) through torch.export, and (with
transformers) a tiny random GPT-2's next token over a symbolic sequence length, compiled with
unchanged TVM code (`tvm.compile(mod, target="vulkan")` after `vkir.tvm.install()`) and run on
`relax.VirtualMachine`. For each: the compile, the first call (VM creation, first forward and
the result read back) and the warm call (median wall time, and median CPU seconds of the whole
process: TVM's thread pool and llvmpipe's threads both count), each result checked against
llvm's first. With `--compile`, two more columns for the vulkan row, each from a fresh process:
a cold compile (an empty vkir cache, MESA_SHADER_CACHE_DISABLE=true) and a compile that finds
every kernel in that cache; `--phases` adds where the vulkan compile's CPU time goes.

    python -m benchmarks.tvm_models [--repeat N] [--models NAME ...] [--compile] [--phases]

Needs the `vkir[tvm]` extra (apache-tvm 0.27) and a C++ compiler (vkir's TVM device API).
On lavapipe both columns use the same CPU cores: the comparison is of the generated code and
the runtime's overhead per kernel launch, not of a GPU against a CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
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


def torch_models() -> dict:
    """name -> (torch module in eval mode, input shape), or {} without torch: the convolution
    and token-mixing models of the TVM rows in docs/performance.md."""
    try:
        import torch
        from torch import nn
    except ImportError:
        return {}

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    class ResNet18(nn.Module):
        def __init__(self, classes=1000):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                      nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(512, classes)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    class UNet(nn.Module):
        def __init__(self, cin=3, base=16, depth=3):
            super().__init__()

            def double(a, b):
                return nn.Sequential(nn.Conv2d(a, b, 3, 1, 1), nn.ReLU(),
                                     nn.Conv2d(b, b, 3, 1, 1), nn.ReLU())

            chans = [base * 2 ** k for k in range(depth + 1)]
            self.down = nn.ModuleList([double(cin, chans[0])] +
                                      [double(chans[k], chans[k + 1]) for k in range(depth)])
            self.up = nn.ModuleList([nn.ConvTranspose2d(chans[k + 1], chans[k], 2, 2)
                                     for k in reversed(range(depth))])
            self.dec = nn.ModuleList([double(2 * chans[k], chans[k])
                                      for k in reversed(range(depth))])
            self.head = nn.Conv2d(chans[0], 1, 1)

        def forward(self, x):
            skips = []
            for k, d in enumerate(self.down):
                x = d(x if k == 0 else nn.functional.max_pool2d(x, 2))
                skips.append(x)
            skips.pop()
            for up, dec in zip(self.up, self.dec):
                x = dec(torch.cat([up(x), skips.pop()], 1))
            return self.head(x)

    class Mixer(nn.Module):
        def __init__(self, image=224, patch=16, dim=256, depth=4, tokens_hidden=128,
                     channels_hidden=1024, classes=1000):
            super().__init__()
            n = (image // patch) ** 2
            self.embed = nn.Conv2d(3, dim, patch, patch)
            self.blocks = nn.ModuleList()
            for _ in range(depth):
                self.blocks.append(nn.ModuleList([
                    nn.LayerNorm(dim),
                    nn.Sequential(nn.Linear(n, tokens_hidden), nn.GELU(),
                                  nn.Linear(tokens_hidden, n)),
                    nn.LayerNorm(dim),
                    nn.Sequential(nn.Linear(dim, channels_hidden), nn.GELU(),
                                  nn.Linear(channels_hidden, dim))]))
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, classes)

        def forward(self, x):
            x = self.embed(x).flatten(2).transpose(1, 2)
            for n1, tok, n2, ch in self.blocks:
                x = x + tok(n1(x).transpose(1, 2)).transpose(1, 2)
                x = x + ch(n2(x))
            return self.head(self.norm(x).mean(1))

    torch.manual_seed(0)
    return {"resnet18 1x3x224x224": (ResNet18().eval(), (1, 3, 224, 224)),
            "unet 1x3x128x128": (UNet().eval(), (1, 3, 128, 128)),
            "mixer 1x3x224x224": (Mixer().eval(), (1, 3, 224, 224))}


def torch_relax(module, shape):
    """(Relax module, inputs) of a torch module exported at `shape` (weights as constants)."""
    import torch
    from tvm.relax.frontend.torch import from_exported_program

    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    mod = from_exported_program(torch.export.export(module, (x,)), keep_params_as_input=False)
    return mod, [x.numpy()]


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


def cases(only=None) -> dict:
    """name -> () -> (Relax module, inputs, function name) of every model (those named in
    `only`, where given; a name matches by its first word)."""
    from tvm import relax

    out = {}
    rng = np.random.default_rng(0)

    def nn_case(module, shape):
        def make():
            mod, params = module.export_tvm(spec={"forward": {
                "x": relax.frontend.nn.spec.Tensor(shape, "float32")}})
            inputs = [rng.standard_normal(shape).astype(np.float32)] + \
                [(0.05 * rng.standard_normal([int(d) for d in p.shape])).astype(np.float32)
                 for _, p in params]
            return mod, inputs, "forward"
        return make

    def torch_case(module, shape):
        return lambda: (*torch_relax(module, shape), "main")

    for name, (module, shape) in models().items():
        out[name] = nn_case(module, shape)
    for name, (module, shape) in torch_models().items():
        out[name] = torch_case(module, shape)
    out["gpt2 2x128, 32 tokens -> next"] = lambda: (*(gpt2() or (None, None)), "main")
    if only:
        out = {k: v for k, v in out.items() if k.split()[0] in only}
    return out


# where the vulkan compile spends its CPU time (--phases): (module, attribute, label), outermost
# calls only
PHASES = (("vkir.tvm.bridge", "_build", "vkir's build (all below)"),
          ("vkir.tvm.importer", "import_prim_func", "import TVM -> vkir"),
          ("vkir.lowering", "lower", "vkir passes"),
          ("vkir.spirv.codegen", "KernelEmitter.run", "SPIR-V emission"),
          ("vkir.spirv.codegen", "validate", "spirv-val"),
          ("vkir.tvm.bridge", "_entries", "library entries"),
          ("vkir.cache.compile", "load", "cache reads"),
          ("vkir.cache.compile", "store", "cache writes"),
          ("vkir.backends.vulkan", "VulkanRuntime.program", "pipeline creation"),
          ("tvm.ir", "save_json", "TVM save_json"))


def _timed_phases() -> dict:
    """Wrap each PHASES function so that its outermost calls add their CPU seconds to the
    returned label -> [seconds, calls] (a benchmark's instrument: the wrappers stay for the
    process)."""
    import functools
    import importlib

    spent = {}
    for module, attr, label in PHASES:
        owner = importlib.import_module(module)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        fn = getattr(owner, name)
        cell = spent.setdefault(label, [0.0, 0, 0])   # seconds, calls, depth

        def timed(*a, _fn=fn, _cell=cell, **k):
            _cell[2] += 1
            t0 = time.process_time()
            try:
                return _fn(*a, **k)
            finally:
                _cell[2] -= 1
                if _cell[2] == 0:
                    _cell[0] += time.process_time() - t0
                    _cell[1] += 1
        setattr(owner, name, functools.wraps(fn)(timed))
    return spent


def compile_once(name: str, phases: bool) -> dict:
    """One vulkan compile of model `name` in this process: wall and CPU seconds (and phases)."""
    import tvm

    import vkir

    vkir.tvm.install(vkir.device())
    mod, _, _ = cases([name.split()[0]])[name]()
    spent = _timed_phases() if phases else {}
    w0, c0 = time.perf_counter(), time.process_time()
    tvm.compile(mod, target="vulkan")
    return {"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0,
            "phases": {k: v[:2] for k, v in spent.items()}}


def fresh_compiles(name: str, phases: bool) -> tuple:
    """(cold, cached) results of `compile_once` in two fresh processes sharing a new, empty
    vkir cache (holding only the TVM device API library, which no model compile builds) with
    Mesa's shader cache off: the first compiles every kernel, the second finds them there."""
    from vkir.cache.root import cache_root

    out = []
    with tempfile.TemporaryDirectory(prefix="vkir-tvm-models-") as cache:
        api = cache_root() / "tvm-device-api" if cache_root() is not None else None
        if api is not None and api.is_dir():
            shutil.copytree(api, os.path.join(cache, "tvm-device-api"))
        env = dict(os.environ, VKIR_CACHE_DIR=cache, MESA_SHADER_CACHE_DISABLE="true")
        for _ in range(2):
            done = subprocess.run([sys.executable, "-m", "benchmarks.tvm_models", "--child",
                                   name] + (["--phases"] if phases else []),
                                  capture_output=True, text=True, env=env, check=True)
            out.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return tuple(out)


def _run(tvm, relax, mod, inputs, target, dev, repeat: int, fn: str = "forward") -> tuple:
    """(compile s, first call s, warm call s (median), warm CPU s (median), result) of `mod` on
    `target`."""
    t0 = time.perf_counter()
    ex = tvm.compile(mod, target=target)
    compiled = time.perf_counter() - t0
    t0 = time.perf_counter()
    vm = relax.VirtualMachine(ex, dev)
    args = [tvm.runtime.tensor(a, device=dev) for a in inputs]
    out = _value(vm[fn](*args))
    first = time.perf_counter() - t0
    times, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        _value(vm[fn](*args))
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return compiled, first, statistics.median(times), statistics.median(cpus), out


def _value(out) -> np.ndarray:
    """The numpy value of a VM result (the first tensor of a tuple)."""
    return out.numpy() if hasattr(out, "numpy") else out[0].numpy()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--models", nargs="*", help="first words of the model names (e.g. "
                        "resnet18 unet mixer gpt2 mlp attention); default: all")
    parser.add_argument("--compile", action="store_true",
                        help="add fresh-process cold and cached vulkan compiles")
    parser.add_argument("--phases", action="store_true",
                        help="with --compile: the CPU seconds of each phase of those compiles")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(compile_once(args.child, args.phases)))
        return
    import tvm
    from tvm import relax

    import vkir

    dev = vkir.device()
    vkir.tvm.install(dev)
    print(f"vulkan: vkir on {dev.info.name}; llvm: TVM's CPU target, same machine")
    print(f"{'model':30} {'target':7} {'compile s':>10} {'first ms':>10} {'warm ms':>9} "
          f"{'warm cpu ms':>11} {'max err':>9}" +
          (f" {'cold s':>7} {'cold cpu':>8} {'cached s':>8} {'cached cpu':>10}"
           if args.compile else ""))
    for name, make in cases(args.models).items():
        if name.startswith("gpt2") and "int64" not in dev.info.features:   # int64 token ids
            continue
        built = make()
        if built[0] is None:
            continue
        mod, inputs, fn = built
        rows = {"llvm": _run(tvm, relax, mod, inputs, "llvm", tvm.cpu(), args.repeat, fn),
                "vulkan": _run(tvm, relax, mod, inputs, "vulkan", tvm.vulkan(0), args.repeat,
                               fn)}
        fresh = fresh_compiles(name, args.phases) if args.compile else None
        _report(name, rows, fresh)


def _report(name: str, rows: dict, fresh) -> None:
    """One line per target: times, and the largest difference from llvm's result; with the
    fresh-process compiles, their columns and phases on the vulkan line."""
    want = rows["llvm"][4]
    for target, (compiled, first, warm, cpu, out) in rows.items():
        err = float(np.abs(out.astype(np.float64) - want).max())
        np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-3)
        line = (f"{name:30} {target:7} {compiled:10.2f} {first * 1e3:10.2f} "
                f"{warm * 1e3:9.2f} {cpu * 1e3:11.2f} {err:9.1e}")
        if fresh is not None and target == "vulkan":
            cold, cached = fresh
            line += (f" {cold['wall']:7.2f} {cold['cpu']:8.2f} {cached['wall']:8.2f} "
                     f"{cached['cpu']:10.2f}")
        print(line, flush=True)
    if fresh is not None and fresh[0]["phases"]:
        for label, run in zip(("cold", "cached"), fresh):
            print(f"{'':30} {label} compile, CPU s by phase: " + ", ".join(
                f"{k} {v[0]:.2f} (x{v[1]})" for k, v in run["phases"].items() if v[1]))


if __name__ == "__main__":
    main()
