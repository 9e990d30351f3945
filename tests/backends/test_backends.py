"""The interpreter as a backend: `vkir.build(f, device="interp")` is a Kernel with the same call
signature, results and errors as a device kernel."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.backends import BACKENDS, Backend, BackendKernel
from vkir.tools.demo import VADD_SOURCE
from vkir.errors import ArgumentError, UnsupportedError
from vkir.target import Target

VADD = vkir.from_script(VADD_SOURCE)


@T.prim_func
def flags(A: T.Buffer(("n",), "bool"), B: T.Buffer(("n",), "int32"), s: T.int32):
    for bx in T.thread_binding(n, "blockIdx.x"):
        B[bx] = T.if_then_else(A[bx], s, 0 - s)


@T.prim_func
def vscale(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(16, "blockIdx.x"):
        for v in T.vectorized(4):
            B[bx * 4 + v] = A[bx * 4 + v] * T.float32(2) + T.float32(1)


def test_interp_kernel_is_a_kernel_lowered_for_the_interpreter():
    k = vkir.build(VADD, device="interp")
    assert isinstance(k, vkir.Kernel) and isinstance(k, BackendKernel)
    assert k.target == Target.interp() and k.name == "vadd"
    vkir.assert_structural_equal(k.ir, vkir.lower(VADD, Target.interp()))
    assert isinstance(BACKENDS["interp"](), Backend) and repr(k) == "<vkir Kernel vadd on interp>"
    with pytest.raises(UnsupportedError, match="no SPIR-V"):
        k.spirv


@pytest.mark.parametrize("func, make", [
    (VADD, lambda rng: [rng.random(300, dtype=np.float32), rng.random(300, dtype=np.float32),
                        np.zeros(300, np.float32)]),
    (flags, lambda rng: [rng.random(50) < 0.5, np.zeros(50, np.int32), 7]),
    (vscale, lambda rng: [rng.random(64, dtype=np.float32), np.zeros(64, np.float32)]),
])
def test_interp_and_device_kernels_compute_the_same(device, func, make):
    rng = np.random.default_rng(0)
    dev_args, int_args = make(rng), make(np.random.default_rng(0))
    vkir.build(func, device=device, precise=True)(*dev_args)
    vkir.build(func, device="interp")(*int_args)
    for d, i in zip(dev_args, int_args):
        np.testing.assert_array_equal(np.asarray(d), np.asarray(i))


def _error(k, *args, **kwargs):
    with pytest.raises(ArgumentError) as info:
        k(*args, **kwargs)
    return str(info.value)


def test_interp_and_device_kernels_raise_the_same_errors(device):
    dk, ik = vkir.build(VADD, device=device), vkir.build(VADD, device="interp")
    a, b = np.ones(8, np.float32), np.ones(8, np.float32)
    bad_calls = [
        ((a, b), {}),                                          # count
        ((a, b, np.zeros(8, np.float64)), {}),                 # dtype
        ((a, b, np.zeros(9, np.float32)), {}),                 # symbolic size disagrees
        ((a, b, np.zeros((8, 1), np.float32)), {}),            # dims
        ((a, b, np.zeros(16, np.float32)[::2]), {}),           # not contiguous
        ((a, b, [0.0] * 8), {}),                               # not an array
        ((a, b), {"d": np.zeros(8, np.float32)}),              # unknown name
    ]
    ro = np.zeros(8, np.float32)
    ro.flags.writeable = False
    bad_calls.append(((a, b, ro), {}))                         # written but read-only
    for args, kwargs in bad_calls:
        assert _error(dk, *args, **kwargs) == _error(ik, *args, **kwargs)


def test_interp_kernel_takes_device_arrays_and_keywords(device):
    k = vkir.build(VADD, device="interp")
    a = vkir.array(np.arange(10, dtype=np.float32), device=device)
    c = vkir.empty(10, "float32", device=device)
    k(a, c=c, b=np.full(10, 2, np.float32))
    np.testing.assert_array_equal(c.numpy(), np.arange(10) + 2)
    p = k.profile(a, np.ones(10, np.float32), c, repeat=3, warmup=0)
    assert p.n == 3 and p.source == "wall" and 0 < p.min <= p.median <= p.max
    np.testing.assert_array_equal(c.numpy(), np.arange(10) + 1)
    with pytest.raises(ArgumentError, match="repeat"):
        k.profile(a, a, c, repeat=0)


def test_interp_backend_needs_no_vulkan_device_and_keeps_interpreter_checks():
    @T.prim_func
    def oob(A: T.Buffer((4,), "int32")):
        for i in T.serial(5):
            A[i] = i

    k = vkir.build(oob, device="interp")
    with pytest.raises(vkir.interpreter.OutOfBoundsError):
        k(np.zeros(4, np.int32))


def test_interp_kernel_launch_and_sequences(device):
    k = vkir.build(VADD, device="interp")
    a, c = np.arange(6, dtype=np.float32), np.zeros(6, np.float32)
    handle = k.launch(a, a, c)
    assert handle.done()
    handle.wait()
    np.testing.assert_array_equal(c, 2 * a)
    x = vkir.array(a, device=device)
    with pytest.raises(UnsupportedError, match="no device dispatch"):
        k.dispatch_spec(x, x, x)
    with pytest.raises(UnsupportedError, match="inside vkir.sequence"):
        with vkir.sequence(device):
            k(x, x, x)


def test_vulkan_is_a_backend_like_the_interpreter(device):
    """`vkir.build` asks a backend for the kernel: "vulkan" (the default) gives device kernels,
    "interp" host ones; every result, bounds-checked ones included, is a vkir.Kernel."""
    from vkir.backends import VulkanBackend

    assert set(BACKENDS) == {"interp", "vulkan", "wgpu"}
    assert VulkanBackend.name == "vulkan" and issubclass(VulkanBackend, Backend)
    kinds = {"default": vkir.build(VADD), "vulkan": vkir.build(VADD, device="vulkan"),
             "interp": vkir.build(VADD, device="interp"),
             "bounds": vkir.build(VADD, check_bounds=True),
             "direct": BACKENDS["vulkan"]().kernel(VADD, device)}
    for name, k in kinds.items():
        assert isinstance(k, vkir.Kernel), name
    # registered, not derived: no Vulkan kernel internals inside a host backend's kernel
    assert type(kinds["vulkan"]) not in type(kinds["interp"]).__mro__
    a = np.arange(64, dtype=np.float32)
    for name, k in kinds.items():
        c = np.zeros(64, np.float32)
        k(a, a, c)
        np.testing.assert_array_equal(c, a + a, err_msg=name)
