"""What `vkir validate` reads and prints when its input is hostile (CI runs it on folders that an
untrusted change may fill): every read is bounded and of a regular file only, and every file name
or message it prints is escaped so that it can neither break a line nor start a CI log command.

A FIFO would block a read, a device such as /dev/zero never ends, and a huge module costs many
times its size to validate and disassemble; each is refused with an ArgumentError (exit status 2)
naming the file. The bound per input is DEFAULT_MAX_BYTES unless `--max-file-size` raises it.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ..errors import ArgumentError

DEFAULT_MAX_BYTES = 32 << 20   # per input file; real shaders are far smaller

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """Bytes of a size written as a whole number with an optional K, M or G suffix (binary
    units); ArgumentError for anything else."""
    found = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", str(text), re.IGNORECASE)
    if not found or int(found.group(1)) <= 0:
        raise ArgumentError(f"--max-file-size {text!r}: expected a positive size such as "
                            "1048576, 64M or 1G")
    return int(found.group(1)) * _UNITS[found.group(2).upper()]


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _too_big(path, size: int | None, limit: int, what: str) -> ArgumentError:
    amount = f"{size} bytes" if size is not None else "more bytes"
    return ArgumentError(f"{what}{shown(path)}: {amount} is over the limit of {limit} bytes per "
                         "input file (raise it with --max-file-size)")


def check_input(path, limit: int, what: str = "") -> None:
    """ArgumentError unless `path` is a regular file of at most `limit` bytes (symbolic links
    followed); `what` prefixes the message (e.g. "--variants ")."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ArgumentError(f"{what}{shown(path)}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ArgumentError(f"{what}{shown(path)}: {_kind(st.st_mode)}, not a regular file "
                            "(refused: reading it could block or never end)")
    if st.st_size > limit:
        raise _too_big(path, st.st_size, limit, what)


def _open_regular(path, what: str):
    """A binary file object of `path` opened without blocking and checked through its
    descriptor (a FIFO swapped in after an earlier check is refused rather than waited on),
    and its stat; ArgumentError when it cannot be opened or is not a regular file."""
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
             | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ArgumentError(f"{what}{shown(path)}: {exc.strerror}") from None
    f = os.fdopen(fd, "rb", buffering=0)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        f.close()
        raise ArgumentError(f"{what}{shown(path)}: {_kind(st.st_mode)}, not a regular file "
                            "(refused: reading it could block or never end)")
    return f, st


def read_head(path, count: int) -> bytes:
    """The first `count` bytes of the regular file `path` (ArgumentError as read_input)."""
    f, _ = _open_regular(path, "")
    with f:
        return f.read(count)


def read_input(path, limit: int, what: str = "") -> bytes:
    """The bytes of `path`, read without blocking and at most `limit` of them; ArgumentError
    (naming the file, escaped) when it is not a regular file, cannot be opened or holds more."""
    f, st = _open_regular(path, what)
    with f:
        if st.st_size > limit:
            raise _too_big(path, st.st_size, limit, what)
        chunks, total = [], 0
        while total <= limit:          # the file may grow while it is read
            chunk = f.read(min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    if total > limit:
        raise _too_big(path, None, limit, what)
    return b"".join(chunks)


# C0 and C1 controls, DEL, the Unicode line and paragraph separators, and the lone surrogates
# that stand for undecodable bytes of a file name (os.fsdecode)
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
# what CI runners read as a command in a log line: GitHub Actions `::name ...::` and `##[name]`
# at the start of a line (leading blanks ignored), Azure Pipelines `##vso[` anywhere
_COMMAND_START = re.compile(r"^(\s*)(::|##\[)")
_ANYWHERE = re.compile(r"##vso\[", re.IGNORECASE)


def _escape_char(m: re.Match) -> str:
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:
        return f"\\x{c - 0xDC00:02x}"   # the original byte of an undecodable name
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: str) -> str:
    """`text` as one line that is safe in a CI log: control characters (newlines included) and
    undecodable bytes written as \\xNN escapes, and the first character of a log command
    (`::error ...`, `##[...]`, `##vso[...]`) escaped so that no runner obeys it."""
    out = _UNPRINTABLE.sub(_escape_char, str(text))
    out = _ANYWHERE.sub(lambda m: m.group()[:-1] + "\\x5b", out)
    return _COMMAND_START.sub(lambda m: m.group(1) + "\\x" + f"{ord(m.group(2)[0]):02x}"
                              + m.group(2)[1:], out)


def shown(path) -> str:
    """A file name as printed: `printable`, and a relative name that would start a log command
    written with a leading "./" (the same file, unescaped)."""
    text = os.fspath(path) if isinstance(path, (str, Path, os.PathLike)) else str(path)
    if _COMMAND_START.match(text) and not text.startswith("/"):
        text = "./" + text
    return printable(text)


# GitHub Actions workflow commands: the data after `::` and the values of properties
def annotation_data(text: str) -> str:
    """`text` as the message of a GitHub Actions annotation (%, CR and LF percent-encoded, other
    control characters escaped): one line however many the message has."""
    out = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return _UNPRINTABLE.sub(_escape_char, out)


def annotation_property(text: str) -> str:
    """`text` as a property value of a GitHub Actions annotation (`file=`, `title=`): as
    annotation_data, and `:` and `,` percent-encoded too."""
    return annotation_data(text).replace(":", "%3A").replace(",", "%2C")
