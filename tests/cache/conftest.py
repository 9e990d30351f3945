"""Fixtures shared by the cache tests."""

import pytest


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A cache root of this test's own, and a state folder for the per-user key."""
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path / "root"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "root"
