"""The bug switches of spec/ReplicaMove.tla (its ``Bug`` constant): the one table the twin,
the Z3 encoding (spec/z3/replica_move.py) and ``logwright verify`` read."""

from __future__ import annotations

from logwright.model.bugs import Bug, BugTable

BUG_TABLE = BugTable("ReplicaMove", (
    Bug("SwapBeforeFlush", "AtomicMoveSwap",
        "the future log is renamed live before it is fsynced"),
    Bug("AppendDuringSwap", "AtomicMoveSwap",
        "appends are not blocked during the swap"),
    Bug("SeedRenameOrder", "AtomicMoveSwap",
        "the seed's order: the source is renamed -delete (fsynced) before the future log, not "
        "fsynced first, goes live, and start-up promotes a lone future dir"),
    Bug("SwapBeforeCopyDone", "AtomicMoveSwap",
        "the future log is renamed live before it holds every source record"),
    Bug("CopierResumesFromHW", "AtomicMoveSwap",
        "a restarted copier resumes from the current log's HW, not the future log's end "
        "(KAFKA-9087)"),
    Bug("NoRestampOnOfflineDir", "AtomicMoveSwap",
        "a log served while a dir is offline keeps its generation: a newer copy that had gone "
        "live on the offline dir wins over it, and what it took meanwhile, when the dir is back"),
))
"""Every bug ``Bug`` can switch on in ReplicaMove, and the invariant each breaks."""

BUGS = BUG_TABLE.names
"""The bug switches' names (``"none"``, the correct model, is not one)."""

EXPECTED_VIOLATION = BUG_TABLE.expected_violation
"""Bug name -> the invariant it must violate (the first one TLC checks that fails)."""
