"""The `interop` workload of `vkir bench`: what moving data between numpy/torch and vkir costs.

- interop_vadd: vadd (`kernels.vadd4`) of 2^24 float32 (quick: 2^16) called on numpy arrays (bound in place where
  the device imports host memory), on DeviceArrays, and numpy's own add. On a device with host
  memory used in place, the numpy-argument call should cost about what the DeviceArray call does
  (the goal on lavapipe: within 1.2x); `Kernel.last_call_copies` is printed beside it.
- interop_roundtrip: a 64 MiB (quick: 1 MiB) float32 torch tensor to vkir and back
  (`vkir.asarray` then `torch.from_dlpack`), beside the same trip through copies (`vkir.array`
  of the tensor's values, then a tensor of `.numpy()`). Skipped, with a note, without torch.

Samples of the implementations being compared alternate (round-robin, as Bench._timed does), so
a change of load on the machine falls on all of them alike.
"""

from __future__ import annotations

import time

import numpy as np

VADD = {"full": 1 << 24, "quick": 1 << 16}
ROUNDTRIP_BYTES = {"full": 64 << 20, "quick": 1 << 20}


def _alternating(impls: dict, repeat: int) -> dict:
    """{name: wall seconds per call}, each implementation timed once per round, the order
    rotating from round to round (after one warm-up call each)."""
    for fn in impls.values():
        fn()
    names = list(impls)
    samples = {name: [] for name in names}
    for r in range(repeat):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            t0 = time.perf_counter()
            impls[name]()
            samples[name].append(time.perf_counter() - t0)
    return samples


def interop(bench) -> None:
    """Both parts of the workload on `bench` (a suite.Bench): results and a summary line each."""
    _vadd(bench)
    _roundtrip(bench)


def _vadd(bench) -> None:
    from . import kernels

    vk, dev = bench.vkir, bench.dev
    n = VADD["quick" if bench.quick else "full"]
    bench.size = [n]
    a, b = bench.rng.random(n, dtype=np.float32), bench.rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    A, B, C = vk.array(a, dev), vk.array(b, dev), vk.empty(n, "float32", dev)
    k = vk.build(kernels.vadd4, device=dev)   # the same kernel both ways (no tuning run)
    copies = []

    def numpy_args():
        k(a, b, c)
        copies.append(k.last_call_copies)

    samples = _alternating({"vkir": numpy_args, "devicearray": lambda: k(A, B, C),
                            "numpy": lambda: np.add(a, b, out=c)}, bench.repeat)
    bench.check("interop_vadd numpy arguments", c, a + b)
    bench.check("interop_vadd device arrays", C.numpy(), a + b)
    got = {name: bench.add("interop_vadd", name, "wall_s", s, nbytes=12 * n)
           for name, s in samples.items()}
    ratio = got["vkir"].median / got["devicearray"].median
    print(f"  interop_vadd n={n}: numpy arguments {got['vkir'].median * 1e3:.2f} ms, "
          f"DeviceArrays {got['devicearray'].median * 1e3:.2f} ms (ratio {ratio:.2f}), "
          f"numpy add {got['numpy'].median * 1e3:.2f} ms; bytes staged per numpy-argument "
          f"call: {max(copies)}", flush=True)


def _roundtrip(bench) -> None:
    try:
        import torch
    except ImportError:
        print("  interop_roundtrip: torch is not installed (pip install torch): not measured",
              flush=True)
        return
    vk, dev = bench.vkir, bench.dev
    nbytes = ROUNDTRIP_BYTES["quick" if bench.quick else "full"]
    bench.size = [nbytes]
    t = torch.rand(nbytes // 4, dtype=torch.float32)
    views = []

    def in_place():
        back = torch.from_dlpack(vk.asarray(t, device=dev))
        views.append(back.data_ptr() == t.data_ptr())

    def copied():
        back = torch.from_numpy(vk.array(t.numpy(), device=dev).numpy())
        assert back.shape == t.shape

    samples = _alternating({"vkir": in_place, "copies": copied}, bench.repeat)
    got = {name: bench.add("interop_roundtrip", name, "wall_s", s, nbytes=2 * nbytes)
           for name, s in samples.items()}
    print(f"  interop_roundtrip {nbytes >> 20} MiB torch -> vkir -> torch: "
          f"{got['vkir'].median * 1e3:.3f} ms ({'no copy' if all(views) else 'copied'}); "
          f"through copies {got['copies'].median * 1e3:.2f} ms", flush=True)
