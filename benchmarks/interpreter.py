"""How long the interpreter takes on kernels users run in their tests (vkir_check): an attention
block with shared memory and barriers, a Mandelbrot whose invocations leave their loop at
different iterations, one long serial loop, the same loop in 64 invocations, a 4-point stencil
and a matmul with one output per invocation.

    python -m benchmarks.interpreter [--repeat N] [--plain]

Prints the best wall time of N runs of `vkir.interpret` (races checked, as vkir_check does) for
each kernel, and checks each result against numpy. `--plain` runs the same kernels written
without variables, while or break (one-element local buffers and guards instead; the stencil and
the matmul are written so already), which older vkir versions parse too: copied into a checkout
of an earlier commit, this file measures the interpreter before and after a change on the same
kernels. The first run of a loop that goes to
C includes compiling it (`--repeat 1` with an empty VKIR_CACHE_DIR measures a first use);
VKIR_NATIVE_LOOPS=0 measures the interpreter without C.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

ATTENTION = '''
@T.prim_func
def attention(q: T.Buffer((256, 64), "float32"), k: T.Buffer((256, 64), "float32"),
              v: T.Buffer((256, 64), "float32"), out: T.Buffer((256, 64), "float32")):
    for row in T.thread_binding(256, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            qs = T.alloc_buffer((64,), "float32", scope="shared")
            p = T.alloc_buffer((256,), "float32", scope="shared")
            red = T.alloc_buffer((64,), "float32", scope="shared")
            qs[tx] = q[row, tx]
            T.barrier()
            for c in T.serial(4):
                j = c * 64 + tx
                acc = T.float32(0)
                for d in T.serial(64):
                    acc += qs[d] * k[j, d]
                p[j] = acc * T.float32(0.125)
            T.barrier()
            m = T.max(T.max(p[tx], p[tx + 64]), T.max(p[tx + 128], p[tx + 192]))
            red[tx] = m
            T.barrier()
            stride = 32
            while stride > 0:
                if tx < stride:
                    red[tx] = T.max(red[tx], red[tx + stride])
                T.barrier()
                stride = stride // 2
            row_max = red[0]
            T.barrier()
            s = T.float32(0)
            for c in T.serial(4):
                e = T.exp(p[c * 64 + tx] - row_max)
                p[c * 64 + tx] = e
                s += e
            red[tx] = s
            T.barrier()
            stride = 32
            while stride > 0:
                if tx < stride:
                    red[tx] = red[tx] + red[tx + stride]
                T.barrier()
                stride = stride // 2
            total = red[0]
            o = T.float32(0)
            for j in T.serial(256):
                o += p[j] * v[j, tx]
            out[row, tx] = o / total
'''

MANDELBROT = '''
@T.prim_func
def mandelbrot(out: T.Buffer((600, 900), "int32")):
    for by in T.thread_binding(75, "blockIdx.y"):
        for bx in T.thread_binding(57, "blockIdx.x"):
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(16, "threadIdx.x"):
                    y = by * 8 + ty
                    x = bx * 16 + tx
                    if x < 900:
                        cr = T.cast(x, "float32") * T.float32(0.0033333333333333335) - T.float32(2.0)
                        ci = T.cast(y, "float32") * T.float32(0.0033333333333333335) - T.float32(1.0)
                        zr = T.float32(0)
                        zi = T.float32(0)
                        n = 0
                        while n < 50:
                            if zr * zr + zi * zi > T.float32(4):
                                break
                            t = zr * zr - zi * zi + cr
                            zi = T.float32(2) * zr * zi + ci
                            zr = t
                            n += 1
                        out[y, x] = n
'''

LONG_LOOP = '''
@T.prim_func
def long_loop(a: T.Buffer((1024,), "float32"), out: T.Buffer((1,), "float32")):
    s = T.float32(0)
    for i in T.serial(200000):
        s = s * T.float32(0.5) + a[i % 1024]
    out[0] = s
'''

WIDE_LOOP = '''
@T.prim_func
def wide_loop(a: T.Buffer((1024,), "float32"), out: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        s = T.float32(0)
        for i in T.serial(200000):
            s = s * T.float32(0.5) + a[(i + tx) % 1024]
        out[tx] = s
'''


PLAIN_ATTENTION = '''
@T.prim_func
def attention(q: T.Buffer((256, 64), "float32"), k: T.Buffer((256, 64), "float32"),
              v: T.Buffer((256, 64), "float32"), out: T.Buffer((256, 64), "float32")):
    for row in T.thread_binding(256, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            qs = T.alloc_buffer((64,), "float32", scope="shared")
            p = T.alloc_buffer((256,), "float32", scope="shared")
            red = T.alloc_buffer((64,), "float32", scope="shared")
            acc = T.alloc_buffer((1,), "float32", scope="local")
            qs[tx] = q[row, tx]
            T.barrier()
            for c in T.serial(4):
                acc[0] = T.float32(0)
                for d in T.serial(64):
                    acc[0] = acc[0] + qs[d] * k[c * 64 + tx, d]
                p[c * 64 + tx] = acc[0] * T.float32(0.125)
            T.barrier()
            red[tx] = T.max(T.max(p[tx], p[tx + 64]), T.max(p[tx + 128], p[tx + 192]))
            T.barrier()
            for step in T.unroll(6):
                if tx < (32 >> step):
                    red[tx] = T.max(red[tx], red[tx + (32 >> step)])
                T.barrier()
            acc[0] = red[0]
            T.barrier()
            red[tx] = T.float32(0)
            for c in T.serial(4):
                p[c * 64 + tx] = T.exp(p[c * 64 + tx] - acc[0])
                red[tx] = red[tx] + p[c * 64 + tx]
            T.barrier()
            for step in T.unroll(6):
                if tx < (32 >> step):
                    red[tx] = red[tx] + red[tx + (32 >> step)]
                T.barrier()
            acc[0] = T.float32(0)
            for j in T.serial(256):
                acc[0] = acc[0] + p[j] * v[j, tx]
            out[row, tx] = acc[0] / red[0]
'''

PLAIN_MANDELBROT = '''
@T.prim_func
def mandelbrot(out: T.Buffer((600, 900), "int32")):
    for by in T.thread_binding(75, "blockIdx.y"):
        for bx in T.thread_binding(57, "blockIdx.x"):
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(16, "threadIdx.x"):
                    if bx * 16 + tx < 900:
                        x0 = T.cast(bx * 16 + tx, "float32")
                        y0 = T.cast(by * 8 + ty, "float32")
                        cr = x0 * T.float32({x_step!r}) - T.float32(2.0)
                        ci = y0 * T.float32({y_step!r}) - T.float32(1.0)
                        z = T.alloc_buffer((2,), "float32", scope="local")
                        n = T.alloc_buffer((1,), "int32", scope="local")
                        z[0] = T.float32(0)
                        z[1] = T.float32(0)
                        n[0] = 0
                        for it in T.serial(50):
                            if z[0] * z[0] + z[1] * z[1] <= T.float32(4):
                                t = z[0] * z[0] - z[1] * z[1] + cr
                                z[1] = T.float32(2) * z[0] * z[1] + ci
                                z[0] = t
                                n[0] = n[0] + 1
                        out[by * 8 + ty, bx * 16 + tx] = n[0]
'''.format(x_step=3.0 / 900, y_step=2.0 / 600)

PLAIN_LOOP = '''
@T.prim_func
def long_loop(a: T.Buffer((1024,), "float32"), out: T.Buffer((1,), "float32")):
    s = T.alloc_buffer((1,), "float32", scope="local")
    s[0] = T.float32(0)
    for i in T.serial(200000):
        s[0] = s[0] * T.float32(0.5) + a[i % 1024]
    out[0] = s[0]
'''

PLAIN_WIDE_LOOP = '''
@T.prim_func
def wide_loop(a: T.Buffer((1024,), "float32"), out: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        s = T.alloc_buffer((1,), "float32", scope="local")
        s[0] = T.float32(0)
        for i in T.serial(200000):
            s[0] = s[0] * T.float32(0.5) + a[(i + tx) % 1024]
        out[tx] = s[0]
'''

STENCIL = '''
@T.prim_func
def stencil(a: T.Buffer((512, 512), "float32"), out: T.Buffer((512, 512), "float32")):
    for by in T.thread_binding(32, "blockIdx.y"):
        for bx in T.thread_binding(32, "blockIdx.x"):
            for ty in T.thread_binding(16, "threadIdx.y"):
                for tx in T.thread_binding(16, "threadIdx.x"):
                    if by * 16 + ty > 0 and by * 16 + ty < 511 and bx * 16 + tx > 0 and \\
                            bx * 16 + tx < 511:
                        out[by * 16 + ty, bx * 16 + tx] = T.float32(0.25) * (
                            a[by * 16 + ty - 1, bx * 16 + tx] + a[by * 16 + ty + 1, bx * 16 + tx]
                            + a[by * 16 + ty, bx * 16 + tx - 1]
                            + a[by * 16 + ty, bx * 16 + tx + 1])
'''

MATMUL = '''
@T.prim_func
def matmul(a: T.Buffer((128, 256), "float32"), b: T.Buffer((256, 128), "float32"),
           c: T.Buffer((128, 128), "float32")):
    for by in T.thread_binding(8, "blockIdx.y"):
        for bx in T.thread_binding(8, "blockIdx.x"):
            for ty in T.thread_binding(16, "threadIdx.y"):
                for tx in T.thread_binding(16, "threadIdx.x"):
                    acc = T.alloc_buffer((1,), "float32", scope="local")
                    acc[0] = T.float32(0)
                    for k in T.serial(256):
                        acc[0] = acc[0] + a[by * 16 + ty, k] * b[k, bx * 16 + tx]
                    c[by * 16 + ty, bx * 16 + tx] = acc[0]
'''


def _stencil_args(rng):
    a = rng.standard_normal((512, 512)).astype(np.float32)
    want = np.zeros_like(a)
    want[1:-1, 1:-1] = np.float32(0.25) * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2]
                                           + a[1:-1, 2:])
    return [a, np.zeros_like(a)], want, 1


def _matmul_args(rng):
    a = rng.standard_normal((128, 256)).astype(np.float32)
    b = rng.standard_normal((256, 128)).astype(np.float32)
    return [a, b, np.zeros((128, 128), np.float32)], a.astype(np.float64) @ b, 2


def _attention_args(rng):
    q, k, v = (rng.standard_normal((256, 64)).astype(np.float32) for _ in range(3))
    s = (q.astype(np.float64) @ k.T) * 0.125
    e = np.exp(s - s.max(1, keepdims=True))
    return [q, k, v, np.zeros((256, 64), np.float32)], (e / e.sum(1, keepdims=True)) @ v, 3


def _mandelbrot_args(rng):
    x = np.arange(900, dtype=np.float32) * np.float32(3.0 / 900) - np.float32(2.0)
    y = np.arange(600, dtype=np.float32) * np.float32(2.0 / 600) - np.float32(1.0)
    cr, ci = np.meshgrid(x, y)
    zr, zi = np.zeros_like(cr), np.zeros_like(ci)
    n = np.zeros(cr.shape, np.int32)
    for _ in range(50):
        live = ~(zr * zr + zi * zi > 4)
        zr, zi = (np.where(live, zr * zr - zi * zi + cr, zr),
                  np.where(live, np.float32(2) * zr * zi + ci, zi))
        n += live
    return [np.zeros((600, 900), np.int32)], n, 0


def _long_loop_args(rng):
    a = rng.standard_normal(1024).astype(np.float32)
    s = np.float32(0)
    for i in range(200000):
        s = s * np.float32(0.5) + a[i % 1024]
    return [a, np.zeros(1, np.float32)], np.array([s]), 1


def _wide_loop_args(rng):
    a = rng.standard_normal(1024).astype(np.float32)
    s = np.zeros(64, np.float32)
    lanes = np.arange(64)
    for i in range(200000):
        s = s * np.float32(0.5) + a[(i + lanes) % 1024]
    return [a, np.zeros(64, np.float32)], s, 1


CASES = {"attention 256x64": (ATTENTION, _attention_args),
         "mandelbrot 600x900": (MANDELBROT, _mandelbrot_args),
         "loop of 200000": (LONG_LOOP, _long_loop_args),
         "64 loops of 200000": (WIDE_LOOP, _wide_loop_args),
         "stencil 512x512": (STENCIL, _stencil_args),
         "matmul 128x256x128": (MATMUL, _matmul_args)}
PLAIN = {"attention 256x64": PLAIN_ATTENTION, "mandelbrot 600x900": PLAIN_MANDELBROT,
         "loop of 200000": PLAIN_LOOP, "64 loops of 200000": PLAIN_WIDE_LOOP,
         "stencil 512x512": STENCIL, "matmul 128x256x128": MATMUL}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--only", default=None, help="run the cases whose name contains this")
    parser.add_argument("--plain", action="store_true",
                        help="the kernels without variables, while or break")
    args = parser.parse_args(argv)
    import vkir

    rng = np.random.default_rng(0)
    for name, (source, make) in CASES.items():
        if args.only and args.only not in name:
            continue
        func = vkir.from_script(PLAIN[name] if args.plain else source)
        inputs, want, out_index = make(rng)
        best = float("inf")
        for _ in range(args.repeat):
            run = [a.copy() for a in inputs]
            t0 = time.perf_counter()
            vkir.interpret(func, *run)
            best = min(best, time.perf_counter() - t0)
        np.testing.assert_allclose(run[out_index], want, rtol=1e-4, atol=1e-4)
        print(f"{name:22} {best:8.3f} s")


if __name__ == "__main__":
    main()
