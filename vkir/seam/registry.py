"""The backends vkir knows: the entry point group `vkir.backends`, read once at first use.

Each entry point's name is a backend's name and its target kind (`Target.kind`,
`vkir.build(f, device=name)`); its value names the backend class (a vkir.backends Backend, or a
seam Runtime class alone, made with no arguments: vkir.driver.building.runtime_kernel), e.g.

    [project.entry-points."vkir.backends"]
    null = "my_package.null_backend:NullBackend"

so installing a package beside vkir adds a device. vkir registers its own three the same way
(`vulkan`, `interp`, `wgpu`); BUILTIN names them again for an install whose metadata predates
the group (an editable install made before it), and an installed entry point wins over it.
Nothing here imports a backend before it is asked for: the table holds "module:attribute"
texts, loaded by `backend_class`.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from importlib import metadata

from ..errors import ArgumentError

__all__ = ["GROUP", "BUILTIN", "BackendTable", "backend_names", "backend_class", "has_backend",
           "refresh"]

GROUP = "vkir.backends"
BUILTIN = {"vulkan": "vkir.backends.vulkan:VulkanBackend",
           "interp": "vkir.backends.interp:InterpBackend",
           "wgpu": "vkir.backends.wgpu:WgpuBackend"}


@functools.cache
def _table() -> dict:
    """{name: "module:attribute"}: BUILTIN, then the installed entry points of GROUP."""
    table = dict(BUILTIN)
    for ep in metadata.entry_points(group=GROUP):
        table[ep.name] = ep.value
    return table


def backend_names() -> tuple:
    """The names of every registered backend (the kinds a Target may have), built-ins first."""
    return tuple(_table())


def has_backend(name: str) -> bool:
    """Whether a backend is registered under `name`."""
    return name in _table()


def backend_class(name: str):
    """The backend class registered under `name` (imported at the first ask);
    ArgumentError naming the registered ones otherwise."""
    value = _table().get(name)
    if value is None:
        raise ArgumentError(f"unknown backend {name!r}; registered (entry point group "
                            f"{GROUP!r}): {', '.join(backend_names())}")
    module, _, attr = value.partition(":")
    found = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        found = getattr(found, part)
    return found


def refresh() -> None:
    """Read the entry points again (after installing a backend in a running process)."""
    _table.cache_clear()


class BackendTable(Mapping):
    """The registered backends as a read-only mapping {name: backend class}: names come from
    the registry, classes are imported when looked up (vkir.backends.BACKENDS is one)."""

    def __getitem__(self, name: str):
        if not has_backend(name):
            raise KeyError(name)
        return backend_class(name)

    def __iter__(self):
        return iter(backend_names())

    def __len__(self) -> int:
        return len(backend_names())

    def __contains__(self, name) -> bool:
        return isinstance(name, str) and has_backend(name)

    def __repr__(self) -> str:
        return f"<vkir backends {', '.join(backend_names())}>"
