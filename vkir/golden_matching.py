"""The matching modes of golden-image tests beyond per-pixel tolerances, and fitting tolerances.

`vkir.golden_images.compare_images` counts the pixels that differ beyond `max_diff`; this module
adds what renderers' test suites use when that is too blunt:

- edges: `edge_mask(golden)` marks the golden's edge pixels (Sobel gradient magnitude above zero
  in any channel). Rasterizers and samplers of different drivers disagree mostly there (a
  silhouette pixel covered on one driver, not on another), so `edges=(max_diff, max_fraction)`
  lets such pixels differ by up to max_diff, within a budget counted over the golden's edge
  pixels rather than over the whole picture;
- SSIM: `ssim_score` is scikit-image's `structural_similarity` (mean over the picture, every
  channel), which compares local structure rather than values;
- FLIP: `flip_score` is NVIDIA's FLIP perceptual difference (the `flip-evaluator` package), the
  mean of its per-pixel error map in [0, 1].

Both packages come with `vkir[test]` and are imported only when a comparison asks for them.
`fit_tolerances` measures a set of approved images against a golden and proposes the tightest
tolerances of every mode that pass them all (`vkir golden fit`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import ArgumentError
from .golden_files import as_image, difference

__all__ = ["edge_mask", "ssim_score", "flip_score", "data_range", "check_edges", "Fit",
           "fit_tolerances"]

_SOBEL = np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]], np.float64)


def edge_mask(golden: np.ndarray) -> np.ndarray:
    """(h, w) bool: the pixels of an (h, w, c) image whose Sobel gradient magnitude is above zero
    in any channel (borders repeat the outermost pixels, so a flat border is no edge)."""
    g = as_image(golden, "golden").astype(np.float64)
    g = np.where(np.isfinite(g), g, 0.0)
    h, w = g.shape[:2]
    p = np.pad(g, ((1, 1), (1, 1), (0, 0)), mode="edge")
    gx = np.zeros_like(g)
    gy = np.zeros_like(g)
    for dy in range(3):
        for dx in range(3):
            window = p[dy:dy + h, dx:dx + w]
            gx += _SOBEL[dy, dx] * window
            gy += _SOBEL[dx, dy] * window
    return (np.hypot(gx, gy) > 0).any(axis=2)


def check_edges(beyond: np.ndarray, worst: np.ndarray, edges_mask: np.ndarray, edges) -> tuple:
    """Split the pixels beyond the base tolerance by `edges=(max_diff, max_fraction)`: returns
    (pixels that stay differing, edge pixels tolerated, the edge budget in pixels). A pixel is
    tolerated when it lies on an edge of the golden and its largest channel difference `worst`
    is at most max_diff."""
    edge_diff, edge_fraction = _edges_option(edges)
    tolerated = beyond & edges_mask & (worst <= edge_diff)
    budget = edge_fraction * int(edges_mask.sum())
    return beyond & ~tolerated, tolerated, budget


def _edges_option(edges) -> tuple[float, float]:
    try:
        edge_diff, edge_fraction = (float(v) for v in edges)
    except (TypeError, ValueError):
        raise ArgumentError(f"edges is (max_diff, max_fraction), got {edges!r}") from None
    if not edge_diff >= 0 or not 0.0 <= edge_fraction <= 1.0:
        raise ArgumentError(f"edges=(max_diff, max_fraction) needs max_diff >= 0 and "
                            f"max_fraction in [0, 1], got {edges!r}")
    return edge_diff, edge_fraction


def data_range(golden: np.ndarray) -> float:
    """The value range SSIM and FLIP normalize by: the dtype's for integer images (255 for uint8),
    1.0 for float images (taken as values in [0, 1])."""
    if golden.dtype.kind in "ui":
        info = np.iinfo(golden.dtype)
        return float(info.max) - float(min(info.min, 0))
    return 1.0


def _unit(image: np.ndarray) -> np.ndarray:
    """The image as float32 in [0, 1] (integers over their dtype's range; floats clipped)."""
    a = image.astype(np.float64)
    if image.dtype.kind in "ui":
        a = (a - float(min(np.iinfo(image.dtype).min, 0))) / data_range(image)
    return np.clip(np.nan_to_num(a, nan=0.0), 0.0, 1.0).astype(np.float32)


def ssim_score(actual: np.ndarray, golden: np.ndarray) -> float:
    """The mean structural similarity of two (h, w, c) images (scikit-image's
    `structural_similarity`, every channel, the dtype's data range): 1.0 for equal images."""
    try:
        from skimage.metrics import structural_similarity
    except ImportError:
        raise ArgumentError("ssim= needs scikit-image: pip install 'vkir[test]'") from None
    actual, golden = as_image(actual, "actual"), as_image(golden, "golden")
    h, w = golden.shape[:2]
    if min(h, w) < 3:
        raise ArgumentError(f"ssim= needs pictures of at least 3x3 pixels, got {h}x{w}")
    win = min(7, min(h, w) - (1 - min(h, w) % 2))  # odd, at most the picture's side
    return float(structural_similarity(_unit(actual), _unit(golden), data_range=1.0,
                                       channel_axis=2, win_size=win))


def _rgb(image: np.ndarray) -> np.ndarray:
    """An (h, w, c) image in [0, 1] as (h, w, 3) RGB for FLIP: gray repeated, alpha dropped."""
    u = _unit(image)
    if u.shape[2] < 3:
        u = np.repeat(u[:, :, :1], 3, axis=2)
    return np.ascontiguousarray(u[:, :, :3])


def flip_score(actual: np.ndarray, golden: np.ndarray) -> float:
    """The mean FLIP error (NVIDIA's perceptual difference, `flip-evaluator`, low dynamic range)
    of `actual` against `golden`: 0.0 for equal images, at most 1.0. Color channels only; gray
    images are compared as gray RGB."""
    try:
        import flip_evaluator
    except ImportError:
        raise ArgumentError("flip= needs flip-evaluator: pip install 'vkir[test]'") from None
    actual, golden = as_image(actual, "actual"), as_image(golden, "golden")
    _, mean, _ = flip_evaluator.evaluate(_rgb(golden), _rgb(actual), "LDR", inputsRGB=True,
                                         applyMagma=False)
    return float(mean)


# the max_diff steps fit_tolerances proposes a budget of differing pixels for
_LADDER = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)


@dataclass(frozen=True)
class Fit:
    """The tightest tolerances that pass every image given to fit_tolerances: `max_diff` alone
    (max_fraction 0); `budgets`, (max_diff, max_fraction) pairs; `mean`; `edges` as
    (max_diff off the edges, (max_diff, max_fraction) on them); `ssim` (the lowest score) and
    `flip` (the highest), None where the package is missing. `lines()` pairs the mean bound with
    the max_diff that lets every pixel through; SSIM and FLIP, given alone, decide alone."""

    images: int
    max_diff: float
    budgets: tuple
    mean: float
    edges: tuple
    ssim: float | None
    flip: float | None

    def lines(self) -> list[str]:
        """The proposals as keyword arguments of assert_image_matches, one option a line."""
        out = [f"max_diff={_num(self.max_diff)}"]
        out += [f"max_diff={_num(d)}, max_fraction={_up(f)}" for d, f in self.budgets]
        out.append(f"max_diff={_num(self.max_diff)}, mean={_up(self.mean)}")
        base, (edge_diff, edge_fraction) = self.edges
        out.append(f"max_diff={_num(base)}, edges=({_num(edge_diff)}, {_up(edge_fraction)})")
        if self.ssim is not None:
            out.append(f"ssim={math.floor(self.ssim * 1e4) / 1e4:g}")
        if self.flip is not None:
            out.append(f"flip={_up(self.flip)}")
        return out


def _num(v: float) -> str:
    return f"{int(v)}" if float(v).is_integer() else f"{v:.6g}"


def _up(v: float) -> str:
    """`v` rounded up to 4 significant digits, so that the printed bound still passes."""
    if v <= 0:
        return "0"
    step = 10.0 ** (math.floor(math.log10(v)) - 3)
    return f"{math.ceil(v / step - 1e-9) * step:.4g}"


def fit_tolerances(images, golden, *, perceptual: bool = True) -> Fit:
    """Measure every image of `images` against `golden` (arrays or .png/.npy paths, all of the
    golden's shape and dtype) and return the tightest tolerances of each mode that pass them
    all (see Fit). With `perceptual`, SSIM and FLIP are measured too where their packages are
    installed."""
    g = as_image(golden, "golden")
    shots = [as_image(image, f"image {i + 1}") for i, image in enumerate(images)]
    if not shots:
        raise ArgumentError("fit_tolerances needs at least one image")
    for i, a in enumerate(shots):
        if a.shape != g.shape or a.dtype != g.dtype:
            raise ArgumentError(f"image {i + 1}: shape {a.shape} {a.dtype} differs from the "
                                f"golden's {g.shape} {g.dtype}")
    worst = [difference(a, g).max(axis=2) for a in shots]
    pixels = g.shape[0] * g.shape[1]
    top = max(float(w.max()) for w in worst)
    budgets = []
    for step in _LADDER:
        if step >= top:
            break
        budgets.append((step, max(float((w > step).sum()) / pixels for w in worst)))
    mean = max(float(difference(a, g).mean(axis=(0, 1)).max()) for a in shots)
    on_edge = edge_mask(g)
    base = max((float(w[~on_edge].max()) if (~on_edge).any() else 0.0) for w in worst)
    edge_diff = max((float(w[on_edge].max()) if on_edge.any() else 0.0) for w in worst)
    edge_fraction = max(float(((w > base) & on_edge).sum()) / max(int(on_edge.sum()), 1)
                        for w in worst)
    ssim = flip = None
    if perceptual:
        ssim = _optional(lambda: min(ssim_score(a, g) for a in shots))
        flip = _optional(lambda: max(flip_score(a, g) for a in shots))
    return Fit(len(shots), top, tuple(budgets), mean, (base, (edge_diff, edge_fraction)),
               ssim, flip)


def _optional(measure):
    """measure(), or None where its package is not installed."""
    try:
        return measure()
    except ArgumentError as exc:
        if "pip install" in str(exc):
            return None
        raise
