"""Golden-image comparison: is a rendered picture close enough to the committed one?

A kernel that draws is tested by comparing its picture with a golden image. Exact equality is
too strict across drivers (lavapipe and SwiftShader round a few texels differently, math
intrinsics differ in their last bits), so the comparison has three knobs:

- `max_diff`: the tolerance per channel (one number, or one per channel), in the image's own
  units (0..255 for uint8, 0..65535 for uint16, the float values themselves);
- `max_fraction`: the budget of pixels allowed to differ beyond that tolerance (0.001 = one pixel
  in a thousand); a pixel differs when any of its channels does;
- `mean`: an optional bound on the mean absolute difference of every channel (catches a picture
  that is slightly off everywhere, within the tolerance, e.g. a brightness shift);
- `edges`, `ssim`, `flip`: an edge-tolerant budget, SSIM and FLIP bounds (vkir.golden_matching).

On failure the actual image, the golden and a visual diff are written to a folder and the
AssertionError names their paths, the statistics (pixels beyond the tolerance, the largest
and mean difference per channel, the worst pixel, SSIM and FLIP where asked) and the device, so a
CI log says what changed, where, on which driver, and where the pictures are. Images are numpy
arrays of shape (h, w, c) or (h, w), origin top-left: uint8 and single-channel uint16 ones are stored as PNG (through Pillow), others (float, other integer
types, multi-channel uint16) as .npy.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import ArgumentError
from .golden_files import as_image, difference, golden_suffix, load_image, save_image

__all__ = ["assert_image_matches", "compare_images", "as_image", "ImageComparison", "load_image",
           "save_image", "golden_suffix", "diff_picture", "difference", "channel_tolerance",
           "judge", "failure_text"]

_INTEGER_KINDS = "ui"


@dataclass(frozen=True)
class ImageComparison:
    """The statistics of one comparison: `differing` pixels beyond the tolerance out of
    `pixels`, the largest and the mean absolute difference per channel, and the worst pixel
    ((y, x) and its actual and golden values)."""

    pixels: int
    differing: int
    max_diff: tuple
    mean_diff: tuple
    worst: tuple
    worst_actual: tuple
    worst_golden: tuple
    edge_pixels: int = 0          # the golden's edge pixels (with edges=)
    edge_tolerated: int = 0       # pixels beyond max_diff that edges= let pass
    ssim: float | None = None     # with ssim=
    flip: float | None = None     # with flip=

    @property
    def fraction(self) -> float:
        """The fraction of pixels that differ beyond the tolerance."""
        return self.differing / self.pixels if self.pixels else 0.0


def channel_tolerance(max_diff, channels: int, dtype) -> np.ndarray:
    """`max_diff` as one float64 tolerance per channel (None: 0 for integer images, 1e-6 for
    float ones); a precise ArgumentError for a wrong count or a negative value."""
    if max_diff is None:
        max_diff = 0 if dtype.kind in _INTEGER_KINDS else 1e-6
    tol = np.asarray(max_diff, dtype=np.float64)
    if tol.ndim == 0:
        tol = np.full(channels, float(tol))
    if tol.shape != (channels,):
        raise ArgumentError(f"max_diff: one number or one per channel ({channels}), got "
                            f"{np.asarray(max_diff).tolist()}")
    if (tol < 0).any() or np.isnan(tol).any():
        raise ArgumentError(f"max_diff must not be negative, got {tol.tolist()}")
    return tol


def judge(a: np.ndarray, g: np.ndarray, *, max_diff=None, max_fraction: float = 0.0, mean=None,
          edges=None, ssim=None, flip=None) -> tuple[ImageComparison, list[str]]:
    """Compare two checked images of equal shape and dtype with every requested mode: the
    statistics, and one sentence per bound they break (none: they match)."""
    from . import golden_matching as matching

    result = compare_images(a, g, max_diff=max_diff)
    tol = channel_tolerance(max_diff, a.shape[2], a.dtype)
    problems = []
    differing = result.differing
    if edges is not None and result.differing:
        d = difference(a, g)
        mask = matching.edge_mask(g)
        rest, tolerated, budget = matching.check_edges((d > tol).any(axis=2), d.max(axis=2),
                                                       mask, edges)
        differing = int(rest.sum())
        result = dataclasses.replace(result, differing=differing, edge_pixels=int(mask.sum()),
                                     edge_tolerated=int(tolerated.sum()))
        if result.edge_tolerated > budget:
            problems.append(f"{result.edge_tolerated} of the golden's {result.edge_pixels} edge "
                            f"pixels differ (within edges max_diff={edges[0]:g}); the edge "
                            f"budget is max_fraction={edges[1]:g} ({int(budget)} pixels)")
    if differing > max_fraction * result.pixels:
        where = " off the golden's edges" if edges is not None else ""
        problems.append(f"{differing} of {result.pixels} pixels "
                        f"({differing / result.pixels:.4%}) differ by more than "
                        f"max_diff={_fmt(tol)}{where}; the budget is "
                        f"max_fraction={max_fraction:g} ({int(max_fraction * result.pixels)} "
                        f"pixels)")
    if mean is not None and max(result.mean_diff, default=0.0) > float(mean):
        problems.append(f"the mean absolute difference per channel {_fmt(result.mean_diff)} "
                        f"exceeds mean={float(mean):g}")
    if ssim is not None:
        result = dataclasses.replace(result, ssim=matching.ssim_score(a, g))
        if result.ssim < float(ssim):
            problems.append(f"SSIM {result.ssim:.5f} is below ssim={float(ssim):g}")
    if flip is not None:
        result = dataclasses.replace(result, flip=matching.flip_score(a, g))
        if result.flip > float(flip):
            problems.append(f"the mean FLIP error {result.flip:.5f} exceeds flip={float(flip):g}")
    return result, problems


def failure_text(a: np.ndarray, result: ImageComparison, problems: list[str], paths,
                 device=None) -> str:
    """The message of a failed comparison: what broke which bound, the statistics, the device
    and the paths of the actual, golden and diff images."""
    y, x = result.worst
    scores = "".join(f"  {k}: {v:.5f}\n" for k, v in (("SSIM", result.ssim),
                                                      ("FLIP", result.flip)) if v is not None)
    return (f"image differs from the golden ({a.shape[0]}x{a.shape[1]}, {a.shape[2]} "
            f"channel(s), {a.dtype}): " + "; ".join(problems) + "\n"
            f"  largest difference per channel: {_fmt(result.max_diff)}\n"
            f"  mean difference per channel:    {_fmt(result.mean_diff)}\n"
            f"  worst pixel (y={y}, x={x}): actual {result.worst_actual}, golden "
            f"{result.worst_golden}\n" + scores +
            f"  device: {device if device is not None else 'none opened by this process'}\n"
            f"  actual: {paths[0]}\n  golden: {paths[1]}\n  diff:   {paths[2]}")


def assert_image_matches(actual, golden, *, max_diff=None, max_fraction: float = 0.0,
                         mean=None, edges=None, ssim=None, flip=None, out_dir=None,
                         name: str | None = None, device=None) -> ImageComparison:
    """Assert that image `actual` matches `golden` (arrays of shape (h, w, c) or (h, w), uint8,
    uint16, other integers or floats; a DeviceImage or DeviceArray; or `golden` as a .png/.npy
    path).

    A pixel differs when any channel's absolute difference exceeds `max_diff` (one number or one
    per channel; default 0 for integer images, 1e-6 for float ones); at most `max_fraction` of the
    pixels may differ; with `mean`, every channel's mean absolute difference must be at most
    `mean`. With `edges=(edge_diff, edge_fraction)`, a differing pixel that lies on an edge of the
    golden (Sobel magnitude above zero) and differs by at most edge_diff does not count against
    max_fraction; at most edge_fraction of the golden's edge pixels may be such pixels. With
    `ssim`, the structural similarity (scikit-image) must be at least `ssim`; with `flip`, the
    mean FLIP error (flip-evaluator) at most `flip` (vkir.golden_matching). Shapes and dtypes
    must be equal (an AssertionError names both). On failure the actual image, the golden and a
    diff (a PNG picture for integer images, the float differences as .npy for float ones) are
    written to `out_dir` (default: a new temporary folder) as `<name>.actual.png`,
    `<name>.golden.png`, `<name>.diff.png` (`name`: the golden file's stem, else "image"), and
    the AssertionError names them with the statistics and the device (`device`: a text, e.g. a
    vkir.golden_baselines.DeviceLabel; default: the device this process uses, where it has
    created its Vulkan instance). Returns the ImageComparison when the images match."""
    if name is None:
        name = Path(golden).stem if isinstance(golden, (str, Path)) else "image"
    a, g = as_image(actual, "actual"), as_image(golden, "golden")
    _check_options(max_fraction, mean, ssim, flip)
    try:
        _check_alike(a, g)
    except _Mismatch as exc:
        paths = _write_failure(out_dir, name, a, None, None)
        raise AssertionError(f"{exc}; actual image written to {paths[0]}; device: "
                             f"{_device(device)}") from None
    result, problems = judge(a, g, max_diff=max_diff, max_fraction=max_fraction, mean=mean,
                             edges=edges, ssim=ssim, flip=flip)
    if not problems:
        return result
    paths = _write_failure(out_dir, name, a, g, channel_tolerance(max_diff, a.shape[2], a.dtype))
    raise AssertionError(failure_text(a, result, problems, paths, _device(device)))


def _device(device):
    if device is not None:
        return device
    from .golden_baselines import opened_device

    return opened_device()
