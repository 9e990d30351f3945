"""Schedule primitives that restructure loop nests (reduction-epilogue fusion)."""

from .fuse_reduction_epilogue import fuse_reduction_epilogue

__all__ = ["fuse_reduction_epilogue"]
