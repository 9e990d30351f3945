"""The pytest plugin's `vkir_golden` fixture and `--vkir-bless`, in pytest sessions of their own
(pytester, in-process: no device is needed): a missing golden fails and says how to create it,
--vkir-bless writes goldens (PNG for uint8, .npy for float; parametrized ids made filename-safe)
and names them, the next run passes, a changed picture fails naming the actual/diff images, a
blessed run rewrites only what changed, and the tolerances are passed through."""

import numpy as np

from vkir import golden_baselines
from vkir.golden_images import load_image

# the device the sessions claim to run on (in-process: no Vulkan instance is created)
LAVAPIPE_25 = golden_baselines.DeviceLabel("llvmpipe-25.0", "llvmpipe (LLVM 15.0.6, 256 bits), "
                                           "driver llvmpipe Mesa 25.0.7 (driverVersion 0x1)")

USER_TESTS = '''
import numpy as np
import pytest

SHIFT = int(__import__("os").environ.get("PICTURE_SHIFT", "0"))


def picture(k):
    y, x = np.mgrid[0:12, 0:16]
    rgba = np.stack([x * 16, y * 20, np.full_like(x, 40 * k), np.full_like(x, 255)], axis=-1)
    out = rgba.astype(np.uint8)
    out[5, 7, 0] += SHIFT
    return out


@pytest.mark.parametrize("k", [1, 2])
def test_gradient(vkir_golden, k):
    vkir_golden(picture(k))


def test_float_and_two_pictures(vkir_golden):
    vkir_golden(picture(1).astype(np.float32) / 255)
    vkir_golden(picture(2)[..., 0], name="red channel")


def test_tolerant(vkir_golden):
    vkir_golden(picture(3), max_diff=5)


class TestInAClass:
    def test_gradient(self, vkir_golden):
        vkir_golden(picture(4))
'''


def _run(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_bless_then_compare(pytester, monkeypatch):
    monkeypatch.setattr(golden_baselines, "current_device", lambda: LAVAPIPE_25)
    pytester.makepyfile(test_pictures=USER_TESTS)
    golden = pytester.path / "golden"

    # no goldens yet: every comparison fails and says how to write it
    result = _run(pytester)
    result.assert_outcomes(failed=5)
    out = result.stdout.str()
    assert f"no golden image {golden / 'test_gradient_1.png'}" in out
    assert "run `pytest --vkir-bless test_pictures.py::test_gradient[1]` to write it" in out
    assert not golden.exists()

    # --vkir-bless writes them (and says so); parametrized ids and class names are filename-safe
    result = _run(pytester, "--vkir-bless")
    result.assert_outcomes(passed=5)
    assert "6 golden image(s) written (--vkir-bless)" in result.stdout.str()
    names = sorted(p.name for p in golden.iterdir() if not p.name.startswith("."))
    assert names == ["TestInAClass_test_gradient.png", "test_float_and_two_pictures.npy",
                     "test_float_and_two_pictures.red_channel.png", "test_gradient_1.png",
                     "test_gradient_2.png", "test_tolerant.png"]
    first = load_image(golden / "test_gradient_1.png")
    assert first.shape == (12, 16, 4) and first.dtype == np.uint8 and first[3, 2, 1] == 60
    assert load_image(golden / "test_float_and_two_pictures.npy").dtype == np.float32
    assert load_image(golden / "test_float_and_two_pictures.red_channel.png").shape == (12, 16)

    # the goldens now match
    _run(pytester).assert_outcomes(passed=5)

    # one channel of one pixel changes by 3: beyond the default tolerance (0), within max_diff=5
    monkeypatch.setenv("PICTURE_SHIFT", "3")
    result = _run(pytester, "-k", "gradient or tolerant")
    result.assert_outcomes(passed=1, failed=3)
    out = result.stdout.str()
    assert "1 of 192 pixels (0.5208%) differ by more than max_diff=(0, 0, 0, 0)" in out
    assert "worst pixel (y=5, x=7)" in out
    assert "test_gradient_1.diff.png" in out and "test_gradient_1.actual.png" in out

    # blessing again rewrites only the goldens that no longer match
    before = (golden / "test_tolerant.png").stat().st_mtime_ns
    result = _run(pytester, "--vkir-bless")
    result.assert_outcomes(passed=5)
    assert "5 golden image(s) written" in result.stdout.str()
    assert (golden / "test_tolerant.png").stat().st_mtime_ns == before
    assert load_image(golden / "test_gradient_1.png")[5, 7, 0] == 7 * 16 + 3
    _run(pytester).assert_outcomes(passed=5)


def test_one_golden_per_picture(pytester, monkeypatch):
    monkeypatch.setattr(golden_baselines, "current_device", lambda: LAVAPIPE_25)
    pytester.makepyfile(test_twice='''
import numpy as np

def test_twice(vkir_golden):
    vkir_golden(np.zeros((2, 2), np.uint8))
    vkir_golden(np.zeros((2, 2), np.uint8))
''')
    result = _run(pytester, "--vkir-bless")
    result.assert_outcomes(failed=1)
    assert "compared a second image with golden 'test_twice'; give each picture its own name=" \
        in result.stdout.str()
