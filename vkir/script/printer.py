"""The script printer lives with the IR (vkir.ir.printer), which needs it for messages and
`str(node)`; this name stays for code that imports it from the front end."""

from ..ir.printer import compact, script

__all__ = ["script", "compact"]
