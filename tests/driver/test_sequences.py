"""Whole programs on the device: sequences, asynchronous launches, timeouts and Ctrl-C, profiles,
and the interpreter on device arrays (lavapipe in CI, validation layer on)."""

import gc
import os
import signal
import threading
import time
import weakref

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ArgumentError, DeviceError


@T.prim_func
def saxpy(x: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32"), a: T.float32):
    # y = a * x + y (x read only, y read and written)
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                y[i] = a * x[i] + y[i]


@T.prim_func
def scale(x: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32"), s: T.float32):
    # y = s * x (x read only, y written only)
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                y[i] = s * x[i]


@T.prim_func
def spin(out: T.Buffer(("m",), "float32"), iters: T.int32):
    # a long-running dispatch: every invocation iterates `iters` times, a chain of dependent
    # multiply-adds (m = 32768, iters = 60000 takes about a second on lavapipe with 2 cores);
    # `iters` is a parameter, so no compiler can shorten the loop
    for bx in T.thread_binding((m + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            acc = T.alloc_buffer((1,), "float32", scope="local")
            acc[0] = T.float32(0)
            for j in T.serial(iters):
                acc[0] = acc[0] * T.float32(0.5) + T.float32(1)
            if i < m:
                out[i] = acc[0]


def _rand(n, seed):
    return np.random.default_rng(seed).random(n, dtype=np.float32)


# -- sequences ---------------------------------------------------------------------------------
def test_sequence_chain_matches_numpy_and_replays(device):
    k = vkir.build(saxpy, device=device)
    x, y = _rand(1000, 1), _rand(1000, 2)
    X, Y = vkir.array(x, device=device), vkir.array(y, device=device)
    alphas = [0.5, 0.5, -0.25, 2.0, 2.0, 2.0, 0.5, -1.0, 0.125, 0.125]  # push constants change
    with vkir.sequence(device=device) as seq:
        for alpha in alphas:
            k(X, Y, alpha)
        assert Y.buffer.serial in {b.serial for d in seq._dispatches for b in d.buffers}
    seq.wait(timeout=30)
    want = y.copy()
    for alpha in alphas:
        want = np.float32(alpha) * x + want
    np.testing.assert_allclose(Y.numpy(), want, rtol=1e-6)
    assert len(seq) == 10 and seq.barriers == 9          # each step reads what the last wrote
    seq.run().wait()                                      # replay: ten more steps
    for alpha in alphas:
        want = np.float32(alpha) * x + want
    np.testing.assert_allclose(Y.numpy(), want, rtol=1e-6)
    assert seq.done()


def test_sequence_barriers_only_between_dependent_dispatches(device):
    k = vkir.build(scale, device=device)
    host = {name: _rand(256, i) for i, name in enumerate("ABCD")}
    arrays = {name: vkir.array(v, device=device) for name, v in host.items()}

    def program(*steps):
        """Record y = s * x for each (x, y, s) and apply the same to the host copies."""
        with vkir.sequence(device=device) as seq:
            for x, y, s in steps:
                k(arrays[x], arrays[y], s)
                host[y] = np.float32(s) * host[x]
        return seq

    independent = program(("A", "B", 2.0), ("A", "C", 3.0))   # both only read A
    raw = program(("A", "B", 2.0), ("B", "C", 3.0))           # read after write of B
    war = program(("A", "B", 2.0), ("C", "A", 3.0))           # write after read of A
    waw = program(("A", "B", 2.0), ("C", "B", 3.0))           # write after write of B
    mixed = program(("A", "B", 1.5), ("A", "C", 0.5), ("B", "D", 2.0), ("C", "A", 4.0))
    assert [s.barriers for s in (independent, raw, war, waw)] == [0, 1, 1, 1]
    assert mixed.barriers == 1                                 # one barrier orders both later ones
    for seq in (independent, raw, war, waw, mixed):
        seq.wait()
    for name, want in host.items():
        np.testing.assert_allclose(arrays[name].numpy(), want, rtol=1e-6)


def test_sequence_refuses_numpy_and_foreign_use(device):
    k = vkir.build(saxpy, device=device)
    X = vkir.array(_rand(8, 0), device=device)
    y = np.zeros(8, np.float32)
    with pytest.raises(ArgumentError, match="numpy array.*DeviceArrays"):
        with vkir.sequence(device=device):
            k(X, y, 1.0)
    assert not y.any()
    with pytest.raises(ArgumentError, match="launch"):
        with vkir.sequence(device=device):
            k.launch(X, X, 1.0)
    seq = vkir.sequence(device=device)
    with pytest.raises(ArgumentError, match="not open"):
        seq.record(k, X, X, 1.0)
    with pytest.raises(ArgumentError, match="argument"):   # checked as a call is
        with vkir.sequence(device=device):
            k(X, X)


def test_sequence_not_submitted_when_block_raises(device):
    k = vkir.build(scale, device=device)
    X, Y = vkir.array(np.ones(8, np.float32), device=device), vkir.zeros(8, device=device)
    with pytest.raises(RuntimeError):
        with vkir.sequence(device=device) as seq:
            k(X, Y, 2.0)
            raise RuntimeError("stop")
    assert seq.done() and not Y.numpy().any()


def test_a_sequence_whose_block_raised_is_never_replayed(device):
    """A block that raised half way leaves nothing to replay: run(), profile() and a new block
    raise ArgumentError naming the error, and what was recorded (arrays included) is released."""
    k = vkir.build(scale, device=device)
    X, Y = vkir.array(np.ones(8, np.float32), device=device), vkir.zeros(8, device=device)
    Z = vkir.zeros(8, device=device)
    dropped = weakref.ref(Z)
    with pytest.raises(ArgumentError):
        with vkir.sequence(device=device) as seq:
            k(X, Y, 2.0)
            k(Y, Z, 3.0)
            k(X, Z)           # a bad call: the scalar is missing
    del Z
    gc.collect()
    assert dropped() is None and len(seq) == 0 and seq.done()
    with pytest.raises(RuntimeError):
        with vkir.sequence(device=device) as stopped:
            k(X, Y, 2.0)
            raise RuntimeError("stop")
    for failed, why in ((seq, r"ArgumentError: kernel scale"), (stopped, r"RuntimeError: stop")):
        for use in (failed.run, failed.profile, failed.__enter__):
            with pytest.raises(ArgumentError, match=rf"recording failed \({why}"):
                use()
        with pytest.raises(ArgumentError, match="recording failed"), vkir.profile(show=False):
            failed.run()
    stopped.wait()
    assert not Y.numpy().any()


def test_sequence_records_explicit_dispatches(device):
    """The recording interface: anything producing a runtime.Dispatch (as a kernel loaded from
    SPIR-V would) joins a sequence, with the barrier its access modes imply."""
    k = vkir.build(scale, device=device)
    X, Y, Z = (vkir.array(np.full(4, 1 + i, np.float32), device=device) for i in range(3))
    spec = k.dispatch_spec(X, Y, 5.0)
    assert spec.access == ("r", "w") and spec.name == "scale"
    with vkir.sequence(device=device) as seq:
        seq.add(spec)
        seq.record(k, Y, Z, 2.0)
    seq.wait()
    assert seq.barriers == 1
    np.testing.assert_array_equal(Z.numpy(), np.full(4, 10, np.float32))


# -- asynchronous launches ---------------------------------------------------------------------
def test_launches_in_flight_waited_in_any_order(device):
    k = vkir.build(scale, device=device)
    xs = [_rand(5000, s) for s in range(4)]
    outs = [np.zeros(5000, np.float32) for _ in xs]       # numpy: copied back at wait
    dev_out = vkir.zeros(5000, device=device)
    handles = [k.launch(x, o, float(i + 1)) for i, (x, o) in enumerate(zip(xs, outs))]
    h_dev = k.launch(vkir.array(xs[0], device=device), dev_out, -1.0)
    for i in reversed(range(len(handles))):
        handles[i].wait(timeout=30)
        np.testing.assert_array_equal(outs[i], xs[i] * np.float32(i + 1))
    h_dev.wait()
    assert all(h.done() for h in handles) and h_dev.done()
    np.testing.assert_array_equal(dev_out.numpy(), -xs[0])


def test_launch_then_host_read_waits(device):
    k = vkir.build(spin, device=device)
    out = vkir.zeros(4096, device=device)
    h = k.launch(out, 2000)
    got = out.numpy()                                     # waits for the launch writing `out`
    assert h.done()
    np.testing.assert_allclose(got, np.full(4096, 2.0, np.float32), rtol=1e-6)


# -- timeouts and Ctrl-C -----------------------------------------------------------------------
def outlasting(k, device, seconds: float) -> int:
    """An iteration count for `spin` over 32768 invocations whose dispatch lasts about 10 times
    `seconds` on this device, whatever its speed: after a warm-up dispatch, the count grows
    8-fold until a waited dispatch takes a quarter of `seconds`, then scales linearly. A host busy while it measures only makes
    the count smaller; the margin keeps the dispatch longer than `seconds` all the same."""
    out = vkir.zeros(32768, device=device)
    k.launch(out, 1).wait()     # the first dispatch may include the driver's compile
    iters = 1000
    while True:
        started = time.perf_counter()
        k.launch(out, iters).wait()
        took = time.perf_counter() - started
        if took >= seconds / 4:
            return max(iters, int(iters * 10 * seconds / took))
        assert iters * 8 < 2**31, f"{iters} iterations of spin ran within {seconds / 4} s"
        iters *= 8


def test_wait_timeout_then_device_still_usable(device):
    """A wait that times out raises DeviceError while the dispatch keeps running; it finishes;
    the device, the kernel and the array stay usable."""
    k = vkir.build(spin, device=device)
    out = vkir.zeros(32768, device=device)
    h = k.launch(out, outlasting(k, device, 0.05))
    with pytest.raises(DeviceError, match="did not finish within 0.05 s"):
        h.wait(timeout=0.05)
    assert not h.done()                                   # the wait did not wait it out
    h.wait()                                              # no limit: it finishes
    np.testing.assert_allclose(out.numpy(), np.full(32768, 2.0, np.float32), rtol=1e-6)
    small = np.zeros(64, np.float32)
    k(small, 3)                                           # later dispatches run normally
    np.testing.assert_allclose(small, np.full(64, 1.75, np.float32))


def test_synchronous_call_times_out_with_vkir_timeout(device, monkeypatch):
    """VKIR_TIMEOUT bounds a plain call; the dispatch stays in flight, and the next use of the
    array waits for it."""
    k = vkir.build(spin, device=device)
    out = vkir.zeros(32768, device=device)
    iters = outlasting(k, device, 0.05)
    monkeypatch.setenv("VKIR_TIMEOUT", "0.05")
    with pytest.raises(DeviceError, match="VK_TIMEOUT"):
        k(out, iters)
    monkeypatch.delenv("VKIR_TIMEOUT")
    np.testing.assert_allclose(out.numpy(), np.full(32768, 2.0, np.float32), rtol=1e-6)
    k(out, 1)                                             # the same launch again
    np.testing.assert_array_equal(out.numpy(), np.ones(32768, np.float32))
    monkeypatch.setenv("VKIR_TIMEOUT", "soon")
    with pytest.raises(ArgumentError, match="VKIR_TIMEOUT"):
        k.launch(out, iters).wait()
    monkeypatch.delenv("VKIR_TIMEOUT")
    with pytest.raises(ArgumentError, match="timeout"):
        vkir.sequence(device=device).run().wait(timeout=-1)


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")
def test_ctrl_c_interrupts_a_wait(device):
    k = vkir.build(spin, device=device)
    out = vkir.zeros(32768, device=device)
    iters = outlasting(k, device, 0.1)                  # the signal comes after 0.1 s
    h = k.launch(out, iters)
    main = threading.main_thread().ident
    timer = threading.Timer(0.1, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            h.wait()
        assert not h.done()                               # interrupted, not waited out
    finally:
        timer.cancel()
    h.wait()
    np.testing.assert_allclose(out.numpy(), np.full(32768, 2.0, np.float32), rtol=1e-6)
    assert os.environ.get("VKIR_TIMEOUT") is None
    # a plain (synchronous) call is interruptible too; the array's next use waits for the work
    out2 = vkir.zeros(32768, device=device)
    timer = threading.Timer(0.1, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            k(out2, iters)
    finally:
        timer.cancel()
    np.testing.assert_allclose(out2.numpy(), np.full(32768, 2.0, np.float32), rtol=1e-6)


# -- profiles ----------------------------------------------------------------------------------
def test_profile_tables(device, capsys):
    ks, kx = vkir.build(scale, device=device), vkir.build(saxpy, device=device)
    X, Y = vkir.array(_rand(4096, 0), device=device), vkir.zeros(4096, device=device)
    with vkir.sequence(device=device) as seq:
        ks(X, Y, 2.0)
        for _ in range(3):
            kx(X, Y, 1.0)
    seq.wait()
    report = seq.profile()
    rows = {r[0]: r for r in report.rows}
    assert {name: r[1] for name, r in rows.items()} == {"scale": 1, "saxpy": 3}
    assert all(r[2] > 0 for r in rows.values())
    assert sum(r[4] for r in rows.values()) == pytest.approx(1.0)
    with vkir.profile() as prof:
        seq.run()
        ks(X, Y, 1.0)
    table = capsys.readouterr().out
    assert "saxpy" in table and "scale" in table and "share" in table
    counts = {r[0]: r[1] for r in prof.report.rows}
    assert counts == {"scale": 2, "saxpy": 3}
    np.testing.assert_allclose(Y.numpy(), X.numpy(), rtol=1e-6)


# -- the interpreter on device arrays ----------------------------------------------------------
def test_interpret_accepts_device_arrays(device):
    x, y = _rand(100, 3), _rand(100, 4)
    X, Y = vkir.array(x, device=device), vkir.array(y, device=device)
    vkir.interpret(saxpy, X, Y, 2.0)
    np.testing.assert_allclose(Y.numpy(), np.float32(2) * x + y, rtol=1e-6)
    np.testing.assert_array_equal(X.numpy(), x)
    k = vkir.build(saxpy, device=device)                  # the same call site on the device
    k(X, Y, 2.0)
    np.testing.assert_allclose(Y.numpy(), np.float32(4) * x + y, rtol=1e-6)


AXPY_GLSL = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) buffer B { float b[]; };
layout(push_constant) uniform P { uint n; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < n) b[i] = b[i] + 2.0 * a[i];
}
"""


def test_sequence_records_shader_kernels_with_vkir_kernels(device):
    """An existing GLSL shader and a vkir kernel in one sequence: the shader's reflected
    readonly binding is a read, its other binding a read-write, so the vkir kernel reading B
    after it gets a barrier."""
    sk = vkir.compile_glsl(AXPY_GLSL, device=device)
    k = vkir.build(scale, device=device)
    a, b = _rand(1000, 5), _rand(1000, 6)
    A, B, C = vkir.array(a, device=device), vkir.array(b, device=device), vkir.zeros(1000, device=device)
    assert sk.dispatch_spec(A, B, grid=(16,), push={"n": 1000}).access == ("r", "rw")
    with vkir.sequence(device=device) as seq:
        sk(A, B, grid=(16,), push={"n": 1000})
        k(B, C, 3.0)
    seq.wait()
    assert seq.barriers == 1
    np.testing.assert_allclose(C.numpy(), 3 * (b + 2 * a), rtol=1e-6)
    with pytest.raises(ArgumentError, match="DeviceArrays"):
        with vkir.sequence(device=device):
            sk(a, B, grid=(16,), push={"n": 1000})


def test_a_dispatch_from_before_a_shutdown_is_refused_as_closed(device):
    """A dispatch recorded for a device that a shutdown closed, added to a sequence of the device
    opened after it (same name), is a DeviceError, not an ArgumentError naming two devices."""
    k = vkir.build(scale, device=device)
    x = vkir.zeros(64, "float32", device=device)
    spec = k.dispatch_spec(x, vkir.zeros(64, "float32", device=device), 2.0)
    vkir.runtime.shutdown()
    with pytest.raises(DeviceError, match="device closed"):
        with vkir.sequence() as seq:
            seq.add(spec)
