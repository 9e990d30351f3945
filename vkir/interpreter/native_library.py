"""Shared libraries built from C source for native loops, kept in vkir's cache and loaded only
when vkir can vouch for every byte.

A library is built with the given compiler and flags in a private temporary folder
(vkir.store.private_temporary). With a disk cache, it is also stored sealed (vkir.store.seal: an
HMAC under a per-user key kept apart from the cache) as `native-loops/loop-<key>.so`, the key a
hash of compiler, flags and source. A later process reads that entry, checks its seal, writes
the checked bytes to a new file in a private temporary folder and loads that copy, so a library
planted or swapped in the cache folder (or swapped between the check and the load) is never
loaded: an entry that does not verify is built again. Without a disk cache nothing is written
outside those private folders, each removed right after use.
"""

from __future__ import annotations

import ctypes
import hashlib
import subprocess

from .. import store
from .errors import InterpreterError

CACHE = "native-loops"


def load_library(source: str, compiler: str, flags: tuple) -> ctypes.CDLL:
    """The library compiled from the C `source` with `compiler` and `flags`: a verified cache
    entry, else built now (and stored when there is a disk cache)."""
    key = hashlib.sha256("\0".join((compiler, *flags, source)).encode()).hexdigest()[:32]
    name = f"loop-{key}.so"
    folder = store.cache_folder(CACHE)
    if folder is not None:
        data = store.unseal(f"{CACHE}/{name}", store.read(folder / name))
        if data is not None:
            return _load_copy(data)
    data = _build(compiler, flags, source)
    if folder is not None:
        store.write(folder / name, store.seal(f"{CACHE}/{name}", data))
    return _load_copy(data)


def _build(compiler: str, flags: tuple, source: str) -> bytes:
    """The bytes of the library built from `source`, in a private folder removed right after."""
    with store.private_temporary() as work:
        src, out = work / "loop.c", work / "loop.so"
        src.write_text(source)
        try:
            done = subprocess.run([compiler, *flags, "-o", str(out), str(src), "-lm"],
                                  capture_output=True, text=True)
        except OSError as exc:   # a compiler that cannot start
            raise InterpreterError(f"cannot build a native loop with {compiler}: {exc}") from None
        if done.returncode != 0:
            raise InterpreterError(f"the C compiler refused a native loop:\n"
                                   f"{done.stderr.strip()[:2000]}")
        return out.read_bytes()


def _load_copy(data: bytes) -> ctypes.CDLL:
    """Load `data` from a new file in a private folder, so no one else can change what is
    loaded. The folder is removed at once: the loaded library stays mapped (and its inode
    taken, so a later copy can never be mistaken for it)."""
    with store.private_temporary() as folder:
        path = folder / "loop.so"
        path.write_bytes(data)
        try:
            return ctypes.CDLL(str(path))
        except OSError as exc:
            raise InterpreterError(f"cannot load a native loop: {exc}") from None
