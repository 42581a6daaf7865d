"""The executable reference model: Python twins of the TLA+ modules in spec/ and their checker.

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
    ProofResult,
    Spec,
    State,
)

__all__ = [
    "INITIAL",
    "SPECS",
    "Action",
    "CheckResult",
    "Counterexample",
    "Invariant",
    "ProofResult",
    "Spec",
    "State",
    "check",
]

# The registry: TLA+ module name -> its Python twin. Imported last, because the twins import
# logwright.model.core. Other modules add one line each.
from logwright.model.controller_fencing import ControllerFencingSpec
from logwright.model.fetcher_failure import FetcherFailureSpec
from logwright.model.log_start_offset import LogStartOffsetSpec
from logwright.model.replica_move import ReplicaMoveSpec
from logwright.model.stray_cleanup import StrayCleanupSpec

SPECS: dict[str, type[Spec]] = {
    "LogStartOffset": LogStartOffsetSpec,
    "ControllerFencing": ControllerFencingSpec,
    "FetcherFailure": FetcherFailureSpec,
    "StrayCleanup": StrayCleanupSpec,
    "ReplicaMove": ReplicaMoveSpec,
}
"""Every TLA+ module in spec/ that has a Python twin."""
