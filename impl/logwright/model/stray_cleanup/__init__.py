"""The Python twin of spec/StrayCleanup.tla: ``twin.py`` (the twin, one method per TLA+ action)
and ``bugs.py`` (its bug switches).

``StrayCleanupSpec`` is the twin the registry :data:`logwright.model.SPECS` and ``logwright
verify`` use (it has no packed encoding: see ``twin.py``).
"""

from __future__ import annotations

from logwright.model.stray_cleanup.bugs import BUG_TABLE, BUGS, EXPECTED_VIOLATION
from logwright.model.stray_cleanup.twin import (
    FULL,
    LAI,
    LIVE,
    NO_LOG,
    NO_VERSION,
    NONE,
    STOP,
    STRAY,
    Disk,
    Log,
    Lost,
    Msg,
    SCState,
    StrayCleanupConfig,
    StrayCleanupSpec,
    StrayCleanupTwin,
    Version,
    msg_order,
)

__all__ = [
    "BUGS",
    "BUG_TABLE",
    "EXPECTED_VIOLATION",
    "FULL",
    "LAI",
    "LIVE",
    "NONE",
    "NO_LOG",
    "NO_VERSION",
    "STOP",
    "STRAY",
    "Disk",
    "Log",
    "Lost",
    "Msg",
    "SCState",
    "StrayCleanupConfig",
    "StrayCleanupSpec",
    "StrayCleanupTwin",
    "Version",
    "msg_order",
]
