"""Print which vkir packages import which, and fail on an arrow the layering forbids.

    python tools/import_graph.py            # the graph, then the violations (exit 1 if any):
                                            # forbidden arrows, cycles between packages (lazy
                                            # imports included), import-time module cycles and
                                            # imports of another module's private names
    python tools/import_graph.py --quiet    # only the violations

Reads the source with `ast` (nothing is imported, so it needs no Vulkan loader and no install).
Every import counts, including the ones inside functions (marked "lazy" in the graph): a lazy
import is still a dependency, only a deferred one. A "package" is vkir's first-level package or
module (`vkir.ir`, `vkir.api`, ...); the top-level folders spirv/ and runtime/ are `vkir.spirv`
and `vkir.runtime`, as they install.

No two packages import each other, directly or around a circle, counting lazy imports too
(`package_cycles`): a cycle through a lazy import is still two layers that each need the other.

The layering, bottom to top: errors, config (the VKIR_* environment variables), store (files
kept between processes), timing, limits (the one Limits type of devices and its checks, below
the target and the runtime); target (the compilation target, plain data); ir;
abi (a compiled kernel's dispatch description); arith; analysis; script, transform, schedule, binding,
aliasing (which arguments share memory), interpreter; spirv (the IR -> SPIR-V backend); runtime
(Vulkan, knows no IR); and the facade (api, lowering, cli, demo, ops, ...) that joins them. A package imports only packages below it
(ALLOWED); anything not listed there is facade and may import anything, but nothing below the
facade may import it.

The device seam (vkir.seam: the Runtime protocol, its capabilities and the backend registry) sits
below the kernels that use it (vkir.driver) and the backends that implement it (vkir.backends);
the registry names backends by text ("module:attribute") and imports them only when asked.
Inside the facade, the seam is also a rule on modules (FORBIDDEN):
`Kernel` (vkir.driver.kernel and its parts kernel_calls, kernel_values, kernel_variants,
building), `ShaderKernel` (vkir.driver.shader) and the dispatch helpers every kernel shares
(vkir.driver.dispatch) reach a device only through a backend's Runtime, so they import no
vkir.runtime, not even lazily; only the Vulkan backend (vkir.backends.vulkan) adapts it.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"vkir": ROOT / "vkir", "vkir.spirv": ROOT / "spirv", "vkir.runtime": ROOT / "runtime",
           "vkir.benchmarks": ROOT / "benchmarks"}

# package -> the packages it may import (besides itself); packages not listed are the facade
ALLOWED = {
    "vkir.errors": set(),
    "vkir.quirks": set(),
    "vkir.features": set(),
    "vkir.limits": {"vkir.errors"},
    "vkir.config": {"vkir.errors"},
    "vkir.store": {"vkir.errors", "vkir.config"},
    "vkir.target": {"vkir.errors", "vkir.quirks", "vkir.features", "vkir.limits", "vkir.seam"},
    "vkir.images": {"vkir.errors"},
    "vkir.ir": {"vkir.errors", "vkir.images"},
    "vkir.abi": {"vkir.errors", "vkir.ir"},
    "vkir.arith": {"vkir.errors", "vkir.ir"},
    "vkir.analysis": {"vkir.errors", "vkir.ir", "vkir.arith", "vkir.target", "vkir.images"},
    "vkir.script": {"vkir.errors", "vkir.ir", "vkir.arith", "vkir.analysis", "vkir.images"},
    "vkir.transform": {"vkir.errors", "vkir.ir", "vkir.arith", "vkir.analysis", "vkir.target",
                       "vkir.config"},
    "vkir.schedule": {"vkir.errors", "vkir.ir", "vkir.arith", "vkir.analysis", "vkir.transform",
                      "vkir.target", "vkir.config"},
    "vkir.binding": {"vkir.errors", "vkir.ir", "vkir.images"},
    "vkir.aliasing": {"vkir.errors"},
    "vkir.interpreter": {"vkir.errors", "vkir.ir", "vkir.arith", "vkir.analysis",
                         "vkir.binding", "vkir.aliasing", "vkir.config", "vkir.store",
                         "vkir.images"},
    "vkir.spirv": {"vkir.errors", "vkir.ir", "vkir.arith", "vkir.analysis", "vkir.target",
                   "vkir.abi", "vkir.features", "vkir.images"},
    "vkir.timing": set(),
    "vkir.runtime": {"vkir.errors", "vkir.timing", "vkir.config", "vkir.quirks",
                     "vkir.features", "vkir.store", "vkir.images", "vkir.limits"},
    "vkir.seam": {"vkir.errors", "vkir.timing", "vkir.limits"},
}

# module -> the packages it must not import at all (lazy imports included)
FORBIDDEN = {
    "vkir.driver.kernel": {"vkir.runtime"},
    "vkir.driver.kernel_calls": {"vkir.runtime"},
    "vkir.driver.kernel_values": {"vkir.runtime"},
    "vkir.driver.kernel_variants": {"vkir.runtime"},
    "vkir.driver.building": {"vkir.runtime"},
    "vkir.driver.dispatch": {"vkir.runtime"},
    "vkir.driver.shader": {"vkir.runtime"},
}


def package_of(module: str) -> str | None:
    """The graph node of a dotted vkir module name (None outside vkir)."""
    parts = module.split(".")
    if parts[0] != "vkir":
        return None
    return ".".join(parts[:2]) if len(parts) > 1 else "vkir"


def module_name(prefix: str, root: Path, path: Path) -> str:
    """The dotted name `path` installs as."""
    rel = path.relative_to(root).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join([prefix, *parts])


def _type_checking(stmt) -> bool:
    """Whether `stmt` is an `if TYPE_CHECKING:` block (imports for annotations only)."""
    test = getattr(stmt, "test", None)
    return isinstance(stmt, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def imports(path: Path, module: str, annotations: bool = True):
    """(imported vkir module, lazy) for every import statement in the file at `path`; with
    `annotations` False, imports under `if TYPE_CHECKING:` count as lazy (they never run)."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    top_level = {id(n) for n in tree.body}
    for stmt in tree.body:   # `if TYPE_CHECKING:` blocks and the like count as top level
        if isinstance(stmt, (ast.If, ast.Try)) and (annotations or not _type_checking(stmt)):
            top_level.update(id(n) for n in ast.walk(stmt))
    for node in ast.walk(tree):
        lazy = id(node) not in top_level
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, lazy
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[:len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, lazy
            if node.module is None or target in ("vkir",):
                for alias in node.names:   # `from . import runtime`, `from vkir import ir`
                    yield f"{target}.{alias.name}", lazy


def graph() -> dict:
    """{package: {imported package: lazy-only}} over every source file."""
    edges: dict = {}
    known = set(SOURCES) | {f"vkir.{p.stem}" for p in SOURCES["vkir"].iterdir()
                            if p.suffix == ".py" or (p / "__init__.py").exists()}
    for prefix, root in SOURCES.items():
        for path in sorted(root.rglob("*.py")):
            module = module_name(prefix, root, path)
            src = package_of(module)
            out = edges.setdefault(src, {})
            for target, lazy in imports(path, module):
                dst = package_of(target)
                if dst is None or dst == src or dst == "vkir":
                    continue
                if dst not in known:     # `from vkir import T`: a name, not a module
                    continue
                out[dst] = out.get(dst, True) and lazy
    return edges


def module_graph() -> dict:
    """{module: {module it imports at import time}} over every source file: the imports that run
    when the module loads (lazy ones inside functions are left out: they cannot form a cycle at
    import time). `from package import name` counts as importing the package, and the
    submodule when `name` is one."""
    files = {}
    for prefix, root in SOURCES.items():
        for path in sorted(root.rglob("*.py")):
            files[module_name(prefix, root, path)] = path
    edges = {}
    for module, path in files.items():
        out = edges.setdefault(module, set())
        ancestors = {module.rsplit(".", k)[0] for k in range(1, module.count(".") + 1)}
        for target, lazy in imports(path, module, annotations=False):
            if lazy:
                continue
            while target and target not in files:   # a name inside a module: the module
                target = target.rpartition(".")[0]
            # a package is always initialized before its submodules: no cycle through it
            if target and target != module and target not in ancestors:
                out.add(target)
    return edges


def cycles(edges: dict) -> list:
    """The import cycles of a module graph: each strongly connected set of two or more modules
    (or a module importing itself), sorted (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        group.append(m)
                        if m == node:
                            break
                    if len(group) > 1:
                        out.append(sorted(group))
    return sorted(out)


def package_cycles(edges: dict) -> list:
    """One cycle of packages per strongly connected set of the package graph `edges` (lazy
    imports included), each as the list of packages around it, the first repeated at the end."""
    plain = {src: set(targets) for src, targets in edges.items()}
    out = []
    for group in cycles(plain):
        members = set(group)
        start = group[0]
        # breadth-first from start's successors back to start, inside the group
        previous = {}
        frontier = [start]
        while frontier and start not in previous:
            following = []
            for node in frontier:
                for nxt in sorted(plain.get(node, ())):
                    if nxt in members and nxt not in previous:
                        previous[nxt] = node
                        following.append(nxt)
            frontier = following
        path = [start]
        node = previous[start]
        while node != start:
            path.append(node)
            node = previous[node]
        out.append([start, *reversed(path[1:]), start])
    return out


def private_imports() -> list:
    """'module: from X import _name' for every import of another module's private name (a name
    that module keeps to itself; a name a second module needs is public)."""
    out = []
    for prefix, root in SOURCES.items():
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                    for alias in node.names:
                        if alias.name.startswith("_") and not alias.name.startswith("__"):
                            where = module_name(prefix, root, path)
                            out.append(f"{where}: from {'.' * node.level}{node.module or ''} "
                                       f"import {alias.name}")
    return out


def module_violations(rules: dict = FORBIDDEN) -> list:
    """'module -> package' for every import (lazy or not) of a package that `rules` forbids the
    module."""
    out = []
    for prefix, root in SOURCES.items():
        for path in sorted(root.rglob("*.py")):
            module = module_name(prefix, root, path)
            banned = rules.get(module)
            if not banned:
                continue
            for target, lazy in imports(path, module):
                dst = package_of(target)
                if dst in banned:
                    out.append(f"{module} -> {target}{' (lazy)' if lazy else ''}")
    return sorted(set(out))


def violations(edges: dict) -> list:
    """'src -> dst' for every arrow ALLOWED forbids (facade packages are never imported from
    below)."""
    out = []
    for src, targets in sorted(edges.items()):
        allowed = ALLOWED.get(src)
        if allowed is None:
            continue
        for dst, lazy in sorted(targets.items()):
            if dst not in allowed:
                out.append(f"{src} -> {dst}{' (lazy)' if lazy else ''}")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", action="store_true", help="print only the violations")
    opts = parser.parse_args(argv)
    edges = graph()
    if not opts.quiet:
        for src in sorted(edges):
            targets = edges[src]
            shown = ", ".join(f"{d}{' (lazy)' if targets[d] else ''}" for d in sorted(targets))
            print(f"{src:18} -> {shown or '-'}")
    bad = violations(edges) + module_violations() \
        + [f"package cycle: {' -> '.join(c)}" for c in package_cycles(edges)] \
        + [f"import cycle: {' -> '.join(c)}" for c in cycles(module_graph())] \
        + [f"private import in {line}" for line in private_imports()]
    if bad:
        print(f"\n{len(bad)} forbidden import(s):")
        for line in bad:
            print(f"  {line}")
        return 1
    if not opts.quiet:
        print("\nno forbidden imports")
    return 0


if __name__ == "__main__":
    sys.exit(main())
