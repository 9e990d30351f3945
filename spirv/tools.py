"""In-process SPIRV-Tools: a small cffi (ABI mode) binding to `libSPIRV-Tools-shared`.

`validate(words, env)` raises SpirvValidationError with the validator message and the
disassembly around the offending instruction; `disassemble(words)` and `assemble(text, env)`
convert between binary and text. The library and one context per target environment are loaded
once per process.
"""

from __future__ import annotations

import threading
from functools import cache

import cffi

from ..errors import ArgumentError, SpirvValidationError
from .grammar import cmeel_prefix

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
        path = cmeel_prefix() / "lib" / "libSPIRV-Tools-shared.so"
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
            return ffi.string(ptext[0].str, ptext[0].length).decode()
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


def validate(words, env: str = "vulkan1.1") -> None:
    """Validate a module for `env` ("vulkan1.1", "vulkan1.3", ...).

    Raises SpirvValidationError with the validator message and the disassembly lines around the
    offending instruction (the diagnostic's position is a word offset into the binary).
    """
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
        return
    raise SpirvValidationError(_report(data, env, msg or f"validation failed (error {rc})", index))


def _report(data: bytes, env: str, message: str, word_index: int | None) -> str:
    """The message plus disassembly lines around the instruction containing `word_index`."""
    lines = [f"SPIR-V validation failed for {env}: {message.strip()}"]
    try:
        text = disassemble(data, env, header=False)
    except SpirvValidationError as err:
        lines.append(f"(no disassembly: {err})")
        return "\n".join(lines)
    asm = text.splitlines()
    at = _locate(asm, message, data, word_index)
    if at is None:
        lines.append("disassembly (start of module):")
        lines.extend("    " + s for s in asm[:40])
        return "\n".join(lines)
    lo, hi = max(0, at - 6), min(len(asm), at + 7)
    lines.append(f"disassembly around instruction {at + 1}:")
    for i in range(lo, hi):
        lines.append(("--> " if i == at else "    ") + asm[i])
    return "\n".join(lines)


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
