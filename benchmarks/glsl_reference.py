"""The benchmark's GLSL matmul reference: the best hand-written matmul shader we have.

That is the register tile of benchmarks.access_forms (`matmul_glsl`): each invocation keeps an
8 x 8 tile of C in `vec4` accumulators and reads A as `vec4` along k. On llvmpipe A and B are
read through rgba32f texel views of the DeviceArrays' buffers (a texel fetch is one vector load
per lane where a storage-buffer load is a loop over the lanes: docs/performance.md); where no
view can be made (SwiftShader allows 65536 texels per texel buffer, 1 MiB of rgba32f) the same
tile reads storage buffers. Other GLSL tiles measured no faster: on lavapipe at 1024, 16 and 32
rows, one vec4 column, or the 4 k innermost per accumulator gave 0.37-0.38 of the register-only
FMA ceiling per CPU-second as this one does; on SwiftShader at 512 the texel form is 1.5x the
storage form (5.5 against 3.7 GFLOP per CPU-second). The shared-memory 16 x 16
shader in shaders/matmul.comp was the reference before: a tile no faster than the naive loop
on CPU drivers, it made vkir look better than it is.
"""

from __future__ import annotations

TILE = (8, 2, 8)   # rows per invocation, vec4 columns per invocation, invocations per workgroup


def fits(m: int, n: int, k: int) -> bool:
    """Whether the tile covers an m x n x k matmul exactly (the shader has no bounds tests)."""
    tm, tn4, wx = TILE
    return m % tm == 0 and n % (4 * tn4 * wx) == 0 and k % 4 == 0


def matmul_launch(dev, A, B, C, m: int, n: int, k: int):
    """(pipeline, resources, groups, form) of the tile for C = A @ B (row-major float32
    DeviceArrays; a square shape, as `matmul_glsl` writes its strides from one size), `form`
    "texel" or "storage"."""
    from vkir import runtime
    from vkir.images import image_format
    from vkir.runtime.buffer_texels import texel_view
    from vkir.runtime.glsl import compile_glsl

    from .access_forms import matmul_glsl

    if not (m == n == k and fits(m, n, k)):
        raise ValueError(f"the GLSL tile takes square sizes that it divides, got {m}x{n}x{k}")
    tm, tn4, wx = TILE
    fmt = image_format("rgba32f")
    views = [texel_view(X.buffer, fmt) for X in (A, B)]
    texel = all(v is not None for v in views)
    words = compile_glsl(matmul_glsl(tm, tn4, wx, n, texel))
    kinds = ("uniform_texel_buffer",) * 2 if texel else ("storage",) * 2
    pipe = runtime.get_pipeline(dev, words, "main", (0, 1, 2), 0,
                                descriptor_types=(*kinds, "storage"))
    resources = [*views, C.buffer] if texel else [A.buffer, B.buffer, C.buffer]
    return pipe, resources, (n // (4 * tn4 * wx), m // tm, 1), "texel" if texel else "storage"


# -- `python -m benchmarks.glsl_reference`: matmul configs against this tile and the ceiling --

_PEAK = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer O { vec4 o[]; };
void main() {
    vec4 m = o[gl_GlobalInvocationID.x], d = m * 0.5;
DECL
    for (uint k = 0; k < 4096u; ++k) { BODY BODY BODY BODY }
    o[gl_GlobalInvocationID.x] = SUM;
}
"""
PEAK_ACCUMULATORS = 8   # independent vec4 FMA chains: enough to hide the latency, in registers


def peak_glsl() -> tuple[str, float]:
    """(GLSL, FLOP per 64 x 64 dispatch) of the register-only FMA shader: llvmpipe's and
    SwiftShader's arithmetic ceiling, no memory access in its loop."""
    n = PEAK_ACCUMULATORS
    text = (_PEAK.replace("DECL", "\n".join(f"    vec4 c{i} = vec4({i}) * m;" for i in range(n)))
            .replace("BODY", " ".join(f"c{i} = fma(c{i}, m, d);" for i in range(n)))
            .replace("SUM", " + ".join(f"c{i}" for i in range(n))))
    return text, 64.0 * 64 * 4096 * 4 * n * 4 * 2


def compare(size: int, configs: list, rounds: int = 3, calls: int = 2) -> list:
    """Rows (name, GFLOP per CPU-second: median over `rounds`, fraction of the FMA ceiling's
    median) of vkir.ops.matmul's template with each config, this GLSL tile and the peak shader,
    timed in interleaved rounds of `calls` calls each on the default device (process CPU
    seconds, so the ratios hold on a loaded host). Each result is checked against numpy."""
    import statistics
    import time

    import numpy as np

    import vkir
    from vkir import runtime
    from vkir.ops.linalg import kernel as template

    dev = vkir.device()
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((size, size), dtype=np.float32) for _ in range(2))
    want = a.astype(np.float64) @ b.astype(np.float64)
    A, B = vkir.array(a, dev), vkir.array(b, dev)
    runs = []   # (name, flop per call, call, output or None)
    for config in configs:
        k = vkir.build(template(M=size, N=size, K=size, **config), device=dev)
        C = vkir.empty((size, size), "float32", dev)
        runs.append((str(config), 2.0 * size ** 3, lambda k=k, C=C: k(A, B, C), C))
    if fits(size, size, size):
        C = vkir.empty((size, size), "float32", dev)
        pipe, res, groups, form = matmul_launch(dev, A, B, C, size, size, size)
        runs.append((f"GLSL 8x8 tile, {form} reads", 2.0 * size ** 3, lambda: runtime.profile(
            dev, pipe, res, b"", groups, repeat=1, warmup=0), C))
    text, flop = peak_glsl()
    peak = vkir.compile_glsl(text, device=dev)
    O = vkir.array(np.ones(64 * 64 * 4, np.float32), dev)
    runs.append(("register-only FMAs (the ceiling)", flop, lambda: peak(O, grid=(64, 1, 1)), None))
    for name, _, call, C in runs:
        call()
        if C is not None and not np.allclose(C.numpy(), want, rtol=1e-3, atol=1e-3):
            raise AssertionError(f"{name}: wrong result")
    rates = {name: [] for name, *_ in runs}
    for _ in range(rounds):
        for name, flop, call, _ in runs:
            c0 = time.process_time()
            for _ in range(calls):
                call()
            rates[name].append(flop * calls / (time.process_time() - c0) / 1e9)
    medians = {name: statistics.median(r) for name, r in rates.items()}
    ceiling = medians[runs[-1][0]]
    return [(name, m, m / ceiling) for name, m in medians.items()]


def main(argv=None) -> None:
    import argparse

    import vkir
    from vkir.ops.linalg import kernel as template

    parser = argparse.ArgumentParser(description="vkir.ops.matmul configs against the GLSL "
                                     "tile and the FMA ceiling, per CPU-second")
    parser.add_argument("configs", nargs="*", help="configs such as tm=32,tn=8,wx=8,wy=1,ka=4 "
                        "(default: the device's first three)")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2)
    args = parser.parse_args(argv)
    configs = [{k: int(v) for k, v in (kv.split("=") for kv in c.split(","))}
               for c in args.configs]
    dev = vkir.device()
    configs = configs or template.configs_for(dev.info)[:3]
    print(f"device: {dev.info.name}   matmul {args.size}^3 float32, GFLOP per CPU-second "
          f"(median of {args.rounds} interleaved rounds)")
    for name, rate, fraction in compare(args.size, configs, args.rounds, args.calls):
        print(f"{name:48s} {rate:7.1f}   {fraction:5.3f} of the ceiling")


if __name__ == "__main__":
    main()
