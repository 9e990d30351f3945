"""Rendering: the ray-marched scene of `vkir demo` (vkir.examples.raymarch) on the device against
vkir.interpret, the demo's picture step (PNG written, path reported), the GLSL plasma frame
(vkir.examples.glsl_frame) against numpy, and golden images of both pictures (tests/golden/,
small sizes; the tolerances hold on lavapipe and SwiftShader)."""

import numpy as np
import pytest

import vkir
from vkir.examples import glsl_frame, raymarch
from vkir.golden_images import load_image
from vkir.testing import assert_image_matches
from vkir.tools import demo_picture


@pytest.fixture(scope="module")
def scene(_vulkan_device):
    return vkir.build(raymarch.render_scene, device=_vulkan_device)


@pytest.fixture(scope="module")
def plasma(_vulkan_device):
    return glsl_frame.plasma_kernel(_vulkan_device)


def _render(kernel, h, w):
    out = np.zeros((h, w, 4), np.float32)
    kernel(out)
    return out


def test_scene_matches_the_interpreter(scene):
    # 45 x 70: partial 8x8 workgroups on both edges
    got, want = _render(scene, 45, 70), raymarch.render_reference(45, 70)
    assert_image_matches(got, want, max_diff=1e-5, max_fraction=0.005)
    # the picture is the scene: sky on top (blue above gray), the floor's checks at the bottom,
    # an orange sphere left of the middle and a blue one right of it
    rgba = raymarch.to_rgba8(got)
    assert (rgba[..., 3] == 255).all()
    top = rgba[0, 35]
    assert top[2] > top[0] + 40
    bottom = rgba[-3:, :, 0].astype(int)
    assert bottom.max() - bottom.min() > 80                # light and dark checks
    orange, blue = rgba[20, 27], rgba[24, 43]
    assert orange[0] > orange[2] + 60 and blue[2] > blue[0] + 60, (orange, blue)


def test_to_rgba8_clamps_and_rounds():
    f = np.array([[[-0.5, 0.0, 0.5 / 255, 2.0]]], np.float32)
    np.testing.assert_array_equal(raymarch.to_rgba8(f), [[[0, 0, 1, 255]]])


def test_scene_golden(scene, vkir_golden):
    vkir_golden(raymarch.to_rgba8(_render(scene, 54, 96)), max_diff=2, max_fraction=0.01)


def test_plasma_frame_matches_numpy(plasma):
    for t in (0.0, 2.5):
        frame = glsl_frame.render_frame(100, 60, t, kernel=plasma)
        assert frame.shape == (60, 100, 4) and frame.dtype == np.uint8
        # sine and cosine round differently per driver: one 8-bit step, nowhere more
        assert_image_matches(frame, glsl_frame.reference_frame(100, 60, t), max_diff=1, mean=0.1)
    assert not np.array_equal(frame, glsl_frame.render_frame(100, 60, 0.0, kernel=plasma))


def test_plasma_golden(plasma, vkir_golden):
    vkir_golden(glsl_frame.render_frame(96, 54, 1.5, kernel=plasma), max_diff=2, max_fraction=0.01)


def test_demo_picture_is_checked_and_written(device, tmp_path, capsys):
    result = demo_picture.render(device, out=tmp_path, size=(64, 40), check_size=(40, 24))
    assert result["ok"] and result["differing"] == 0 and result["pixels"] == 40 * 24
    assert result["path"] == tmp_path / "scene.png"
    picture = load_image(result["path"])
    assert picture.shape == (40, 64, 4) and picture.dtype == np.uint8
    text = demo_picture.report(result)
    assert f"picture: {tmp_path / 'scene.png'}" in text
    assert "at 40x24 it matches vkir.interpret (0 of 960 pixels" in text


def test_demo_options(monkeypatch, tmp_path):
    assert demo_picture.parse_size("640x360") == (640, 360)
    for bad in ("640", "4x4", "axb", "640x360x2"):
        with pytest.raises(vkir.ArgumentError, match="WIDTHxHEIGHT"):
            demo_picture.parse_size(bad)
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    assert demo_picture.output_folder() == tmp_path / "demo"
    assert demo_picture.output_folder(tmp_path / "x") == tmp_path / "x"
    monkeypatch.setenv("VKIR_CACHE_DIR", "0")
    assert demo_picture.output_folder().name.startswith("vkir-demo-")


def test_demo_without_a_disk_cache_writes_nothing_shared(device, monkeypatch, tmp_path, capsys):
    """Another user made <tmp>/vkir-demo world-writable and planted scene.png as a link to a
    file of ours: the demo writes its picture into a new private folder, never through it."""
    import os
    import tempfile

    monkeypatch.setenv("VKIR_CACHE_DIR", "0")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # the shared <tmp>, here
    planted = tmp_path / "vkir-demo"
    planted.mkdir()
    planted.chmod(0o777)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    (planted / "scene.png").symlink_to(victim)
    result = demo_picture.render(device, size=(16, 8), check_size=(8, 8))
    folder = result["path"].parent
    assert folder.parent == tmp_path and folder.name.startswith("vkir-demo-"), folder
    assert folder.stat().st_mode & 0o777 == 0o700 and folder.stat().st_uid == os.getuid()
    assert load_image(result["path"]).shape == (8, 16, 4)
    assert victim.read_text() == "mine" and sorted(os.listdir(planted)) == ["scene.png"]
    assert f"picture: {result['path']}" in demo_picture.report(result)
