"""torch and vkir share memory both ways: `torch.from_dlpack(device_array)` is a view of the
device memory (a versioned kDLCPU capsule, as torch asks for it), `vkir.asarray(tensor)` imports
a CPU tensor's memory (the DeviceArray keeps the tensor alive), and a kernel's writes into it show
in the tensor. A tensor's import and its views are one memory to a kernel, and an import whose
tensor was resized since (its memory freed) is refused at every use instead of written. torch is
in the test extra (the CPU wheel), so these run wherever the suite runs."""

import gc
import weakref

import numpy as np
import pytest
import torch

import vkir
from vkir import T

N = 512


@T.prim_func
def halve(x: T.Buffer((N,), "float32"), out: T.Buffer((N,), "float32")):
    for b in T.thread_binding(N // 128, "blockIdx.x"):
        for t in T.thread_binding(128, "threadIdx.x"):
            out[b * 128 + t] = x[b * 128 + t] * T.float32(0.5)


@pytest.fixture(scope="module")
def k(_vulkan_device):
    return vkir.build(halve, device=_vulkan_device)


def aligned_tensor(n, align=4096):
    """A float32 CPU tensor of `n` elements at an `align`-byte boundary (so SwiftShader, which
    binds buffers at 256-byte offsets, can import it too)."""
    raw = torch.zeros(n * 4 + align, dtype=torch.uint8)
    start = (-raw.data_ptr()) % align
    return raw[start:start + n * 4].view(torch.float32)


def test_torch_views_device_arrays(device):
    a = vkir.array(np.arange(6, dtype=np.float32).reshape(2, 3), device=device)
    t = torch.from_dlpack(a)
    assert t.device.type == "cpu" and tuple(t.shape) == (2, 3)
    t[1, 1] = -1
    assert a.numpy()[1, 1] == -1
    a.write(np.full((2, 3), 4, np.float32))
    assert bool((t == 4).all())
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is not None and float(t.sum()) == 24     # the tensor keeps the array
    del t
    gc.collect()
    assert ref() is None


def test_asarray_imports_torch_tensors_and_kernels_write_them(device, k):
    x = aligned_tensor(N)
    x.copy_(torch.arange(N, dtype=torch.float32))
    out = aligned_tensor(N)
    X = vkir.asarray(x, device=device, copy=False)
    OUT = vkir.asarray(out, device=device, copy=False)
    assert X.is_view and OUT.is_view
    k(X, OUT)
    assert torch.equal(out, x * 0.5)
    ref = weakref.ref(out)
    del out
    gc.collect()
    assert ref() is not None                              # OUT keeps the tensor alive
    back = torch.from_dlpack(OUT)
    assert back.data_ptr() == ref().data_ptr()            # torch -> vkir -> torch: no copy
    del OUT, back
    gc.collect()
    assert ref() is None


def test_misaligned_tensors_are_copied_once(device):
    t = aligned_tensor(N + 1)[1:]                        # 4 bytes past a page
    t.fill_(2)
    a = vkir.asarray(t, device=device)
    assert not a.is_view and (a.numpy() == 2).all()
    with pytest.raises(vkir.ArgumentError, match="in place"):
        vkir.asarray(t, device=device, copy=False)


# -- one memory (issue 45, item 1): a tensor's import beside a view of the tensor ----------------
@T.prim_func
def ones_then_prefix(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    # a = 1 everywhere, then b[i + 1] += a[i] in order: through one memory, a prefix count
    for i in T.serial(64):
        a[i] = T.float32(1)
    for i in T.serial(63):
        b[i + 1] = b[i + 1] + a[i]


PREFIX = np.arange(1, 65, dtype=np.float32)


def _torch_pairs(device):
    """(first, second, tensor) over one tensor's memory: its import beside its numpy view, two
    imports of it, and a device array beside the import of torch's view of it."""
    t = aligned_tensor(64)
    yield vkir.asarray(t, device=device), t.numpy(), t
    t = aligned_tensor(64)
    yield t.numpy(), vkir.asarray(t, device=device), t
    t = aligned_tensor(64)
    yield vkir.asarray(t, device=device), vkir.asarray(t.numpy(), device=device), t
    d = vkir.zeros(64, "float32", device=device)
    t = torch.from_dlpack(d)
    yield d, vkir.asarray(t, device=device), t


@pytest.mark.filterwarnings("ignore::vkir.PerformanceWarning")
@pytest.mark.parametrize("how", ["call", "launch", "interp", "interpret"])
def test_a_tensor_and_its_views_are_one_memory(how, device):
    k = vkir.build(ones_then_prefix, device=device if how in ("call", "launch") else "interp")
    run = {"call": k, "interp": k, "launch": lambda a, b: k.launch(a, b).wait(),
           "interpret": lambda a, b: vkir.interpret(ones_then_prefix, a, b)}[how]
    for a, b, t in _torch_pairs(device):
        assert any(getattr(v, "is_view", False) for v in (a, b))   # imported in place
        run(a, b)
        np.testing.assert_array_equal(t.numpy(), PREFIX)


# -- imports whose source was resized (issue 45, item 7) -----------------------------------------
RESIZES = {
    "tensor resized larger": lambda t: t.resize_(N * 64),
    "tensor resized smaller": lambda t: t.resize_(N // 2),
    "storage freed": lambda t: t.untyped_storage().resize_(0),
    "tensor set to other memory": lambda t: t.set_(torch.zeros(N)),
}


@pytest.mark.parametrize("resize", list(RESIZES))
def test_a_resized_source_is_refused_at_every_use(resize, device, k):
    x = vkir.asarray(aligned_tensor(N), device=device)
    t = aligned_tensor(N)
    out = vkir.asarray(t, device=device, copy=False)
    k(x, out)                                    # the repeated-call fast path is set up
    with vkir.sequence(device=device) as seq:
        k(x, out)
    seq.wait()
    RESIZES[resize](t)
    named = r"argument 'out' is memory imported in place and its Tensor was resized"
    with pytest.raises(vkir.ArgumentError, match=named):
        k(x, out)                                # the fast path checks too
    with pytest.raises(vkir.ArgumentError, match=named):
        vkir.build(halve, device=device)(x, out)  # a fresh call
    with pytest.raises(vkir.ArgumentError, match=named):
        k.launch(x, out)
    with pytest.raises(vkir.ArgumentError, match=named):
        with vkir.sequence(device=device):
            k(x, out)
    with pytest.raises(vkir.ArgumentError, match="binding 1 is memory imported in place"):
        seq.run()                                # a replay of what was recorded before
    with pytest.raises(vkir.ArgumentError, match="binding 1 is memory imported in place"):
        seq.profile()
    with pytest.raises(vkir.ArgumentError, match="resized"):
        vkir.interpret(halve, x, out)
    for host_use in (out.numpy, lambda: np.asarray(out), lambda: torch.from_dlpack(out),
                     lambda: out.write(np.zeros(N, np.float32)), lambda: vkir.array(out)):
        with pytest.raises(vkir.ArgumentError, match="vkir.asarray array is memory imported"):
            host_use()
    assert "source resized" in repr(out)
    np.testing.assert_array_equal(x.numpy(), np.zeros(N))   # the other import is untouched


def test_a_resized_source_is_refused_by_shaders(device):
    sk = vkir.compile_glsl("""
        #version 450
        layout(local_size_x = 64) in;
        layout(std430, binding = 0) buffer A { float a[]; };
        void main() { a[gl_GlobalInvocationID.x] = 1.0; }
        """, device=device)
    t = aligned_tensor(N)
    out = vkir.asarray(t, device=device, copy=False)
    sk(out, grid=N // 64)
    assert bool((t == 1).all())
    t.untyped_storage().resize_(0)
    for use in (lambda: sk(out, grid=N // 64), lambda: sk.launch(out, grid=N // 64)):
        with pytest.raises(vkir.ArgumentError, match=r"binding 0 \('A'\).* is memory imported"):
            use()


def test_an_untouched_source_keeps_working_and_a_new_import_after_a_resize_works(device, k):
    x = aligned_tensor(N)
    x.copy_(torch.arange(N, dtype=torch.float32))
    t = aligned_tensor(N)
    out = vkir.asarray(t, device=device)
    t.resize_(N)                                 # the same size: no reallocation, still fine
    k(vkir.asarray(x, device=device), out)
    assert torch.equal(t, x * 0.5)
    t.resize_(4 * N)
    again = vkir.asarray(t[:N], device=device)   # imported anew: what the tensor holds now
    k(vkir.asarray(x, device=device), again)
    assert torch.equal(t[:N], x * 0.5)
