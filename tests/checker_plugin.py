"""pytest plugin: the explicit-cast checker runs after every pass in every test, and every SPIR-V
module generated anywhere in the suite validates for both Vulkan environments.

DESIGN section 2: the typing rules are enforced "after every pass in tests". For the whole test
session, `vkir.transform.Pass.__call__` is wrapped so that each pass result goes through
`vkir.analysis.verify_types`; an ill-typed result fails the test with a `TypeCheckError` naming
the pass (the original checker message follows). The wrapper is installed by a session-scoped
autouse fixture and the original `__call__` is restored when the session ends.

Garbage in, garbage out: when a pass returns an ill-typed function because it was given one (a
test feeding deliberately ill-typed IR to a pass), the input is to blame, not the pass, and the
result is let through unchanged. The input is only checked in that case, so well-typed code pays
for one checker run per pass.

Issue 3's acceptance ("every kernel in the test suite validates with SPIRV-Tools for Vulkan 1.1
and for Vulkan 1.3 environments") is enforced the same way: from `pytest_configure` on (before
test modules import `codegen` by name), `vkir.spirv.codegen` is wrapped so that each successful
call also generates the same function for the other environment(s) — Vulkan 1.1 with SPIR-V 1.3
and Vulkan 1.3 with SPIR-V 1.6, same features and limits — and codegen validates each of them
(an invalid module raises SpirvValidationError in the test that built the kernel). Results are
memoized per (function, features, limits) by identity, so a kernel re-generated with an equal
target is validated once.

Registered from tests/conftest.py (`pytest_plugins = ["checker_plugin"]`); `tests/` is importable
because pytest's default "prepend" import mode puts a rootless conftest's folder on sys.path.
"""

from __future__ import annotations

import dataclasses
import functools
import sys

import pytest


def checked_call(original):
    """`original` (an unbound Pass.__call__) followed by the checker on its result."""
    from vkir.analysis import verify_types
    from vkir.errors import TypeCheckError

    @functools.wraps(original)
    def __call__(self, func):
        result = original(self, func)
        try:
            verify_types(result)
        except TypeCheckError as exc:
            try:
                verify_types(func)
            except TypeCheckError:
                return result  # ill-typed input: not this pass's fault
            name = getattr(func, "name", None) or "<unnamed>"
            raise TypeCheckError(f"pass {self!r} turned well-typed function {name!r} into an "
                                 f"ill-typed one: {exc}") from exc
        return result

    __call__.__wrapped_by_checker_plugin__ = True
    return __call__


@pytest.fixture(scope="session", autouse=True)
def verify_types_after_every_pass():
    """Wrap vkir.transform.Pass.__call__ with the checker for the session; restore it after."""
    from vkir.transform.base import Pass

    original = Pass.__dict__["__call__"]
    Pass.__call__ = checked_call(original)
    try:
        yield
    finally:
        Pass.__call__ = original


ENVIRONMENTS = (((1, 3), "vulkan1.1"), ((1, 6), "vulkan1.3"))  # Vulkan 1.1 / SPIR-V 1.3, 1.3 / 1.6


def codegen_for_every_environment(original):
    """`original` (vkir.spirv.codegen) that also generates and validates the same function for
    every environment of ENVIRONMENTS, with the caller's features and limits."""
    from vkir.spirv import Target

    checked = {}  # (id(func), target without env) -> func, kept alive so ids stay unique

    @functools.wraps(original)
    def codegen(func, target=None):
        module = original(func, target)
        target = target or Target()
        for version, env in ENVIRONMENTS:
            if env == target.env:
                continue
            other = dataclasses.replace(target, spirv_version=version, env=env)
            key = (id(func), other)
            if key in checked:
                continue
            original(func, other)  # validates for `env`; raises SpirvValidationError otherwise
            checked[key] = func
        return module

    codegen.__wrapped_by_checker_plugin__ = True
    return codegen


def pytest_configure(config):
    """Wrap vkir.spirv.codegen before collection so `from vkir.spirv import codegen` gets it."""
    import vkir.spirv

    package = sys.modules["vkir.spirv.codegen"]  # the codegen package (shadowed by the function)
    original = package.codegen
    wrapped = codegen_for_every_environment(original)
    config._vkir_original_codegen = original
    vkir.spirv.codegen = package.codegen = wrapped


def pytest_unconfigure(config):
    original = getattr(config, "_vkir_original_codegen", None)
    if original is not None:
        import vkir.spirv

        vkir.spirv.codegen = sys.modules["vkir.spirv.codegen"].codegen = original
