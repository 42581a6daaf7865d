"""The Python twin of spec/ReplicaMove.tla: ``twin.py`` (the readable twin, one method
per TLA+ action), ``packed.py`` (its packed numpy encoding) and ``bugs.py`` (its bug switches).

``ReplicaMoveSpec`` is the twin with the packed fast path: the one the registry
:data:`logwright.model.SPECS` and ``logwright verify`` use.
"""

from __future__ import annotations

from logwright.model.replica_move.bugs import BUG_TABLE, BUGS, EXPECTED_VIOLATION
from logwright.model.replica_move.packed import ReplicaMoveSpec
from logwright.model.replica_move.twin import (
    DELETE,
    FUT,
    FUTURE,
    GONE,
    LIVE,
    LOGS,
    NO_LOG,
    SRC,
    Authoritative,
    PerLog,
    ReplicaMoveConfig,
    ReplicaMoveTwin,
    RMState,
)

__all__ = [
    "BUGS",
    "BUG_TABLE",
    "DELETE",
    "EXPECTED_VIOLATION",
    "FUT",
    "FUTURE",
    "GONE",
    "LIVE",
    "LOGS",
    "NO_LOG",
    "SRC",
    "Authoritative",
    "PerLog",
    "RMState",
    "ReplicaMoveConfig",
    "ReplicaMoveSpec",
    "ReplicaMoveTwin",
]
