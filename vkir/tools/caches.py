"""`vkir cache info` and `vkir cache clean`: what vkir keeps on disk, and removing it.

    vkir cache info [--json]    the cache root, each cache's entries and bytes, the size cap
    vkir cache clean            remove every file vkir made under the cache root (nothing else)
"""

from __future__ import annotations

import json

from .. import config, store
from ..errors import ArgumentError

__all__ = ["add_command", "info", "cmd_info", "cmd_clean"]


def info() -> dict:
    """The cache root (None: no disk cache), whether it may be used (`unsafe`: why not), the size
    cap, the sealing key's file, {cache: {"entries", "bytes"}} and `unsafe_folders`
    ({cache: why its folder is not used})."""
    root = config.cache_root()
    out = {"root": None if root is None else str(root), "unsafe": None,
           "max_bytes": config.cache_max_bytes(), "key_file": str(store.key_file()), "caches": {}}
    if root is None or not root.is_dir():
        return out
    out["unsafe"] = store.unsafe_reason(root)
    if out["unsafe"] is None:
        out["caches"] = {name: {"entries": n, "bytes": size}
                         for name, (n, size) in store.usage(root).items()}
        out["unsafe_folders"] = _unsafe_folders(root)
    return out


def _unsafe_folders(root) -> dict:
    """{cache: why its folder is not used} for each existing cache folder below `root` that
    is unsafe (a symbolic link in its place, say): such a folder is neither counted nor cleaned."""
    out = {}
    for cache in store.CACHES:
        folder = root / cache.folder
        if cache.folder and (folder.is_symlink() or folder.exists()):
            reason = store.unsafe_reason(folder)
            if reason is not None:
                out[cache.name] = reason
    return out


def cmd_info(args) -> int:
    """`vkir cache info`."""
    data = info()
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    if data["root"] is None:
        print("no disk cache (VKIR_CACHE_DIR is empty or 0)")
        return 0
    print(f"cache root: {data['root']}")
    print(f"size cap:   {data['max_bytes']} bytes (VKIR_CACHE_MAX_BYTES)")
    print(f"seal key:   {data['key_file']}")
    if data["unsafe"] is not None:
        print(f"not used: {data['unsafe']}")
        return 0
    total_n = total_b = 0
    for name, row in data["caches"].items():
        print(f"  {name:<14}{row['entries']:>8} entries {row['bytes']:>14} bytes")
        total_n, total_b = total_n + row["entries"], total_b + row["bytes"]
    print(f"  {'total':<14}{total_n:>8} entries {total_b:>14} bytes")
    for name, reason in data.get("unsafe_folders", {}).items():
        print(f"  {name}: folder not used (not counted, not cleaned): {reason}")
    return 0


def cmd_clean(args) -> int:
    """`vkir cache clean`: ArgumentError when the root is one vkir must not touch."""
    root = config.cache_root()
    if root is None:
        print("no disk cache (VKIR_CACHE_DIR is empty or 0): nothing to clean")
        return 0
    if not root.is_dir():
        print(f"{root}: no cache yet, nothing to clean")
        return 0
    reason = store.unsafe_reason(root)
    if reason is not None:
        raise ArgumentError(f"not cleaning {root}: {reason}")
    removed = store.clean(root)
    print(f"removed {len(removed)} files ({sum(e.size for e in removed)} bytes) from {root}")
    return 0


def add_command(sub) -> None:
    """Add `cache info|clean` to the `vkir` command's subparsers."""
    p = sub.add_parser("cache", help="show or remove vkir's disk caches")
    actions = p.add_subparsers(dest="action", required=True)
    q = actions.add_parser("info", help="the cache root, each cache's entries and bytes")
    q.add_argument("--json", action="store_true", help="one JSON object")
    q.set_defaults(fn=cmd_info)
    q = actions.add_parser("clean", help="remove every file vkir made under the cache root")
    q.set_defaults(fn=cmd_clean)
