"""Every public definition in vkir/, spirv/ and runtime/ has a docstring: module-level functions
and classes whose names do not start with `_` (in modules whose names do not either), and the
public methods and properties of those classes (dunder methods and property setters aside)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("vkir", "spirv", "runtime")


def _public(name: str) -> bool:
    return not name.startswith("_")


def _is_setter(node) -> bool:
    return any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter")
               for d in node.decorator_list)


def missing_docstrings(path: Path, root: Path = ROOT) -> list:
    """'file:line name' for every public definition of the module at `path` without a
    docstring (the file named relative to `root`)."""
    tree = ast.parse(path.read_text(), str(path))
    rel = path.relative_to(root)
    out = []
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in tree.body:
        if not isinstance(node, defs) or not _public(node.name):
            continue
        if ast.get_docstring(node) is None:
            out.append(f"{rel}:{node.lineno} {node.name}")
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _public(item.name) \
                    and not _is_setter(item) and ast.get_docstring(item) is None:
                out.append(f"{rel}:{item.lineno} {node.name}.{item.name}")
    return out


def _modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if any(p.startswith("_") and p != "__init__.py" for p in parts):
                continue
            yield path


def test_every_public_definition_has_a_docstring():
    missing = [m for path in _modules() for m in missing_docstrings(path)]
    assert not missing, f"{len(missing)} public definitions without a docstring:\n" + \
        "\n".join(missing)


def test_the_checker_finds_a_missing_docstring(tmp_path):
    text = ('"""Module."""\n\ndef documented():\n    """Yes."""\n\n\ndef bare():\n    pass\n\n\n'
            'class Thing:\n    """A thing."""\n\n    def method(self):\n        pass\n\n'
            '    def _private(self):\n        pass\n\n    def __len__(self):\n        return 0\n')
    path = tmp_path / "probe.py"
    path.write_text(text)
    assert missing_docstrings(path, tmp_path) == ["probe.py:7 bare", "probe.py:14 Thing.method"]
