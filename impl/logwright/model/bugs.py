"""Bug switches: the one table per TLA+ module of the bugs its ``Bug`` constant can inject.

What it upholds: one source of truth per module. The Python twin, the Z3 encoding in
spec/z3/ and ``logwright verify`` (which runs ``spec/<Module>_bug_<Bug>.cfg`` for each) all read
the module's :class:`BugTable`, and a test checks that the table, the .cfg files, the Z3
encoding and the TLA+ module's ``Bug = "..."`` tests name the same bugs.
"""

from __future__ import annotations

from dataclasses import dataclass

NO_BUG = "none"
"""The value of ``Bug`` for the correct model."""


@dataclass(frozen=True)
class Bug:
    """One bug switch: its name (the ``Bug`` constant's value), the invariant it must break
    first (the one TLC reports), and what it changes, in a line."""

    name: str
    breaks: str
    what: str


@dataclass(frozen=True)
class BugTable:
    """The bug switches of one TLA+ module, in the order the module lists them."""

    module: str
    bugs: tuple[Bug, ...]

    def __post_init__(self) -> None:
        assert len(set(self.names)) == len(self.names), f"{self.module}: a bug listed twice"
        assert NO_BUG not in self.names, f"{self.module}: {NO_BUG!r} is no bug"

    @property
    def names(self) -> tuple[str, ...]:
        """Every bug's name (``"none"`` is not one)."""
        return tuple(b.name for b in self.bugs)

    @property
    def expected_violation(self) -> dict[str, str]:
        """Bug name -> the invariant it must violate."""
        return {b.name: b.breaks for b in self.bugs}

    def check(self, bug: str) -> str:
        """``bug`` if it is ``"none"`` or one of the table's; else ValueError naming them."""
        if bug != NO_BUG and bug not in self.names:
            raise ValueError(f"unknown Bug {bug!r} for {self.module}; known: "
                             f"{', '.join((NO_BUG, *self.names))}")
        return bug

    def cfg_name(self, bug: str) -> str:
        """The TLC configuration that switches ``bug`` on: ``<Module>_bug_<Bug>.cfg``."""
        return f"{self.module}_bug_{self.check(bug)}.cfg" if bug != NO_BUG \
            else f"{self.module}.cfg"
