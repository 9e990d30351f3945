"""Where vkir's disk caches live: one root shared by the compile cache and the autotuner."""

from __future__ import annotations

from ..config import cache_root

__all__ = ["cache_root"]
