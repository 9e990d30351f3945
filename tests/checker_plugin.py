"""pytest plugin: the explicit-cast checker runs after every pass in every test, and every SPIR-V
module generated anywhere in the suite validates for both Vulkan environments.

The typing rules are enforced "after every pass in tests" by vkir itself: with
VKIR_VERIFY_PASSES=1 (set here for the whole session, before any test runs) every pass call runs
the `vkir.transform.CheckTypes` instrument's check on its result; an ill-typed result fails the
test with a `TypeCheckError` naming the pass (the original checker message follows). Garbage in,
garbage out: when a pass returns an ill-typed function because it was given one (a test feeding
deliberately ill-typed IR to a pass), the input is to blame, not the pass, and the result is let
through unchanged.

The promise ("every kernel in the test suite validates with SPIRV-Tools for Vulkan 1.1
and for Vulkan 1.3 environments") is enforced by wrapping: from `pytest_configure` on (before
test modules import `codegen` by name), `vkir.spirv.codegen` is wrapped so that each successful
call also generates the same function for the other environment(s) — Vulkan 1.1 with SPIR-V 1.3
and Vulkan 1.3 with SPIR-V 1.6, same features and limits — and codegen validates each of them
(an invalid module raises SpirvValidationError in the test that built the kernel). Results are
memoized per (function, target) by identity, so a kernel re-generated with an equal target is
validated once.

Registered from tests/conftest.py (`pytest_plugins = ["checker_plugin"]`); `tests/` is importable
because pytest's default "prepend" import mode puts a rootless conftest's folder on sys.path.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys

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
    """Turn the checker on after every pass; wrap vkir.spirv.codegen before collection so that
    `from vkir.spirv import codegen` gets the wrapper."""
    import vkir.spirv
    from vkir.transform.base import VERIFY_ENV

    os.environ[VERIFY_ENV] = "1"

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
