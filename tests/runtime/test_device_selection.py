"""Device selectors pick exactly the driver they name when several Vulkan drivers are visible."""

import json
import os
import subprocess
import sys

import pytest

from vkir.runtime.selection import SWIFTSHADER_ICD

LAVAPIPE_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
BOTH_PRESENT = os.path.exists(LAVAPIPE_ICD) and os.path.exists(SWIFTSHADER_ICD)

PROBE = "import json, vkir; print(json.dumps([vkir.device().info.name, [d.name for d in vkir.devices()]]))"


def _selected(selector: str) -> tuple:
    env = dict(os.environ, VK_ICD_FILENAMES=os.pathsep.join([SWIFTSHADER_ICD, LAVAPIPE_ICD]),
               VKIR_DEVICE=selector, VKIR_VALIDATION="0")
    env.pop("VK_DRIVER_FILES", None)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return tuple(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.skipif(not BOTH_PRESENT, reason="needs lavapipe and SwiftShader installed (make test installs both)")
@pytest.mark.parametrize("selector, needle", [("lavapipe", "llvmpipe"), ("llvmpipe", "llvmpipe"),
                                              ("swiftshader", "SwiftShader")])
def test_driver_selectors_pick_that_driver_with_both_present(selector, needle):
    chosen, every = _selected(selector)
    assert len(every) == 2, every          # both drivers are visible to the loader
    assert needle in chosen


@pytest.mark.skipif(not BOTH_PRESENT, reason="needs lavapipe and SwiftShader installed (make test installs both)")
def test_cpu_selector_takes_any_cpu_driver():
    chosen, every = _selected("cpu")
    assert chosen in every


def test_swiftshader_selector_without_the_driver_says_how_to_make_it_visible(monkeypatch):
    from vkir.errors import DeviceError
    from vkir.runtime import selection

    monkeypatch.setattr(selection, "devices", lambda: [_fake_info("llvmpipe (LLVM 15)")])
    monkeypatch.setattr(selection.os.path, "exists", lambda p: p == SWIFTSHADER_ICD)
    with pytest.raises(DeviceError, match="VK_ICD_FILENAMES=/usr/lib/chromium"):
        selection.select("swiftshader")


def _fake_info(name):
    from types import SimpleNamespace

    return SimpleNamespace(name=name, driver="", kind="cpu", index=0)
