"""The Python twin of spec/StrayCleanup.tla: ``twin.py`` (the readable twin, one method
per TLA+ action), ``packed.py`` (its packed numpy encoding) and ``bugs.py`` (its bug switches).

``StrayCleanupSpec`` is the twin with the packed fast path: the one the registry
:data:`logwright.model.SPECS` and ``logwright verify`` use.
"""

from __future__ import annotations

from logwright.model.stray_cleanup.bugs import BUG_TABLE, BUGS, EXPECTED_VIOLATION
from logwright.model.stray_cleanup.packed import StrayCleanupSpec
from logwright.model.stray_cleanup.twin import (
    LIVE,
    NO_LOG,
    NONE,
    STRAY,
    Deletion,
    Disk,
    FullRequest,
    Log,
    SCState,
    StrayCleanupConfig,
    StrayCleanupTwin,
)

__all__ = [
    "BUGS",
    "BUG_TABLE",
    "EXPECTED_VIOLATION",
    "LIVE",
    "NONE",
    "NO_LOG",
    "STRAY",
    "Deletion",
    "Disk",
    "FullRequest",
    "Log",
    "SCState",
    "StrayCleanupConfig",
    "StrayCleanupSpec",
    "StrayCleanupTwin",
]
