"""A matmul-like kernel (matmul, dense, batched matmul, convolution as an implicit GEMM) scheduled
for a CPU Vulkan driver: dlight's Matmul normalization (C[S, I, J] += A[S, I, K] * B[S, J, K],
convolutions' padding and windows inlined into the reads), then 8x8 invocations per workgroup,
each keeping an 8x4 register tile of C and stepping K by 4, operands read directly from the
buffers (no shared memory, no barriers), the inner J loop computed in float32x4, loops
unrolled up to 64 steps on llvmpipe (`config(info)`).

Measured on llvmpipe (vkir.from_tvm + vkir.build of the TE functions, CPU ms per call, median of
5; benchmarks.tvm_dlight): ResNet-18's 64x56x56 3x3 convolution 109 -> 26 ms, its 512x7x7 one
142 -> 39 ms, its 7x7 stride-2 stem 119 -> 40 ms, a 256x196x128 matmul 6.8 -> 1.1 ms, against
dlight's default (shared 32x32 tiles behind two barriers per K step, scalar). 8 invocations
along x fill llvmpipe's 8 SIMD lanes (4 halve the speed); K steps of 4 build faster than 8 or
16 and run as fast; unrolling up to 64 steps runs as fast as dlight's 256 and builds 5x faster
(conv 64x56x56: 0.23 s against 1.14 s), 16 or none is up to 2.5x slower (the 7x7 stem). On
SwiftShader the same tiles without unrolling run as fast as dlight's default (conv 64x56x56
632 vs 610 ms, dense 196x256x1024 234 vs 306 ms); unrolled, its compiler runs out of memory
(17 GB for a 37x20x19 dense). Tiles fitted to the extents (`fitted`): U-Net's 16-channel
3x3 convolution at 128x128, 42.8 -> 8.6 ms; a 32x128x384 dense 0.68 -> 0.45 ms.
"""

from __future__ import annotations

import dataclasses

from tvm.s_tir import dlight as dl

__all__ = ["Matmul", "CONFIG", "config"]

CONFIG = dl.gpu.Matmul.Config(block_size_x=8, block_size_y=8, vthread_x=1, vthread_y=1,
                              micro_size_x=8, micro_size_y=4, micro_size_k=4, vector_size=4,
                              unroll=64, use_shared=False, storage_align=False, inner_x=False)


def config(info) -> dl.gpu.Matmul.Config:
    """The tile configuration for the CPU device `info` describes (a DeviceInfo): `CONFIG`, its
    loops unrolled on llvmpipe only (measured there; another driver's compiler may not take
    the unrolled code, as SwiftShader's does not)."""
    if "llvmpipe" in f"{info.name} {info.driver}".lower():
        return CONFIG
    return dataclasses.replace(CONFIG, unroll=0)


def fitted(tiles: dl.gpu.Matmul.Config, extents) -> dl.gpu.Matmul.Config:
    """`tiles` with its I and J tile sizes fitted to the normalized matmul's (S, I, J, K)
    `extents` (ints, or None where symbolic): of 8 or 4 rows per invocation along I, and of
    8, 4, 2 or 1 invocations along J, the choice that pads the extent least, the larger on a
    tie (dlight pads I and J up to whole tiles: a 16-channel convolution in 32-wide tiles does
    twice its work, 32 tokens in 64-row tiles too)."""
    if extents is None:
        return tiles
    _, rows, cols, _ = extents

    def least_padding(extent, choices, tile):
        if extent is None:
            return choices[0]
        return min(choices, key=lambda c: (-(-extent // tile(c)) * tile(c), -c))

    x = least_padding(rows, (tiles.micro_size_x, tiles.micro_size_x // 2),
                      lambda c: c * tiles.block_size_x)
    y = least_padding(cols, (8, 4, 2, 1), lambda c: c * tiles.micro_size_y)
    return dataclasses.replace(tiles, micro_size_x=x, block_size_y=min(y, tiles.block_size_y))


def matmul_extents(func):
    """The (S, I, J, K) extents of `func`'s matmul-like block in dlight's normalized form
    C[S, I, J] += A[S, I, K] * B[S, J, K] (an int each, None where symbolic), or None where
    dlight's Matmul rule would not match it."""
    from tvm import s_tir, tirx
    from tvm.s_tir.dlight.analysis import get_root_block
    from tvm.s_tir.dlight.gpu.matmul import get_index_map, get_reduction_blocks

    sch = s_tir.Schedule(func)
    blocks = get_reduction_blocks(sch, sch.get_child_blocks(get_root_block(sch)))
    if blocks is None or not get_index_map(sch.get(blocks[0])):
        return None
    main = blocks[0]
    for access in (("read", 0), ("read", 1), ("write", 0)):
        sch.reindex(main, access)
    sch.transform_block_layout(main, get_index_map(sch.get(main))[0])
    return tuple(int(v.dom.extent) if isinstance(v.dom.extent, tirx.IntImm) else None
                 for v in sch.get(main).iter_vars)


class _Tiles(dl.gpu.Matmul):
    """dlight's Matmul rule with the fixed configuration `tiles`."""

    def __init__(self, tiles: dl.gpu.Matmul.Config):
        super().__init__()
        self.tiles = tiles

    def get_configs(self, target):
        return self.tiles


class Matmul(_Tiles):
    """dlight's Matmul rule with a register-tile configuration (`CONFIG` unless given), its tile
    sizes fitted to each function's extents (`fitted`), on every target it is given (vkir
    applies it for CPU devices only: vkir.tvm.rules.vkir_rules)."""

    def __init__(self, tiles: dl.gpu.Matmul.Config = CONFIG):
        super().__init__(tiles)

    def apply(self, func, target, tunable):
        """dlight's matmul schedule of `func` with tiles fitted to its extents, or None where
        it is no matmul-like PrimFunc or the target is not one the rule serves."""
        from tvm import tirx

        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        return _Tiles(fitted(self.tiles, matmul_extents(func))).apply(func, target, tunable)
