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
(17 GB for a 37x20x19 dense).
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


class Matmul(dl.gpu.Matmul):
    """dlight's Matmul rule with a register-tile configuration (`CONFIG` unless given) on every
    target it is given (vkir applies it for CPU devices only: vkir.tvm.rules.vkir_rules)."""

    def __init__(self, tiles: dl.gpu.Matmul.Config = CONFIG):
        super().__init__()
        self.tiles = tiles

    def get_configs(self, target):
        return self.tiles
