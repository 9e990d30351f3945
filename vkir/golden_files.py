"""Image files and pixels for golden-image tests: reading an image whatever form it comes in
(`as_image`), loading and saving PNG and .npy files (`load_image`, `save_image`, `golden_suffix`)
and the per-channel difference of two images (`difference`).

vkir.golden_images (the comparison and its report) and vkir.golden_matching (edges, SSIM, FLIP)
both build on these; this module imports neither.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import ArgumentError

__all__ = ["as_image", "golden_suffix", "load_image", "save_image", "difference"]


def as_image(image, what: str) -> np.ndarray:
    """`image` as a numpy image of shape (h, w, c) (`what` names it in errors): an array, a device array or image with
    `.numpy()`, or a path to a .png/.npy file; (h, w) becomes (h, w, 1)."""
    if isinstance(image, (str, Path)):
        image = load_image(image)
    elif hasattr(image, "numpy") and not isinstance(image, np.ndarray):
        image = image.numpy()
    a = np.asarray(image)
    if a.dtype.kind not in "uif":
        raise ArgumentError(f"{what}: an image is an integer or float array, got dtype {a.dtype}")
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3 or a.shape[2] < 1:
        raise ArgumentError(f"{what}: an image has shape (h, w, channels) or (h, w), got shape "
                            f"{tuple(a.shape)}")
    return a


def golden_suffix(image) -> str:
    """".png" where the image can be a PNG without loss (uint8 with 1-4 channels, uint16 with one
    channel), else ".npy"."""
    a = np.asarray(image)
    channels = a.shape[2] if a.ndim == 3 else 1
    if a.dtype == np.uint8 and a.ndim in (2, 3) and 1 <= channels <= 4:
        return ".png"
    if a.dtype == np.uint16 and channels == 1 and a.ndim in (2, 3):
        return ".png"
    return ".npy"


def load_image(path) -> np.ndarray:
    """The image stored at `path`: a .npy array as saved, or a PNG as (h, w) for gray (uint8, or
    uint16 for 16-bit gray) and (h, w, c) uint8 for gray+alpha, RGB and RGBA (palette images are
    expanded to RGB or RGBA)."""
    path = Path(path)
    if not path.is_file():
        raise ArgumentError(f"no image file {path}")
    if path.suffix.lower() == ".npy":
        return np.load(path, allow_pickle=False)
    if path.suffix.lower() != ".png":
        raise ArgumentError(f"{path}: images are read from .png or .npy files")
    from PIL import Image

    with Image.open(path) as im:
        if im.mode == "P":
            im = im.convert("RGBA" if "transparency" in im.info else "RGB")
        elif im.mode not in ("L", "LA", "RGB", "RGBA", "I;16"):
            raise ArgumentError(f"{path}: PNG mode {im.mode} is not an 8-bit gray/RGB(A) or "
                                f"16-bit gray image")
        return np.array(im)


def save_image(path, image) -> Path:
    """Write `image` to `path` (.png where golden_suffix allows it, .npy for any array); creates
    the folder; returns the path."""
    path = Path(path)
    a = np.ascontiguousarray(np.asarray(image))
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".npy":
        np.save(path, a, allow_pickle=False)
        return path
    if golden_suffix(a) != ".png" or path.suffix.lower() != ".png":
        raise ArgumentError(f"{path}: a {a.dtype} image of shape {tuple(a.shape)} is stored as "
                            f".npy (PNG holds uint8 images and single-channel uint16 ones)")
    from PIL import Image

    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    Image.fromarray(a).save(path, format="PNG")
    return path


def difference(actual: np.ndarray, golden: np.ndarray) -> np.ndarray:
    """|actual - golden| per channel as float64; NaN in both (or equal infinities) is no
    difference, NaN in one only is an infinite one."""
    a, g = actual.astype(np.float64), golden.astype(np.float64)
    with np.errstate(invalid="ignore"):
        d = np.abs(a - g)
    if actual.dtype.kind == "f":
        same = (a == g) | (np.isnan(a) & np.isnan(g))
        d = np.where(same, 0.0, np.where(np.isnan(d), np.inf, d))
    return d
