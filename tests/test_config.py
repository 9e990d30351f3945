"""Every VKIR_* variable is read in vkir.config, with one meaning each, and the README lists them."""

import re
from pathlib import Path

import pytest

from vkir import config
from vkir.errors import ArgumentError

ROOT = Path(__file__).resolve().parent.parent


def test_no_module_but_config_reads_a_vkir_variable():
    readers = []
    for folder in ("vkir", "runtime", "spirv"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "config.py":
                continue
            text = path.read_text()
            if re.search(r"environ\.get\(\s*[\"']VKIR_|environ\[[\"']VKIR_[A-Z_]+[\"']\](?!\s*=)",
                         text):
                readers.append(str(path.relative_to(ROOT)))
    assert readers == []


def test_the_readme_lists_every_variable():
    readme = (ROOT / "README.md").read_text()
    for name in config.VARIABLES:
        assert f"| `{name}` |" in readme, name


def test_meanings(monkeypatch, tmp_path):
    monkeypatch.delenv("VKIR_AUTOTUNE", raising=False)
    assert config.autotune() == "default"
    monkeypatch.setenv("VKIR_AUTOTUNE", "0")
    assert config.autotune() == "never"
    monkeypatch.setenv("VKIR_AUTOTUNE", "1")
    assert config.autotune() == "always"
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    assert config.cache_root() == tmp_path
    monkeypatch.setenv("VKIR_CACHE_DIR", "0")
    assert config.cache_root() is None
    monkeypatch.setenv("VKIR_TIMEOUT", "2.5")
    assert config.timeout() == 2.5
    monkeypatch.setenv("VKIR_TIMEOUT", "soon")
    with pytest.raises(ArgumentError, match="VKIR_TIMEOUT='soon' is not a number"):
        config.timeout()
    monkeypatch.setenv("VKIR_VALIDATION", "off")
    assert not config.validation()
    monkeypatch.setenv("VKIR_DEVICE", "  ")
    assert config.device_selector() is None


def test_the_pipeline_cache_lives_under_the_one_cache_root(monkeypatch, tmp_path, device):
    from vkir.runtime.device import _cache_file

    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    assert _cache_file(device.physical).parent == tmp_path
    monkeypatch.setenv("VKIR_CACHE_DIR", "")
    assert _cache_file(device.physical) is None


def test_every_switch_takes_the_same_words_and_refuses_others(monkeypatch, tmp_path):
    """One parser for the on/off variables: `true` no longer means auto (VKIR_NATIVE_LOOPS) or
    off (VKIR_VERIFY_PASSES), and a typo is an error naming the variable."""
    readers = {"VKIR_VALIDATION": config.validation, "VKIR_VERIFY_PASSES": config.verify_passes,
               "VKIR_NATIVE_LOOPS": config.native_loops, "VKIR_AUTOTUNE": config.autotune}
    on = {"VKIR_VALIDATION": True, "VKIR_VERIFY_PASSES": True, "VKIR_NATIVE_LOOPS": True,
          "VKIR_AUTOTUNE": "always"}
    off = {"VKIR_VALIDATION": False, "VKIR_VERIFY_PASSES": False, "VKIR_NATIVE_LOOPS": False,
           "VKIR_AUTOTUNE": "never"}
    for name, read in readers.items():
        for word in ("1", "true", "Yes", " ON "):
            monkeypatch.setenv(name, word)
            assert read() == on[name], (name, word)
        for word in ("0", "False", "no", "off"):
            monkeypatch.setenv(name, word)
            assert read() == off[name], (name, word)
        monkeypatch.setenv(name, "sometimes")
        with pytest.raises(ArgumentError, match=f"{name}='sometimes' is not a switch"):
            read()
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    for word in ("false", "OFF", "no", "0", ""):
        monkeypatch.setenv("VKIR_CACHE_DIR", word)
        assert config.cache_root() is None, word
    assert not (tmp_path / "false").exists()
