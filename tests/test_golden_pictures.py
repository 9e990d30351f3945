"""The bar of golden-image tests: four pictures drawn by image kernels (`T.Image`, `T.Texture`):
an anti-aliased signed-distance shape, a texture rotated through a linear sampler, a separable
blur through an rgba16f intermediate image, and the ray-marched demo scene. Each test compares
its picture with its golden (tests/golden/) under tolerances measured with `vkir golden fit` on
lavapipe (Mesa 22.3 and 25.0) and SwiftShader, and checks that the same tolerances reject the
picture shifted by one pixel (right, and down), so that they are tight enough to mean something."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.examples import raymarch
from vkir.golden_baselines import device_label
from vkir.testing import assert_image_matches

H, W = 48, 64


@T.prim_func
def sdf_shape(img: T.Image((48, 64), "rgba8")):
    """A rounded box minus a disk, anti-aliased over one pixel of the signed distance."""
    for by in T.thread_binding(6, "blockIdx.y"):
        for bx in T.thread_binding(8, "blockIdx.x"):
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(8, "threadIdx.x"):
                    y = by * 8 + ty
                    x = bx * 8 + tx
                    px = T.cast(x, "float32") + 0.5 - 30.0
                    py = T.cast(y, "float32") + 0.5 - 24.0
                    qx = T.max(T.fabs(px) - 18.0, 0.0)
                    qy = T.max(T.fabs(py) - 10.0, 0.0)
                    box = T.sqrt(qx * qx + qy * qy) - 6.0
                    cx = px - 14.0
                    cy = py + 6.0
                    disk = T.sqrt(cx * cx + cy * cy) - 9.0
                    d = T.max(box, 0.0 - disk)
                    cover = T.min(T.max(0.5 - d, 0.0), 1.0)
                    ring = T.min(T.max(1.0 - T.fabs(d + 3.0), 0.0), 1.0)
                    img[y, x] = T.float32x4(0.1 + 0.8 * cover, 0.15 + 0.6 * ring,
                                            0.6 - 0.4 * cover, 1.0)


@T.prim_func
def rotate(tex: T.Texture((32, 32), "rgba8"), img: T.Image((48, 64), "rgba8")):
    """The texture turned by 30 degrees about the picture's center, sampled linearly."""
    for by in T.thread_binding(6, "blockIdx.y"):
        for bx in T.thread_binding(8, "blockIdx.x"):
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(8, "threadIdx.x"):
                    y = by * 8 + ty
                    x = bx * 8 + tx
                    px = (T.cast(x, "float32") + 0.5 - 32.0) / 40.0
                    py = (T.cast(y, "float32") + 0.5 - 24.0) / 40.0
                    u = 0.8660254 * px - 0.5 * py + 0.5
                    v = 0.5 * px + 0.8660254 * py + 0.5
                    img[y, x] = T.sample(tex, T.float32x2(u, v))


@T.prim_func
def blur_rows(src: T.Image((48, 64), "rgba8"), mid: T.Image((48, 64), "rgba16f")):
    """A 5-tap binomial blur along rows into a half-float image (edges clamped)."""
    for by in T.thread_binding(6, "blockIdx.y"):
        for bx in T.thread_binding(8, "blockIdx.x"):
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(8, "threadIdx.x"):
                    y = by * 8 + ty
                    x = bx * 8 + tx
                    acc = src[y, x] * 0.375
                    acc += (src[y, T.max(x - 1, 0)] + src[y, T.min(x + 1, 63)]) * 0.25
                    acc += (src[y, T.max(x - 2, 0)] + src[y, T.min(x + 2, 63)]) * 0.0625
                    mid[y, x] = acc


@T.prim_func
def blur_columns(mid: T.Image((48, 64), "rgba16f"), dst: T.Image((48, 64), "rgba8")):
    """The same blur along columns, from the half-float image into RGBA8."""
    for by in T.thread_binding(6, "blockIdx.y"):
        for bx in T.thread_binding(8, "blockIdx.x"):
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(8, "threadIdx.x"):
                    y = by * 8 + ty
                    x = bx * 8 + tx
                    acc = mid[y, x] * 0.375
                    acc += (mid[T.max(y - 1, 0), x] + mid[T.min(y + 1, 47), x]) * 0.25
                    acc += (mid[T.max(y - 2, 0), x] + mid[T.min(y + 2, 47), x]) * 0.0625
                    dst[y, x] = acc


def checker_texture() -> np.ndarray:
    """32x32 RGBA8: 4x4-texel checks with a color ramp, the texture `rotate` turns."""
    y, x = np.mgrid[0:32, 0:32]
    light = ((x // 4 + y // 4) % 2).astype(np.float64)
    rgba = np.stack([40 + 180 * light, 30 + 6 * x, 200 - 5 * y, np.full_like(x, 255)], axis=-1)
    return rgba.astype(np.uint8)


def blur_source() -> np.ndarray:
    """48x64 RGBA8 with hard edges: stripes, a square and a diagonal, for the blur to soften."""
    y, x = np.mgrid[0:H, 0:W]
    img = np.zeros((H, W, 4), np.uint8)
    img[..., 0] = np.where((x // 6) % 2 == 0, 230, 20)
    img[..., 1] = np.where((abs(x - 40) < 10) & (abs(y - 24) < 10), 250, 10)
    img[..., 2] = np.where(x > y, 200, 40)
    img[..., 3] = 255
    return img


def draw_sdf(device) -> np.ndarray:
    img = np.zeros((H, W, 4), np.uint8)
    vkir.build(sdf_shape, device=device)(img)
    return img


def draw_rotation(device) -> np.ndarray:
    img = np.zeros((H, W, 4), np.uint8)
    sampler = vkir.Sampler(filter="linear", address="repeat")
    vkir.build(rotate, device=device)(checker_texture(), img, samplers={"tex": sampler})
    return img


def draw_blur(device) -> np.ndarray:
    mid = vkir.empty_image((H, W), "rgba16f", device=device)
    out = np.zeros((H, W, 4), np.uint8)
    vkir.build(blur_rows, device=device)(blur_source(), mid)
    vkir.build(blur_columns, device=device)(mid, out)
    return out


def draw_scene(device) -> np.ndarray:
    out = np.zeros((54, 96, 4), np.float32)
    vkir.build(raymarch.render_scene, device=device)(out)
    return raymarch.to_rgba8(out)


# picture -> (how to draw it, the tolerances that pass on every driver and fail a shift);
# measured with `vkir golden fit` (docs/golden-images.md gives the numbers)
PICTURES = {
    "sdf": (draw_sdf, dict(max_diff=2, edges=(32, 0.02))),
    "rotation": (draw_rotation, dict(max_diff=4, max_fraction=0.01, ssim=0.98)),
    "blur": (draw_blur, dict(max_diff=2, max_fraction=0.01, flip=0.02)),
    "scene": (draw_scene, dict(max_diff=2, max_fraction=0.005, edges=(64, 0.05))),
}


@pytest.mark.parametrize("picture", sorted(PICTURES))
def test_picture(device, vkir_golden, picture):
    """The picture matches its golden; shifted by one pixel it fails the same tolerances."""
    draw, tolerances = PICTURES[picture]
    img = draw(device)
    assert img.shape[2] == 4 and img.dtype == np.uint8 and img.std() > 10   # not blank
    vkir_golden(img, **tolerances)
    for axis in (0, 1):
        with pytest.raises(AssertionError, match="image differs from the golden") as info:
            assert_image_matches(np.roll(img, 1, axis=axis), img, **tolerances)
        # the failure names the device and its driver
        assert f"device: {device_label(device.info)}" in str(info.value)


def test_the_documented_image_kernel_test_passes(device, pytester):
    """docs/golden-images.md's image-kernel test, as written, against the rotation's golden (the
    same picture), in a pytest session of its own on this run's driver, validation on."""
    import re
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parent
    page = (root.parent / "docs" / "golden-images.md").read_text()
    [example] = [b for b in re.findall(r"```python\n(.*?)```", page, re.S)
                 if b.startswith("# test_rotated_texture.py")]
    pytester.makepyfile(test_rotated_texture=example)
    (pytester.path / "golden").mkdir()
    shutil.copy(root / "golden" / "test_picture_rotation.png",
                pytester.path / "golden" / "test_rotated_texture.png")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vkir-validation", "-rA")
    result.assert_outcomes(passed=1)
