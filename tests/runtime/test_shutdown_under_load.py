"""`vkir.runtime.shutdown()` while other threads call kernels: every call in flight finishes or
raises DeviceError ("device closed"), and nothing crashes, hangs or leaks (fence waits outside the
device lock used to run on destroyed fences and devices: about one shutdown in three segfaulted
or aborted on lavapipe). The storm runs in a subprocess, so that a crash fails the test instead
of killing pytest; it repeats a short round (open, call from threads, shut down) many times."""

import os
import subprocess
import sys
import textwrap

STORM = textwrap.dedent("""
    import gc, random, sys, threading, time
    import numpy as np
    import vkir
    from vkir import T
    from vkir.errors import DeviceError

    @T.prim_func
    def inc(a: T.Buffer((64,), "float32")):
        for i in T.thread_binding(64, "threadIdx.x"):
            a[i] = a[i] + T.float32(1)

    rng = random.Random(int(sys.argv[2]))
    unexpected, calls = [], [0]

    def worker(k, dev, n, stop):
        x = None
        h = np.zeros(64, np.float32)
        i = n
        while not stop.is_set():
            try:
                if x is None:                   # the shutdown may come first
                    x = vkir.array(h, device=dev)
                step = i % 6
                if step == 0:
                    k(x)                        # a synchronous dispatch
                elif step == 1:
                    k(h)                        # numpy: copied in and out
                elif step == 2:
                    k.launch(x).wait()          # a fence wait outside the device lock
                elif step == 3:
                    y = vkir.array(h, device=dev)
                    k(y)
                    y.numpy()
                elif step == 4:
                    with vkir.sequence(device=dev):
                        k(x)
                        k(x)
                else:
                    k.launch(h)                 # left in flight
                    x.numpy()                   # waits for it
                calls[0] += 1
            except DeviceError as exc:
                if "closed" not in str(exc):
                    unexpected.append(repr(exc))
            except Exception as exc:
                unexpected.append(repr(exc))
            i += 1

    for round in range(int(sys.argv[1])):
        dev = vkir.device()
        k = vkir.build(inc, device=dev)
        stop = threading.Event()
        threads = [threading.Thread(target=worker, args=(k, dev, n, stop)) for n in range(4)]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(0.005, 0.05))
        left = vkir.runtime.shutdown()
        time.sleep(0.01)                        # calls after the shutdown: DeviceError
        stop.set()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads), "a thread hung"
        del k, dev, threads
        gc.collect()                            # finalizers of a closed device's objects
        assert not left, left
    print("calls", calls[0], "unexpected", len(unexpected), unexpected[:3], flush=True)
""")

ROUNDS = 12


def test_shutdown_while_threads_call_kernels(device, tmp_path):
    script = tmp_path / "storm.py"
    script.write_text(STORM)
    env = dict(os.environ, VKIR_VALIDATION=os.environ.get("VKIR_VALIDATION", "1"))
    proc = subprocess.run([sys.executable, str(script), str(ROUNDS), "32"], capture_output=True,
                          text=True, timeout=300, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"exit status {proc.returncode}:\n{out[-3000:]}"
    assert "unexpected 0 []" in proc.stdout, out[-3000:]
    assert int(proc.stdout.split()[1]) > ROUNDS, out   # the threads did call kernels
    assert "validation message" not in proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]   # e.g. in a finalizer
