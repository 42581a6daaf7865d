"""The Python twin of spec/ControllerFencing.tla: ``twin.py`` (the readable twin, one method
per TLA+ action), ``packed.py`` (its packed numpy encoding) and ``bugs.py`` (its bug switches).

``ControllerFencingSpec`` is the twin with the packed fast path: the one the registry
:data:`logwright.model.SPECS` and ``logwright verify`` use.
"""

from __future__ import annotations

from logwright.model.controller_fencing.bugs import BUG_TABLE, BUGS, EXPECTED_VIOLATION
from logwright.model.controller_fencing.packed import ControllerFencingSpec
from logwright.model.controller_fencing.twin import (
    LEADER_AND_ISR,
    NO_BROKER_EPOCH,
    NOT_HOSTED,
    STOP_REPLICA,
    ApplyRecord,
    CFState,
    ControllerFencingConfig,
    ControllerFencingTwin,
    Request,
    StoreWriteRecord,
)

__all__ = [
    "BUGS",
    "BUG_TABLE",
    "EXPECTED_VIOLATION",
    "LEADER_AND_ISR",
    "NOT_HOSTED",
    "NO_BROKER_EPOCH",
    "STOP_REPLICA",
    "ApplyRecord",
    "CFState",
    "ControllerFencingConfig",
    "ControllerFencingSpec",
    "ControllerFencingTwin",
    "Request",
    "StoreWriteRecord",
]
