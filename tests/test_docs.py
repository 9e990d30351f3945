"""The documentation in docs/: every `@T.prim_func` example of the language reference parses,
type-checks, prints back to an equal function and runs in the interpreter; every example program
(a block starting with `import`) of the language reference, the Warp/Taichi page, the interop,
autodiff and torch pages runs on the device, its asserts against numpy included; the
golden-image page's example test passes against its committed golden (tests/docs_pictures/) in
a pytest session of its own, and its comparison snippet runs; the fleet page's programs run in order on a local Ray
fleet; the README links every document."""

import ast
import re
import runpy
import shutil
from pathlib import Path

import numpy as np
import pytest

import vkir
from vkir.analysis import verify_types
from vkir.testing import random_arguments

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _examples():
    text = (DOCS / "language.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    return [b for b in blocks if b.startswith("@T.prim_func")]


def _arguments(func, rng):
    """Random arguments: sizes 8, values small enough for every example to stay in range."""
    return random_arguments(func, rng, sizes=8, int_range=(0, 8), float_range=(-2, 2),
                            scalars=lambda p: np.float32(1.5) if p.dtype.is_float else 3)


def test_there_are_examples_of_every_section():
    assert len(_examples()) >= 10


@pytest.mark.parametrize("source", _examples(), ids=lambda s: s.split("(")[0].split()[-1])
def test_language_examples_parse_check_print_and_run(source):
    func = vkir.from_script(source)
    verify_types(func)
    vkir.assert_structural_equal(vkir.from_script(func.script()), func)
    vkir.interpret(func, *_arguments(func, np.random.default_rng(0)))


PROGRAM_PAGES = ("language.md", "coming-from-warp-taichi.md", "interop.md", "autodiff.md",
                 "torch.md")


def _programs():
    out = []
    for page in PROGRAM_PAGES:
        blocks = re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.S)
        out += [pytest.param(page, b, id=f"{page[:-3]}-{k}") for k, b in enumerate(blocks)
                if b.startswith("import ")]
    return out


def test_each_program_page_has_programs():
    pages = {p.values[0] for p in _programs()}
    assert pages == set(PROGRAM_PAGES) and len(_programs()) >= 6


@pytest.mark.parametrize("page, program", _programs())
def test_program_examples_run(device, tmp_path, page, program):
    """The program as a file (so @T.func can read its source), run on this run's device."""
    tree = ast.parse(program)
    assert any(isinstance(n, (ast.Assert, ast.Raise)) or isinstance(n, ast.Call) and
               "assert" in ast.unparse(n.func) for n in ast.walk(tree)), \
        f"a program of {page} checks nothing it computes"
    path = tmp_path / f"{page[:-3].replace('-', '_')}.py"
    path.write_text(program)
    namespace = runpy.run_path(str(path), run_name="__main__")   # its own checks pass
    # it ran to its end: every name its top-level statements bind is bound
    bound = {t.id for n in tree.body if isinstance(n, ast.Assign)
             for t in n.targets if isinstance(t, ast.Name)}
    assert bound <= set(namespace), bound - set(namespace)


def test_readme_links_every_document():
    readme = (DOCS.parent / "README.md").read_text()
    for name in ("architecture.md", "language.md", "semantics.md", "golden-images.md",
                 "coming-from-warp-taichi.md", "fleet.md", "interop.md", "autodiff.md",
                 "torch.md"):
        assert (DOCS / name).is_file(), name
        assert f"(docs/{name})" in readme, name


def _golden_page_blocks():
    return re.findall(r"```python\n(.*?)```", (DOCS / "golden-images.md").read_text(), re.S)


@pytest.mark.device
def test_golden_images_example_passes_against_its_golden(pytester):
    """The page's test file, as written, with golden/test_disk.png (committed under
    tests/docs_pictures/: not an approved image of this suite's own tests, so `vkir golden stale
    tests/` does not list it), in a pytest session of its own on this run's driver, validation on."""
    [example] = [b for b in _golden_page_blocks() if b.startswith("# test_picture.py")]
    pytester.makepyfile(test_picture=example)
    (pytester.path / "golden").mkdir()
    shutil.copy(Path(__file__).parent / "docs_pictures" / "test_disk.png",
                pytester.path / "golden" / "test_disk.png")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vkir-validation", "-rA")
    result.assert_outcomes(passed=1)


def test_golden_images_snippet_runs():
    [snippet] = [b for b in _golden_page_blocks() if "assert_image_matches(actual" in b]
    namespace = {}
    exec(compile(snippet, "golden-images.md", "exec"), namespace)
    # the one pixel 3 steps off is within the budget of 1 pixel in 16
    result = namespace["result"]
    assert result.differing == 1 and result.max_diff == (3.0, 0.0, 0.0)


@pytest.mark.device   # template.build(fleet=...) returns this process's device's kernel
def test_fleet_page_programs_run_in_order(tmp_path, monkeypatch):
    """docs/fleet.md's Python blocks, as written, one after another in one program (the tuning
    block goes on with the first block's fleet and closes it), on the local Ray instance the
    page starts; tuning records go to a cache folder of the test's own."""
    pytest.importorskip("ray")   # the extra vkir[fleet]
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "fleet.md").read_text(), re.S)
    assert len(blocks) == 2 and blocks[0].startswith("import ")
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "fleet_page.py"
    path.write_text("\n".join(blocks))
    namespace = runpy.run_path(str(path), run_name="__main__")
    reports = namespace["matmul_template"].fleet_report
    assert namespace["fleet"].closed and len(reports) == 2   # one per kind of device
    assert all(r.best is not None for r in reports), [r.table() for r in reports]
