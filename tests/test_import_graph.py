"""The layering holds: tools/import_graph.py finds no forbidden import (the IR imports no front
end, the runtime no IR, the backend no runtime...), and it does catch one."""

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "import_graph.py"


def _tool():
    spec = importlib.util.spec_from_file_location("import_graph", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_forbidden_imports():
    run = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    # the runtime sees configuration, errors, device facts and the image format table (a leaf
    # package: vkir.images -> vkir.errors), never the IR, the front end or the driver
    assert "vkir.runtime       -> vkir.config, vkir.errors, vkir.features, vkir.images, " \
        "vkir.limits, vkir.quirks, vkir.store, vkir.timing\n" in run.stdout
    assert "vkir.images        -> vkir.errors\n" in run.stdout
    assert "no forbidden imports" in run.stdout


def test_the_graph_sees_lazy_and_relative_imports():
    tool = _tool()
    edges = tool.graph()
    assert edges["vkir.driver"]["vkir.runtime"] is True        # imported inside functions only
    assert edges["vkir.interpreter"]["vkir.binding"] is False  # `from ..binding import ...`
    assert "vkir.script" not in edges["vkir.ir"]


def test_a_forbidden_arrow_is_reported():
    tool = _tool()
    edges = {"vkir.ir": {"vkir.script": True, "vkir.errors": False},
             "vkir.runtime": {"vkir.ir": False}, "vkir.api": {"vkir.runtime": True}}
    assert tool.violations(edges) == ["vkir.ir -> vkir.script (lazy)", "vkir.runtime -> vkir.ir"]


def test_cycles_are_found_in_a_module_graph():
    tool = _tool()
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert tool.cycles(edges) == [["a", "b", "c"]]
    assert tool.cycles(tool.module_graph()) == []      # the tree imports without cycles
    assert tool.private_imports() == []                # and no module takes another's _names


def test_kernel_reaches_devices_only_through_the_seam():
    """vkir.driver.kernel and vkir.driver.dispatch import no vkir.runtime (not even lazily):
    Kernel is backend-neutral; the Vulkan backend is the one adapter, and the rule sees it."""
    tool = _tool()
    assert tool.FORBIDDEN["vkir.driver.kernel"] == {"vkir.runtime"}
    assert tool.module_violations() == []
    found = tool.module_violations({"vkir.backends.vulkan": {"vkir.runtime"}})
    assert "vkir.backends.vulkan -> vkir.runtime (lazy)" in found


def test_no_cycle_between_packages_lazy_imports_included():
    """vkir's first-level modules and packages form no cycle, counting imports inside
    functions: each layer can be understood (and tested) without the ones above it."""
    tool = _tool()
    assert tool.package_cycles(tool.graph()) == []


def test_a_package_cycle_through_a_lazy_import_fails_the_check(monkeypatch, capsys):
    tool = _tool()
    edges = {"vkir.driver": {"vkir.tools": True, "vkir.ir": False},
             "vkir.tools": {"vkir.api": False}, "vkir.api": {"vkir.driver": True},
             "vkir.ir": {}}
    assert tool.package_cycles(edges) == [["vkir.api", "vkir.driver", "vkir.tools", "vkir.api"]]
    monkeypatch.setattr(tool, "graph", lambda: edges)
    assert tool.main(["--quiet"]) == 1
    assert "package cycle: vkir.api -> vkir.driver -> vkir.tools -> vkir.api" in capsys.readouterr().out
