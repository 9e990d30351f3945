"""The matching modes of assert_image_matches beyond per-pixel tolerances (vkir.golden_matching):
the edge-tolerant mode and its budget over the golden's edge pixels, SSIM (scikit-image) and
FLIP (flip-evaluator) thresholds, their messages, and `fit_tolerances` / `vkir golden fit`
proposing bounds that pass the given images and fail a shifted one."""

import numpy as np
import pytest

import vkir
from vkir.golden_images import save_image
from vkir.golden_matching import edge_mask, fit_tolerances, flip_score, ssim_score
from vkir.testing import assert_image_matches
from vkir.tools import cli


def _disk(h=32, w=40, cx=20.0, cy=16.0, r=9.0):
    """A hard-edged disk on a flat background (RGBA8): its edge pixels are the ring around it."""
    y, x = np.mgrid[0:h, 0:w]
    inside = (x + 0.5 - cx) ** 2 + (y + 0.5 - cy) ** 2 < r * r
    img = np.zeros((h, w, 4), np.uint8)
    img[..., 0] = np.where(inside, 220, 30)
    img[..., 1] = np.where(inside, 120, 40)
    img[..., 2] = 60
    img[..., 3] = 255
    return img


def test_edge_mask_marks_the_sobel_ring():
    img = _disk()
    mask = edge_mask(img)
    assert not mask[0, 0] and not mask[16, 20]       # flat background, flat inside
    assert mask[16, 11] and mask[16, 28]             # the rim, left and right
    assert mask.sum() < 0.4 * mask.size


def test_edges_let_silhouette_pixels_differ_within_their_budget(tmp_path):
    golden = _disk()
    actual = _disk(r=9.3)           # a slightly larger disk: only rim pixels change
    changed = (actual != golden).any(axis=2)
    assert changed.any() and (changed <= edge_mask(golden)).all()
    with pytest.raises(AssertionError, match="differ by more than max_diff"):
        assert_image_matches(actual, golden)
    result = assert_image_matches(actual, golden, edges=(255, 0.5))
    assert result.differing == 0 and result.edge_tolerated == changed.sum()
    assert result.edge_pixels == edge_mask(golden).sum()
    # the budget counts over the golden's edge pixels, not the whole picture
    tight = (changed.sum() - 1) / edge_mask(golden).sum()
    with pytest.raises(AssertionError, match=rf"{changed.sum()} of the golden's "
                                             rf"{edge_mask(golden).sum()} edge pixels differ"):
        assert_image_matches(actual, golden, edges=(255, tight), out_dir=tmp_path)
    # an edge pixel beyond the edge tolerance counts as an ordinary differing pixel
    with pytest.raises(AssertionError, match="off the golden's edges"):
        assert_image_matches(actual, golden, edges=(10, 1.0))
    # a change away from the edges is not excused
    spot = golden.copy()
    spot[2, 2, 0] += 50
    with pytest.raises(AssertionError, match=r"1 of 1280 pixels .* off the golden's edges"):
        assert_image_matches(spot, golden, edges=(255, 1.0))
    with pytest.raises(vkir.ArgumentError, match=r"edges is \(max_diff, max_fraction\)"):
        assert_image_matches(spot, golden, edges=3)


def test_ssim_threshold():
    golden = _disk()
    noisy = golden.copy()
    rng = np.random.default_rng(1)
    noisy[..., :3] = np.clip(golden[..., :3] + rng.integers(-2, 3, golden[..., :3].shape), 0, 255)
    score = ssim_score(noisy, golden)
    assert 0.9 < score < 1.0 and ssim_score(golden, golden) == pytest.approx(1.0)
    assert assert_image_matches(noisy, golden, max_diff=255, ssim=0.9).ssim == pytest.approx(score)
    with pytest.raises(AssertionError, match=rf"SSIM {score:.5f} is below ssim=0.999") as info:
        assert_image_matches(noisy, golden, max_diff=255, ssim=0.999)
    assert f"SSIM: {score:.5f}" in str(info.value)
    # without max_diff, SSIM decides alone; with it, both bounds hold
    assert assert_image_matches(noisy, golden, ssim=0.9).differing == 0
    with pytest.raises(AssertionError, match="differ by more than max_diff=.1, 1, 1, 1."):
        assert_image_matches(noisy, golden, max_diff=1, ssim=0.9)
    with pytest.raises(vkir.ArgumentError, match=r"ssim is a similarity in \[-1, 1\]"):
        assert_image_matches(golden, golden, ssim=2)


def test_flip_threshold():
    golden = _disk()
    shifted = np.roll(golden, 1, axis=1)
    score = flip_score(shifted, golden)
    assert flip_score(golden, golden) == 0.0 and 0.0 < score < 1.0
    assert_image_matches(shifted, golden, max_diff=255, flip=score + 1e-6)
    assert_image_matches(shifted, golden, flip=score + 1e-6)           # FLIP alone decides
    with pytest.raises(AssertionError, match=r"the mean FLIP error 0\.\d+ exceeds flip=0.001"):
        assert_image_matches(shifted, golden, max_diff=255, flip=0.001)
    gray = golden[..., 0]
    assert flip_score(gray, gray) == 0.0            # gray pictures are compared as gray RGB


def test_fit_proposes_bounds_that_pass_the_images_and_fail_a_shift(tmp_path, capsys):
    golden = _disk()
    shots = [_disk(r=9.2), _disk(cx=20.1)]
    fit = fit_tolerances(shots, golden)
    assert fit.images == 2 and fit.ssim < 1.0 and fit.flip > 0.0
    lines = fit.lines()
    shifted = np.roll(golden, 1, axis=1)
    for line in lines:
        options = eval(f"dict({line})")
        for shot in shots:
            assert_image_matches(shot, golden, **options)
    assert any("edges=" in line for line in lines) and any("ssim=" in line for line in lines)
    for line in lines[1:]:          # every proposal but the plain largest difference
        with pytest.raises(AssertionError):
            assert_image_matches(shifted, golden, **eval(f"dict({line})"))
    # the command prints the same lines
    paths = [save_image(tmp_path / f"shot{i}.png", s) for i, s in enumerate(shots)]
    save_image(tmp_path / "golden.png", golden)
    assert cli.main(["golden", "fit", *map(str, paths), "--golden",
                     str(tmp_path / "golden.png")]) == 0
    out = capsys.readouterr().out
    assert "tightest tolerances that pass 2 image(s)" in out
    assert all(f"  {line}\n" in out for line in lines)
    with pytest.raises(vkir.ArgumentError, match="differs from the golden's"):
        fit_tolerances([golden[:4]], golden)
