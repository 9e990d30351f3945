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
