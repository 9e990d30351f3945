"""The `vkir` command line: devices, compile, run, demo, bench.

    vkir devices [--json]
    vkir compile FILE.py[:FUNC] [--emit ir|lowered|asm|spv] [-o OUT]
                 [--target device|vulkan1.1|vulkan1.2|vulkan1.3|lavapipe]
                 [--print-after PASS|all ...] [--time-passes]
    vkir run FILE.py[:FUNC] [--size NAME=VALUE ...] [--seed N] [--device SEL]
    vkir demo [--device SEL] [--out DIR] [--size WxH]
    vkir bench [--device SEL] [--workload NAME ...] [--repeat N] [--json FILE] [--compare BASE]
               [--quick]
    vkir validate FILE... [--target-env ENV] [--format text|json|junit] [-o REPORT]  (vkir.tools.validate)
    vkir dis FILE.spv [-o OUT]
    vkir doctor                                                                      (vkir.tools.doctor)
    vkir cache info [--json] | vkir cache clean                                      (vkir.tools.caches)

User errors (VkirError) print "vkir: error: ..." and exit with status 2; a failed result check
(run, demo) exits with status 1. With VKIR_VALIDATION=1 any validation-layer message is printed
and makes the command fail.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

from .. import config
from ..errors import ArgumentError, DeviceError, VkirError

__all__ = ["main", "parser", "load_funcs", "load_func", "random_inputs"]


# -- loading kernels from a file -----------------------------------------------------------------
def load_funcs(spec: str) -> list:
    """The PrimFuncs named by "FILE.py[:FUNC]" (every PrimFunc of the file without FUNC)."""
    from ..ir import PrimFunc

    path, _, name = spec.partition(":") if not Path(spec).exists() else (spec, "", "")
    file = Path(path)
    if not file.is_file():
        raise ArgumentError(f"no such file: {path}")
    mod_name = f"_vkir_user_{abs(hash(str(file.resolve())))}"
    module_spec = importlib.util.spec_from_file_location(mod_name, file)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[mod_name] = module
    module_spec.loader.exec_module(module)
    funcs = {k: v for k, v in vars(module).items() if isinstance(v, PrimFunc)}
    if name:
        if name not in funcs:
            raise ArgumentError(f"{file} has no T.prim_func named {name!r} "
                                f"(found: {', '.join(funcs) or 'none'})")
        return [funcs[name]]
    if not funcs:
        raise ArgumentError(f"{file} defines no T.prim_func")
    return list(funcs.values())


def load_func(spec: str):
    """The one PrimFunc that `FILE.py[:FUNC]` names (an error when the file holds several and none
    is named)."""
    funcs = load_funcs(spec)
    if len(funcs) > 1:
        names = ", ".join(f.name for f in funcs)
        raise ArgumentError(f"{spec} defines several kernels ({names}); pick one with FILE.py:FUNC")
    return funcs[0]


def _target(name: str, device_sel=None):
    """The vkir.Target for `--target`: a named offline target, or the selected device's (lavapipe's
    when no device can be opened)."""
    from ..target import Target

    if name != "device":
        return Target.named(name)
    from .. import api

    if device_sel is not None or config.device_selector():
        # a device the user named (--device, $VKIR_DEVICE) must open: never a silent fallback
        return Target.from_device(api.device(device_sel))
    try:
        return Target.from_device(api.device())
    except (DeviceError, OSError) as exc:
        print(f"vkir: note: no usable Vulkan device ({exc}); compiling for lavapipe's feature set "
              "(--target lavapipe)", file=sys.stderr)
        return Target.lavapipe()


# -- commands ------------------------------------------------------------------------------------
def cmd_devices(args) -> int:
    """`vkir devices`: list the Vulkan devices with their limits and features."""
    from .. import api

    infos = api.devices()
    if args.json:
        for d in infos:
            print(json.dumps({"index": d.index, "name": d.name, "kind": d.kind, "driver": d.driver,
                              "api_version": d.api_version, "limits": d.limits.__dict__,
                              "features": sorted(d.features), "subgroup_size": d.subgroup_size,
                              "subgroup_operations": sorted(d.subgroup_operations),
                              "unified_memory": d.unified_memory}))
        return 0
    if not infos:
        print("no Vulkan device")
        return 1
    default = api.device().info.index
    for d in infos:
        lim = d.limits
        mark = "*" if d.index == default else " "
        print(f"{mark}{d.index}: {d.name}  [{d.kind}]  Vulkan {d.api_version}  ({d.driver})")
        print(f"    workgroup size <= {lim.max_workgroup_size}, invocations <= {lim.max_workgroup_invocations}, "
              f"count <= {lim.max_workgroup_count}")
        print(f"    shared memory {lim.max_shared_memory_bytes} B, push constants {lim.max_push_constant_bytes} B, "
              f"storage buffer range {lim.max_storage_buffer_range} B")
        print(f"    features: {', '.join(sorted(d.features)) or 'none'}")
        print(f"    subgroup size {d.subgroup_size}: {', '.join(sorted(d.subgroup_operations))}")
    print("(* = default device: $VKIR_DEVICE or discrete > integrated > virtual > cpu)")
    return 0


def cmd_compile(args) -> int:
    """`vkir compile`: print or write a kernel's IR, lowered IR, SPIR-V assembly or binary."""
    from .. import api
    from ..spirv import codegen, disassemble
    from ..transform.instruments import PrintAfter, TimePasses

    func = load_func(args.file)
    instruments = []
    if args.print_after:
        names = "all" if "all" in args.print_after else frozenset(args.print_after)
        _check_pass_names(names)
        instruments.append(PrintAfter(names, file=sys.stdout))
    timer = TimePasses() if args.time_passes else None
    if timer is not None:
        instruments.append(timer)
    if args.emit == "ir" and not instruments:
        out = func.script()
    else:
        target = _target(args.target, args.device)
        lowered = api.lower(func, target, instruments=instruments)
        if args.emit == "ir":
            out = func.script()
        elif args.emit == "lowered":
            out = lowered.script()
        else:
            module = codegen(lowered, target)
            out = module.words if args.emit == "spv" else disassemble(module.words)
    if timer is not None:
        print(timer.report())
    if isinstance(out, bytes):
        if not args.output:
            raise ArgumentError("--emit spv writes binary: give -o OUT")
        Path(args.output).write_bytes(out)
    elif args.output:
        Path(args.output).write_text(out if out.endswith("\n") else out + "\n")
    else:
        print(out, end="" if out.endswith("\n") else "\n")
    return 0


def _check_pass_names(names) -> None:
    """ArgumentError naming the unknown ones when `names` (a set, or "all") names no pass of the
    default pipeline."""
    from ..lowering import pipeline
    from ..target import Target

    if names == "all":
        return
    known = set(pipeline(Target.lavapipe(), pointer_casts=True).names)
    unknown = sorted(set(names) - known)
    if unknown:
        raise ArgumentError(f"--print-after: unknown pass {', '.join(unknown)}; passes: "
                            f"{', '.join(sorted(known))} or all")


def random_inputs(func, sizes: dict, rng) -> list:
    """Random arguments for `func`: arrays for buffers (symbolic sizes from `sizes`, default 1000),
    small positive values for scalars."""
    from ..interpreter import evaluate

    env = {}
    for v in func.size_vars:
        env[v] = int(sizes.pop(v.name, 1000))
    args = []
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None:
            dt = p.dtype
            name = p.name
            if name in sizes:
                value = float(sizes.pop(name)) if dt.is_float else int(sizes.pop(name))
            elif dt.is_float:
                value = float(rng.uniform(0.5, 2.0))
            elif dt.is_bool:
                value = bool(rng.integers(0, 2))
            else:
                value = int(rng.integers(1, 10))
            env[p] = value
            args.append(value)
            continue
        shape = [int(evaluate(e, env)) for e in buf.shape]
        shape[-1] *= buf.dtype.lanes if shape else 1
        dt = buf.dtype.element_of()
        if dt.is_float:
            arr = rng.uniform(-2.0, 2.0, size=shape).astype(dt.numpy_dtype())
        elif dt.is_bool:
            arr = rng.integers(0, 2, size=shape).astype(bool)
        elif dt.is_uint:
            arr = rng.integers(0, 100, size=shape).astype(dt.numpy_dtype())
        else:
            arr = rng.integers(-100, 100, size=shape).astype(dt.numpy_dtype())
        args.append(arr)
    if sizes:
        raise ArgumentError(f"--size names no symbolic size or scalar of {func.name}: {', '.join(sizes)}")
    return args


def cmd_run(args) -> int:
    """`vkir run`: run a kernel on random inputs on the device and check it against the
    interpreter."""
    import time

    from .. import api
    from ..interpreter import interpret

    func = load_func(args.file)
    sizes = {}
    for item in args.size or []:
        key, _, value = item.partition("=")
        if not value:
            raise ArgumentError(f"--size expects NAME=VALUE, got {item!r}")
        sizes[key.strip()] = value.strip()
    rng = np.random.default_rng(args.seed)
    inputs = random_inputs(func, sizes, rng)
    dev = api.device(args.device)
    kernel = api.build(func, device=dev)
    on_device = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
    reference = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
    t0 = time.perf_counter()
    kernel(*on_device)
    wall = time.perf_counter() - t0
    # the reference values: the kernel as written, in lockstep (a pipeline-annotated loop races
    # as written: its barriers come from lowering); data races are looked for in what runs;
    # subgroups have the device's size
    size = dev.info.subgroup_size
    interpret(func, *reference, check_races=False, subgroup_size=size)
    interpret(kernel.ir, *[a.copy() if isinstance(a, np.ndarray) else a for a in inputs],
              subgroup_size=size)
    print(f"{func.name} on {dev.info.name}: compiled in {kernel.compile_seconds * 1e3:.1f} ms, "
          f"ran in {wall * 1e3:.2f} ms")
    ok = True
    for p, got, want in zip(func.params, on_device, reference):
        if not isinstance(got, np.ndarray):
            continue
        name = func.buffer_map[p].name
        if got.dtype.kind == "f":
            good = np.allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            err = float(np.nanmax(diff)) if diff.size and not np.isnan(diff).all() else 0.0
        else:
            good = np.array_equal(got, want)
            err = int(np.count_nonzero(got != want))
        ok &= bool(good)
        label = "max abs err" if got.dtype.kind == "f" else "mismatches"
        print(f"  {name:<12} {str(got.dtype):<8} {str(list(got.shape)):<16} {label} {err:<10.3g} "
              f"{'ok' if good else 'MISMATCH'}")
    print("device result matches the interpreter" if ok else "device result DIFFERS from the interpreter")
    return 0 if ok else 1


def cmd_demo(args) -> int:
    """`vkir demo`: build and run the demo kernels, render the picture."""
    from . import demo, demo_picture

    size = demo_picture.parse_size(args.size) if args.size else None
    return demo.main(args.device, out=args.out, size=size)


def cmd_bench(args) -> int:
    """`vkir bench`: the benchmark suite."""
    if args.fleet:
        from vkir.benchmarks import fleet_bench

        return fleet_bench.main(args.fleet, workloads=args.workload, repeat=args.repeat,
                                json_path=args.json, quick=args.quick)
    from vkir.benchmarks import suite  # installed with the package (benchmarks/ in a checkout)

    return suite.main(device=args.device, workloads=args.workload, repeat=args.repeat,
                      json_path=args.json, quick=args.quick, compare_path=args.compare)


# -- entry point ---------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    """The argument parser of the `vkir` command."""
    ap = argparse.ArgumentParser(prog="vkir", description="Typed compute kernels to SPIR-V, run on Vulkan.")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("devices", help="list Vulkan devices, their limits and features")
    p.add_argument("--json", action="store_true", help="one JSON object per device")
    p.set_defaults(fn=cmd_devices)

    p = sub.add_parser("compile", help="print or write a kernel's IR, lowered IR, SPIR-V asm or binary")
    p.add_argument("file", metavar="FILE.py[:FUNC]")
    p.add_argument("--emit", choices=("ir", "lowered", "asm", "spv"), default="asm")
    p.add_argument("-o", "--output", metavar="OUT")
    p.add_argument("--target", choices=("device", "vulkan1.1", "vulkan1.2", "vulkan1.3", "lavapipe"),
                   default="device",
                   help="codegen target (default: the selected device's, lavapipe's without one); "
                        "the named ones need no device")
    p.add_argument("--device", default=None, help="device selector for --target device")
    p.add_argument("--print-after", action="append", metavar="PASS|all",
                   help="print the IR after this pass (repeatable; 'all' for every pass), before "
                        "the output")
    p.add_argument("--time-passes", action="store_true",
                   help="print the milliseconds of every pass, before the output")
    p.set_defaults(fn=cmd_compile)

    p = sub.add_parser("run", help="run a kernel on random inputs and compare with the interpreter")
    p.add_argument("file", metavar="FILE.py[:FUNC]")
    p.add_argument("--size", action="append", metavar="NAME=VALUE",
                   help="a symbolic size or scalar argument (default sizes 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None)
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("demo", help="build and check example kernels on the default device, "
                                    "render a picture and write it as PNG")
    p.add_argument("--device", default=None)
    p.add_argument("--out", metavar="DIR", default=None,
                   help="folder for scene.png (default: the demo folder of vkir's cache root)")
    p.add_argument("--size", metavar="WxH", default=None, help="picture size (default 960x540)")
    p.set_defaults(fn=cmd_demo)

    from vkir.benchmarks.suite import WORKLOADS

    p = sub.add_parser("bench", help="benchmark vkir against GLSL and numpy")
    p.add_argument("--device", default=None)
    p.add_argument("--workload", action="append", metavar="NAME",
                   help=f"{', '.join(WORKLOADS)} (repeatable; default all)")
    p.add_argument("--repeat", type=int, default=None, help="runs per measurement")
    p.add_argument("--json", metavar="FILE", help="write one JSON object per measurement")
    p.add_argument("--compare", metavar="BASELINE.json", default=None,
                   help="flag vkir rows over 1.25x their cost (CPU seconds per call) in a "
                        "baseline written by --json; exit status 1 when one regressed")
    p.add_argument("--quick", action="store_true", help="small sizes and few repeats (smoke run)")
    p.add_argument("--fleet", metavar="ADDRESS", default=None,
                   help="run on every device of a Ray fleet (a cluster address with `vkir fleet "
                        "serve` actors, or local:SEL,SEL); one table per kind of device")
    p.set_defaults(fn=cmd_bench)

    from . import caches
    from . import doctor
    from . import golden
    from . import validate

    from ..fleet import serving

    serving.add_command(sub)
    validate.add_commands(sub)
    doctor.add_command(sub)
    caches.add_command(sub)
    golden.add_command(sub)
    return ap


def main(argv=None) -> int:
    """Run the `vkir` command with `argv`; return the exit status."""
    args = parser().parse_args(argv)
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the note below says it once
            status = args.fn(args)
    except VkirError as exc:
        print(f"vkir: error: {exc}", file=sys.stderr)
        status = 2
    _print_driver_note()
    return _check_validation(status)


def _print_driver_note() -> None:
    """Say which drivers were used when the loader found none by itself (never silent)."""
    runtime = sys.modules.get("vkir.runtime")
    inst = runtime.instance._state.get("instance") if runtime is not None else None
    if inst is not None and inst.note:
        print(f"vkir: note: {inst.note}", file=sys.stderr)


def _check_validation(status: int) -> int:
    runtime = sys.modules.get("vkir.runtime")
    if runtime is None or not runtime.validation_requested() or "instance" not in runtime.instance._state:
        return status
    messages = runtime.validation_messages()
    for m in messages:
        print(f"vkir: validation: {m}", file=sys.stderr)
    return status if not messages else (status or 3)


if __name__ == "__main__":
    sys.exit(main())
