"""The executable reference model: Python twins of the TLA+ modules in spec/ and their checker.

One package per TLA+ module (``log_start_offset/`` ...): ``twin.py``, the readable twin with one
method per TLA+ action; ``packed.py``, its packed numpy encoding for the batched checker (where
it has one: StrayCleanup has none); and ``bugs.py``, its table of bug switches. model/ imports
only the standard library, numpy and itself (Spark executors import it): running TLC and reading
the environment live in :mod:`logwright.verify`.

What it upholds: each twin's reachable states, explored by :func:`check`, are exactly the TLA+
module's (same distinct-state count and depth as TLC on the same .cfg), so the safety invariants
checked here are the ones the TLA+ modules state.
"""

from __future__ import annotations

from logwright.model.checker import check
from logwright.model.core import (
    INITIAL,
    Action,
    CheckResult,
    Counterexample,
    Invariant,
    ProgressFn,
    ProofResult,
    SearchProgress,
    Spec,
    State,
)

__all__ = [
    "BUG_TABLES",
    "INITIAL",
    "SPECS",
    "Action",
    "Bug",
    "BugTable",
    "CheckResult",
    "Counterexample",
    "Invariant",
    "ProgressFn",
    "ProofResult",
    "SearchProgress",
    "Spec",
    "State",
    "check",
]

# The registry: TLA+ module name -> its Python twin. Imported last, because the twins import
# logwright.model.core. Other modules add one line each.
from logwright.model import (
    controller_fencing,
    fetcher_failure,
    leader_election,
    log_start_offset,
    replica_move,
    stray_cleanup,
)
from logwright.model.bugs import Bug, BugTable
from logwright.model.controller_fencing import ControllerFencingSpec
from logwright.model.fetcher_failure import FetcherFailureSpec
from logwright.model.leader_election import LeaderElectionSpec
from logwright.model.log_start_offset import LogStartOffsetSpec
from logwright.model.replica_move import ReplicaMoveSpec
from logwright.model.stray_cleanup import StrayCleanupSpec

SPECS: dict[str, type[Spec]] = {
    "LogStartOffset": LogStartOffsetSpec,
    "ControllerFencing": ControllerFencingSpec,
    "FetcherFailure": FetcherFailureSpec,
    "StrayCleanup": StrayCleanupSpec,
    "ReplicaMove": ReplicaMoveSpec,
    "LeaderElection": LeaderElectionSpec,
}
"""Every TLA+ module in spec/ that has a Python twin."""

BUG_TABLES: dict[str, BugTable] = {
    "LogStartOffset": log_start_offset.BUG_TABLE,
    "ControllerFencing": controller_fencing.BUG_TABLE,
    "FetcherFailure": fetcher_failure.BUG_TABLE,
    "StrayCleanup": stray_cleanup.BUG_TABLE,
    "ReplicaMove": replica_move.BUG_TABLE,
    "LeaderElection": leader_election.BUG_TABLE,
}
"""Each module's bug switches: the one table its twin, its Z3 encoding and verify read."""
