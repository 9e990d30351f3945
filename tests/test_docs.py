"""The documentation in docs/: every `@T.prim_func` example of the language reference parses,
type-checks, prints back to an equal function and runs in the interpreter; the README links
every document."""

import re
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


def test_readme_links_every_document():
    readme = (DOCS.parent / "README.md").read_text()
    for name in ("architecture.md", "language.md", "semantics.md"):
        assert (DOCS / name).is_file(), name
        assert f"(docs/{name})" in readme, name
