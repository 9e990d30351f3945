"""Public API conventions: `__all__` in vkir and its public modules (every name resolves), the
`py.typed` marker installed with the package, the README's way to the `vkir` command."""

import importlib
from importlib import resources
from pathlib import Path

import pytest

import vkir

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ["vkir", "vkir.api", "vkir.binding", "vkir.errors", "vkir.lowering", "vkir.timing",
          "vkir.autotuning", "vkir.ir", "vkir.arith", "vkir.script", "vkir.analysis",
          "vkir.transform", "vkir.schedule", "vkir.interpreter", "vkir.spirv",
          "vkir.spirv.codegen", "vkir.runtime"]


@pytest.mark.parametrize("name", PUBLIC)
def test_public_modules_declare_all_and_every_name_resolves(name):
    module = importlib.import_module(name)
    assert isinstance(module.__all__, (list, tuple)) and module.__all__, name
    assert len(set(module.__all__)) == len(module.__all__), name
    for attr in module.__all__:
        assert getattr(module, attr) is not None, f"{name}.{attr}"


def test_vkir_exports_the_facade_and_every_error():
    for name in ("T", "from_script", "interpret", "lower", "build", "device", "devices", "array",
                 "empty", "Kernel", "assert_structural_equal", "ir", "VkirError",
                 "ArgumentError", "TypeCheckError", "ScriptError"):
        assert name in vkir.__all__, name
    errors = [getattr(vkir, n) for n in vkir.__all__ if n.endswith("Error")]
    assert all(issubclass(e, vkir.VkirError) for e in errors)


def test_py_typed_marker_is_package_data():
    assert resources.files("vkir").joinpath("py.typed").is_file()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"vkir" = ["py.typed"]' in pyproject


def test_readme_says_how_to_reach_the_command():
    readme = (ROOT / "README.md").read_text()
    assert ".venv/bin/vkir" in readme and "source .venv/bin/activate" in readme


def test_no_aliases_for_old_module_paths():
    """Modules live at one path each: no import hook keeps pre-restructure names alive."""
    import importlib
    import sys

    import vkir  # noqa: F401

    assert not any(type(f).__module__ == "vkir" for f in sys.meta_path)
    for old in ("vkir.sequences", "vkir.shader", "vkir.compile_cache", "vkir.cli"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)
