"""In-process SPIRV-Tools: a small cffi (ABI mode) binding to `libSPIRV-Tools-shared`.

`validate(words, env)` raises SpirvValidationError with the validator message and the
disassembly around the offending instruction; `disassemble(words)` and `assemble(text, env)`
convert between binary and text. The library and one context per target environment are loaded
once per process.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cache

import cffi

from ..errors import ArgumentError, SpirvValidationError
from .khronos_grammar import spirv_tools_library

_CDEF = """
typedef int spv_result_t;
typedef int spv_target_env;
typedef struct spv_context_t* spv_context;
typedef struct spv_validator_options_t* spv_validator_options;
typedef struct spv_position_t { size_t line; size_t column; size_t index; } spv_position_t;
typedef struct spv_diagnostic_t {
    spv_position_t position; char* error; bool isTextSource;
} spv_diagnostic_t;
typedef spv_diagnostic_t* spv_diagnostic;
typedef struct spv_text_t { const char* str; size_t length; } spv_text_t;
typedef spv_text_t* spv_text;
typedef struct spv_binary_t { uint32_t* code; size_t wordCount; } spv_binary_t;
typedef spv_binary_t* spv_binary;
typedef struct spv_const_binary_t { const uint32_t* code; const size_t wordCount; }
    spv_const_binary_t;

const char* spvSoftwareVersionString(void);
bool spvParseTargetEnv(const char* s, spv_target_env* env);
spv_context spvContextCreate(spv_target_env env);
void spvContextDestroy(spv_context context);
spv_validator_options spvValidatorOptionsCreate(void);
void spvValidatorOptionsDestroy(spv_validator_options options);
spv_result_t spvValidateWithOptions(const spv_context context,
    const spv_validator_options options, const spv_const_binary_t* binary,
    spv_diagnostic* diagnostic);
spv_result_t spvTextToBinary(const spv_context context, const char* text, const size_t length,
    spv_binary* binary, spv_diagnostic* diagnostic);
spv_result_t spvBinaryToText(const spv_context context, const uint32_t* binary,
    const size_t word_count, const uint32_t options, spv_text* text, spv_diagnostic* diagnostic);
void spvTextDestroy(spv_text text);
void spvBinaryDestroy(spv_binary binary);
void spvDiagnosticDestroy(spv_diagnostic diagnostic);
"""

# spv_binary_to_text_options_t bits (libspirv.h)
_DIS_NO_HEADER = 1 << 5
_DIS_FRIENDLY_NAMES = 1 << 6
_DIS_INDENT = 1 << 3

_lock = threading.Lock()  # SPIRV-Tools contexts are not documented as thread-safe


class _Lib:
    """The loaded library and its per-environment contexts (created lazily, kept per process)."""

    def __init__(self):
        self.ffi = cffi.FFI()
        self.ffi.cdef(_CDEF)
        path = spirv_tools_library()
        self.lib = self.ffi.dlopen(str(path))
        self.contexts = {}
        self.options = self.lib.spvValidatorOptionsCreate()

    def context(self, env: str):
        ctx = self.contexts.get(env)
        if ctx is None:
            penv = self.ffi.new("spv_target_env*")
            if not self.lib.spvParseTargetEnv(env.encode(), penv):
                raise ArgumentError(f"unknown SPIRV-Tools target environment {env!r}")
            ctx = self.lib.spvContextCreate(penv[0])
            self.contexts[env] = ctx
        return ctx

    def take_diagnostic(self, pdiag) -> tuple[str, int | None]:
        """(message, word index or None) of a diagnostic, which is then freed."""
        diag = pdiag[0]
        if diag == self.ffi.NULL:
            return "", None
        try:
            msg = self.ffi.string(diag.error).decode(errors="replace") if diag.error else ""
            index = None if diag.isTextSource else int(diag.position.index)
            return msg, index
        finally:
            self.lib.spvDiagnosticDestroy(diag)


@cache
def _library() -> _Lib:
    return _Lib()


def version() -> str:
    """The SPIRV-Tools version string."""
    lib = _library()
    return lib.ffi.string(lib.lib.spvSoftwareVersionString()).decode()


def _as_words(words) -> bytes:
    """Raw little-endian bytes of a module given as bytes-like data or a sequence of words."""
    if isinstance(words, (list, tuple)):
        import struct

        return struct.pack(f"<{len(words)}I", *words)
    data = bytes(words)
    if len(data) % 4:
        raise ArgumentError(f"SPIR-V binary length {len(data)} is not a multiple of 4")
    return data


def disassemble(words, env: str = "vulkan1.3", friendly_names: bool = True,
                header: bool = True) -> str:
    """SPIR-V assembly text of a binary module (names from OpName when `friendly_names`)."""
    data = _as_words(words)
    lib = _library()
    ffi, c = lib.ffi, lib.lib
    options = _DIS_INDENT | (_DIS_FRIENDLY_NAMES if friendly_names else 0)
    options |= 0 if header else _DIS_NO_HEADER
    ptext = ffi.new("spv_text*")
    pdiag = ffi.new("spv_diagnostic*")
    buf = ffi.from_buffer("uint32_t[]", data)
    with _lock:
        rc = c.spvBinaryToText(lib.context(env), buf, len(data) // 4, options, ptext, pdiag)
        msg, _ = lib.take_diagnostic(pdiag)
        if rc != 0:
            raise SpirvValidationError(f"cannot disassemble SPIR-V: {msg or f'error {rc}'}")
        try:
            # names are UTF-8 by the spec, but nothing checks it: show foreign bytes escaped
            return ffi.string(ptext[0].str, ptext[0].length).decode(errors="backslashreplace")
        finally:
            c.spvTextDestroy(ptext[0])


def assemble(text: str, env: str = "vulkan1.1") -> bytes:
    """Binary words (as bytes) of SPIR-V assembly text; errors raise SpirvValidationError."""
    lib = _library()
    ffi, c = lib.ffi, lib.lib
    src = text.encode()
    pbin = ffi.new("spv_binary*")
    pdiag = ffi.new("spv_diagnostic*")
    with _lock:
        rc = c.spvTextToBinary(lib.context(env), src, len(src), pbin, pdiag)
        msg, _ = lib.take_diagnostic(pdiag)
        if rc != 0:
            raise SpirvValidationError(f"cannot assemble SPIR-V text: {msg or f'error {rc}'}")
        try:
            return bytes(ffi.buffer(pbin[0].code, pbin[0].wordCount * 4))
        finally:
            c.spvBinaryDestroy(pbin[0])


@dataclass(frozen=True)
class Diagnostic:
    """Why SPIRV-Tools rejected a module: `message`, the offending `instruction` (disassembly,
    "" when unknown), its 0-based ordinal `line` (None when unknown) and `context` (disassembly
    lines around it, the offending one marked "-->")."""

    env: str
    message: str
    instruction: str
    line: int | None
    context: tuple

    def report(self) -> str:
        """The message plus the disassembly around the instruction, as validate() raises it."""
        lines = [f"SPIR-V validation failed for {self.env}: {self.message}"]
        if self.line is not None:
            lines.append(f"disassembly around instruction {self.line + 1}:")
        elif self.context:
            lines.append("disassembly (start of module):")
        lines.extend(self.context)
        return "\n".join(lines)


def diagnose(words, env: str = "vulkan1.1") -> Diagnostic | None:
    """None when the module is valid for `env`, else the Diagnostic (see validate)."""
    data = _as_words(words)
    lib = _library()
    ffi, c = lib.ffi, lib.lib
    buf = ffi.from_buffer("uint32_t[]", data)
    binary = ffi.new("spv_const_binary_t*", {"code": buf, "wordCount": len(data) // 4})
    pdiag = ffi.new("spv_diagnostic*")
    with _lock:
        rc = c.spvValidateWithOptions(lib.context(env), lib.options, binary, pdiag)
        msg, index = lib.take_diagnostic(pdiag)
    if rc == 0:
        return None
    return _diagnostic(data, env, (msg or f"validation failed (error {rc})").strip(), index)


def validate(words, env: str = "vulkan1.1") -> None:
    """Validate a module for `env` ("vulkan1.1", "vulkan1.3", ...).

    Raises SpirvValidationError with the validator message and the disassembly lines around the
    offending instruction (the diagnostic's position is a word offset into the binary).
    """
    diag = diagnose(words, env)
    if diag is not None:
        raise SpirvValidationError(diag.report())


def _diagnostic(data: bytes, env: str, message: str, word_index: int | None) -> Diagnostic:
    """The Diagnostic of `message`, with the disassembly lines around the instruction."""
    try:
        text = disassemble(data, env, header=False)
    except SpirvValidationError as err:
        return _undecodable(data, env, message, word_index, err)
    asm = text.splitlines()
    at = _locate(asm, message, data, word_index)
    if at is None:
        return Diagnostic(env, message, "", None, tuple("    " + s for s in asm[:40]))
    lo, hi = max(0, at - 6), min(len(asm), at + 7)
    context = tuple(("--> " if i == at else "    ") + asm[i] for i in range(lo, hi))
    return Diagnostic(env, message, asm[at].strip(), at, context)


def _undecodable(data: bytes, env: str, message: str, ordinal: int | None, err) -> Diagnostic:
    """The Diagnostic of a module that does not disassemble (a binary-parse error, whose position
    is the 1-based ordinal of the bad instruction): the instructions before it, then its words."""
    import struct

    words = struct.unpack(f"<{len(data) // 4}I", data)
    starts, pos = [], 5
    while pos < len(words) and words[pos] >> 16:
        starts.append(pos)
        pos += words[pos] >> 16
    if ordinal is None or not 1 <= ordinal <= len(starts):
        return Diagnostic(env, message, "", None, (f"(no disassembly: {err})",))
    at = starts[ordinal - 1]
    try:
        before = disassemble(data[:at * 4], env, header=False).splitlines()[-6:]
    except SpirvValidationError:
        before = []
    count = words[at] >> 16
    bad = (f"word {at}: opcode {words[at] & 0xFFFF}, {count} word(s): "
           + " ".join(f"{w:#010x}" for w in words[at:at + min(count, 6)]))
    return Diagnostic(env, message, bad, ordinal - 1,
                      tuple("    " + line for line in before) + ("--> " + bad,))


def _normalize(line: str) -> str:
    return " ".join(line.split())


def _locate(asm: list[str], message: str, data: bytes, index: int | None) -> int | None:
    """The line of `asm` (one instruction per line) that the diagnostic is about.

    The validator reports `position.index` as the 1-based ordinal of the offending instruction
    and quotes the instruction's disassembly on the message's last line; a binary-parse error
    reports a word offset instead. Use the ordinal when the quoted text agrees, else search for
    the quoted text, else treat the index as a word offset.
    """
    quoted = [_normalize(s) for s in message.splitlines()[1:] if s.strip()]
    if index is not None and 1 <= index <= len(asm):
        if not quoted or _normalize(asm[index - 1]) in quoted:
            return index - 1
    for q in quoted:
        for i, line in enumerate(asm):
            if _normalize(line) == q:
                return i
    if index is not None:
        return instruction_number(data, index)
    return None


def instruction_number(data: bytes, word_index: int) -> int | None:
    """Which instruction (counting from 0 after the 5-word header) holds word `word_index`."""
    import struct

    count = len(data) // 4
    if word_index < 5 or word_index >= count:
        return None
    words = struct.unpack(f"<{count}I", data)
    pos, n = 5, 0
    while pos < count:
        size = words[pos] >> 16
        if size == 0:
            return None
        if pos <= word_index < pos + size:
            return n
        pos += size
        n += 1
    return None
