"""Every VKIR_* environment variable, read here and nowhere else, each with one meaning.

They are read when asked for (not once at import), so a test or a program may set one before the
call it affects. `VARIABLES` documents them all; the README's table is the same list.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from .errors import ArgumentError

CACHE_MAX_BYTES_LIMIT = 1 << 62   # the largest VKIR_CACHE_MAX_BYTES: reads of cap + 1 bytes fit

VARIABLES = {
    "VKIR_DEVICE": "the device vkir opens: an index, a name fragment, lavapipe, swiftshader, "
                   "cpu or gpu (default: the best device)",
    "VKIR_VALIDATION": "1: enable the Khronos validation layer and collect its messages",
    "VKIR_CACHE_DIR": "the root of vkir's disk caches (compiled kernels, tuning results, driver "
                      "pipeline caches); \"\" or 0: no disk cache (default: the user cache "
                      "directory)",
    "VKIR_CACHE_MAX_BYTES": "the most bytes a cache root holds; past it the least recently used "
                            "entries are removed (a number of bytes, or with a K, M or G suffix; "
                            "default: 1G)",
    "VKIR_TIMEOUT": "the default timeout in seconds of every wait for the device (default: none)",
    "VKIR_AUTOTUNE": "0: never time configs (the cached winner or the first config that builds); "
                     "1: also time them when an op meets a new shape (default: only explicit "
                     "builds of a tuned template time them)",
    "VKIR_VERIFY_PASSES": "1: run the explicit-cast checker after every pass call",
    "VKIR_NATIVE_LOOPS": "0: the interpreter runs every loop in Python; 1: it hands every loop "
                         "it can translate to compiled C from the first iteration (default: "
                         "loops that run long, where a C compiler is found)",
    "VKIR_GLSLANG": "the glslangValidator vkir compiles GLSL with (default: the bundled one); "
                    "for projects that need newer GLSL extensions",
}

ON_WORDS = ("1", "true", "yes", "on")
OFF_WORDS = ("0", "false", "no", "off")


def _get(name: str) -> str | None:
    assert name in VARIABLES, name
    return os.environ.get(name)


def switch(name: str) -> bool | None:
    """The on/off variable `name`: True for 1/true/yes/on, False for 0/false/no/off (any case,
    spaces ignored), None when unset or empty; ArgumentError naming it for anything else, so a
    typo never silently means the default."""
    raw = (_get(name) or "").strip()
    word = raw.lower()
    if not word:
        return None
    if word in ON_WORDS:
        return True
    if word in OFF_WORDS:
        return False
    raise ArgumentError(f"{name}={raw!r} is not a switch: use one of "
                        f"{', '.join(ON_WORDS)} or {', '.join(OFF_WORDS)}")


def device_selector() -> str | None:
    """$VKIR_DEVICE, or None when unset or empty."""
    return (_get("VKIR_DEVICE") or "").strip() or None


def validation() -> bool:
    """Whether $VKIR_VALIDATION asks for the Khronos validation layer."""
    return bool(switch("VKIR_VALIDATION"))


def verify_passes() -> bool:
    """Whether $VKIR_VERIFY_PASSES asks for the checker after every pass call."""
    return bool(switch("VKIR_VERIFY_PASSES"))


def glslang() -> str | None:
    """$VKIR_GLSLANG (a glslangValidator to use instead of the bundled one), or None when unset
    or empty."""
    return (_get("VKIR_GLSLANG") or "").strip() or None


def native_loops() -> bool | None:
    """$VKIR_NATIVE_LOOPS as a switch: False (never), True (every translatable loop), None when
    unset (the interpreter decides)."""
    return switch("VKIR_NATIVE_LOOPS")


def cache_root() -> Path | None:
    """$VKIR_CACHE_DIR, else the platform's user cache directory for vkir (platformdirs); None
    (no disk cache at all) when VKIR_CACHE_DIR is "" or an off word (0, false, no, off; a folder
    of that name is written ./false)."""
    root = _get("VKIR_CACHE_DIR")
    if root is None:
        import platformdirs

        return Path(platformdirs.user_cache_dir("vkir"))
    if root.strip().lower() in ("", *OFF_WORDS):
        return None
    return Path(root)


def cache_max_bytes() -> int:
    """$VKIR_CACHE_MAX_BYTES in bytes (K, M and G are powers of 1024), 1 GiB when unset or
    empty; ArgumentError when it is not a positive whole number of bytes, or is more than
    CACHE_MAX_BYTES_LIMIT (file sizes and reads must fit in a signed 64-bit count)."""
    raw = (_get("VKIR_CACHE_MAX_BYTES") or "").strip()
    if not raw:
        return 1 << 30
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(raw[-1].upper(), 1)
    digits = raw[:-1] if scale > 1 else raw
    if not (digits.isascii() and digits.isdigit()) or int(digits) == 0:
        raise ArgumentError(f"VKIR_CACHE_MAX_BYTES={raw!r} must be a positive number of bytes "
                            f"(a K, M or G suffix allowed)")
    if int(digits) * scale > CACHE_MAX_BYTES_LIMIT:
        raise ArgumentError(f"VKIR_CACHE_MAX_BYTES={raw!r} is more than the largest cap, "
                            f"{CACHE_MAX_BYTES_LIMIT} bytes (4 EiB)")
    return int(digits) * scale


def timeout() -> float | None:
    """$VKIR_TIMEOUT in seconds, None when unset, empty or infinite; ArgumentError when it is
    not a positive number."""
    raw = (_get("VKIR_TIMEOUT") or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ArgumentError(f"VKIR_TIMEOUT={raw!r} is not a number of seconds") from None
    if not value > 0:
        raise ArgumentError(f"VKIR_TIMEOUT={raw!r} must be a positive number of seconds")
    return None if math.isinf(value) else value


def autotune() -> str:
    """What $VKIR_AUTOTUNE asks: "never" (0), "always" (1) or "default" (unset): see VARIABLES."""
    return {None: "default", False: "never", True: "always"}[switch("VKIR_AUTOTUNE")]
