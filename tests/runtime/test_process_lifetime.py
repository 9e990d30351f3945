"""A process that used vkir can always exit and fork: shutdown waits a bounded time for work that
is still running, and a forked child never blocks on the parent's Vulkan objects."""

import os
import subprocess
import sys
import textwrap
import time

HUNG = textwrap.dedent("""
    import time, numpy as np, vkir
    from vkir import T

    @T.prim_func
    def spin(a: T.Buffer((65536,), "float32")):
        for b in T.thread_binding(1024, "blockIdx.x"):
            for t in T.thread_binding(64, "threadIdx.x"):
                for i in T.serial(65000):
                    for r in T.unroll(4):
                        a[b * 64 + t] = T.sin(T.cos(T.sin(T.cos(a[b * 64 + t] + T.float32(1)))))

    k = vkir.build(spin)
    x = vkir.array(np.zeros(65536, np.float32))
    try:
        k.launch(x).wait(timeout=0.3)
        print("finished", flush=True)
    except vkir.DeviceError as exc:
        print("timed out:", exc, flush=True)
    print("exiting", time.monotonic(), flush=True)
""")

FORK = textwrap.dedent("""
    import os, numpy as np, vkir
    from vkir import T

    @T.prim_func
    def inc(a: T.Buffer((64,), "float32")):
        for i in T.thread_binding(64, "threadIdx.x"):
            a[i] = a[i] + T.float32(1)

    k = vkir.build(inc)
    x = vkir.array(np.zeros(64, np.float32))
    k(x)
    pid = os.fork()
    if pid == 0:
        try:
            k(x)
        except vkir.DeviceError as exc:
            print("child: old kernel refused:", "before this process forked" in str(exc), flush=True)
        try:
            y = np.zeros(64, np.float32)
            vkir.build(inc)(y)
            print("child: new kernel", y[0], flush=True)
        except vkir.DeviceError as exc:
            print("child: driver unusable after fork:", "'spawn'" in str(exc), flush=True)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    k(x)
    print("parent", status, x.numpy()[0], flush=True)
""")


def run(script, folder, timeout):
    path = folder / "script.py"
    path.write_text(script)
    start = time.monotonic()
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))
    return done, time.monotonic() - start


def test_the_process_exits_soon_after_a_dispatch_timed_out(tmp_path):
    done, elapsed = run(HUNG, tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "timed out: " in done.stdout and "VK_TIMEOUT" in done.stdout, done.stdout
    exit_began = float(done.stdout.split("exiting ")[1])
    # shutdown waits at most 5 s for the kernel (minutes of work) and then leaves it to the exit
    assert time.monotonic() - exit_began < 20, (elapsed, done.stderr)


def test_a_forked_child_opens_its_own_device_or_says_it_cannot(tmp_path):
    done, _ = run(FORK, tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "child: old kernel refused: True" in lines, done.stdout
    assert "child: new kernel 1.0" in lines or "child: driver unusable after fork: True" in lines, \
        done.stdout
    assert "parent 0 2.0" in lines, done.stdout
