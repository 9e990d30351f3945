"""Relax models on `relax.VirtualMachine(ex, tvm.vulkan(0))` after `vkir.tvm.install()`, with
unchanged TVM code (`tvm.compile(mod, target="vulkan")`): TVM's device API is vkir's
(vkir.tvm.device_memory), tensors on tvm.vulkan(0) live in vkir memory, and the results agree
with TVM's own llvm target. One build per model per module."""

import numpy as np
import pytest

import vkir

pytest.importorskip("tvm.runtime")   # not the namespace package tests/tvm makes without TVM
import tvm  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend import nn  # noqa: E402


class MLP(nn.Module):
    def __init__(self):
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(nn.relu(self.fc1(x)))


class Attention(nn.Module):
    """A pre-norm self-attention block with a residual (two heads)."""

    def __init__(self, d=16, heads=2):
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.norm = nn.LayerNorm(d)
        self.heads = heads

    def forward(self, x):
        b, s, d = x.shape
        h = self.norm(x)

        def heads(t):
            return nn.permute_dims(nn.reshape(t, (b, s, self.heads, d // self.heads)), [0, 2, 1, 3])

        q, k, v = heads(self.q(h)), heads(self.k(h)), heads(self.v(h))
        scores = nn.matmul(q, nn.permute_dims(k, [0, 1, 3, 2])) * (1.0 / (d // self.heads) ** 0.5)
        y = nn.matmul(nn.softmax(scores, axis=-1), v)
        return x + self.o(nn.reshape(nn.permute_dims(y, [0, 2, 1, 3]), (b, s, d)))


def _model(module, shape):
    mod, params = module.export_tvm(spec={"forward": {"x": nn.spec.Tensor(shape, "float32")}})
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal(shape).astype(np.float32)] + \
        [(0.3 * rng.standard_normal([int(d) for d in p.shape])).astype(np.float32)
         for _, p in params]
    cpu = tvm.cpu()
    want = relax.VirtualMachine(tvm.compile(mod, target="llvm"), cpu)["forward"](
        *[tvm.runtime.tensor(a, device=cpu) for a in inputs]).numpy()
    return mod, inputs, want


@pytest.fixture(scope="module")
def vulkan(_vulkan_device):
    vkir.tvm.install(_vulkan_device)
    return tvm.vulkan(0)


@pytest.fixture(scope="module")
def models(vulkan):
    """name -> (vm, inputs, want, executable) of each model, built once."""
    out = {}
    for name, (module, shape) in {"mlp": (MLP(), (4, 16)),
                                  "attention": (Attention(), (1, 4, 16))}.items():
        mod, inputs, want = _model(module, shape)
        ex = tvm.compile(mod, target="vulkan")
        out[name] = relax.VirtualMachine(ex, vulkan), inputs, want, ex
    return out


@pytest.fixture(params=["mlp", "attention"])
def model(request, models):
    return models[request.param]


def test_relax_models_run_on_the_vulkan_vm(model, vulkan):
    vm, inputs, want, _ = model
    args = [tvm.runtime.tensor(a, device=vulkan) for a in inputs]
    out = vm["forward"](*args)
    assert str(out.device) == "vulkan:0"
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    timer = vm.time_evaluator("forward", vulkan, number=1, repeat=1)
    assert timer(*args).mean > 0


def test_tensors_on_tvm_vulkan_live_in_vkir_memory(vulkan, _vulkan_device):
    from vkir.driver.dlpack import array_of_handle

    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = tvm.runtime.tensor(x, device=vulkan)
    assert array_of_handle(t.data_ptr()).device is _vulkan_device
    np.testing.assert_array_equal(t.numpy(), x)
    t.copyfrom(-x)
    np.testing.assert_array_equal(t.numpy(), -x)
    u = tvm.runtime.empty((4, 6), "float32", device=vulkan)
    t.copyto(u)                                # device to device
    np.testing.assert_array_equal(u.numpy(), -x)
    info = _vulkan_device.info
    assert vulkan.exist and vulkan.max_threads_per_block == info.limits.max_workgroup_invocations
    assert vulkan.device_name == info.name and vulkan.warp_size == info.subgroup_size
    assert vulkan.max_shared_memory_per_block == info.limits.max_shared_memory_bytes


def test_a_torch_export_model_runs_on_the_vulkan_vm(vulkan):
    torch = pytest.importorskip("torch")   # in the test extra
    from tvm.relax.frontend.torch import from_exported_program

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8))
    x = torch.randn(4, 16)
    mod = from_exported_program(torch.export.export(m.eval(), (x,)), keep_params_as_input=False)
    vm = relax.VirtualMachine(tvm.compile(mod, target="vulkan"), vulkan)   # constants on vulkan
    out = vm["main"](tvm.runtime.tensor(x.numpy(), device=vulkan))[0]
    with torch.no_grad():
        np.testing.assert_allclose(out.numpy(), m(x).numpy(), rtol=1e-5, atol=1e-5)


_LOAD_AND_RUN = """
import sys
import numpy as np
import tvm
from tvm import relax
import vkir
from vkir.tvm import bridge

vkir.tvm.install()
dev = tvm.vulkan(0)
for library in sys.argv[1:]:
    data = np.load(library + ".npz")
    vm = relax.VirtualMachine(tvm.runtime.load_module(library), dev)
    args = [tvm.runtime.tensor(data[f"arg{k}"], device=dev) for k in range(len(data.files) - 1)]
    np.testing.assert_allclose(vm["forward"](*args).numpy(), data["want"], rtol=1e-5, atol=1e-5)
# every kernel came from the libraries' SPIR-V: no lowering or code generation here
assert bridge._KERNELS and all(launch.kernel._compiled.prebuilt
                               for launch in bridge._KERNELS.values())
print("ran", len(bridge._KERNELS), "kernels")
"""


def test_exported_libraries_run_in_a_fresh_process(models, tmp_path):
    """export_library embeds each kernel's SPIR-V: a new process loads the libraries after
    `vkir.tvm.install()` and runs them without compiling a kernel."""
    import os
    import subprocess
    import sys

    libraries = []
    for name, (_, inputs, want, ex) in models.items():
        libraries.append(str(tmp_path / f"{name}.so"))
        ex.export_library(libraries[-1])
        np.savez(libraries[-1] + ".npz", **{f"arg{k}": a for k, a in enumerate(inputs)},
                 want=want)
    done = subprocess.run([sys.executable, "-c", _LOAD_AND_RUN, *libraries],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert done.returncode == 0 and "ran" in done.stdout, done.stderr[-3000:]


def _without_compiler(tmp_path, cache: str) -> dict:
    """An environment with no C++ compiler on PATH (nor $CXX) and vkir's cache at `cache`."""
    import os

    empty = tmp_path / "no-compilers"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "CXX"}
    env.update(PATH=str(empty), VKIR_CACHE_DIR=cache)
    return env


def _export_mlp(models, tmp_path) -> str:
    _, inputs, want, ex = models["mlp"]
    library = str(tmp_path / "mlp.so")
    ex.export_library(library)
    np.savez(library + ".npz", **{f"arg{k}": a for k, a in enumerate(inputs)}, want=want)
    return library


def test_without_a_compiler_or_device_api_loading_says_why(models, tmp_path):
    """No compiler and nothing in the cache: the load names what is missing, not TVM's "a
    loader of that name is not registered"."""
    import subprocess
    import sys

    library = _export_mlp(models, tmp_path)
    done = subprocess.run([sys.executable, "-c", _LOAD_AND_RUN, library], capture_output=True,
                          text=True, timeout=300, env=_without_compiler(tmp_path, "0"))
    assert done.returncode != 0
    assert "cannot load a library's Vulkan kernels" in done.stderr
    assert "no C++ compiler" in done.stderr and "not registered" not in done.stderr


@pytest.mark.full
def test_an_exported_library_loads_without_a_compiler(models, tmp_path, monkeypatch):
    """The device API built once with a compiler is found in vkir's cache by a process that
    has none, whatever compiler built it."""
    import subprocess
    import sys

    from vkir.tvm import device_memory

    cache = tmp_path / "cache"
    monkeypatch.setenv("VKIR_CACHE_DIR", str(cache))
    if device_memory.compiler() is None:
        pytest.skip("needs a C++ compiler to build the device API once")
    device_memory._library_bytes(device_memory.compiler())   # as install() does, once
    library = _export_mlp(models, tmp_path)
    done = subprocess.run([sys.executable, "-c", _LOAD_AND_RUN, library], capture_output=True,
                          text=True, timeout=300, env=_without_compiler(tmp_path, str(cache)))
    assert done.returncode == 0 and "ran" in done.stdout, done.stderr[-3000:]
