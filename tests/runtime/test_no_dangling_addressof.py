"""`ffi.addressof(f(...))` points into a temporary that is freed as soon as addressof returns,
before the Vulkan call reads it (a fence was once created with garbage flags that way): every
struct whose address goes to Vulkan is held in a name for the duration of the call."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_address_of_a_temporary():
    found = []
    for folder in ("runtime", "vkir"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr == "addressof" and node.args \
                        and isinstance(node.args[0], ast.Call):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found
