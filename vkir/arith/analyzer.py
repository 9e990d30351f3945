"""The walk that the bound and modular-set analyses share.

Both map an integer expression to a set of values (an interval, a modular set) bottom-up, with
what is known of free Vars in `env`. The nodes whose rule is the same in both live here: a
Broadcast has its value's set, a Select or if_then_else the join of its two branches, and a Let
binds its var to its value's set while its body is analysed.
"""

from __future__ import annotations

from typing import Mapping


class EnvAnalyzer:
    """Subclasses define `visit(e)`, `join(a, b)` (the smallest set holding both) and the
    per-node `visit_<Class>` rules."""

    def __init__(self, env: Mapping):
        self.env = dict(env)

    def branches(self, true_value, false_value):
        """The set of a two-way choice between two expressions."""
        return self.join(self.visit(true_value), self.visit(false_value))

    def visit_Broadcast(self, e):
        """A broadcast has its value's set."""
        return self.visit(e.value)

    def visit_Select(self, e):
        """A select has the join of its branches' sets."""
        return self.branches(e.true_value, e.false_value)

    def visit_Let(self, e):
        """The body's set, with the var bound to its value's set."""
        old = self.env.get(e.var)
        self.env[e.var] = self.visit(e.value)
        try:
            return self.visit(e.body)
        finally:
            if old is None:
                del self.env[e.var]
            else:
                self.env[e.var] = old
