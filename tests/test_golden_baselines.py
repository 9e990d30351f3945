"""Approved images and device baselines of `vkir_golden` (vkir.golden_baselines), in pytest
sessions of their own (pytester, in-process, the device label stubbed so that no Vulkan instance
is created): device keys from DeviceInfos, this device's baseline tried before the generic golden
(Mesa 25's lavapipe, `llvmpipe-25.0`, as the example), a folder of approved images (any one
matching passes; an empty folder changes nothing), --vkir-bless-device writing this device's
baseline, the failure message naming the device and the bless commands, the run records and
`vkir golden stale`."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from vkir import golden_baselines
from vkir.golden_baselines import DeviceLabel, device_key, stale_images
from vkir.golden_images import load_image, save_image
from vkir.pytest_plugin import bless_commands
from vkir.tools import cli

MESA25 = DeviceLabel("llvmpipe-25.0", "llvmpipe (LLVM 15.0.6, 256 bits), driver llvmpipe Mesa "
                                      "25.0.7 (LLVM 15.0.6) (driverVersion 0x1)")

USER_TESTS = '''
import os
import numpy as np


def picture():
    y, x = np.mgrid[0:8, 0:12]
    out = np.stack([x * 20, y * 30, np.full_like(x, 90)], axis=-1).astype(np.uint8)
    out[2, 3, 0] += int(os.environ.get("PICTURE_SHIFT", "0"))
    return out


def test_pic(vkir_golden):
    vkir_golden(picture())
'''


def _info(name, driver, version=1, vendor=0x10005):
    return SimpleNamespace(name=name, driver=driver, driver_version=version, vendor_id=vendor)


def test_device_keys():
    assert device_key(_info("llvmpipe (LLVM 15.0.6, 256 bits)",
                            "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)")) == "llvmpipe-22.3"
    assert device_key(_info("llvmpipe (LLVM 15.0.6, 256 bits)",
                            "llvmpipe Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)")) == "llvmpipe-25.0"
    assert device_key(_info("SwiftShader Device (Subzero)", "SwiftShader driver", 0x1400000,
                            0x1AE0)) == "swiftshader"
    assert device_key(_info("NVIDIA GeForce RTX 4090", "580.65.06", (580 << 22) | (65 << 14),
                            0x10DE)) == "nvidia-580"
    assert device_key(_info("AMD Radeon RX 7900 (RADV NAVI31)", "radv Mesa 24.2.8",
                            vendor=0x1002)) == "radv-24.2"


@pytest.fixture
def session(pytester, monkeypatch):
    monkeypatch.setattr(golden_baselines, "current_device", lambda: MESA25)
    pytester.makepyfile(test_pics=USER_TESTS)

    def run(*args):
        return pytester.runpytest("-p", "no:cacheprovider", *args)

    return run


def _record(golden):
    return json.loads((golden / ".cache" / "runs" / "test_pic@llvmpipe-25.0.json").read_text())


def test_device_baseline_before_the_generic_golden(session, pytester, monkeypatch, capsys):
    golden = pytester.path / "golden"
    session("--vkir-bless").assert_outcomes(passed=1)
    generic = load_image(golden / "test_pic.png")
    assert _record(golden)["matched"] == "test_pic.png"

    # this device draws the picture differently: it fails, naming the device and both commands
    monkeypatch.setenv("PICTURE_SHIFT", "5")
    result = session()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert f"device: {MESA25.description} [llvmpipe-25.0]" in out
    generic_cmd, device_cmd = bless_commands("test_pics.py::test_pic")
    assert generic_cmd.endswith("pytest --vkir-bless test_pics.py::test_pic")
    assert f"{generic_cmd} (generic golden) or {device_cmd} (this device's baseline)" in out
    assert _record(golden)["matched"] is None

    # --vkir-bless-device writes this device's baseline and leaves the generic golden alone
    result = session("--vkir-bless-device")
    result.assert_outcomes(passed=1)
    assert "golden/test_pic@llvmpipe-25.0.png" in result.stdout.str()
    assert load_image(golden / "test_pic@llvmpipe-25.0.png")[2, 3, 0] == 3 * 20 + 5
    np.testing.assert_array_equal(load_image(golden / "test_pic.png"), generic)
    session().assert_outcomes(passed=1)
    assert _record(golden)["matched"] == "test_pic@llvmpipe-25.0.png"

    # the generic golden is now matched by no recorded run: stale
    assert stale_images(golden) == [golden / "test_pic.png"]
    capsys.readouterr()
    assert cli.main(["golden", "stale", str(pytester.path)]) == 1
    assert capsys.readouterr().out == f"{golden / 'test_pic.png'}\n"

    # another device (no baseline of its own) still compares with the generic golden
    monkeypatch.setattr(golden_baselines, "current_device",
                        lambda: DeviceLabel("swiftshader", "SwiftShader Device"))
    monkeypatch.delenv("PICTURE_SHIFT")
    session().assert_outcomes(passed=1)
    assert stale_images(golden) == []
    assert cli.main(["golden", "stale", str(golden)]) == 0
    assert "every approved image" in capsys.readouterr().out


def test_several_approved_images(session, pytester, monkeypatch):
    golden = pytester.path / "golden"
    session("--vkir-bless").assert_outcomes(passed=1)
    (golden / "test_pic").mkdir()
    session().assert_outcomes(passed=1)              # an empty folder changes nothing
    monkeypatch.setenv("PICTURE_SHIFT", "7")
    result = session()
    result.assert_outcomes(failed=1)
    assert "compared with: " + str(golden / "test_pic.png") in result.stdout.str()
    # a second approved picture in the folder: either one matching passes
    shifted = load_image(golden / "test_pic.png")
    shifted[2, 3, 0] += 7
    save_image(golden / "test_pic" / "other-driver.png", shifted)
    session().assert_outcomes(passed=1)
    assert _record(golden)["matched"] == "test_pic/other-driver.png"
    monkeypatch.setenv("PICTURE_SHIFT", "9")
    result = session()
    result.assert_outcomes(failed=1)
    assert "approved images tried (none matched): test_pic.png, test_pic/other-driver.png" \
        in result.stdout.str()
    assert set(stale_images(golden)) == {golden / "test_pic.png",
                                         golden / "test_pic" / "other-driver.png"}


def test_stale_needs_a_folder(tmp_path):
    with pytest.raises(Exception, match="no folder"):
        stale_images(tmp_path / "missing")
