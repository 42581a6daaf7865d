"""The bug switches of spec/FetcherFailure.tla (its ``Bug`` constant): the one table the twin,
the Z3 encoding (spec/z3/fetcher_failure.py) and ``logwright verify`` read."""

from __future__ import annotations

from logwright.model.bugs import Bug, BugTable

BUG_TABLE = BugTable("FetcherFailure", (
    Bug("FailWholeFetcher", "FailureContained",
        "a partition failure kills its fetcher (hazard 5)"),
    Bug("FenceWithStaleEpochFails", "FailureContained",
        "a fence fails the partition whatever the request's epoch (hazard 6)"),
    Bug("NoUnfailOnNewEpoch", "FailureContained",
        "a newer leader epoch leaves the partition failed"),
    Bug("StaleFenceStalls", "HealthyPartitionsFetch",
        "a stale fence is dropped with the fetch still outstanding: progress stops, and "
        "every state is still safe"),
))
"""Every bug ``Bug`` can switch on in FetcherFailure, and the invariant each breaks."""

BUGS = BUG_TABLE.names
"""The bug switches' names (``"none"``, the correct model, is not one)."""

EXPECTED_VIOLATION = BUG_TABLE.expected_violation
"""Bug name -> the invariant it must violate (the first one TLC checks that fails)."""
