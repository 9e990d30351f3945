"""The picture half of `vkir demo`: render the ray-marched scene (vkir.examples.raymarch) on the
device into an rgba8 image (`T.Image`; the device converts each pixel), check it against the
interpreter, and write it as a PNG.

The interpreter is the definition of what a kernel computes, so the device's picture is compared
with `vkir.interpret` of the same kernel at a small size (CHECK_SIZE: the interpreter walks every
pixel's march on the host), through the golden-image comparison that tests use
(vkir.testing.assert_image_matches: one 8-bit step per channel, a budget of 0.5 % of the pixels
for silhouette texels where a different last bit moves a ray's hit). The full picture is rendered
on the device only. It goes to `--out DIR`, by default the `demo` folder of vkir's cache root
(VKIR_CACHE_DIR, else the platform's user cache folder); when disk caches are off, a new
private temporary folder (tempfile.mkdtemp: <tmp>/vkir-demo-XXXXXXXX, mode 0700), never a fixed
name under the shared <tmp>, where another user could have made the folder or planted a link.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from .. import config
from ..examples.raymarch import render_reference_rgba8, render_scene_rgba8
from ..golden_images import compare_images, save_image

__all__ = ["render", "report", "output_folder", "parse_size", "SIZE", "CHECK_SIZE", "MAX_DIFF",
           "MAX_FRACTION"]

SIZE = (960, 540)          # width, height of the picture
CHECK_SIZE = (160, 90)     # width, height at which the device is checked against the interpreter
MAX_DIFF = 1.0 / 255       # the tolerance per channel: one 8-bit step
MAX_FRACTION = 0.005       # the budget of pixels beyond it


def output_folder(out=None) -> Path:
    """Where the picture goes: `out`, else <cache root>/demo, else a new private folder this
    call makes in <tmp> (named vkir-demo-*, not vkir: that would shadow the package for scripts
    run from there)."""
    if out is not None:
        return Path(out)
    root = config.cache_root()
    return root / "demo" if root is not None else Path(tempfile.mkdtemp(prefix="vkir-demo-"))


def parse_size(text: str) -> tuple[int, int]:
    """(width, height) from "WxH" (e.g. "640x360"), each in 8..8192."""
    from ..errors import ArgumentError

    w, sep, h = text.lower().partition("x")
    if not sep or not w.isdigit() or not h.isdigit() or not (8 <= int(w) <= 8192
                                                            and 8 <= int(h) <= 8192):
        raise ArgumentError(f"--size takes WIDTHxHEIGHT with each in 8..8192 (e.g. 640x360), "
                            f"got {text!r}")
    return int(w), int(h)


def render(device=None, out=None, size=SIZE, check_size=CHECK_SIZE) -> dict:
    """Render the scene at `size` (width, height) on `device`, check it against the interpreter
    at `check_size`, write <out>/scene.png; a dict of what happened: path, size, device,
    compile_ms, device_ms, check_size, differing (pixels beyond the tolerance), max_diff, ok."""
    import vkir

    dev = vkir.device(device)
    t0 = time.perf_counter()
    kernel = vkir.build(render_scene_rgba8, device=dev)
    compile_s = time.perf_counter() - t0

    cw, ch = check_size
    small = vkir.empty_image((ch, cw), "rgba8", device=dev)
    kernel(small)
    on_device = small.numpy()
    reference = render_reference_rgba8(ch, cw)
    stats = compare_images(on_device, reference, max_diff=round(MAX_DIFF * 255))

    w, h = size
    picture = vkir.empty_image((h, w), "rgba8", device=dev)
    kernel(picture)
    device_s = kernel.profile(picture, repeat=3).median
    path = save_image(output_folder(out) / "scene.png", picture.numpy())
    return {"path": path, "size": (w, h), "device": dev.info.name, "compile_ms": compile_s * 1e3,
            "device_ms": device_s * 1e3, "check_size": (cw, ch), "differing": stats.differing,
            "pixels": stats.pixels, "max_diff": max(stats.max_diff) / 255,
            "ok": stats.fraction <= MAX_FRACTION and bool(np.isfinite(stats.max_diff).all())}


def report(result: dict) -> str:
    """The lines `vkir demo` prints about the picture."""
    w, h = result["size"]
    cw, ch = result["check_size"]
    verdict = "matches" if result["ok"] else "DIFFERS from"
    return (f"ray-marched scene {w}x{h} on {result['device']}: compile {result['compile_ms']:.0f} "
            f"ms, device {result['device_ms']:.1f} ms\n"
            f"  at {cw}x{ch} it {verdict} vkir.interpret ({result['differing']} of "
            f"{result['pixels']} pixels beyond {MAX_DIFF * 255:g}/255, largest difference "
            f"{result['max_diff']:.3g})\n"
            f"picture: {result['path']}")
