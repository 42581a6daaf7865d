"""The Python twin of spec/LogStartOffset.tla: ``twin.py`` (the readable twin, one method
per TLA+ action), ``packed.py`` (its packed numpy encoding) and ``bugs.py`` (its bug switches).

``LogStartOffsetSpec`` is the twin with the packed fast path: the one the registry
:data:`logwright.model.SPECS` and ``logwright verify`` use.
"""

from __future__ import annotations

from logwright.model.log_start_offset.bugs import BUG_TABLE, BUGS, EXPECTED_VIOLATION
from logwright.model.log_start_offset.packed import LogStartOffsetSpec
from logwright.model.log_start_offset.twin import (
    LogStartOffsetConfig,
    LogStartOffsetState,
    LogStartOffsetTwin,
    S,
)

__all__ = [
    "BUGS",
    "BUG_TABLE",
    "EXPECTED_VIOLATION",
    "LogStartOffsetConfig",
    "LogStartOffsetSpec",
    "LogStartOffsetState",
    "LogStartOffsetTwin",
    "S",
]
