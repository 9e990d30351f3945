"""IREE as a peer in the benchmark: the same workloads compiled by IREE for its Vulkan (SPIR-V)
backend, measured when `iree-base-compiler` and `iree-base-runtime` are importable
(`pip install vkir[peers]`).

IREE is measured in a child process (`measure`, which runs `python -m vkir.benchmarks.peers`), not
in the benchmark's own process: while an IREE Vulkan device exists, IREE's runtime keeps two
threads polling lavapipe (measured: 2.0 cores busy with the process otherwise idle), so on a
2-core machine every other measurement taken in the same process (vkir, GLSL and numpy alike)
ran about 2x slower. In a child process IREE's polling costs only IREE's own timings.

IREE's Vulkan allocator on lavapipe imports host memory for device-to-host copies and requires
the host pointer and size to be multiples of minImportedHostPointerAlignment (4096 bytes), which numpy's
allocator does not guarantee: results are read back into a 4096-byte-aligned array.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def available() -> bool:
    """True when IREE's compiler and runtime import."""
    try:
        import iree.compiler  # noqa: F401
        import iree.runtime  # noqa: F401
    except ImportError:
        return False
    return True


def _t(shape) -> str:
    return "tensor<" + "x".join(str(s) for s in shape) + ("x" if shape else "") + "f32>"


def mlir(workload: str, *shape) -> str:
    """The MLIR (linalg on tensors) of a workload, entry point @main."""
    if workload == "vadd":
        (n,) = shape
        t = _t((n,))
        return (f"func.func @main(%a: {t}, %b: {t}) -> {t} {{\n"
                f"  %c = arith.addf %a, %b : {t}\n  return %c : {t}\n}}")
    if workload == "sum":
        (n,) = shape
        return f"""func.func @main(%x: {_t((n,))}) -> tensor<f32> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.reduce ins(%x : {_t((n,))}) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {{
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }}
  return %r : tensor<f32>
}}"""
    if workload in ("matmul", "bmm"):
        *batch, m, n, k = shape
        ta, tb, tc = _t((*batch, m, k)), _t((*batch, k, n)), _t((*batch, m, n))
        op = "linalg.batch_matmul" if batch else "linalg.matmul"
        return f"""func.func @main(%a: {ta}, %b: {tb}) -> {tc} {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : {tc}
  %f = linalg.fill ins(%z : f32) outs(%e : {tc}) -> {tc}
  %r = {op} ins(%a, %b : {ta}, {tb}) outs(%f : {tc}) -> {tc}
  return %r : {tc}
}}"""
    if workload == "softmax":
        t = _t(shape)
        return f"""func.func @main(%x: {t}) -> {t} {{
  %e = tensor.empty() : {t}
  %r = linalg.softmax dimension(1) ins(%x : {t}) outs(%e : {t}) -> {t}
  return %r : {t}
}}"""
    if workload == "conv2d":
        n, c, h, w, o, kh, kw, pad = shape
        oh, ow = h + 2 * pad - kh + 1, w + 2 * pad - kw + 1
        tx, tp, tw, ty = (_t((n, c, h, w)), _t((n, c, h + 2 * pad, w + 2 * pad)),
                          _t((o, c, kh, kw)), _t((n, o, oh, ow)))
        return f"""func.func @main(%x: {tx}, %w: {tw}) -> {ty} {{
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, {pad}, {pad}] high[0, 0, {pad}, {pad}] {{
    ^bb0(%i: index, %j: index, %k: index, %l: index):
      tensor.yield %z : f32
  }} : {tx} to {tp}
  %e = tensor.empty() : {ty}
  %f = linalg.fill ins(%z : f32) outs(%e : {ty}) -> {ty}
  %r = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}}
    ins(%p, %w : {tp}, {tw}) outs(%f : {ty}) -> {ty}
  return %r : {ty}
}}"""
    raise KeyError(workload)


class IreeFunction:
    """One compiled workload on IREE's Vulkan driver: call it with device arrays."""

    def __init__(self, workload: str, *shape):
        import iree.compiler as ic
        import iree.runtime as ir

        t0 = time.perf_counter()
        vmfb = ic.compile_str(mlir(workload, *shape), target_backends=["vulkan-spirv"])
        self.compile_seconds = time.perf_counter() - t0
        self.config = ir.Config("vulkan")
        self.ctx = ir.SystemContext(config=self.config)
        self.ctx.add_vm_module(ir.VmModule.copy_buffer(self.ctx.instance, vmfb))
        self.fn = self.ctx.modules.module["main"]

    def upload(self, array: np.ndarray):
        import iree.runtime as ir

        return ir.asdevicearray(self.config.device, np.ascontiguousarray(array))

    def __call__(self, *args):
        return self.fn(*args)

    def to_host(self, result) -> np.ndarray:
        """The result's contents, copied through whole 4096-byte-aligned host pages."""
        import iree.runtime as ir

        view = result._buffer_view
        dtype = ir.HalElementType.map_to_dtype(view.element_type)
        shape = tuple(view.shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        padded = -(-nbytes // 4096) * 4096  # the import wants whole pages too
        raw = np.empty(padded + 4096, np.uint8)
        start = (-raw.ctypes.data) % 4096
        page = raw[start:start + padded]
        dev = self.config.device
        mem_type = int(ir.MemoryType.HOST_LOCAL | ir.MemoryType.DEVICE_VISIBLE)
        usage = int(ir.BufferUsage.TRANSFER_TARGET | ir.BufferUsage.MAPPING_PERSISTENT)
        target = dev.allocator.import_host_allocation(page, memory_type=mem_type,
                                                      allowed_usage=usage)
        sem = dev.create_semaphore(0)
        dev.queue_copy(view.get_buffer(), target, wait_semaphores=ir.HalFence.create_at(sem, 0),
                       signal_semaphores=ir.HalFence.create_at(sem, 1))
        ir.HalFence.create_at(sem, 1).wait()
        return page[:nbytes].view(dtype).reshape(shape).copy()


def measure(workload: str, shape, inputs, want, repeat: int, rtol: float, atol: float,
            timeout: float = 600.0):
    """IREE's wall seconds per call of `workload` on `inputs`, `repeat` samples after a checked
    call and a warm-up (at least 10 calls and 1 s), measured in a child process; a string (why not) when IREE's result differs from
    `want` or the child fails."""
    with tempfile.TemporaryDirectory(prefix="vkir-peer-") as tmp:
        path = os.path.join(tmp, "case.npz")
        np.savez(path, want=np.asarray(want), **{f"in{i}": a for i, a in enumerate(inputs)})
        spec = dict(workload=workload, shape=[int(s) for s in shape], n_inputs=len(inputs),
                    repeat=int(repeat), rtol=rtol, atol=atol, case=path)
        cmd = [sys.executable, "-m", "vkir.benchmarks.peers", json.dumps(spec)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"IREE did not finish in {timeout:.0f} s"
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return f"IREE's child process failed (exit {done.returncode}): {tail}"
    report = json.loads(lines[-1])
    return report["error"] if report.get("error") else report["samples"]


def _child(spec: dict) -> dict:
    """Compile, check and time one workload (the child side of `measure`)."""
    from .suite import mismatch

    case = np.load(spec["case"])
    inputs = [case[f"in{i}"] for i in range(spec["n_inputs"])]
    want = case["want"]
    fn = IreeFunction(spec["workload"], *spec["shape"])
    args = [fn.upload(a) for a in inputs]
    why = mismatch(f"{spec['workload']} iree", fn.to_host(fn(*args)), want, spec["rtol"],
                   spec["atol"])
    if why:
        return {"error": why}
    # warm-up: IREE's first calls in a process take 4-16 ms each even for a 64K-element vadd
    # (0.25 ms once settled, after about 10 calls), so it gets at least 10 calls and 1 s
    t_end, calls = time.perf_counter() + 1.0, 0
    while calls < 10 or (time.perf_counter() < t_end and calls < 1000):
        fn(*args)
        calls += 1
    samples = []
    for _ in range(spec["repeat"]):
        t0 = time.perf_counter()
        fn(*args)  # returns when the result is ready
        samples.append(time.perf_counter() - t0)
    return {"samples": samples, "compile_s": fn.compile_seconds}


if __name__ == "__main__":
    print(json.dumps(_child(json.loads(sys.argv[1]))), flush=True)
