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



def compare_images(actual, golden, *, max_diff=None) -> ImageComparison:
    """Compare two images of the same shape and dtype (see assert_image_matches for the
    arguments); the statistics, without judging them."""
    a, g = as_image(actual, "actual"), as_image(golden, "golden")
    _check_alike(a, g)
    tol = channel_tolerance(max_diff, a.shape[2], a.dtype)
    d = difference(a, g)
    beyond = (d > tol).any(axis=2)
    h, w, c = a.shape
    if d.size == 0:
        return ImageComparison(0, 0, (0.0,) * c, (0.0,) * c, (0, 0), (), ())
    with np.errstate(invalid="ignore"):
        score = np.nan_to_num((d - tol).max(axis=2), nan=0.0)   # how far beyond its tolerance
    y, x = np.unravel_index(int(np.argmax(score)), (h, w))
    return ImageComparison(
        pixels=h * w, differing=int(beyond.sum()),
        max_diff=tuple(float(v) for v in d.max(axis=(0, 1))),
        mean_diff=tuple(float(v) for v in d.mean(axis=(0, 1))),
        worst=(int(y), int(x)), worst_actual=tuple(a[y, x].tolist()),
        worst_golden=tuple(g[y, x].tolist()))


def _check_alike(a: np.ndarray, g: np.ndarray) -> None:
    if a.shape != g.shape:
        raise _Mismatch(f"image shape {_shape(a)} differs from the golden's {_shape(g)}")
    if a.dtype != g.dtype:
        raise _Mismatch(f"image dtype {a.dtype} differs from the golden's {g.dtype}")


class _Mismatch(AssertionError):
    """Shape or dtype differ (no pixel statistics)."""


def _shape(a: np.ndarray) -> str:
    h, w, c = a.shape
    return f"(h={h}, w={w}, channels={c})"


def diff_picture(actual: np.ndarray, golden: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """A uint8 RGB picture of the difference between two (h, w, c) integer images: the golden as
    dim gray where the pixels agree, yellow where they differ within the tolerance, red (brighter
    for a larger difference) where they differ beyond it."""
    d = difference(actual, golden)
    gray = golden.astype(np.float64)
    if gray.shape[2] >= 3:
        gray = gray[:, :, :3].mean(axis=2)
    else:
        gray = gray[:, :, 0]
    top = float(np.iinfo(golden.dtype).max) if golden.dtype.kind in _INTEGER_KINDS else 1.0
    base = (gray / top * 80).clip(0, 80)
    out = np.repeat(base[:, :, None], 3, axis=2)
    worst = d.max(axis=2)
    beyond = (d > tol).any(axis=2)
    within = (worst > 0) & ~beyond
    out[within] = (200, 200, 0)
    if beyond.any():
        level = worst[beyond] / max(float(worst[beyond].max()), 1e-300)
        out[beyond, 0] = 128 + 127 * level
        out[beyond, 1] = 0
        out[beyond, 2] = 0
    return out.round().astype(np.uint8)


def _write_failure(out_dir, name: str, a: np.ndarray, g: np.ndarray | None, tol) -> list[Path]:
    """Write actual, golden and diff images for a failed comparison; their paths."""
    folder = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="vkir-image-"))
    folder.mkdir(parents=True, exist_ok=True)
    squeeze = (lambda x: x[:, :, 0] if x.shape[2] == 1 else x)  # noqa: E731
    paths = [save_image(folder / f"{name}.actual{golden_suffix(a)}", squeeze(a))]
    if g is not None:
        paths.append(save_image(folder / f"{name}.golden{golden_suffix(g)}", squeeze(g)))
        if a.dtype.kind in _INTEGER_KINDS:
            paths.append(save_image(folder / f"{name}.diff.png", diff_picture(a, g, tol)))
        else:
            paths.append(save_image(folder / f"{name}.diff.npy",
                                    difference(a, g).astype(np.float32)))
    return paths


def _fmt(values) -> str:
    return "(" + ", ".join(f"{v:.6g}" for v in values) + ")"


def _check_options(max_fraction, mean, ssim, flip) -> None:
    if not 0.0 <= float(max_fraction) <= 1.0:
        raise ArgumentError(f"max_fraction is a fraction of the pixels in [0, 1], got "
                            f"{max_fraction}")
    if mean is not None and not float(mean) >= 0:
        raise ArgumentError(f"mean must be a non-negative bound, got {mean}")
    if ssim is not None and not -1.0 <= float(ssim) <= 1.0:
        raise ArgumentError(f"ssim is a similarity in [-1, 1] (1: equal), got {ssim}")
    if flip is not None and not 0.0 <= float(flip) <= 1.0:
        raise ArgumentError(f"flip bounds the mean FLIP error, in [0, 1], got {flip}")


def judge(a: np.ndarray, g: np.ndarray, *, max_diff=None, max_fraction: float = 0.0, mean=None,
          edges=None, ssim=None, flip=None) -> tuple[ImageComparison, list[str]]:
    """Compare two checked images of equal shape and dtype with every requested mode: the
    statistics, and one sentence per bound they break (none: they match)."""
    from . import golden_matching as matching

    if max_diff is None and (ssim is not None or flip is not None):
        max_diff = np.inf       # SSIM or FLIP alone decides
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
    mean FLIP error (flip-evaluator) at most `flip` (vkir.golden_matching); given without
    `max_diff`, these two decide alone (no per-pixel tolerance applies). Shapes and dtypes
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
