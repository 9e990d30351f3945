"""How `vkir validate` runs its files: the compile options every GLSL source gets (include folders,
defines, a stage), the variants a manifest asks for (one source, several define sets), files
checked in parallel, and a result cache keyed by everything a result depends on.

A variants manifest is JSON: `{"glob": [{"NAME": "VALUE", ...}, ...], ...}`. A source whose path
or name matches a glob is checked once per define set (its report line names the set); other
sources once. The cache keeps one small JSON file per result, named by the SHA-256 of the
source's bytes, the options, the target environment and the SPIRV-Tools and glslang versions
and, for GLSL and HLSL, the bytes of the files the source actually included (glslang's
--depfile: the entry records them, and a run hashes them again) and the names in every folder an include
is looked up in (the source's folder, the -I folders, the folder of each included file: a new
file there could shadow one included before). A source that failed to compile, whose includes
glslang did not list, is keyed by every file beside it and under the include folders instead.
SPIR-V binaries and assembly include nothing: their bytes are the key. An entry is sealed with vkir.store's MAC (the per-user key the compile cache uses) and written
through vkir.store (private folder, atomic write): an entry that cannot be read or does not
verify (planted, edited, or sealed under another key, as a cache restored on a fresh CI runner
is) is a miss, and the source is checked again. One run lists the cache folder once, lists each
folder and hashes each file at most once (RunCache): a warm run reads one small entry and
hashes the source and its includes per source, whatever else lies beside it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import store
from ..errors import ArgumentError
from .validate import FileResult, Problem, check_file, file_kind, matches
from .validate_input import DEFAULT_MAX_BYTES, parse_size, read_input, shown

CACHE_FORMAT = 4


@dataclass(frozen=True)
class Options:
    """The options of one `vkir validate` run (see the module docstring)."""

    includes: tuple = ()
    defines: tuple = ()              # ((name, value or None), ...) for every source
    variants: tuple = ()             # ((glob, (define set, ...)), ...)
    stage: str | None = None
    jobs: int = 1
    cache: Path | None = None
    max_bytes: int = DEFAULT_MAX_BYTES   # per input file (validate_input)
    auto_map: bool = False           # --auto-map-bindings (glslang --amb)
    entry: str | None = None         # --entry: HLSL sources' entry point

    @staticmethod
    def from_args(args) -> "Options":
        """The options of the command line `args`; ArgumentError for a bad value."""
        defines = tuple(_define(d) for d in (getattr(args, "define", None) or ()))
        includes = tuple(getattr(args, "include", None) or ())
        for folder in includes:
            if not Path(folder).is_dir():
                raise ArgumentError(f"-I {folder}: no such folder")
        manifest = getattr(args, "variants", None)
        jobs = getattr(args, "jobs", 1)
        if jobs is None or jobs < 0:
            raise ArgumentError(f"-j must be 0 (one per CPU) or more, got {jobs}")
        cache = getattr(args, "cache", None)
        size = getattr(args, "max_file_size", None)
        max_bytes = parse_size(size) if size else DEFAULT_MAX_BYTES
        entry = getattr(args, "entry", None)
        if entry is not None and not entry.replace("_", "a").isalnum():
            raise ArgumentError(f"--entry {entry!r}: expected a function name")
        return Options(includes, defines,
                       _read_variants(manifest, max_bytes) if manifest else (),
                       getattr(args, "stage", None), jobs or (os.cpu_count() or 1),
                       Path(cache) if cache else None, max_bytes,
                       bool(getattr(args, "auto_map_bindings", False)), entry)


def _define(text: str) -> tuple:
    name, sep, value = text.partition("=")
    if not name or not name.replace("_", "a").isalnum():
        raise ArgumentError(f"-D {text!r}: expected NAME or NAME=VALUE")
    return name, (value if sep else None)


def _read_variants(manifest: str, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple:
    """The manifest's ((glob, (define set, ...)), ...); ArgumentError naming what is wrong
    (a manifest that is not a regular file of at most `max_bytes` is refused unread)."""
    data = read_input(manifest, max_bytes, "--variants ")
    try:
        doc = json.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise ArgumentError(f"--variants {shown(manifest)}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ArgumentError(f"--variants {shown(manifest)}: expected an object of glob -> list "
                            "of define sets")
    out = []
    for glob, sets in doc.items():
        if not isinstance(sets, list) or not all(
                isinstance(d, dict) and all(isinstance(k, str) for k in d) for d in sets):
            raise ArgumentError(f"--variants {shown(manifest)}: {glob!r} must map to a list of "
                                "objects of NAME -> value")
        out.append((glob, tuple(tuple((k, None if v is None else str(v)) for k, v in d.items())
                                for d in sets)))
    return tuple(out)


def _jobs(files, options: Options) -> list:
    """(path, defines dict, label) for each check: one per variant of a matching source."""
    out = []
    for path in files:
        sets = [s for glob, group in options.variants if matches(path, [glob]) for s in group]
        for variant in sets or [()]:
            defines = dict(options.defines)
            defines.update(variant)
            label = " ".join(k if v is None else f"{k}={v}" for k, v in variant)
            out.append((path, defines, label))
    return out


def run_jobs(files, env: str, options: Options) -> list[FileResult]:
    """The results of checking `files` for `env` with `options`, in order."""
    jobs = _jobs(files, options)
    cache = RunCache(options) if options.cache is not None else None

    def one(job):
        path, defines, label = job
        base = cache.key(path, defines, env) if cache is not None else None
        if base is None:
            return check_file(path, env, options.includes, defines, options.stage, label,
                              options.max_bytes, options.auto_map, options.entry)
        hit = cache.lookup(base, path)
        if hit is not None:
            return hit
        with tempfile.TemporaryDirectory(prefix="vkir-validate-deps-") as tmp:
            depfile = Path(tmp) / "deps.d"
            result = check_file(path, env, options.includes, defines, options.stage, label,
                                options.max_bytes, options.auto_map, options.entry, depfile)
            deps = read_depfile(depfile) if result.kind in ("glsl", "hlsl") else []
        cache.store(base, path, deps, result)
        return result

    if options.jobs <= 1 or len(jobs) <= 1:
        return [one(j) for j in jobs]
    with ThreadPoolExecutor(max_workers=options.jobs) as pool:   # glslang runs as a process
        return list(pool.map(one, jobs))


# -- the cache -----------------------------------------------------------------------------------
@functools.cache
def _tool_versions() -> str:
    from ..runtime.glsl import GlslError, run_glslang
    from ..spirv.tools import version

    try:
        glslang = run_glslang(["--version"], "for its version").stdout.splitlines()[:1]
    except GlslError:
        glslang = ["none"]
    return f"{version()} | {' '.join(glslang)}"


class RunCache:
    """The result cache for one run: the cache folder listed once (an index of its entries, so
    a miss touches no file and a hit reads one), and each source, neighbour and include file
    hashed once however many sources share its folder. Entries are read bounded like inputs."""

    def __init__(self, options: Options):
        self.folder = Path(options.cache)
        self.options = options
        self._skip = self.folder.resolve()
        try:
            self._entries = {e.name[:-5] for e in os.scandir(self.folder)
                             if e.name.endswith(".json") and not e.name.startswith(".")}
        except OSError:
            self._entries = set()   # no cache yet (or unreadable: every entry is a miss)
        self._files: dict = {}      # resolved path -> digest of its bytes (or of its stat)
        self._folders: dict = {}    # (resolved folder, recursive) -> digest of its files

    def key(self, path: Path, defines: dict, env: str) -> str | None:
        """The base key of `path` checked with `defines` for `env` (the source's bytes and
        the options, not its includes: `lookup` and `store` add those); None when the source
        cannot be read (its check then reports that)."""
        h = hashlib.sha256(f"vkir validate cache {CACHE_FORMAT}\n{_tool_versions()}\n{env}\n"
                           f"{self.options.stage}\n{sorted(defines.items(), key=str)}\n"
                           f"{self.options.auto_map} {self.options.entry}\n"
                           f"{[Path(d).resolve().as_posix() for d in self.options.includes]}\n"
                           .encode())
        h.update(path.as_posix().encode() + b"\0")
        source = self._file_digest(path.resolve())
        if source is None:
            return None
        h.update(source)
        return h.hexdigest()

    def _full_key(self, base: str, path: Path, deps) -> str:
        """The result key of base key `base` whose source included `deps` (resolved paths;
        None: unknown, a failed compile)."""
        h = hashlib.sha256(f"{base}\n".encode())
        if deps is None:   # every file that could have been included
            h.update(self._folder_digest(path.parent.resolve(), False))
            for folder in self.options.includes:
                h.update(self._folder_digest(Path(folder).resolve(), True))
            return h.hexdigest()
        if file_kind(path) not in ("glsl", "hlsl"):
            return h.hexdigest()   # a binary or assembly includes nothing
        folders = [path.parent.resolve()] + [Path(d).resolve() for d in self.options.includes]
        for dep in deps:
            dep = Path(dep)
            h.update(dep.as_posix().encode() + b"\0" + (self._file_digest(dep) or b"missing"))
            folders.append(dep.parent)
        for folder in dict.fromkeys(folders):
            h.update(self._listing(folder))
        return h.hexdigest()

    def lookup(self, base: str, path: Path) -> FileResult | None:
        """The cached result for base key `base` of `path`, or None. The one entry of a base
        key holds the includes its run recorded, the full key they gave and the result: a hit
        when the includes, hashed now, give that key again."""
        if file_kind(path) not in ("glsl", "hlsl"):   # includes nothing: its bytes decide
            return self.read(base)
        doc = self._read_sealed(base)
        if doc is None:
            return None
        deps = doc.get("deps")
        if not (deps is None or (isinstance(deps, list) and all(isinstance(d, str)
                                                                 for d in deps))):
            return None
        if doc.get("key") != self._full_key(base, path, deps):
            return None   # an include changed, or a new file could shadow one
        return _result(doc.get("result"))

    def store(self, base: str, path: Path, deps, result: FileResult) -> None:
        """Keep `result` of base key `base` whose source included `deps` (None: unknown)."""
        if file_kind(path) not in ("glsl", "hlsl"):
            self.write(base, result)
            return
        deps = None if deps is None else sorted({Path(d).resolve().as_posix() for d in deps}
                                                - {path.resolve().as_posix()})
        self._write_sealed(base, {"deps": deps, "key": self._full_key(base, path, deps),
                                  "result": _body(result)})

    def _listing(self, folder: Path) -> bytes:
        """Digest of the names in `folder` (not their bytes): a file that appears there
        could shadow an include found further down the search path."""
        key = (folder, "names")
        if key not in self._folders:
            try:
                names = sorted(e.name + ("/" if e.is_dir() else "") for e in os.scandir(folder))
            except OSError:
                names = ["<unreadable>"]
            self._folders[key] = hashlib.sha256("\0".join(names).encode()).digest()
        return self._folders[key]

    def _file_digest(self, path: Path) -> bytes | None:
        """SHA-256 of a regular file's bytes when it is within the size limit, else of its
        kind, size and change time (an oversized or special file beside a source is not read);
        None when it cannot be read at all."""
        if path not in self._files:
            try:
                st = os.stat(path)
            except OSError:
                self._files[path] = None
                return None
            if stat.S_ISREG(st.st_mode) and st.st_size <= self.options.max_bytes:
                try:
                    data = b"bytes\0" + read_input(path, self.options.max_bytes)
                except ArgumentError:
                    data = None
            else:
                data = f"stat\0{st.st_mode} {st.st_size} {st.st_mtime_ns}".encode()
            self._files[path] = None if data is None else hashlib.sha256(data).digest()
        return self._files[path]

    def _folder_digest(self, folder: Path, recursive: bool) -> bytes:
        if (folder, recursive) not in self._folders:
            h = hashlib.sha256()
            files = folder.rglob("*") if recursive else folder.glob("*")
            for f in sorted(p for p in files if not p.is_dir()):
                if f == self._skip or self._skip in f.parents:
                    continue   # the cache's own entries
                h.update(f.as_posix().encode() + b"\0"
                         + (self._file_digest(f) or b"unreadable") + b"\0")
            self._folders[folder, recursive] = h.digest()
        return self._folders[folder, recursive]

    def _read_sealed(self, key: str):
        """The body (a dict) of entry `key`, or None (not in the index, unreadable, damaged,
        or not sealed by this user's vkir for `key`)."""
        if key not in self._entries:
            return None
        raw = store.read(self.folder / f"{key}.json", self.options.max_bytes)
        try:
            doc = json.loads(raw.decode("utf-8")) if raw is not None else None
        except ValueError:
            return None   # an odd entry is a miss
        if not isinstance(doc, dict) or not isinstance(doc.get("result"), dict) or \
                not store.verify(_entry_name(key), _canonical(doc["result"]), doc.get("mac")):
            return None   # planted, edited or sealed under another key: checked again
        return doc["result"]

    def _write_sealed(self, key: str, body: dict) -> None:
        """Keep `body` under `key`, sealed, atomically (vkir.store.write; an unwritable or
        unsafe cache folder only costs time)."""
        doc = {"result": body, "mac": store.mac(_entry_name(key), _canonical(body))}
        if store.write(self.folder / f"{key}.json", json.dumps(doc).encode()):
            self._entries.add(key)

    def read(self, key: str) -> FileResult | None:
        """The cached result of `key`, or None (missing, damaged or not sealed for `key`)."""
        return _result(self._read_sealed(key))

    def write(self, key: str, result: FileResult) -> None:
        """Keep `result` under `key` (sealed, atomically)."""
        self._write_sealed(key, _body(result))


def _body(result: FileResult) -> dict:
    """What an entry keeps of a result."""
    return {"file": result.file, "kind": result.kind,
            "problems": [asdict(p) for p in result.problems]}


def _result(body) -> FileResult | None:
    """The FileResult an entry's body holds, or None for an odd one (a miss)."""
    try:
        return FileResult(body["file"], body["kind"],
                          [Problem(**p) for p in body["problems"]], 0.0)
    except (KeyError, TypeError):
        return None


def read_depfile(path: Path):
    """The files a make-style depfile (glslang --depfile) lists after its target, or None
    when glslang wrote none (a failed compile)."""
    try:
        text = path.read_text(errors="surrogateescape")
    except OSError:
        return None
    _, sep, rest = text.partition(": ")
    if not sep:
        return None
    rest = rest.replace("\\\n", " ")
    return [p.replace("\\ ", " ") for p in re.split(r"(?<!\\)\s+", rest.strip()) if p]


def _entry_name(key: str) -> str:
    """The name a result entry is sealed under: its cache and key."""
    return f"validate/{key}"


def _canonical(body) -> bytes:
    """The bytes a result entry's seal covers: its result, canonically written."""
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
