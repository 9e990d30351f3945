"""pytest plugin: the explicit-cast checker runs after every pass in every test.

DESIGN section 2: the typing rules are enforced "after every pass in tests". For the whole test
session, `vkir.transform.Pass.__call__` is wrapped so that each pass result goes through
`vkir.analysis.verify_types`; an ill-typed result fails the test with a `TypeCheckError` naming
the pass (the original checker message follows). The wrapper is installed by a session-scoped
autouse fixture and the original `__call__` is restored when the session ends.

Garbage in, garbage out: when a pass returns an ill-typed function because it was given one (a
test feeding deliberately ill-typed IR to a pass), the input is to blame, not the pass, and the
result is let through unchanged. The input is only checked in that case, so well-typed code pays
for one checker run per pass.

Registered from tests/conftest.py (`pytest_plugins = ["checker_plugin"]`); `tests/` is importable
because pytest's default "prepend" import mode puts a rootless conftest's folder on sys.path.
"""

from __future__ import annotations

import functools

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
