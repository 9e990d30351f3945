"""The triage page of a golden-image run: `pytest --vkir-report DIR` writes `DIR/index.html`.

One static page (no server, no script) lists every image comparison of the run, failures first:
for each, the actual picture, the golden and the diff side by side, a zoom on the worst pixel
(an 11x11 crop of both pictures, enlarged, the worst pixel framed), the numbers, the device, and
the exact commands that bless the picture as the generic golden or as this device's baseline.
Pictures are PNGs beside the page (`DIR/img/`), displayed pixelated so that one pixel stays one
square; float and 16-bit pictures are shown as 8-bit (floats clipped to [0, 1]).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .golden_images import ImageComparison, diff_picture, save_image

__all__ = ["ReportEntry", "write_report", "display_image", "zoom", "STATUS_ORDER"]

# the order of the page: what needs a look first
STATUS_ORDER = ("failed", "missing", "blessed", "passed")
_ZOOM_RADIUS = 5
_ZOOM_SCALE = 12
_FRAME = (255, 0, 255)


@dataclass
class ReportEntry:
    """One comparison of the run: the test's node id and picture stem, `status` (one of
    STATUS_ORDER), the pictures (golden None where there was none), the approved image compared
    with, the statistics and the broken bounds, the options, the device and the bless
    commands."""

    test: str
    stem: str
    status: str
    actual: np.ndarray
    golden: np.ndarray | None
    golden_path: str | None
    result: ImageComparison | None
    problems: list = field(default_factory=list)
    options: dict = field(default_factory=dict)
    tolerance: np.ndarray | None = None
    device: str = ""
    bless: str = ""
    bless_device: str = ""


def display_image(image: np.ndarray) -> np.ndarray:
    """An (h, w, c) image as uint8 RGB(A) or gray for the page: uint8 as it is, other integers
    scaled from their dtype's range, floats clipped to [0, 1]; two channels become gray."""
    a = np.asarray(image)
    if a.dtype == np.uint8:
        out = a
    elif a.dtype.kind in "ui":
        info = np.iinfo(a.dtype)
        out = ((a.astype(np.float64) - info.min) / (float(info.max) - info.min) * 255).round()
    else:
        out = (np.clip(np.nan_to_num(a.astype(np.float64)), 0, 1) * 255).round()
    out = out.astype(np.uint8)
    if out.shape[2] == 2:
        out = out[:, :, :1]
    return out[:, :, 0] if out.shape[2] == 1 else out


def _rgb(image: np.ndarray) -> np.ndarray:
    a = display_image(image)
    if a.ndim == 2:
        return np.repeat(a[:, :, None], 3, axis=2)
    return a[:, :, :3].copy()


def zoom(image: np.ndarray, y: int, x: int) -> np.ndarray:
    """The 11x11 neighbourhood of pixel (y, x) (smaller at the borders) as RGB, enlarged 12
    times, with the pixel (y, x) framed in magenta."""
    rgb = _rgb(image)
    h, w = rgb.shape[:2]
    top, left = max(0, y - _ZOOM_RADIUS), max(0, x - _ZOOM_RADIUS)
    crop = rgb[top:min(h, y + _ZOOM_RADIUS + 1), left:min(w, x + _ZOOM_RADIUS + 1)]
    big = np.repeat(np.repeat(crop, _ZOOM_SCALE, axis=0), _ZOOM_SCALE, axis=1)
    y0, x0 = (y - top) * _ZOOM_SCALE, (x - left) * _ZOOM_SCALE
    y1, x1 = y0 + _ZOOM_SCALE - 1, x0 + _ZOOM_SCALE - 1
    big[y0:y1 + 1, [x0, x1]] = _FRAME
    big[[y0, y1], x0:x1 + 1] = _FRAME
    return big


def _pictures(entry: ReportEntry, folder: Path, index: int) -> list[tuple[str, str, int]]:
    """Write the entry's pictures under `folder/img`; (caption, relative path, display width)."""
    img = folder / "img"
    h, w = entry.actual.shape[:2]
    scale = max(1, min(8, 256 // max(w, 1)))
    out = []

    def put(caption, name, picture, width):
        save_image(img / f"{index}-{name}.png", picture)
        out.append((caption, f"img/{index}-{name}.png", width))

    put("actual", "actual", display_image(entry.actual), w * scale)
    if entry.golden is None or entry.golden.shape != entry.actual.shape:
        if entry.golden is not None:
            put("golden", "golden", display_image(entry.golden), entry.golden.shape[1] * scale)
        return out
    put("golden", "golden", display_image(entry.golden), w * scale)
    tol = entry.tolerance if entry.tolerance is not None else np.zeros(entry.actual.shape[2])
    put("diff", "diff", diff_picture(entry.actual, entry.golden, tol), w * scale)
    if entry.result is not None:
        y, x = entry.result.worst
        for which, picture in (("actual", entry.actual), ("golden", entry.golden)):
            z = zoom(picture, y, x)
            put(f"{which}, worst pixel (y={y}, x={x})", f"zoom-{which}", z, z.shape[1])
    return out


def _numbers(entry: ReportEntry) -> list[tuple[str, str]]:
    rows = []
    r = entry.result
    if r is not None:
        rows += [("pixels beyond max_diff", f"{r.differing} of {r.pixels} ({r.fraction:.4%})"),
                 ("largest difference per channel", _tuple(r.max_diff)),
                 ("mean difference per channel", _tuple(r.mean_diff)),
                 ("worst pixel", f"(y={r.worst[0]}, x={r.worst[1]}): actual {r.worst_actual}, "
                                 f"golden {r.worst_golden}")]
        if r.edge_pixels:
            rows.append(("edge pixels tolerated", f"{r.edge_tolerated} of {r.edge_pixels}"))
        if r.ssim is not None:
            rows.append(("SSIM", f"{r.ssim:.5f}"))
        if r.flip is not None:
            rows.append(("mean FLIP error", f"{r.flip:.5f}"))
    if entry.options:
        rows.append(("tolerances", ", ".join(f"{k}={v!r}" for k, v in entry.options.items())))
    rows += [("approved image", entry.golden_path or "none"), ("device", entry.device)]
    return rows


def _tuple(values) -> str:
    return "(" + ", ".join(f"{v:.6g}" for v in values) + ")"


_STYLE = """
body { font-family: sans-serif; margin: 16px; background: #f4f4f4; color: #222; }
section { background: #fff; border-left: 8px solid #999; margin: 0 0 16px; padding: 8px 16px; }
section.failed, section.missing { border-color: #d00; }
section.passed { border-color: #2a2; }
section.blessed { border-color: #d90; }
h2 { font-size: 16px; margin: 4px 0 8px; word-break: break-all; }
.status { text-transform: uppercase; font-weight: bold; margin-right: 8px; }
.pictures { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
figure { margin: 0; }
figcaption { font-size: 12px; color: #555; }
img { image-rendering: pixelated; border: 1px solid #ccc; background: #888; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
td { padding: 2px 12px 2px 0; vertical-align: top; }
td:first-child { color: #555; white-space: nowrap; }
pre { background: #eee; padding: 6px; font-size: 12px; white-space: pre-wrap; }
"""


def _section(entry: ReportEntry, folder: Path, index: int) -> str:
    e = html.escape
    figures = "".join(
        f'<figure><img src="{e(src)}" width="{width}" alt="{e(caption)}">'
        f"<figcaption>{e(caption)}</figcaption></figure>"
        for caption, src, width in _pictures(entry, folder, index))
    rows = "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in _numbers(entry))
    problems = "".join(f"<li>{e(p)}</li>" for p in entry.problems)
    return (f'<section class="{e(entry.status)}" id="c{index}"><h2><span class="status">'
            f"{e(entry.status)}</span>{e(entry.test)} &mdash; {e(entry.stem)}</h2>"
            + (f"<ul>{problems}</ul>" if problems else "")
            + f'<div class="pictures">{figures}</div><table>{rows}</table>'
            f"<div>bless as the generic golden:</div><pre>{e(entry.bless)}</pre>"
            f"<div>bless as this device's baseline:</div><pre>{e(entry.bless_device)}</pre>"
            "</section>")


def write_report(folder, entries, device: str = "") -> Path:
    """Write `folder/index.html` (and its pictures) for the ReportEntries of a run, failures
    first; returns the page's path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ordered = sorted(entries, key=lambda en: STATUS_ORDER.index(en.status))
    counts = {s: sum(en.status == s for en in ordered) for s in STATUS_ORDER}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no image comparisons"
    body = "".join(_section(en, folder, i) for i, en in enumerate(ordered))
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>vkir golden '
            f"images: {html.escape(summary)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>vkir golden images</h1><p>{html.escape(summary)}; device: "
            f"{html.escape(device)}</p>{body}</body></html>\n")
    path = folder / "index.html"
    path.write_text(page)
    return path
