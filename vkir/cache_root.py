"""Where vkir's disk caches live: one root shared by the compile cache and the autotuner."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path | None:
    """$VKIR_CACHE_DIR, else the platform's user cache directory for vkir (platformdirs); None
    (no disk cache at all) when VKIR_CACHE_DIR is "" or "0"."""
    root = os.environ.get("VKIR_CACHE_DIR")
    if root is None:
        import platformdirs

        return Path(platformdirs.user_cache_dir("vkir"))
    if root.strip() in ("", "0"):
        return None
    return Path(root)
