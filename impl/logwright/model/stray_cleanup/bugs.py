"""The bug switches of spec/StrayCleanup.tla (its ``Bug`` constant): the one table the twin,
the Z3 encoding (spec/z3/stray_cleanup.py) and ``logwright verify`` read."""

from __future__ import annotations

from logwright.model.bugs import Bug, BugTable

BUG_TABLE = BugTable("StrayCleanup", (
    Bug("NoAgeGuard", "NoNewDataDeleted",
        "strays are deleted whatever the age of their newest write"),
    Bug("StaleEpochStrayDeletion", "NoNewDataDeleted",
        "a FULL request of a stale controller epoch still decides strays, for every partition "
        "name whatever version the broker applied"),
    Bug("StraySetInverted", "NoNewDataDeleted",
        "a FULL request sets aside the live logs it lists (the hosted ones) instead of the others"),
    Bug("StopReplicaIgnoresTopicId", "NoNewDataDeleted",
        "StopReplica deletes the live log of the partition name whatever its topic id"),
    Bug("NonNewReplicaWithDirOffline", "NoNewDataDeleted",
        "a replica the request does not mark new is created empty while the broker's log dir "
        "is offline, superseding the one on that dir"),
))
"""Every bug ``Bug`` can switch on in StrayCleanup, and the invariant each breaks."""

BUGS = BUG_TABLE.names
"""The bug switches' names (``"none"``, the correct model, is not one)."""

EXPECTED_VIOLATION = BUG_TABLE.expected_violation
"""Bug name -> the invariant it must violate (the first one TLC checks that fails)."""
