"""One memory, however it arrived (issue 45, item 1): a numpy array, `vkir.asarray` of it, a
device array and a DLPack or numpy view of its mapping, passed for two parameters of which one is
written, are one buffer on the device, each bound at its offset, in every path (calls, launches,
sequences, shaders, the interpreter backend, vkir.interpret), or the same ArgumentError naming
both parameters everywhere; no write is lost. vkir.aliasing decides it from the host addresses
every kind of argument covers (`host_range`). Torch forms are in test_torch_interop.py.
Arrays are 4096-byte aligned so that SwiftShader (256-byte descriptor offsets) imports them."""

import threading

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.aliasing import host_range
from vkir.errors import ArgumentError

pytestmark = pytest.mark.vkir_device


@T.prim_func
def halves(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
    # the repro: the first half written through one name, the second through the other
    for i in T.serial(8):
        if i < 4:
            a[i] = T.float32(1)
        else:
            b[i] = T.float32(2)


@T.prim_func
def ones_then_prefix(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    # a = 1 everywhere, then b[i + 1] += a[i] in order: through one memory, a prefix count
    for i in T.serial(64):
        a[i] = T.float32(1)
    for i in T.serial(63):
        b[i + 1] = b[i + 1] + a[i]


@T.prim_func
def shift_add(a: T.Buffer((128,), "float32"), b: T.Buffer((128,), "float32")):
    for i in T.serial(128):
        b[i] = a[i] + T.float32(1)


@T.prim_func
def add_into(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32"),
             c: T.Buffer((64,), "float32")):
    for i in T.parallel(64):
        c[i] = a[i] + b[i]


PREFIX = np.arange(1, 65, dtype=np.float32)
HALVES = np.array([1, 1, 1, 1, 2, 2, 2, 2], np.float32)

PREFIX_GLSL = """
#version 450
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer A { float a[]; };
layout(std430, binding = 1) buffer B { float b[]; };
layout(push_constant) uniform P { int n; };
void main() {
    for (int i = 0; i < n; i++) a[i] = 1.0;
    for (int i = 0; i + 1 < n; i++) b[i + 1] = b[i + 1] + a[i];
}
"""


def aligned(n, align=4096):
    """A zeroed float32 numpy array of `n` elements at an `align`-byte boundary."""
    raw = np.zeros(n * 4 + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + n * 4].view(np.float32)


def _import(a, device):
    d = vkir.asarray(a, device=device)
    assert d.is_view        # aligned host memory: used in place on the CPU drivers
    return d


def _forms(device, n):
    """{form: factory() -> (first argument, second argument, read() of their memory)}: two
    arguments over one memory of `n` zeroed floats, each way they can arrive."""
    def numpy_pair(order):
        def make():
            x = aligned(n)
            d = _import(x, device)
            return (*((d, x) if order else (x, d)), lambda: x.copy())
        return make

    def two_imports():
        x = aligned(n)
        return _import(x, device), _import(x, device), lambda: x.copy()

    def dlpack_view():
        d = vkir.zeros(n, "float32", device=device)
        view = np.from_dlpack(d)
        assert np.shares_memory(view, d.host_view())
        return d, view, d.numpy

    def numpy_view_first():
        d = vkir.zeros(n, "float32", device=device)
        return np.asarray(d), d, d.numpy

    def import_of_a_view():
        d = vkir.zeros(n, "float32", device=device)
        return d, _import(np.asarray(d), device), d.numpy

    return {"import, numpy": numpy_pair(True), "numpy, import": numpy_pair(False),
            "two imports": two_imports, "device array, DLPack view": dlpack_view,
            "numpy view, device array": numpy_view_first,
            "device array, import of its view": import_of_a_view}


FORMS = ["import, numpy", "numpy, import", "two imports", "device array, DLPack view",
         "numpy view, device array", "device array, import of its view"]
DEVICE_ONLY = ["two imports", "device array, import of its view"]   # what sequences take


def _runner(func, how, device):
    if how == "call":
        return vkir.build(func, device=device)
    if how == "launch":
        k = vkir.build(func, device=device)
        return lambda a, b: k.launch(a, b).wait()
    if how == "interp":
        return vkir.build(func, device="interp")
    return lambda a, b: vkir.interpret(func, a, b)


@pytest.mark.filterwarnings("ignore::vkir.PerformanceWarning")
@pytest.mark.parametrize("how", ["call", "launch", "interp", "interpret"])
@pytest.mark.parametrize("form", FORMS)
def test_one_memory_however_it_arrived(form, how, device):
    run = _runner(ones_then_prefix, how, device)
    a, b, read = _forms(device, 64)[form]()
    run(a, b)
    np.testing.assert_array_equal(read(), PREFIX)
    a, b, read = _forms(device, 8)[form]()
    _runner(halves, how, device)(a, b)
    np.testing.assert_array_equal(read(), HALVES)   # the issue's [0,0,0,0,2,2,2,2] no more


@pytest.mark.filterwarnings("ignore::vkir.PerformanceWarning")
@pytest.mark.parametrize("form", DEVICE_ONLY)
def test_one_memory_in_a_sequence_and_its_replay(form, device):
    k = vkir.build(ones_then_prefix, device=device)
    a, b, read = _forms(device, 64)[form]()
    with vkir.sequence(device=device) as seq:
        k(a, b)
    seq.wait()
    np.testing.assert_array_equal(read(), PREFIX)
    a.write(np.zeros(64, np.float32))
    seq.run().wait()
    np.testing.assert_array_equal(read(), PREFIX)


@pytest.mark.parametrize("form", FORMS)
def test_shaders_bind_one_memory_however_it_arrived(form, device):
    sk = vkir.compile_glsl(PREFIX_GLSL, device=device)
    a, b, read = _forms(device, 64)[form]()
    sk(a, b, grid=1, push={"n": 64})
    np.testing.assert_array_equal(read(), PREFIX)
    a, b, read = _forms(device, 64)[form]()
    sk.launch(a, b, grid=1, push={"n": 64}).wait()
    np.testing.assert_array_equal(read(), PREFIX)
    if form in DEVICE_ONLY:
        a, b, read = _forms(device, 64)[form]()
        with vkir.sequence(device=device) as seq:
            sk(a, b, grid=1, push={"n": 64})
        seq.wait()
        np.testing.assert_array_equal(read(), PREFIX)


@pytest.mark.filterwarnings("ignore::vkir.PerformanceWarning")
def test_the_numpy_side_is_bound_in_place_not_copied(device):
    k = vkir.build(ones_then_prefix, device=device)
    x = aligned(64)
    k(_import(x, device), x)
    np.testing.assert_array_equal(x, PREFIX)
    assert k.last_call_copies == 0       # x is a view of the import's buffer, no staging


def test_every_kind_of_argument_has_one_host_range(device):
    x = aligned(64)
    d = _import(x, device)
    start = x.ctypes.data
    assert host_range(x) == host_range(d) == (start, start + 256)
    owned = vkir.zeros(16, "int32", device=device)
    view = np.from_dlpack(owned)
    assert host_range(owned) == host_range(view) == (view.ctypes.data, view.ctypes.data + 64)
    assert host_range(x[::2]) == (start, start + 252)     # a strided view: its byte bounds


@pytest.mark.filterwarnings("ignore::vkir.PerformanceWarning")
@pytest.mark.parametrize("how", ["call", "launch", "interp", "interpret"])
def test_imports_of_overlapping_parts_are_one_memory(how, device):
    """Neither import spans the other: the device binds an import of their union, each at its
    offset (256 bytes apart), as the interpreter's one staged memory does."""
    run = _runner(shift_add, how, device)
    x = aligned(192)
    x[:] = np.arange(192)
    run(_import(x[0:128], device), _import(x[64:192], device))
    want = np.arange(192, dtype=np.float32)
    for i in range(128):
        want[64 + i] = want[i] + 1
    np.testing.assert_array_equal(x, want)


@pytest.mark.filterwarnings("ignore::vkir.PerformanceWarning")
def test_imports_of_overlapping_parts_in_a_sequence(device):
    k = vkir.build(shift_add, device=device)
    x = aligned(192)
    with vkir.sequence(device=device) as seq:
        k(_import(x[0:128], device), _import(x[64:192], device))
    seq.wait()
    want = np.zeros(192, np.float32)
    for i in range(128):
        want[64 + i] = want[i] + 1
    np.testing.assert_array_equal(x, want)


@pytest.mark.filterwarnings("ignore::vkir.PerformanceWarning")
@pytest.mark.parametrize("how", ["call", "launch", "interp", "interpret"])
def test_an_unaligned_overlap_is_the_same_error_everywhere(how, device):
    run = _runner(shift_add, how, device)
    x = aligned(256)
    x[:] = 7
    d = _import(x[0:128], device)
    with pytest.raises(ArgumentError, match=r"'a' and 'b' share memory.*'b' starts 16 bytes"):
        run(d, x[4:132])
    # (device kernels take C-contiguous arrays only; the interpreter names the overlap)
    with pytest.raises(ArgumentError, match=r"'b' (is not C-contiguous|is a strided view)"):
        run(d, x[0:256:2])
    assert (x == 7).all()                  # refused before anything ran


def test_a_shader_refuses_an_unaligned_overlap_naming_both_bindings(device):
    sk = vkir.compile_glsl(PREFIX_GLSL, device=device)
    x = aligned(128)
    with pytest.raises(ArgumentError,
                       match=r"\"binding 0 \('A'\)\" and \"binding 1 \('B'\)\" share memory"):
        sk(_import(x[0:64], device), x[4:68], grid=1, push={"n": 64})
    assert not x.any()


def test_a_numpy_view_of_a_device_array_stays_out_of_sequences(device):
    k = vkir.build(add_into, device=device)
    d = vkir.zeros(64, "float32", device=device)
    with pytest.raises(ArgumentError, match="'b' is a numpy array"):
        with vkir.sequence(device=device):
            k(d, np.asarray(d), d)


def test_reading_only_overlaps_stay_separate_and_work(device):
    k = vkir.build(add_into, device=device)
    x = aligned(64)
    x[:] = np.arange(64)
    out = aligned(64)
    k(_import(x, device), x, out)
    np.testing.assert_array_equal(out, 2 * np.arange(64, dtype=np.float32))


@pytest.mark.filterwarnings("ignore::vkir.PerformanceWarning")
def test_threads_mixing_imports_numpy_launches_and_sequences(device):
    """A short threaded load: each thread mixes calls on (import, numpy) pairs, launches,
    sequences of two imports and the interpreter; no result is wrong."""
    k = vkir.build(ones_then_prefix, device=device)
    counts, wrong, errors = [0], [], []
    lock = threading.Lock()

    def work(seed):
        try:
            for i in range(12):
                x = aligned(64)
                mode = (seed + i) % 4
                if mode == 0:
                    k(_import(x, device), x)
                elif mode == 1:
                    k.launch(x, _import(x, device)).wait()
                elif mode == 2:
                    with vkir.sequence(device=device) as seq:
                        k(_import(x, device), _import(x, device))
                    seq.wait()
                else:
                    vkir.interpret(ones_then_prefix, _import(x, device), x)
                with lock:
                    counts[0] += 1
                    if not np.array_equal(x, PREFIX):
                        wrong.append((seed, i, mode))
        except Exception as exc:   # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert counts[0] == 48 and not wrong, wrong
