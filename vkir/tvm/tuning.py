"""MetaSchedule for `vkir.tvm.target()`: a builder and a runner whose worker processes build
and run candidates through vkir.

MetaSchedule builds and times each candidate in worker processes of its own (TVM's PopenPool),
which start bare: there, "target.build.vulkan" and TVM's Vulkan device API do not exist until
`vkir.tvm.install()` runs. `builder()` and `runner()` are MetaSchedule's LocalBuilder and
LocalRunner with that as their worker initializer, so the workers build with vkir, export each
candidate as a library (the kernels' SPIR-V inside) and time it on the vkir device:

    ms.tune_tir(mod, target=vkir.tvm.target(), work_dir=..., max_trials_global=64,
                builder=vkir.tvm.tuning.builder(), runner=vkir.tvm.tuning.runner())
"""

from __future__ import annotations

__all__ = ["builder", "runner", "install_in_worker"]


def install_in_worker() -> None:
    """The worker initializer: `vkir.tvm.install()` on the default device (VKIR_DEVICE), and
    TVM's tensor intrinsics imported here, before any build is timed (MetaSchedule's default
    build imports them first thing; that alone can take longer than a build's timeout)."""
    import tvm.s_tir.tensor_intrin  # noqa: F401

    from . import bridge

    bridge.install()


def builder(**options):
    """MetaSchedule's LocalBuilder whose workers build with vkir (`options` are LocalBuilder's:
    max_workers, timeout_sec, ...)."""
    from tvm.s_tir import meta_schedule as ms

    options.setdefault("timeout_sec", 120.0)
    return ms.builder.LocalBuilder(initializer=install_in_worker, **options)


def runner(**options):
    """MetaSchedule's LocalRunner whose worker runs candidates on the vkir device (`options`
    are LocalRunner's: timeout_sec, evaluator_config, ...)."""
    from tvm.s_tir import meta_schedule as ms

    options.setdefault("timeout_sec", 120.0)
    return ms.runner.LocalRunner(initializer=install_in_worker, **options)
