"""Module layout rules of vkir's sources (vkir/, spirv/, runtime/): a module over 600 lines is split
by responsibility, and no module shares its name with a function it defines (where a package
re-exports `foo` from `foo.py`, `pkg.foo` is the function or the module depending on what was
imported first). Files still being split or renamed are listed below, each with its reason; the
lists only shrink."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("vkir", "spirv", "runtime")
MAX_LINES = 600

# exceptions, with the reason, while a split or a rename is under way (none today)
LONG_ALLOWED: set = set()
NAME_ALLOWED: set = set()


def _sources():
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            if "__pycache__" not in path.parts and not _generated(path):
                yield path


def _generated(path: Path) -> bool:
    """A file written by a generator says so in its first lines."""
    with path.open() as f:
        head = "".join(f.readline() for _ in range(3))
    return "DO NOT EDIT" in head or "generated file" in head.lower()


def long_modules(paths, root: Path = ROOT) -> list[str]:
    """The files among `paths` with more than MAX_LINES lines (relative to `root`)."""
    return [p.relative_to(root).as_posix() for p in paths
            if len(p.read_text().splitlines()) > MAX_LINES]


def self_named_modules(paths, root: Path = ROOT) -> list[str]:
    """The files among `paths` (a module `foo.py`) that define a top-level function `foo`."""
    out = []
    for p in paths:
        if p.stem.startswith("__"):
            continue
        tree = ast.parse(p.read_text(), str(p))
        if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == p.stem
               for n in tree.body):
            out.append(p.relative_to(root).as_posix())
    return out


def test_no_module_is_over_600_lines():
    over = [f for f in long_modules(_sources()) if f not in LONG_ALLOWED]
    assert over == [], f"split these modules by responsibility: {over}"


def test_no_module_shares_its_name_with_its_function():
    same = [f for f in self_named_modules(_sources()) if f not in NAME_ALLOWED]
    assert same == [], f"rename these modules (the function keeps its name): {same}"


def test_the_allowlists_name_existing_files():
    for name in sorted(LONG_ALLOWED | NAME_ALLOWED):
        assert (ROOT / name).is_file(), f"{name} is gone: remove it from the allowlist"


@pytest.mark.parametrize("text, long, named", [
    ("def f():\n    pass\n" * 301, True, False),   # 602 lines
    ("x = 1\n" * 600, False, False),
    ("def foo():\n    return 1\n", False, True),
    ("class foo:\n    pass\n\ndef bar():\n    pass\n", False, False),
])
def test_the_rules_catch_what_they_describe(tmp_path, text, long, named):
    path = tmp_path / "foo.py"
    path.write_text(text)
    assert long_modules([path], tmp_path) == (["foo.py"] if long else [])
    assert self_named_modules([path], tmp_path) == (["foo.py"] if named else [])
