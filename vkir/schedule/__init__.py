"""Schedule primitives that restructure loop nests (reduction-epilogue fusion)."""


def __getattr__(name):
    if name == "fuse_reduction_epilogue":
        from .fuse_reduction_epilogue import fuse_reduction_epilogue

        return fuse_reduction_epilogue
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
