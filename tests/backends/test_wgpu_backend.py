"""The WebGPU backend (vkir/backends/wgpu.py, `device="wgpu"`): vkir's SPIR-V through wgpu-py
and its translator, with results equal to the interpreter's, and what WebGPU lacks refused by
name before anything runs. It proves the device seam: a backend in one module, under the same
Kernel as Vulkan."""

import os
import tempfile

import numpy as np
import pytest

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
pytest.importorskip("wgpu")

import vkir  # noqa: E402
from vkir import T  # noqa: E402
from vkir.testing import random_arguments  # noqa: E402
from vkir.tools.demo import vadd  # noqa: E402  (the README's vector add)


@pytest.fixture(scope="module")
def wgpu_runtime():
    from vkir.backends.wgpu import default_runtime

    try:
        return default_runtime()
    except vkir.UnsupportedError as exc:   # no WebGPU adapter on this machine
        pytest.skip(str(exc))


@T.prim_func
def block_sum(a: T.Buffer((1024,), "float32"), out: T.Buffer((16,), "float32")):
    for bx in T.thread_binding(16, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            s = T.alloc_buffer((64,), "float32", scope="shared")
            s[tx] = a[bx * 64 + tx]
            T.barrier()
            for step in T.unroll(6):
                stride = 32 >> step
                if tx < stride:
                    s[tx] = s[tx] + s[tx + stride]
                T.barrier()
            if tx == 0:
                out[bx] = s[0]


def _same_as_interpreter(func, seed=0, **sizes):
    """Build `func` for WebGPU, run it and the interpreter on the same random arguments, and
    compare every buffer."""
    k = vkir.build(func, device="wgpu")
    args = random_arguments(func, seed, **sizes)
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    k(*args)
    vkir.interpret(func, *ref)
    for got, want in zip(args, ref):
        if isinstance(got, np.ndarray):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return k


def test_readme_vadd_runs_through_webgpu(wgpu_runtime):
    k = vkir.build(vadd, device="wgpu")
    assert isinstance(k, vkir.Kernel) and k.target.kind == "wgpu"
    assert k.device is wgpu_runtime.device and k.spirv[:4] == b"\x03\x02\x23\x07"
    x = np.random.rand(1000).astype("float32")
    y = np.random.rand(1000).astype("float32")
    z = np.zeros(1000, "float32")
    k(x, y, z)                          # n = 1000 is a push constant: WebGPU's immediates
    np.testing.assert_array_equal(z, x + y)
    z = np.zeros(1000, "float32")
    k.launch(x, y, c=z).wait()          # launches and keyword arguments as on Vulkan
    np.testing.assert_array_equal(z, x + y)
    with pytest.raises(vkir.ArgumentError, match="argument 'b'"):
        k(x, y[:10], z)                 # checked before anything is copied
    assert k.profile(x, y, z, repeat=2).source == "wall"


def test_readme_block_sum_with_shared_memory_and_barriers(wgpu_runtime):
    _same_as_interpreter(block_sum)


@pytest.mark.parametrize("make", [
    lambda: __import__("vkir.ops.linalg", fromlist=["kernel"]).kernel(8, 16, 8),
    lambda: __import__("vkir.ops.layout", fromlist=["x"]).transpose_kernel((24, 40), (1, 0)),
    lambda: __import__("vkir.ops.norm", fromlist=["x"]).layer_norm_kernel(8, 100),
    lambda: __import__("vkir.ops.reduce", fromlist=["x"]).rows_kernel(8, 100),
], ids=["matmul", "transpose", "layer_norm", "sum_rows"])
def test_ops_kernels_match_the_interpreter(wgpu_runtime, make):
    _same_as_interpreter(make())


def test_int8_buffers_are_emulated_in_words(wgpu_runtime):
    """WebGPU has no 8-bit storage: the lowering emulates int8 buffers in 32-bit words, as on a
    Vulkan device without the feature."""
    @T.prim_func
    def add3(a: T.Buffer((64,), "int8"), b: T.Buffer((64,), "int8")):
        for tx in T.thread_binding(64, "threadIdx.x"):
            b[tx] = a[tx] + T.int8(3)

    k = vkir.build(add3, device="wgpu")
    a = np.arange(-32, 32, dtype=np.int8)
    b = np.zeros(64, np.int8)
    k(a, b)
    np.testing.assert_array_equal(b, a + np.int8(3))


def test_what_webgpu_lacks_is_refused_by_name(wgpu_runtime):
    @T.prim_func
    def twice(a: T.Buffer((64,), "float64"), b: T.Buffer((64,), "float64")):
        for tx in T.thread_binding(64, "threadIdx.x"):
            b[tx] = a[tx] * T.float64(2)

    @T.prim_func
    def sums(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
        for tx in T.thread_binding(64, "threadIdx.x"):
            b[tx] = T.subgroup_add(a[tx])

    with pytest.raises(vkir.UnsupportedError, match="'float64'"):
        vkir.build(twice, device="wgpu")
    with pytest.raises(vkir.UnsupportedError, match="subgroup"):
        vkir.build(sums, device="wgpu")
    with pytest.raises(vkir.UnsupportedError, match="check_bounds=True is not supported by the "
                                                    "wgpu backend"):
        vkir.build(vadd, device="wgpu", check_bounds=True)


def test_a_module_naga_refuses_names_naga_and_its_reason(wgpu_runtime):
    """naga takes no infinite float literal (softmax's -inf start): the build says so."""
    from vkir.ops.norm import softmax_kernel

    with pytest.raises(vkir.UnsupportedError, match=r"kernel softmax: WebGPU's shader translator "
                                                    r"\(naga\) refused .*Float literal is infinite"):
        vkir.build(softmax_kernel(8, 100), device="wgpu")


def test_sequences_and_written_aliases_are_refused_on_webgpu(wgpu_runtime):
    k = vkir.build(vadd, device="wgpu")
    x = np.ones(8, np.float32)
    with pytest.raises(vkir.UnsupportedError, match="vkir.sequence\\(\\) records Vulkan"):
        k.program.dispatch((), (), b"", (1, 1, 1), "kernel vadd", None)
    with pytest.raises(vkir.UnsupportedError, match="arguments 'a', 'c' share memory and one is "
                                                    "written"):
        k(x, np.ones(8, np.float32), x)
    np.testing.assert_array_equal(x, 1)      # refused before anything ran


def test_a_buffer_over_the_binding_size_names_the_limit(wgpu_runtime):
    """An argument larger than the adapter's maxStorageBufferBindingSize is refused by vkir,
    naming the limit and the size (before: wgpu's GPUValidationError from the bind group)."""
    @T.prim_func
    def bump(x: T.Buffer(("n",), "float32")):
        for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
            for tx in T.thread_binding(64, "threadIdx.x"):
                if bx * 64 + tx < n:
                    x[bx * 64 + tx] = x[bx * 64 + tx] + T.float32(1)

    k = vkir.build(bump, device="wgpu")
    cap = wgpu_runtime.limits.max_storage_buffer_range
    x = np.zeros(cap // 4 + 1, np.float32)         # pages untouched: refused before the copy
    with pytest.raises(vkir.UnsupportedError, match=f"a buffer of {x.nbytes} bytes exceeds "
                                                    f"WebGPU's maxStorageBufferBindingSize = {cap}"):
        k(x)
    with pytest.raises(vkir.UnsupportedError, match="maxStorageBufferBindingSize"):
        k.launch(x)


class _Described:
    """A wgpu adapter whose info names another llvmpipe release (its description is the
    driver's info)."""

    def __init__(self, adapter, description):
        self._adapter = adapter
        self.info = {**adapter.info, "device": "llvmpipe (LLVM 15.0.6, 256 bits)",
                     "description": description}

    def __getattr__(self, name):
        return getattr(self._adapter, name)


def test_llvmpipe_under_webgpu_keeps_the_quirks_of_its_release(wgpu_runtime):
    import wgpu

    from vkir.backends.wgpu import WgpuRuntime
    from vkir.quirks import LAVAPIPE, STORAGE_LOADS_PER_LANE

    def runtime(description):
        return WgpuRuntime(_Described(wgpu.gpu.request_adapter_sync(), description))

    assert runtime("Mesa 22.3.6 (LLVM 15.0.6)").quirks == LAVAPIPE
    assert runtime("Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)").quirks == {STORAGE_LOADS_PER_LANE}
