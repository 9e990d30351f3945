"""How vkir keeps anything on disk between processes, so that nothing it reads back is trusted.

Every cache (compiled kernels, tuning records, native-loop libraries, the drivers' pipeline caches)
reads and writes through this module:

- Folders. A cache folder is used only when it, and every folder above it, is safe: the folder
  itself owned by this user and writable by nobody else, each folder above it owned by this user
  or root and, where others may write to it, sticky (as /tmp is). New folders are made mode 0700.
  An unsafe folder is not used at all (one warning on the "vkir.store" logger); the cache is then
  off for this process. The cache root may be a symbolic link the user chose (it is resolved once);
  below it nothing is followed: every folder is checked with lstat (a symbolic link in a folder's
  place is unsafe, so a restored cache cannot point a cache at someone else's files), and only
  regular files are listed, read (O_NOFOLLOW) or removed (and only those with a single link).
- Entries. What vkir writes is sealed with an HMAC-SHA256 of the entry's name and content, under a
  per-user key kept apart from the caches (`key_file()`, in the user's private state folder, mode
  0600): an entry planted, swapped for another entry or corrupted (a CI cache restored from an
  untrusted branch, say) does not verify, and the caller rebuilds it. Writes are atomic (a
  temporary file, then os.replace). Reads are bounded by the size cap.
- Size. A cache root holds at most `config.cache_max_bytes()`; past it, the entries used least
  recently go first (a read marks an entry used). A process looks at the root's size when it
  first writes there and again each time it has written a sixteenth of the cap since.
- No disk cache (VKIR_CACHE_DIR "" or 0) writes nothing shared: what must be a file for a moment
  (a native library being built or loaded) goes to `private_temporary()`, a fresh mkdtemp folder
  removed right after.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import hashlib
import hmac
import logging
import os
import shutil
import stat
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from . import config

KEY_BYTES = 32
SEAL_MAGIC = b"vkir-sealed-1\n"     # a sealed binary entry: magic, hex HMAC, newline, payload
TMP_PREFIX = ".vkir-"               # temporary files of atomic writes (suffix .tmp)
SCAN_SHARE = 16                     # bytes written before the root's size is looked at: cap/16
log = logging.getLogger("vkir.store")


@dataclass(frozen=True)
class Cache:
    """One of vkir's caches: its folder under the root ("" for the root itself) and the file
    name patterns of its entries (what `usage`, `evict` and `clean` count as vkir's)."""

    name: str
    folder: str
    patterns: tuple


CACHES = (
    Cache("kernels", "kernels", ("*.json",)),
    Cache("autotune", "autotune", ("*.json",)),
    Cache("native-loops", "native-loops", ("loop-*.so",)),
    Cache("tvm-device-api", "tvm-device-api", ("device-api-*.so",)),
    Cache("pipelines", "", ("pipelines-*.bin",)),
)


# -- folders -------------------------------------------------------------------------------------
def unsafe_reason(folder: Path) -> str | None:
    """Why the existing folder `folder` must not hold a cache (None when it may): it is not a
    folder, not owned by this user, writable by others, or a folder above it lets someone else
    replace it. Where the platform has no user ids (Windows), only that it is a folder. Below
    the cache root, every folder from the root down is checked with lstat (`_below_reason`)."""
    below = _below_root(folder)
    if below is None:
        return _folder_reason(folder)
    root, parts = below
    reason = _folder_reason(root)
    if reason is not None:
        return reason if not parts else f"the cache root {root}: {reason}"
    path = Path(os.path.realpath(root))
    for i, part in enumerate(parts):
        path = path / part
        reason = _below_reason(path)
        if reason is not None:
            return f"it {reason}" if i == len(parts) - 1 else f"{path} {reason}"
    return None


def _below_root(folder) -> tuple | None:
    """(the cache root, the names leading from it to `folder`) when `folder` lies strictly
    below the cache root (as written, or below the root's resolved path); else None."""
    root = config.cache_root()
    if root is None:
        return None
    here = Path(os.path.abspath(folder))
    for base in (os.path.abspath(root), os.path.realpath(root)):
        try:
            parts = here.relative_to(base).parts
        except ValueError:
            continue
        return (root, parts) if parts else None
    return None


def _below_reason(path: Path) -> str | None:
    """Why `path`, a folder below the (resolved, checked) cache root, may not be used, as the end
    of a sentence ("... is a symbolic link"): it is looked at with lstat, never followed."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot be inspected ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link (nothing below the cache root is followed)"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    uid = _uid()
    if uid is None:
        return None
    if st.st_uid != uid:
        return f"is owned by user {st.st_uid}, not by this user ({uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"may be written by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _folder_reason(folder: Path) -> str | None:
    """`unsafe_reason` of a folder that is not below the cache root (the root itself, the
    key's folder, a folder the user named): resolved, then checked with the folders above."""
    uid = _uid()
    real = Path(os.path.realpath(folder))
    try:
        st = os.stat(real)
    except OSError as exc:
        return f"cannot inspect it ({exc.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if uid is None:
        return None
    if st.st_uid != uid:
        return f"it is owned by user {st.st_uid}, not by this user ({uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"others may write to it (mode {stat.S_IMODE(st.st_mode):04o})"
    return _above_reason(real.parent)


def _above_reason(real: Path) -> str | None:
    """Why the folder `real` (a resolved path) or one above it lets someone else than this user
    replace what it holds: owned by another user, or writable by others without being sticky."""
    uid = _uid()
    if uid is None:
        return None
    for above in (real, *real.parents):
        try:
            st = os.stat(above)
        except OSError as exc:
            return f"cannot inspect {above} ({exc.strerror})"
        if st.st_uid not in (0, uid):
            return f"{above} is owned by user {st.st_uid}"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            return f"others may write to {above} (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def safe_folder(folder: Path, create: bool) -> Path | None:
    """`folder`, made (mode 0700) when missing and `create`, when it is safe to keep vkir's files
    in; None when it is missing, cannot be made, or is unsafe (logged once as a warning)."""
    below = _below_root(folder)
    try:
        if below is not None:
            root, parts = below
            if safe_folder(root, create) is None:
                return None
            if create:
                _make_below(Path(os.path.realpath(root)), parts)
            elif not os.path.lexists(folder):
                return None
        elif create and not os.path.isdir(folder):
            existing = Path(folder)
            while not os.path.isdir(existing) and existing != existing.parent:
                existing = existing.parent
            reason = _above_reason(Path(os.path.realpath(existing)))
            if reason is not None:   # nothing is made where someone else could swap it
                _warn_unsafe(str(folder), reason)
                return None
            _make_private(folder)
        elif not os.path.isdir(folder):
            return None
    except OSError as exc:
        log.debug("cannot make %s: %s", folder, exc)
        return None
    reason = unsafe_reason(folder)
    if reason is not None:
        _warn_unsafe(str(folder), reason)
        return None
    return folder


def _uid() -> int | None:
    """This process's effective user id (None where the platform has none)."""
    return os.geteuid() if hasattr(os, "geteuid") else None


def _make_below(real_root: Path, parts: tuple) -> None:
    """Make the missing folders `parts` below the resolved root, mode 0700, one level at a time:
    a level that is not a real folder (a symbolic link, say) stops it (`unsafe_reason` then
    says why), so nothing is ever made through a link."""
    path = real_root
    for part in parts:
        path = path / part
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return


def _make_private(folder: Path) -> None:
    """Make `folder` and every missing folder above it, each mode 0700."""
    missing = []
    while not os.path.isdir(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass   # made meanwhile (by another process): checked like any other


@functools.lru_cache(maxsize=64)
def _warn_unsafe(folder: str, reason: str) -> None:
    log.warning("vkir: not using the cache folder %s: %s (nothing is read from or written to it; "
                "fix its owner and mode, or set VKIR_CACHE_DIR to a private folder)", folder, reason)


def cache_folder(cache: str) -> Path | None:
    """Where the cache named `cache` (see CACHES) lives, or None when there is no disk cache.
    Nothing is made or checked here: `read` and `write` check the folder of every entry."""
    root = config.cache_root()
    if root is None:
        return None
    folder = {c.name: c.folder for c in CACHES}[cache]
    return root / folder if folder else root


@contextlib.contextmanager
def private_temporary():
    """A new private folder (mkdtemp: mode 0700, an unpredictable name in the system's temporary
    folder) for files that must exist only for a moment, such as a library being loaded; it is
    removed, with what it holds, when the block ends."""
    path = tempfile.mkdtemp(prefix="vkir-")
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


# -- sealing -------------------------------------------------------------------------------------
def key_file() -> Path:
    """Where the per-user key that seals cache entries lives: the user's state folder for vkir
    (platformdirs), apart from every cache root, so whoever can write a cache cannot seal."""
    import platformdirs

    return Path(platformdirs.user_state_dir("vkir")) / "cache-key"


def _key() -> bytes:
    path = key_file()
    return _read_or_make_key(str(path), _uid())


@functools.lru_cache(maxsize=8)
def _read_or_make_key(path: str, uid: int | None) -> bytes:
    """The key at `path`, made when missing; a key of this process only (entries of other
    processes then do not verify, and are rebuilt) when the file cannot be made or is unsafe."""
    folder = safe_folder(Path(path).parent, create=True)
    if folder is not None:
        try:
            try:
                return _read_key(path, uid)
            except FileNotFoundError:
                fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".tmp", dir=folder)
                try:
                    with os.fdopen(fd, "wb") as f:
                        f.write(os.urandom(KEY_BYTES))
                    try:
                        os.link(tmp, path)    # never replaces a key another process made
                    except FileExistsError:
                        pass
                finally:
                    os.unlink(tmp)
                return _read_key(path, uid)
        except (OSError, ValueError) as exc:
            log.warning("vkir: cannot use the cache key %s (%s): cache entries of other "
                        "processes are rebuilt", path, exc)
    return _process_key(os.getpid())


@functools.cache
def _process_key(pid: int) -> bytes:
    return os.urandom(KEY_BYTES)


def _read_key(path: str, uid: int | None) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if uid is not None and st.st_uid != uid:
            raise ValueError(f"owned by another user (uid {st.st_uid}), not by this user ({uid})")
        if uid is not None and st.st_mode & 0o077:
            raise ValueError(f"others may read or write it (mode {stat.S_IMODE(st.st_mode):04o})")
        key = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != KEY_BYTES:
        raise ValueError("not a key")
    return key


def mac(name: str, payload: bytes) -> str:
    """The seal of the entry `name` (its place: cache and key) holding `payload`: hex HMAC."""
    return hmac.new(_key(), name.encode() + b"\0" + payload, hashlib.sha256).hexdigest()


def verify(name: str, payload: bytes, tag) -> bool:
    """Whether `tag` is the seal of `payload` as the entry `name`."""
    return isinstance(tag, str) and hmac.compare_digest(tag, mac(name, payload))


def seal(name: str, payload: bytes) -> bytes:
    """A binary entry: `payload` with its seal in front (see `unseal`)."""
    return SEAL_MAGIC + mac(name, payload).encode() + b"\n" + payload


def unseal(name: str, data: bytes | None) -> bytes | None:
    """The payload of the sealed entry `data` stored as `name`, or None when it is not one
    this user's vkir sealed as `name` (planted, swapped, truncated, corrupted)."""
    if data is None or not data.startswith(SEAL_MAGIC):
        return None
    head = len(SEAL_MAGIC)
    tag, payload = data[head:head + 64], data[head + 65:]
    if data[head + 64:head + 65] != b"\n" or not verify(name, payload, tag.decode("latin-1")):
        return None
    return payload


# -- entries -------------------------------------------------------------------------------------
def read(path: Path, limit: int | None = None) -> bytes | None:
    """The bytes of the entry at `path`, or None when it is missing, unreadable, larger than the
    cap (or than `limit`), or its folder is unsafe. A read marks the entry used
    (least-recently-used eviction)."""
    if safe_folder(path.parent, create=False) is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        limit = min(config.cache_max_bytes(), limit or config.cache_max_bytes())
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            return None
        if st.st_nlink == 1:   # a file linked elsewhere too is not vkir's to touch
            try:
                os.utime(fd)
            except OSError:
                pass
        return data
    except OSError as exc:
        log.debug("cannot read %s: %s", path, exc)
        return None
    finally:
        os.close(fd)


def write(path: Path, data: bytes) -> bool:
    """Write the entry atomically (a temporary file in the same folder, then os.replace), making
    its folder private when missing; False when the folder is unsafe or cannot be written (the
    caller goes on without the cache). May evict old entries to keep the root under its cap."""
    folder = safe_folder(path.parent, create=True)
    if folder is None:
        return False
    try:
        fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        log.debug("cannot write %s: %s", path, exc)
        return False
    below = _below_root(path.parent)
    if below is not None:   # a folder outside the cache root (vkir validate's) has no cap here
        _after_write(below[0], len(data))
    return True


# -- size ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """A file of one of vkir's caches."""

    cache: str
    path: Path
    size: int
    used: float   # modification time: the last write or read


def entries(root: Path, temporaries: bool = False) -> list[Entry]:
    """Every file vkir made under `root` (entries of CACHES; with `temporaries`, also the
    temporary files of writes that never finished). Other files are never listed, nor is
    anything in a folder that is not safe (a symbolic link in a cache folder's place, say:
    logged once), nor a file that is not regular or has other links (lstat: nothing followed).
    Nothing is listed when the root itself is unsafe."""
    if safe_folder(root, create=False) is None:
        return []
    real = Path(os.path.realpath(root))   # the root is resolved once; nothing below it is
    out = []
    for cache in CACHES:
        if cache.folder and safe_folder(root / cache.folder, create=False) is None:
            continue
        folder = real / cache.folder if cache.folder else real
        patterns = cache.patterns + ((f"{TMP_PREFIX}*.tmp",) if temporaries else ())
        try:
            listing = list(os.scandir(folder))
        except OSError:
            continue
        for item in listing:
            if not any(_matches(item.name, pattern) for pattern in patterns):
                continue
            try:
                st = os.lstat(item.path)
            except OSError:
                continue
            if _own_file(st):
                out.append(Entry(cache.name, Path(item.path), st.st_size, st.st_mtime))
    return out


def _matches(name: str, pattern: str) -> bool:
    """Whether the file `name` matches `pattern` as glob would (a leading dot is matched only
    by a pattern that starts with one)."""
    return fnmatch.fnmatchcase(name, pattern) and (pattern.startswith(".")
                                                   or not name.startswith("."))


def _own_file(st: os.stat_result) -> bool:
    """Whether an lstat result is a file vkir may count and remove: a regular file with no other
    link (a hard link to a file elsewhere is not vkir's, whatever its name)."""
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def _remove(entry: Entry) -> bool:
    """Unlink `entry`'s file, looked at again with lstat first: False (nothing removed) when it is
    gone or no longer a regular file with a single link."""
    try:
        if not _own_file(os.lstat(entry.path)):
            return False
        entry.path.unlink()
    except FileNotFoundError:
        return False
    return True


def usage(root: Path) -> dict:
    """{cache name: (entries, bytes)} under `root`."""
    out = {cache.name: (0, 0) for cache in CACHES}
    for e in entries(root):
        count, size = out[e.cache]
        out[e.cache] = (count + 1, size + e.size)
    return out


def evict(root: Path, cap: int) -> list[Entry]:
    """Remove the least recently used entries under `root` until the rest hold at most `cap`
    bytes; the removed entries."""
    found = sorted(entries(root), key=lambda e: e.used)
    total = sum(e.size for e in found)
    removed = []
    for e in found:
        if total <= cap:
            break
        try:
            gone = _remove(e)
        except OSError as exc:
            log.debug("cannot evict %s: %s", e.path, exc)
            continue
        total -= e.size
        if gone:
            removed.append(e)
    return removed


def clean(root: Path) -> list[Entry]:
    """Remove every file vkir made under `root` (entries and left-over temporary files) and the
    cache folders left empty; other files, and anything in an unsafe folder, stay. The removed
    files."""
    if safe_folder(root, create=False) is None:
        return []
    removed = [e for e in entries(root, temporaries=True) if _remove(e)]
    real = Path(os.path.realpath(root))
    for cache in CACHES:
        if cache.folder and safe_folder(root / cache.folder, create=False) is not None:
            try:
                (real / cache.folder).rmdir()
            except OSError:
                pass   # holds files vkir did not make
    return removed


class _Tally:
    """Bytes this process wrote under one root since it last looked at the root's size."""

    def __init__(self):
        self.lock = threading.Lock()
        self.written = None   # None: never looked


@functools.lru_cache(maxsize=16)
def _tally(root: str, pid: int) -> _Tally:
    return _Tally()


def _after_write(root: Path, size: int) -> None:
    cap = config.cache_max_bytes()
    tally = _tally(str(root), os.getpid())
    with tally.lock:
        if tally.written is not None and tally.written + size < cap // SCAN_SHARE:
            tally.written += size
            return
        tally.written = 0
    for e in evict(root, cap):
        log.debug("evicted %s (%d bytes, least recently used)", e.path, e.size)
