"""The bug switches of spec/StrayCleanup.tla (its ``Bug`` constant): the one table the twin,
the Z3 encoding (spec/z3/stray_cleanup.py) and ``logwright verify`` read."""

from __future__ import annotations

from logwright.model.bugs import Bug, BugTable

BUG_TABLE = BugTable("StrayCleanup", (
    Bug("StaleEpochStrayDeletion", "NoNewDataDeleted",
        "a full request from a stale controller epoch still decides what is stray"),
    Bug("NoAgeGuard", "NoNewDataDeleted",
        "strays are deleted whatever their segments' age"),
    Bug("TopicNameOnlyMatch", "NoNewDataDeleted",
        "a stray's deletion matches the partition name only: every log of it goes"),
))
"""Every bug ``Bug`` can switch on in StrayCleanup, and the invariant each breaks."""

BUGS = BUG_TABLE.names
"""The bug switches' names (``"none"``, the correct model, is not one)."""

EXPECTED_VIOLATION = BUG_TABLE.expected_violation
"""Bug name -> the invariant it must violate (the first one TLC checks that fails)."""
