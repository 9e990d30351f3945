"""Schedule primitives that restructure loop nests (reduction-epilogue fusion)."""

from .epilogue_fusion import fuse_reduction_epilogue

__all__ = ["fuse_reduction_epilogue"]
