"""TVM's generic GPU Relax pipeline (`tvm.relax.backend.gpu_generic`) with other dlight rules: its
library dispatch, legalization (LegalizeOps, AnnotateTIROpPattern, FoldConstant, FuseOps,
FuseTIR), dataflow lowering and finalization passes as TVM 0.27 runs them for "vulkan", the
kernels scheduled by `ApplyDefaultSchedule(*rules)` instead of TVM's fixed rule list."""

from __future__ import annotations

__all__ = ["relax_pipeline", "legalize_passes"]


def legalize_passes(rules) -> list:
    """TVM's generic GPU legalization passes, scheduling with `rules`."""
    import tvm
    from tvm.s_tir import dlight as dl

    transform = tvm.relax.transform
    return [transform.LegalizeOps(), transform.AnnotateTIROpPattern(), transform.FoldConstant(),
            transform.FuseOps(), transform.FuseTIR(), dl.ApplyDefaultSchedule(*rules)]


def relax_pipeline(target, rules):
    """The Relax pipeline `tvm.compile` runs for `target`, its kernels scheduled by `rules`."""
    import tvm
    from tvm.relax.backend import gpu_generic

    @tvm.transform.module_pass(opt_level=0, name="vkir.tvm.RelaxPipeline")
    def pipeline(mod, _ctx):
        with target:
            seq = tvm.transform.Sequential(
                gpu_generic.library_dispatch_passes(target) + legalize_passes(rules)
                + gpu_generic.dataflow_lower_passes(target) + gpu_generic.finalize_passes(target))
            return seq(mod)

    return pipeline
