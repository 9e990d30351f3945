"""vkir's own schedule rules for TVM's kernels, in the style of TVM's dlight (`tvm.s_tir.dlight`):
each rule is a dlight `ScheduleRule` whose `apply(func, target, tunable)` returns a schedule where
the function matches, else None, so that a rule list ends in TVM's own rules as the fallback.

dlight's GPU defaults stage operand tiles in shared memory behind barriers and keep one float per
register step; on a CPU Vulkan driver (llvmpipe, SwiftShader) a workgroup is one host thread
whose invocations run as SIMD lanes, barriers are expensive and shared memory is ordinary cache,
so those schedules leave the CPU mostly idle. The rules here keep a register tile per invocation,
read operands straight from the buffers and compute in float32x4 (vkir.tvm.rules.matmul).

- `default_rules(info)`: the rule list for a vkir device (its DeviceInfo): vkir's rules first
  where the device is a CPU, then TVM's default GPU rules.
- `relax_pipeline(target, rules)`: TVM's generic GPU Relax pipeline with those rules in its
  `ApplyDefaultSchedule` (vkir.tvm.rules.pipeline); `vkir.tvm.install()` makes it the default
  pipeline of `tvm.compile(mod, target="vulkan")`.
"""

from __future__ import annotations

__all__ = ["default_rules", "relax_pipeline", "vkir_rules"]


def vkir_rules(info) -> tuple:
    """vkir's own rules for the device `info` describes (a DeviceInfo): those for CPU devices
    on one, else none (a GPU runs TVM's shared-memory schedules well)."""
    if info is None or info.kind != "cpu":
        return ()
    from .matmul import Matmul, config

    return (Matmul(config(info)),)


def default_rules(info) -> tuple:
    """vkir's rules for the device `info`, then TVM's default GPU rules (the fallback of every
    function no vkir rule matches)."""
    from tvm.s_tir import dlight as dl

    return (*vkir_rules(info), dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
            dl.gpu.GeneralReduction(), dl.gpu.Fallback())


def relax_pipeline(target, rules):
    """TVM's generic GPU Relax pipeline for `target` with `rules` scheduling its kernels
    (vkir.tvm.rules.pipeline)."""
    from .pipeline import relax_pipeline as make

    return make(target, rules)
