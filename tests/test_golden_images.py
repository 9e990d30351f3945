"""vkir.testing.assert_image_matches (vkir.golden_images): per-channel tolerance, the budget of
differing pixels, the mean bound, precise shape/dtype errors, and the actual/golden/diff images it
writes and names on failure (PNG for integer images, .npy for float ones); PNG round trips."""

import re

import numpy as np
import pytest

import vkir
from vkir.golden_images import compare_images, golden_suffix, load_image, save_image
from vkir.testing import assert_image_matches


def _picture(h=16, w=24, c=4, dtype=np.uint8):
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 10, y * 15, (x + y) * 5, np.full_like(x, 255)][:c], axis=-1)
    return img.astype(dtype)


def test_equal_images_match_and_report_statistics():
    img = _picture()
    result = assert_image_matches(img, img.copy())
    assert result.differing == 0 and result.pixels == 16 * 24
    assert result.max_diff == (0.0,) * 4 and result.mean_diff == (0.0,) * 4


def test_per_channel_tolerance():
    img = _picture()
    other = img.copy()
    other[..., 0] += 2          # red off by 2 everywhere
    with pytest.raises(AssertionError, match=r"384 of 384 pixels \(100.0000%\) differ"):
        assert_image_matches(other, img, out_dir=None)
    assert_image_matches(other, img, max_diff=2)
    assert_image_matches(other, img, max_diff=(2, 0, 0, 0))       # per channel
    with pytest.raises(AssertionError, match="differ by more than max_diff"):
        assert_image_matches(other, img, max_diff=(1, 5, 5, 5))
    with pytest.raises(vkir.ArgumentError, match=r"one per channel \(4\)"):
        assert_image_matches(other, img, max_diff=(2, 0))


def test_budget_of_differing_pixels(tmp_path):
    img = _picture()
    other = img.copy()
    other[3, 5] = (0, 0, 0, 0)
    other[7, 1, 2] ^= 0xFF
    # 2 of 384 pixels differ: within a budget of 1%, not within 0.5 %
    result = assert_image_matches(other, img, max_fraction=0.01)
    assert result.differing == 2 and result.fraction == pytest.approx(2 / 384)
    with pytest.raises(AssertionError) as info:
        assert_image_matches(other, img, max_fraction=0.004, out_dir=tmp_path, name="pic")
    text = str(info.value)
    assert "2 of 384 pixels (0.5208%) differ by more than max_diff=(0, 0, 0, 0)" in text
    assert "budget is max_fraction=0.004 (1 pixels)" in text
    # the worst pixel is the one furthest beyond its tolerance
    assert f"worst pixel (y=3, x=5): actual (0, 0, 0, 0), golden {tuple(img[3, 5].tolist())}" in text
    # the three pictures exist where the message says, and they are what they claim to be
    paths = dict(re.findall(r"(actual|golden|diff): +(\S+)", text))
    assert paths == {k: str(tmp_path / f"pic.{k}.png") for k in ("actual", "golden", "diff")}
    np.testing.assert_array_equal(load_image(paths["actual"]), other)
    np.testing.assert_array_equal(load_image(paths["golden"]), img)
    diff = load_image(paths["diff"])
    assert diff.shape == (16, 24, 3) and diff.dtype == np.uint8
    assert tuple(diff[3, 5]) == (255, 0, 0)             # the largest difference: bright red
    assert diff[7, 1, 0] >= 128 and diff[7, 1, 1] == 0  # beyond the tolerance: red
    assert diff[0, 0, 0] == diff[0, 0, 1] == diff[0, 0, 2] < 128   # equal: dim gray


def test_diff_marks_differences_within_tolerance_yellow(tmp_path):
    img = _picture(c=3)
    other = img.copy()
    other[0, 0, 1] += 1            # within max_diff=1
    other[5, 5] = 255 - other[5, 5]
    with pytest.raises(AssertionError):
        assert_image_matches(other, img, max_diff=1, out_dir=tmp_path)
    diff = load_image(tmp_path / "image.diff.png")
    assert tuple(diff[0, 0]) == (200, 200, 0) and tuple(diff[5, 5]) == (255, 0, 0)


def test_mean_bound_catches_a_shift_within_the_tolerance():
    img = _picture()
    brighter = img.copy()
    brighter[..., :3] += 3
    assert_image_matches(brighter, img, max_diff=3)
    with pytest.raises(AssertionError, match=r"mean absolute difference per channel "
                                             r"\(3, 3, 3, 0\) exceeds mean=1"):
        assert_image_matches(brighter, img, max_diff=3, mean=1)


def test_shape_and_dtype_mismatches_are_precise(tmp_path):
    img = _picture()
    with pytest.raises(AssertionError, match=r"image shape \(h=16, w=20, channels=4\) differs from "
                                             r"the golden's \(h=16, w=24, channels=4\); actual "
                                             r"image written to .*image.actual.png"):
        assert_image_matches(img[:, :20], img, out_dir=tmp_path)
    assert (tmp_path / "image.actual.png").is_file()
    with pytest.raises(AssertionError, match=r"channels=3\) differs from the golden's .*channels=4"):
        assert_image_matches(img[..., :3], img, out_dir=tmp_path)
    with pytest.raises(AssertionError, match="image dtype uint16 differs from the golden's uint8"):
        assert_image_matches(img.astype(np.uint16), img, out_dir=tmp_path)
    with pytest.raises(vkir.ArgumentError, match=r"shape \(h, w, channels\) or \(h, w\), got "
                                                 r"shape \(16,\)"):
        assert_image_matches(np.zeros(16, np.uint8), img)
    with pytest.raises(vkir.ArgumentError, match="integer or float array, got dtype bool"):
        assert_image_matches(img > 3, img)
    with pytest.raises(vkir.ArgumentError, match=r"max_fraction .* \[0, 1\], got 2"):
        assert_image_matches(img, img, max_fraction=2)


def test_gray_images_as_2d_or_one_channel():
    gray = _picture(c=1)[..., 0]
    assert_image_matches(gray, gray[..., None])
    assert golden_suffix(gray) == ".png" and golden_suffix(gray[..., None]) == ".png"


def test_float_images_write_npy(tmp_path):
    img = np.linspace(0, 1, 8 * 8 * 4, dtype=np.float32).reshape(8, 8, 4)
    other = img.copy()
    other[2, 2, 1] += 0.01
    other[4, 4, 3] = np.nan
    assert_image_matches(img, img.copy())
    nan = img.copy()
    nan[1, 1] = np.nan
    assert_image_matches(nan, nan.copy())             # NaN where the golden has NaN is equal
    with pytest.raises(AssertionError, match=r"2 of 64 pixels") as info:
        assert_image_matches(other, img, max_diff=1e-3, out_dir=tmp_path)
    assert "diff:   " + str(tmp_path / "image.diff.npy") in str(info.value)
    diff = np.load(tmp_path / "image.diff.npy")
    assert diff.dtype == np.float32 and diff.shape == (8, 8, 4)
    assert diff[2, 2, 1] == pytest.approx(0.01, rel=1e-3) and np.isinf(diff[4, 4, 3])
    np.testing.assert_array_equal(np.load(tmp_path / "image.actual.npy"), other)
    assert_image_matches(other[:2], img[:2], max_diff=0.0)    # rows 0 and 1 are equal
    # (2, 2) differs by 0.01, which a tolerance of 0.02 accepts; the NaN at (4, 4) stays
    assert compare_images(other, img, max_diff=0.02).differing == 1


def test_golden_as_a_path_and_png_round_trip(tmp_path):
    for c in (1, 2, 3, 4):
        img = _picture(c=c)
        path = save_image(tmp_path / f"g{c}.png", img if c > 1 else img[..., 0])
        assert_image_matches(img, path)
        assert load_image(path).dtype == np.uint8
    deep = (np.arange(64, dtype=np.uint16).reshape(8, 8) * 1000)
    save_image(tmp_path / "deep.png", deep)
    np.testing.assert_array_equal(load_image(tmp_path / "deep.png"), deep)
    with pytest.raises(vkir.ArgumentError, match=r"float32 image .* is stored as \.npy"):
        save_image(tmp_path / "f.png", np.zeros((2, 2), np.float32))
    with pytest.raises(vkir.ArgumentError, match="no image file"):
        assert_image_matches(deep, tmp_path / "missing.png")


def test_device_image_like_objects_are_read_through_numpy():
    img = _picture()

    class Image:          # what vkir.DeviceArray and DeviceImage offer
        def numpy(self):
            return img.copy()

    assert_image_matches(Image(), img)
