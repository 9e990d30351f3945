"""Where a test's approved images live, which device a picture came from, and which approved
images runs still match.

A test's golden folder (`<test file's folder>/golden/`) holds, for the test's stem:

- `<stem>.png` (or .npy): the generic golden, which `--vkir-bless` writes;
- `<stem>@<device-key>.png`: the baseline of one device, which `--vkir-bless-device` writes and
  which is tried before the generic golden on that device;
- `<stem>/`: a folder of further approved images (any file name, .png or .npy); a picture that
  matches any one of them passes. An empty folder changes nothing.

The device key is the device's fingerprint in short: the driver and its version
(`llvmpipe-22.3`, `llvmpipe-25.0`, `swiftshader`, `nvidia-580`); see `device_key`.

Runs are recorded so that approved images nobody matches any more can be found: every comparison
writes `<golden folder>/.cache/runs/<stem>@<device-key>.json` (the test, the device, the time and
the approved image that matched, or null), replacing the previous record of that test on that
device. `.cache/` ignores itself in git. `stale_images(folder)` lists the approved images that no
record names (`vkir golden stale DIR`).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import ArgumentError, DeviceError

__all__ = ["DeviceLabel", "device_key", "device_label", "current_device", "opened_device",
           "approved_images", "baseline_path", "record_run", "read_runs", "stale_images",
           "IMAGE_SUFFIXES", "RUNS"]

IMAGE_SUFFIXES = (".png", ".npy")
RUNS = Path(".cache") / "runs"
# the images a failing comparison writes beside itself: never approved images
_OUTPUT = re.compile(r"\.(actual|golden|diff)$")


@dataclass(frozen=True)
class DeviceLabel:
    """A device as golden tests name it: `key` (baselines, records) and `description` (device
    name, driver and driver version, for headers and failure messages)."""

    key: str
    description: str

    def __str__(self) -> str:
        return f"{self.description} [{self.key}]"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.") or "device"


def device_key(info) -> str:
    """The short fingerprint of a DeviceInfo: Mesa drivers as `<driver>-<major>.<minor>`
    (`llvmpipe-22.3`), SwiftShader as `swiftshader`, NVIDIA as `nvidia-<driver major>`, other
    devices as `<vendor or name>-<driver version>`."""
    from .autotuning import VENDORS

    name, driver = str(info.name), str(getattr(info, "driver", ""))
    text = f"{name} {driver}".lower()
    if "swiftshader" in text:
        return "swiftshader"
    mesa = re.search(r"mesa (\d+)\.(\d+)", driver.lower())
    if mesa:
        first = _slug(driver.split()[0]) if driver.split() else _slug(name)
        return f"{first}-{mesa.group(1)}.{mesa.group(2)}"
    version = int(getattr(info, "driver_version", 0))
    vendor = VENDORS.get(int(getattr(info, "vendor_id", 0)))
    if vendor == "nvidia":
        return f"nvidia-{version >> 22}"
    return f"{vendor or _slug(name)}-{version >> 22}.{(version >> 12) & 0x3FF}"


def device_label(info) -> DeviceLabel:
    """The DeviceLabel of a DeviceInfo: its key, and "name, driver (driverVersion 0x...)"."""
    return DeviceLabel(device_key(info), f"{info.name}, driver {info.driver} "
                                         f"(driverVersion {int(info.driver_version):#x})")


NO_DEVICE_KEY = "no-device"


def current_device(selector=None) -> DeviceLabel:
    """The device tests run on (`selector`, else $VKIR_DEVICE, else the best one) without opening
    it; where there is none, a label with key "no-device" that says why."""
    try:
        from . import runtime

        return device_label(runtime.select(selector))
    except DeviceError as exc:
        return DeviceLabel(NO_DEVICE_KEY, f"no Vulkan device ({exc})")


def opened_device() -> DeviceLabel | None:
    """The label of the device this process selects, where it has already loaded vkir's runtime
    and created its Vulkan instance (so that naming it creates nothing), else None."""
    runtime = sys.modules.get("vkir.runtime")
    if runtime is None or "instance" not in runtime.instance._state:
        return None
    return current_device()


def baseline_path(folder, stem: str, suffix: str, key: str | None = None) -> Path:
    """The generic golden `<folder>/<stem><suffix>`, or with `key` that device's baseline
    `<folder>/<stem>@<key><suffix>`."""
    return Path(folder) / (stem + (f"@{key}" if key else "") + suffix)


def approved_images(folder, stem: str, suffix: str, key: str | None = None) -> list[Path]:
    """The approved images of test `stem`, in the order they are tried: this device's baseline,
    the generic golden, then the images of `<folder>/<stem>/` by name; only those that exist."""
    folder = Path(folder)
    out = [baseline_path(folder, stem, suffix, key)] if key else []
    out.append(baseline_path(folder, stem, suffix))
    out = [p for p in out if p.is_file()]
    extra = folder / stem
    if extra.is_dir():
        out += sorted(p for p in extra.iterdir()
                      if p.is_file() and p.suffix in IMAGE_SUFFIXES and not _OUTPUT.search(p.stem))
    return out


def record_run(folder, stem: str, key: str, test: str, matched: Path | None) -> Path:
    """Record that test `test` compared its picture `stem` on device `key` and which approved
    image matched (None: none did); replaces that test's previous record for that device."""
    runs = Path(folder) / RUNS
    runs.mkdir(parents=True, exist_ok=True)
    ignore = runs.parent / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# written by vkir's golden-image tests\n*\n")
    record = {"test": test, "stem": stem, "device": key, "time": round(time.time(), 3),
              "matched": None if matched is None else Path(matched).relative_to(folder).as_posix()}
    path = runs / f"{stem}@{key}.json"
    fd, tmp = tempfile.mkstemp(dir=runs, prefix=".", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(record, f)
    os.replace(tmp, path)        # concurrent sessions never see half a record
    return path


def read_runs(folder) -> list[dict]:
    """The run records of a golden folder (see record_run); unreadable ones are skipped."""
    runs = Path(folder) / RUNS
    out = []
    for path in sorted(runs.glob("*.json")) if runs.is_dir() else ():
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out


def _golden_folders(root: Path) -> list[Path]:
    if root.name == "golden" or (root / RUNS).is_dir():
        return [root]
    return sorted(p for p in root.rglob("golden") if p.is_dir() and ".cache" not in p.parts)


def _approved_in(folder: Path) -> list[Path]:
    """Every approved image of a golden folder: its image files, and those one folder down."""
    out = []
    for p in sorted(folder.iterdir()):
        if p.is_file() and p.suffix in IMAGE_SUFFIXES and not _OUTPUT.search(p.stem):
            out.append(p)
        elif p.is_dir() and not p.name.startswith("."):
            out += [q for q in sorted(p.iterdir())
                    if q.is_file() and q.suffix in IMAGE_SUFFIXES and not _OUTPUT.search(q.stem)]
    return out


def stale_images(root) -> list[Path]:
    """The approved images under `root` (a golden folder, or a tree holding `golden/` folders)
    that no recorded run matched."""
    root = Path(root)
    if not root.is_dir():
        raise ArgumentError(f"no folder {root}")
    stale = []
    for folder in _golden_folders(root):
        matched = {r.get("matched") for r in read_runs(folder)}
        stale += [p for p in _approved_in(folder)
                  if p.relative_to(folder).as_posix() not in matched]
    return stale
