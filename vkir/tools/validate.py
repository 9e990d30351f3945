"""`vkir validate` and `vkir dis`: check shader files the way a CI job needs.

    vkir validate FILE|FOLDER... [--target-env vulkan1.0|vulkan1.1|vulkan1.2|vulkan1.3]
                                [--format text|json|junit|sarif|github] [-o REPORT]
                                [-I DIR]... [-D NAME[=VALUE]]... [--variants FILE.json]
                                [--glob PATTERN]... [--exclude PATTERN]... [-S STAGE]
                                [-j N] [--cache DIR] [--max-file-size SIZE]
                                [--auto-map-bindings] [--entry NAME]
    vkir dis FILE.spv [-o OUT] [--max-file-size SIZE]

Each file is checked by its kind: a SPIR-V binary (.spv, or any file starting with the SPIR-V
magic number) is validated with SPIRV-Tools; SPIR-V assembly (.spvasm) is assembled first; GLSL
sources (.comp, .glsl, .vert, .frag, ...) and HLSL sources (.hlsl: glslang's HLSL front end,
compute by default, entry point `--entry`, else "main") are compiled by glslang first, whose
messages are the report when that fails. `--auto-map-bindings` has glslang give resources
without a binding the next free one (its --amb), as projects that declare none (HLSL registers
of several kinds, GLSL written for another API) build them. A folder stands for the shader files under it. The exit status is 0 when
every file is valid, 1 when any is not, 2 on a usage error (no such file, a file of unknown kind,
a FIFO or device, a file over the size limit: see validate_input). With `-o` the report (in
`--format`) goes to REPORT and the text report to stdout as well. File names and messages are
printed escaped (validate_input.printable): a hostile name cannot forge a line of a CI log.
"""

from __future__ import annotations

import fnmatch
import json
import re
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import ArgumentError, SpirvValidationError
from ..target import TARGET_ENVS
from .validate_input import (DEFAULT_MAX_BYTES, annotation_data, annotation_property,
                             check_input, parse_size, printable, read_head, read_input,
                             shown)

SPIRV_SUFFIXES = (".spv",)
ASM_SUFFIXES = (".spvasm",)
GLSL_SUFFIXES = (".comp", ".glsl", ".vert", ".frag", ".geom", ".tesc", ".tese", ".mesh", ".task",
                 ".rgen", ".rint", ".rahit", ".rchit", ".rmiss", ".rcall")
HLSL_SUFFIXES = (".hlsl",)
SPIRV_MAGIC = b"\x03\x02\x23\x07"


@dataclass
class Problem:
    """One reason a file is invalid: which stage (`glslang`, `assemble`, `binary`, `validate`),
    the message, the offending instruction and the disassembly around it (when known)."""

    stage: str
    message: str
    instruction: str = ""
    context: list = field(default_factory=list)


@dataclass
class FileResult:
    """The outcome for one file: its kind ("spirv", "spvasm", "glsl", "hlsl") and its
    problems."""

    file: str
    kind: str
    problems: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def valid(self) -> bool:
        """True when the file has no problem."""
        return not self.problems


def file_kind(path: Path) -> str | None:
    """"spirv", "spvasm", "glsl" or "hlsl" by suffix (or the SPIR-V magic number), else None."""
    suffix = path.suffix.lower()
    if suffix in SPIRV_SUFFIXES:
        return "spirv"
    if suffix in ASM_SUFFIXES:
        return "spvasm"
    if suffix in GLSL_SUFFIXES:
        return "glsl"
    if suffix in HLSL_SUFFIXES:
        return "hlsl"
    try:
        head = read_head(path, 4)
    except ArgumentError:
        return None   # unreadable, or not a regular file: no kind
    return "spirv" if head in (SPIRV_MAGIC, SPIRV_MAGIC[::-1]) else None


def matches(path: Path, patterns, root: Path | None = None) -> bool:
    """Whether `path` (its name, its path, or its path below `root`) matches a glob pattern."""
    names = [path.name, path.as_posix()]
    if root is not None:
        try:
            names.append(path.relative_to(root).as_posix())
        except ValueError:
            pass
    return any(fnmatch.fnmatch(n, pat) for pat in patterns for n in names)


def expand(paths, globs=(), excludes=(), max_bytes: int = DEFAULT_MAX_BYTES) -> list[Path]:
    """The files named by `paths` (folders: the shader files under them, sorted: those matching
    one of `globs`, by default every shader suffix), less those matching one of `excludes`
    (e.g. "*.h.glsl" for headers that are included, not compiled); ArgumentError for a missing
    path, a file of unknown kind, one that is not a regular file or holds over `max_bytes`, or
    a folder holding no shader."""
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            # not only regular files: a FIFO or device named like a shader is refused below,
            # not skipped unchecked
            found = sorted(f for f in p.rglob("*") if not f.is_dir()
                           and (matches(f, globs, p) if globs else
                                f.suffix.lower() in SPIRV_SUFFIXES + ASM_SUFFIXES + GLSL_SUFFIXES
                                + HLSL_SUFFIXES)
                           and not matches(f, excludes, p))
            if not found:
                raise ArgumentError(f"{shown(p)}: folder holds no .spv, .spvasm, GLSL or HLSL "
                                    "shader file"
                                    + (" matching the patterns" if globs or excludes else ""))
            out.extend(found)
        elif excludes and matches(p, excludes):
            continue
        elif not p.exists():
            raise ArgumentError(f"{shown(p)}: no such file or folder")
        elif not p.is_file():   # a FIFO or a device would block or never end
            check_input(p, max_bytes)   # raises, naming the kind
            raise ArgumentError(f"{shown(p)}: not a regular file or folder")
        elif file_kind(p) is None:
            raise ArgumentError(f"{shown(p)}: unknown kind of file (expected .spv, .spvasm, .hlsl "
                                f"or a GLSL suffix: {', '.join(GLSL_SUFFIXES)})")
        else:
            out.append(p)
    for f in out:
        check_input(f, max_bytes)   # refused before anything is checked; reads check again
    return out




def compile_glsl_file(path: Path, env: str, includes=(), defines=None,
                      stage: str | None = None,
                      max_bytes: int = DEFAULT_MAX_BYTES, auto_map: bool = False,
                      entry: str | None = None, depfile: Path | None = None,
                      ) -> tuple[bytes | None, str]:
    """(SPIR-V bytes, "") when glslang compiles `path` for `env`, else (None, its messages,
    where the file's name is written as `shown` prints it). `includes`: folders searched by
    `#include`; `defines`: {NAME: value or None} (-D); `stage`: the shader stage of a file whose
    suffix does not say it (.glsl and .hlsl: "comp"); `auto_map`: glslang's --auto-map-bindings;
    `entry`: an HLSL source's entry point (glslang -e; default "main"); `depfile`: where glslang
    writes the files the source includes (--depfile); ArgumentError when `path` is not a
    regular file of at most `max_bytes`."""
    from ..runtime.glsl import INCLUDE_PREAMBLE, GlslError, run_glslang

    with tempfile.TemporaryDirectory(prefix="vkir-validate-") as tmp:
        out = Path(tmp) / "out.spv"
        cmd = ["-V", "--target-env", env, "-o", str(out)]
        cmd += [f"-I{d}" for d in includes]
        cmd += [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in (defines or {}).items()]
        if stage is not None:
            cmd += ["-S", stage]
        elif path.suffix.lower() in (".glsl",) + HLSL_SUFFIXES:
            cmd += ["-S", "comp"]
        if path.suffix.lower() in HLSL_SUFFIXES:
            # glslang compiles an HLSL source without the entry function to an empty `main`
            # and says nothing: name it here instead of calling such a module valid
            name = entry or "main"
            if not re.search(rb"\b" + name.encode() + rb"\s*\(", read_input(path, max_bytes)):
                return None, (f"ERROR: {shown(path)}: no entry point function {name!r} in the "
                              "HLSL source (name it with --entry)")
            cmd += ["-D", "-e", name]   # a lone -D: the input is HLSL
        if auto_map:
            cmd += ["--auto-map-bindings"]
        if depfile is not None:
            cmd += ["--depfile", str(depfile)]
        if b"#include" in read_input(path, max_bytes):
            cmd += ["-P" + INCLUDE_PREAMBLE]
        try:
            proc = run_glslang(cmd + [str(path)], f"on {path}")
        except GlslError as exc:
            return None, str(exc)
        if proc.returncode != 0 or not out.is_file():
            name = shown(path)   # glslang echoes the name raw: it may hold a newline
            lines = [s for s in (proc.stdout + proc.stderr).replace(str(path), name).splitlines()
                     if s.strip() and s.strip() != name]
            # the errors first: a report's one-line message is the first line, not a warning
            lines.sort(key=lambda s: not s.lstrip().startswith("ERROR"))
            return None, "\n".join(lines) or f"glslang exited with status {proc.returncode}"
        size = out.stat().st_size
        if size > max_bytes:   # a macro bomb's module: validating it would cost many times that
            return None, (f"glslang's SPIR-V of it is {size} bytes, over the limit of {max_bytes} "
                          "bytes per input (raise it with --max-file-size)")
        return out.read_bytes(), ""


def assemble_text(text: str, env: str = "vulkan1.1") -> bytes:
    """SPIR-V assembly to a binary for target environment `env` (as spirv-as --target-env does:
    a "; Version: 1.x" comment, as spirv-dis writes it, is a comment and chooses nothing);
    SpirvValidationError on a syntax error."""
    from ..spirv import assemble

    return assemble(text, env)


def check_words(data: bytes, env: str) -> list[Problem]:
    """The problems of a SPIR-V binary for `env` (empty when valid)."""
    from ..spirv.tools import diagnose

    if len(data) % 4 or len(data) < 20:
        return [Problem("binary", f"truncated SPIR-V: {len(data)} bytes is not a whole number of "
                                  "32-bit words with a 5-word header")]
    if data[:4] not in (SPIRV_MAGIC, SPIRV_MAGIC[::-1]):
        return [Problem("binary", f"not a SPIR-V binary: magic number {data[:4].hex()}, "
                                  "expected 07230203")]
    diag = diagnose(data, env)
    if diag is None:
        return []
    return [Problem("validate", diag.message, diag.instruction, list(diag.context))]


def check_file(path: Path, env: str, includes=(), defines=None, stage=None,
               label: str = "", max_bytes: int = DEFAULT_MAX_BYTES, auto_map: bool = False,
               entry: str | None = None, depfile: Path | None = None) -> FileResult:
    """Validate one file for `env`, compiling or assembling it first as its kind needs (GLSL
    and HLSL with `includes`, `defines`, `stage`, `auto_map`, `entry` and `depfile`, see
    compile_glsl_file); the result names the file plus `label` (a variant's defines) and its
    `seconds` is how long that took. ArgumentError when the file is not a regular file of at
    most `max_bytes`."""
    started = time.perf_counter()
    result = _check_file(path, env, includes, defines, stage, max_bytes, auto_map, entry,
                         depfile)
    if label:
        result.file = f"{result.file} [{label}]"
    result.seconds = time.perf_counter() - started
    return result


def _check_file(path: Path, env: str, includes, defines, stage, max_bytes: int,
                auto_map: bool = False, entry: str | None = None,
                depfile: Path | None = None) -> FileResult:
    kind = file_kind(path)
    result = FileResult(str(path), kind)
    if kind in ("glsl", "hlsl"):
        data, messages = compile_glsl_file(path, env, includes, defines, stage, max_bytes,
                                           auto_map, entry, depfile)
        if data is None:
            result.problems.append(Problem("glslang", messages))
            return result
    elif kind == "spvasm":
        try:
            data = assemble_text(read_input(path, max_bytes).decode(errors="replace"), env)
        except SpirvValidationError as err:
            result.problems.append(Problem("assemble", str(err)))
            return result
    else:
        data = read_input(path, max_bytes)
    result.problems.extend(check_words(data, env))
    return result


# -- reports -------------------------------------------------------------------------------------
def text_report(results, env: str) -> str:
    """The results as text, one line per file and its problems (names and messages escaped by
    `shown` and `printable`: each line is one line and no CI runner reads it as a command)."""
    lines = []
    for r in results:
        name = shown(r.file)
        if r.valid:
            lines.append(f"{name}: ok")
            continue
        for p in r.problems:
            first, *rest = p.message.splitlines() or [""]
            lines.append(f"{name}: error ({p.stage}): {printable(first)}")
            lines.extend("    " + printable(s) for s in rest)
            if p.instruction:
                lines.append(f"    instruction: {printable(p.instruction)}")
            lines.extend("    " + printable(s) for s in p.context)
    bad = sum(not r.valid for r in results)
    lines.append(f"{len(results)} file(s) checked for {env}: "
                 f"{'all valid' if not bad else f'{bad} invalid'}")
    return "\n".join(lines) + "\n"


def json_report(results, env: str) -> str:
    """The results as a JSON document."""
    doc = {"target_env": env, "valid": all(r.valid for r in results),
           "files": [{"file": r.file, "kind": r.kind, "valid": r.valid,
                      "problems": [asdict(p) for p in r.problems]} for r in results]}
    return json.dumps(doc, indent=2) + "\n"


def junit_report(results, env: str) -> str:
    """JUnit XML: one test case per file, a <failure> with the whole message when invalid."""
    bad = sum(not r.valid for r in results)
    total = f"{sum(r.seconds for r in results):.3f}"
    suites = ET.Element("testsuites", name="vkir validate", tests=str(len(results)),
                        failures=str(bad), time=total)
    suite = ET.SubElement(suites, "testsuite", name=f"vkir validate ({env})", tests=str(len(results)),
                          failures=str(bad), errors="0", skipped="0", time=total)
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=f"vkir.tools.validate.{r.kind}",
                             name=_xml_text(r.file), time=f"{r.seconds:.3f}")
        if not r.valid:
            first = r.problems[0]
            failure = ET.SubElement(case, "failure", type=first.stage,
                                    message=_xml_text((first.message.splitlines() or [""])[0]))
            failure.text = _xml_text(text_report([r], env).rsplit("\n", 2)[0])
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


_LINE = re.compile(r"^(?:ERROR|WARNING): (?P<file>.+?):(?P<line>\d+): (?P<text>.*)$")


def _located_problems(results):
    """(result, its file without a variant suffix, problem, the message's lines, glslang's first
    `file:line: text` match or None) for every problem of `results`."""
    for r in results:
        path = r.file.split(" [", 1)[0]
        for p in r.problems:
            lines = p.message.splitlines() or [""]
            first = next((m for m in map(_LINE.match, lines) if m), None)
            yield r, path, p, lines, first


def sarif_report(results, env: str) -> str:
    """SARIF 2.1.0 (what code-scanning services read): one result per problem, with the file
    and, where glslang gives one, the line."""
    from .. import __version__

    out = []
    for r, path, p, lines, first in _located_problems(results):
        location = {"artifactLocation": {"uri": Path(path).as_posix()}}
        if first:
            location["region"] = {"startLine": int(first["line"])}
        out.append({"ruleId": p.stage, "level": "error",
                    "message": {"text": (first["text"] if first else lines[0])
                                + (f" ({r.file})" if r.file != path else "")},
                    "locations": [{"physicalLocation": location}]})
    doc = {"version": "2.1.0",
           "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
           "runs": [{"tool": {"driver": {"name": "vkir validate", "version": __version__,
                                         "informationUri": "https://pypi.org/project/vkir/",
                                         "rules": [{"id": s} for s in
                                                   ("glslang", "assemble", "binary", "validate")]}},
                     "properties": {"targetEnv": env},
                     "results": out}]}
    return json.dumps(doc, indent=2) + "\n"


# characters XML 1.0 cannot carry (a bad module's strings may hold any byte)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """`text` with every character XML cannot carry written as an escape (\\xNN)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256
                        else f"\\u{ord(m.group()):04x}", text)


def github_report(results, env: str) -> str:
    """GitHub Actions annotations: one `::error` workflow command per problem (file and, where
    glslang gives one, line; the message percent-encoded as the format asks, so that it is one
    line), then the text report's summary line."""
    out = []
    for r, path, p, _lines, first in _located_problems(results):
        props = f"file={annotation_property(path)}"
        if first:
            props += f",line={int(first['line'])}"
        props += f",title={annotation_property(f'vkir validate ({p.stage}): {r.file}')}"
        out.append(f"::error {props}::{annotation_data(p.message)}")
    return "\n".join(out + [text_report(results, env).rstrip("\n").rsplit("\n", 1)[-1]]) + "\n"


REPORTS = {"text": text_report, "json": json_report, "junit": junit_report, "sarif": sarif_report,
           "github": github_report}


# -- commands ------------------------------------------------------------------------------------
def cmd_validate(args) -> int:
    """`vkir validate`: validate the files; exit status 0 when all are valid, 1 when any is not."""
    from .validate_jobs import Options, run_jobs

    options = Options.from_args(args)
    files = expand(args.files, args.glob or (), args.exclude or (), options.max_bytes)
    results = run_jobs(files, args.target_env, options)
    report = REPORTS[args.format](results, args.target_env)
    if args.output:
        try:
            Path(args.output).write_text(report)
        except OSError as exc:
            raise ArgumentError(f"cannot write the report to {shown(args.output)}: "
                                f"{exc.strerror}") from None
        if args.format != "text":
            report = text_report(results, args.target_env)
    sys.stdout.write(report)
    return 0 if all(r.valid for r in results) else 1


def cmd_dis(args) -> int:
    """`vkir dis`: print the disassembly of a SPIR-V binary."""
    from ..spirv import disassemble

    path = Path(args.file)
    if not path.exists():
        raise ArgumentError(f"{shown(path)}: no such file")
    limit = parse_size(args.max_file_size) if args.max_file_size else DEFAULT_MAX_BYTES
    check_input(path, limit)
    kind = file_kind(path)
    if kind in ("glsl", "hlsl"):
        data, messages = compile_glsl_file(path, "vulkan1.2", max_bytes=limit)
        if data is None:
            print("\n".join(printable(s) for s in
                            f"{shown(path)}: error (glslang): {messages}".splitlines()),
                  file=sys.stderr)
            return 1
    elif kind == "spirv":
        data = read_input(path, limit)
    else:
        raise ArgumentError(f"{shown(path)}: vkir dis takes a SPIR-V binary (.spv) or a GLSL "
                            "source")
    try:
        text = disassemble(data)
    except (SpirvValidationError, ValueError) as err:
        print(f"{shown(path)}: error: {printable(str(err))}", file=sys.stderr)
        return 1
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def add_commands(sub) -> None:
    """Register `validate` and `dis` on the `vkir` command's subparsers."""
    p = sub.add_parser("validate", help="validate SPIR-V (.spv, .spvasm) and GLSL shader files",
                       description="Validate shader files with SPIRV-Tools (GLSL compiled by glslang "
                                   "first). Exit status: 0 all valid, 1 any invalid, 2 usage error.")
    p.add_argument("files", nargs="+", metavar="FILE", help="shader files or folders of them")
    p.add_argument("--target-env", choices=TARGET_ENVS, default="vulkan1.1")
    p.add_argument("--format", choices=tuple(REPORTS), default="text")
    p.add_argument("-o", "--output", metavar="REPORT", help="write the report here")
    p.add_argument("-I", dest="include", action="append", metavar="DIR",
                   help="folder searched by GLSL #include (repeatable)")
    p.add_argument("-D", dest="define", action="append", metavar="NAME[=VALUE]",
                   help="GLSL macro for every source (repeatable)")
    p.add_argument("--variants", metavar="FILE.json",
                   help='per-source define sets: {"glob": [{"NAME": "VALUE", ...}, ...]}; each '
                        "matching source is checked once per set")
    p.add_argument("--glob", action="append", metavar="PATTERN",
                   help="in folders, check only files matching it (repeatable)")
    p.add_argument("--exclude", action="append", metavar="PATTERN",
                   help="skip files matching it, e.g. headers (repeatable)")
    p.add_argument("-S", "--stage", metavar="STAGE",
                   help="shader stage of GLSL files whose suffix does not say it (default comp)")
    p.add_argument("--auto-map-bindings", action="store_true",
                   help="give resources declared without a binding the next free one "
                        "(glslang --amb)")
    p.add_argument("--entry", metavar="NAME",
                   help='entry point of HLSL sources (default "main")')
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="files checked at once (0: one per CPU)")
    p.add_argument("--cache", metavar="DIR",
                   help="reuse results of unchanged files (content, includes, defines, tool "
                        "versions)")
    p.add_argument("--max-file-size", metavar="SIZE",
                   help=f"largest input file read, e.g. 64M (default {DEFAULT_MAX_BYTES >> 20}M); "
                        "larger ones, FIFOs and devices are refused (exit status 2)")
    p.set_defaults(fn=cmd_validate)

    p = sub.add_parser("dis", help="print the disassembly of a SPIR-V binary")
    p.add_argument("file", metavar="FILE.spv")
    p.add_argument("-o", "--output", metavar="OUT")
    p.add_argument("--max-file-size", metavar="SIZE",
                   help=f"largest input read (default {DEFAULT_MAX_BYTES >> 20}M)")
    p.set_defaults(fn=cmd_dis)
