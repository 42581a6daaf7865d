"""The refinement checks' failure, :class:`RefinementViolation` (re-exported by
:mod:`logwright.conformance.refinement`).

It lives in a module of its own because it subclasses :class:`AssertionError`, a built-in type
a mypyc-compiled module cannot subclass: the compiled build compiles ``refinement`` and leaves
this module as Python, so the exception is the same class in both builds.
"""

from __future__ import annotations


class RefinementViolation(AssertionError):
    """The implementation did something its model does not allow.

    ``module`` is the TLA+ module's name, ``reason`` the invariant violated or
    :data:`NO_STEP`, ``before`` and ``after`` the two abstract states as the twin describes them.
    """

    def __init__(self, module: str, reason: str, before: str, after: str,
                 context: str = "") -> None:
        self.module = module
        self.reason = reason
        self.before = before
        self.after = after
        self.context = context
        where = f" ({context})" if context else ""
        super().__init__(
            f"{module} refinement{where}: {reason}\n"
            f"before:\n{_indent(before)}\nafter:\n{_indent(after)}")


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
