"""docs/architecture.md's package table says what tools/import_graph.py enforces: each package
row's "may import" column is its `ALLOWED` set (with vkir.errors, which every package but those
that may import nothing may import), and every package of `ALLOWED` has a row."""

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _allowed() -> dict:
    spec = importlib.util.spec_from_file_location("import_graph",
                                                  ROOT / "tools" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ALLOWED


def _documented() -> dict:
    """{package: the packages its row may import}, for the rows that are not facade."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Packages and the arrows between them", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `vkir.")]
    table = {}
    for line in rows:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        names = re.findall(r"`(vkir\.[\w.]+)`", cells[0].split("(")[0])
        imports = cells[-1]
        assert names, line
        if imports.startswith("anything"):   # facade: not in ALLOWED
            continue
        deps = set() if imports == "nothing" else {
            "vkir.errors", *(f"vkir.{name.strip()}" for name in imports.split(","))}
        for name in names:
            table[name] = deps
    return table


def test_the_package_table_is_the_allowed_imports():
    documented, allowed = _documented(), _allowed()
    assert set(documented) == set(allowed), set(documented) ^ set(allowed)
    wrong = {name: (sorted(documented[name] - allowed[name]),
                    sorted(allowed[name] - documented[name]))
             for name in allowed if documented[name] != allowed[name]}
    assert not wrong, f"package: (documented only, ALLOWED only) {wrong}"
