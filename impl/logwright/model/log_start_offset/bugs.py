"""The bug switches of spec/LogStartOffset.tla (its ``Bug`` constant): the one table the twin,
the Z3 encoding (spec/z3/log_start_offset.py) and ``logwright verify`` read."""

from __future__ import annotations

from logwright.model.bugs import Bug, BugTable

BUG_TABLE = BugTable("LogStartOffset", (
    Bug("RetentionIgnoresHW", "NoNewDataDeleted",
        "retention deletes segments that reach above the HW (hazard 1)"),
    Bug("FollowerRaisesStartBeforeHW", "NeverServeBelowLogStart",
        "a follower that truncates fully raises its start offset but not its HW (hazard 8)"),
    Bug("StartOffsetCheckpointLazy", "NeverServeBelowLogStart",
        "the start offset is checkpointed later, not when it is raised, and DeleteRecords is "
        "acknowledged on the in-memory low watermark (Kafka as shipped, hazard 12)"),
    Bug("HWIgnoresIsr", "CommittedDataOnIsr",
        "the leader advances its HW to its own LEO, not the least LEO of the ISR"),
    Bug("AckBeforeDurable", "NeverServeBelowLogStart",
        "DeleteRecords is acknowledged on the in-memory low watermark, before the new start "
        "offset is durable on the followers"),
))
"""Every bug ``Bug`` can switch on in LogStartOffset, and the invariant each breaks."""

BUGS = BUG_TABLE.names
"""The bug switches' names (``"none"``, the correct model, is not one)."""

EXPECTED_VIOLATION = BUG_TABLE.expected_violation
"""Bug name -> the invariant it must violate (the first one TLC checks that fails)."""
