"""The script front end: `T` (with `@T.prim_func`), `from_script`, and the printer `script`."""

from .namespace import T
from .parser import from_script, prim_func
from .printer import script

__all__ = ["T", "from_script", "prim_func", "script"]
