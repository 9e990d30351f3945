"""The triage page of `pytest --vkir-report DIR` (vkir.golden_report): a run's comparisons,
failures first, with the pictures, the zoom on the worst pixel, the numbers, the device and the
bless commands; and the page as a real browser draws it (Debian's chromium, headless), compared
with a screenshot golden under an SSIM bound that font rendering does not break."""

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from vkir import golden_baselines
from vkir.golden_images import channel_tolerance, judge, load_image
from vkir.golden_report import ReportEntry, write_report, zoom
from vkir.testing import assert_image_matches

DEVICE = golden_baselines.DeviceLabel("llvmpipe-22.3", "llvmpipe (LLVM 15.0.6, 256 bits), "
                                      "driver llvmpipe Mesa 22.3.6 (driverVersion 0x1)")
# imported before any in-process pytester session, which forgets the modules imported inside it
# (scipy's compiled modules cannot be imported a second time)
pytest.importorskip("skimage.metrics")
GOLDEN = Path(__file__).parent / "golden" / "test_report_in_a_browser.png"

USER_TESTS = '''
import numpy as np


def picture(spot):
    y, x = np.mgrid[0:12, 0:16]
    out = np.stack([x * 16, y * 20, np.full_like(x, 90), np.full_like(x, 255)], -1).astype(np.uint8)
    out[4, 9, 0] += spot
    return out


def test_good(vkir_golden):
    vkir_golden(picture(0))


def test_bad(vkir_golden):
    vkir_golden(picture(0), name="first")
    vkir_golden(picture(40), name="second", max_diff=2, ssim=0.5)
'''


def test_report_of_a_run(pytester, monkeypatch):
    monkeypatch.setattr(golden_baselines, "current_device", lambda: DEVICE)
    pytester.makepyfile(test_pics=USER_TESTS)
    pytester.runpytest("-p", "no:cacheprovider", "--vkir-bless").assert_outcomes(passed=2)
    golden = pytester.path / "golden"
    # the second picture's golden is the first picture: test_bad's second comparison fails
    shutil.copy(golden / "test_bad.first.png", golden / "test_bad.second.png")
    report = pytester.path / "report"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--vkir-report={report}")
    result.assert_outcomes(passed=1, failed=1)
    assert f"vkir: triage page of 3 image comparison(s): {report / 'index.html'}" \
        in result.stdout.str()
    page = (report / "index.html").read_text()
    # failures first, then the passes, each with the test, the device and the bless commands
    statuses = re.findall(r'<section class="(\w+)"', page)
    assert statuses == ["failed", "passed", "passed"]
    assert page.index("test_bad.second") < page.index("test_good")
    assert "1 failed, 2 passed" in page and DEVICE.description in page
    assert "pytest --vkir-bless test_pics.py::test_bad" in page
    assert "pytest --vkir-bless-device test_pics.py::test_bad" in page
    assert "1 of 192 pixels (0.5208%) differ by more than max_diff=(2, 2, 2, 2)" in page
    assert "(y=4, x=9): actual (184, 80, 90, 255), golden (144, 80, 90, 255)" in page
    assert "SSIM" in page
    # every picture the page shows exists: actual, golden, diff and the two zooms of the failure
    shown = re.findall(r'<img src="([^"]+)"', page)
    assert shown[:5] == [f"img/0-{k}.png" for k in ("actual", "golden", "diff", "zoom-actual",
                                                    "zoom-golden")]
    assert all((report / src).is_file() for src in shown)
    np.testing.assert_array_equal(load_image(report / "img/0-actual.png")[4, 9], (184, 80, 90, 255))


def test_zoom_frames_the_worst_pixel():
    img = np.zeros((20, 20, 3), np.uint8)
    z = zoom(img, 0, 19)             # a corner: the crop is cut at the borders
    assert z.shape == (6 * 12, 6 * 12, 3)
    assert tuple(z[0, -1]) == (255, 0, 255) and tuple(z[0, -13]) == (0, 0, 0)


def _sample_entries():
    """A failed and a passed comparison with fixed pictures, paths and device (a page that is
    the same on every run)."""
    y, x = np.mgrid[0:24, 0:32]
    golden = np.stack([x * 8, y * 10, np.full_like(x, 120), np.full_like(x, 255)],
                      -1).astype(np.uint8)
    actual = golden.copy()
    actual[10:13, 14:17, 0] = 255
    out = []
    for test, a, status in (("test_bad", actual, "failed"), ("test_ok", golden, "passed")):
        result, problems = judge(a, golden, max_diff=1)
        out.append(ReportEntry(f"test_x.py::{test}", test, status, a, golden,
                               f"golden/{test}.png", result, problems, {"max_diff": 1},
                               channel_tolerance(1, 4, golden.dtype), str(DEVICE),
                               f"pytest --vkir-bless test_x.py::{test}",
                               f"pytest --vkir-bless-device test_x.py::{test}"))
    return out


def test_report_in_a_browser(tmp_path, request):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (make setup installs it)")
    page = write_report(tmp_path / "report", _sample_entries(), str(DEVICE))
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--force-device-scale-factor=1", f"--user-data-dir={tmp_path / 'profile'}",
                    f"--screenshot={shot}", "--window-size=900,700", page.as_uri()],
                   check=True, capture_output=True, timeout=120)
    picture = load_image(shot)[..., :3]
    assert picture.shape == (700, 900, 3)
    # the failure's red bar runs down the left of its section; the diff shows its red square
    assert (picture[150:350, 18] == (221, 0, 0)).all()
    red = (picture[..., 0] > 230) & (picture[..., 1] < 30) & (picture[..., 2] < 30)
    assert red.sum() >= 20 * 20             # the diff's 3x3 pixels, 8 times enlarged
    # the page as drawn: text may render a little differently (other font hinting: SSIM 0.93),
    # the layout may not (the failure shown as a pass: SSIM 0.77)
    assert_image_matches(picture, GOLDEN, max_diff=255, ssim=0.85, out_dir=tmp_path)
    # recorded like a vkir_golden comparison, so that `vkir golden stale` knows it is in use
    golden_baselines.record_run(GOLDEN.parent, GOLDEN.stem, "chromium", request.node.nodeid,
                                GOLDEN)
