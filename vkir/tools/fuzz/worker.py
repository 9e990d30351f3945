"""Programs of the fuzzing campaign run in a worker process, so that one that takes too long can be
killed and recorded as a "timeout" while the campaign goes on.

One worker (`python -m vkir.tools.fuzz.worker`, a fresh interpreter: a forked one would share
the parent's Vulkan state, and multiprocessing's spawn would run the parent's main script again)
opens the device once and classifies programs one at a time, talking over two pipes of its own;
the campaign waits at most `timeout` seconds for each answer. A worker that misses it is killed
(SIGKILL: a driver compiling a pipeline does not stop for anything gentler) and a fresh one
starts for the next program; a worker that dies by itself (a driver crash) makes the program a
"crash".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from multiprocessing.connection import Connection

from ...errors import DeviceError

# how long a new worker may take to import vkir, open its device and warm up (not part of any
# program's time)
START_SECONDS = 120.0
# run by a new worker before its first program, so that no program's time limit pays for the
# imports and first-use set-up of the parser, interpreter, lowering, codegen and device
_WARM_UP = """@T.prim_func
def warm_up(A: T.Buffer((1,), "float32")):
    for tx in T.thread_binding(1, thread="threadIdx.x"):
        A[0] = A[0] + 1.0
"""


class Worker:
    """Classifies programs (`classify(source, mutant)` -> (kind, detail)) in a child process on
    the device with index `device_index` (None: offline), each within `timeout` seconds."""

    def __init__(self, device_index: int | None, timeout: float):
        assert timeout > 0, "a worker needs a positive time limit"
        self.device_index = device_index
        self.timeout = timeout
        self.process = None
        self.jobs = None     # programs to the worker
        self.answers = None  # outcomes from it

    def classify(self, source: str, mutant: bool) -> tuple[str, str]:
        """The outcome kind and detail of one program, ("timeout", ...) when it took longer
        than the time limit, ("crash", ...) when the worker died running it."""
        if self.process is not None and self.process.poll() is not None:
            self.close(kill=True)  # it died after its last answer
        if self.process is None:
            self._start()
        self.jobs.send((source, mutant))
        if not self.answers.poll(self.timeout):
            self.close(kill=True)
            return "timeout", (f"no result within {self.timeout:g} s (the interpreter, build "
                               "and run were stopped)")
        try:
            return self.answers.recv()
        except EOFError:
            code = self._wait(5)
            self.close(kill=True)
            return "crash", f"the worker process died (exit status {code})"

    def _start(self) -> None:
        job_r, job_w = os.pipe()
        answer_r, answer_w = os.pipe()
        argv = [sys.executable, "-m", __name__, str(job_r), str(answer_w),
                "" if self.device_index is None else str(self.device_index)]
        try:
            self.process = subprocess.Popen(argv, pass_fds=(job_r, answer_w),
                                            stdin=subprocess.DEVNULL)
        except OSError:
            os.close(job_w)
            os.close(answer_r)
            raise
        finally:
            os.close(job_r)
            os.close(answer_w)
        self.jobs = Connection(job_w, readable=False)
        self.answers = Connection(answer_r, writable=False)
        if not self.answers.poll(START_SECONDS):
            self.close(kill=True)
            raise DeviceError(f"the fuzz worker did not open its device within {START_SECONDS:g} s")
        try:
            ready = self.answers.recv()
        except EOFError:
            ready = f"the worker process died while starting (exit status {self._wait(5)})"
        if ready != "ready":
            self.close(kill=True)
            raise DeviceError(f"the fuzz worker could not start: {ready}")

    def _wait(self, seconds: float) -> int | None:
        try:
            return self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            return None

    def close(self, kill: bool = False) -> None:
        """Stop the worker: ask it to exit (or kill it), and wait for it."""
        if self.process is None:
            return
        if not kill:
            try:
                self.jobs.send(None)
            except OSError:  # (BrokenPipeError) it is gone already
                pass
            kill = self._wait(10) is None
        if kill:
            self.process.kill()
            self.process.wait()
        self.jobs.close()
        self.answers.close()
        self.process = self.jobs = self.answers = None


def _serve(jobs: Connection, answers: Connection, device_index: int | None) -> None:
    """The worker's loop: open the device and warm up, then classify each (source, mutant)
    received until None arrives."""
    try:
        import vkir

        from .campaign import classify

        device = None if device_index is None else vkir.device(device_index)
        classify(_WARM_UP, False, device)
    except Exception as exc:  # noqa: BLE001 - reported to the campaign, which raises DeviceError
        answers.send(f"{type(exc).__name__}: {exc}")
        return
    answers.send("ready")
    while True:
        try:
            job = jobs.recv()
        except EOFError:  # the campaign went away
            return
        if job is None:
            return
        try:
            answers.send(classify(*job, device))
        except BrokenPipeError:  # the campaign went away while it ran
            return


if __name__ == "__main__":
    # Ctrl-C reaches the whole process group: the campaign decides, and kills its worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _job_fd, _answer_fd, _index = sys.argv[1:]
    _serve(Connection(int(_job_fd), writable=False), Connection(int(_answer_fd), readable=False),
           int(_index) if _index else None)
