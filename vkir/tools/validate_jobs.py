"""How `vkir validate` runs its files: the compile options every GLSL source gets (include folders,
defines, a stage), the variants a manifest asks for (one source, several define sets), files
checked in parallel, and a result cache keyed by everything a result depends on.

A variants manifest is JSON: `{"glob": [{"NAME": "VALUE", ...}, ...], ...}`. A source whose path
or name matches a glob is checked once per define set (its report line names the set); other
sources once. The cache keeps one small JSON file per result, named by the SHA-256 of the
source's bytes, the bytes of every file in its folder and in the include folders (an include may
have changed), the options, the target environment and the SPIRV-Tools and glslang versions; an
entry that cannot be read is recomputed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import ArgumentError
from .validate import FileResult, Problem, matches, check_file

CACHE_FORMAT = 1


@dataclass(frozen=True)
class Options:
    """The options of one `vkir validate` run (see the module docstring)."""

    includes: tuple = ()
    defines: tuple = ()              # ((name, value or None), ...) for every source
    variants: tuple = ()             # ((glob, (define set, ...)), ...)
    stage: str | None = None
    jobs: int = 1
    cache: Path | None = None

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
        return Options(includes, defines, _read_variants(manifest) if manifest else (),
                       getattr(args, "stage", None), jobs or (os.cpu_count() or 1),
                       Path(cache) if cache else None)


def _define(text: str) -> tuple:
    name, sep, value = text.partition("=")
    if not name or not name.replace("_", "a").isalnum():
        raise ArgumentError(f"-D {text!r}: expected NAME or NAME=VALUE")
    return name, (value if sep else None)


def _read_variants(manifest: str) -> tuple:
    """The manifest's ((glob, (define set, ...)), ...); ArgumentError naming what is wrong."""
    try:
        doc = json.loads(Path(manifest).read_text())
    except OSError as exc:
        raise ArgumentError(f"--variants {manifest}: {exc.strerror}") from None
    except ValueError as exc:
        raise ArgumentError(f"--variants {manifest}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ArgumentError(f"--variants {manifest}: expected an object of glob -> list of "
                            "define sets")
    out = []
    for glob, sets in doc.items():
        if not isinstance(sets, list) or not all(
                isinstance(d, dict) and all(isinstance(k, str) for k in d) for d in sets):
            raise ArgumentError(f"--variants {manifest}: {glob!r} must map to a list of objects "
                                "of NAME -> value")
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

    def one(job):
        path, defines, label = job
        key = _cache_key(path, defines, env, options) if options.cache else None
        if key is not None:
            hit = _cache_read(options.cache, key)
            if hit is not None:
                return hit
        result = check_file(path, env, options.includes, defines, options.stage, label)
        if key is not None:
            _cache_write(options.cache, key, result)
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


def _folder_digest(folder: Path, recursive: bool, h, skip: Path | None) -> None:
    files = folder.rglob("*") if recursive else folder.glob("*")
    for f in sorted(p for p in files if p.is_file()):
        if skip is not None and skip in f.parents:
            continue   # the cache's own entries
        try:
            h.update(f.as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
        except OSError:
            h.update(f.as_posix().encode() + b"\0unreadable\0")


def _cache_key(path: Path, defines: dict, env: str, options: Options) -> str | None:
    h = hashlib.sha256(f"vkir validate cache {CACHE_FORMAT}\n{_tool_versions()}\n{env}\n"
                       f"{options.stage}\n{sorted(defines.items(), key=str)}\n".encode())
    h.update(path.as_posix().encode() + b"\0")
    try:
        h.update(path.read_bytes())
    except OSError:
        return None
    skip = options.cache.resolve() if options.cache is not None else None
    _folder_digest(path.parent.resolve(), False, h, skip)   # the includes beside the source
    for folder in options.includes:
        _folder_digest(Path(folder).resolve(), True, h, skip)
    return h.hexdigest()


def _cache_read(folder: Path, key: str) -> FileResult | None:
    try:
        doc = json.loads((folder / f"{key}.json").read_bytes().decode("utf-8"))
        result = FileResult(doc["file"], doc["kind"],
                            [Problem(**p) for p in doc["problems"]], 0.0)
    except (OSError, ValueError, KeyError, TypeError):
        return None   # a missing or odd entry is a miss
    return result


def _cache_write(folder: Path, key: str, result: FileResult) -> None:
    doc = {"file": result.file, "kind": result.kind,
           "problems": [asdict(p) for p in result.problems]}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, folder / f"{key}.json")
    except OSError:
        pass   # an unwritable cache only costs time
