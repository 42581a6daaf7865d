"""The Python twin of spec/FetcherFailure.tla: ``twin.py`` (the readable twin, one method
per TLA+ action), ``packed.py`` (its packed numpy encoding) and ``bugs.py`` (its bug switches).

``FetcherFailureSpec`` is the twin with the packed fast path: the one the registry
:data:`logwright.model.SPECS` and ``logwright verify`` use.
"""

from __future__ import annotations

from logwright.model.fetcher_failure.bugs import BUG_TABLE, BUGS, EXPECTED_VIOLATION
from logwright.model.fetcher_failure.packed import FetcherFailureSpec
from logwright.model.fetcher_failure.twin import (
    NO_FETCH,
    NOT_FAILED,
    NOT_HOSTED,
    FetcherFailureConfig,
    FetcherFailureTwin,
    FFState,
)

__all__ = [
    "BUGS",
    "BUG_TABLE",
    "EXPECTED_VIOLATION",
    "NOT_FAILED",
    "NOT_HOSTED",
    "NO_FETCH",
    "FFState",
    "FetcherFailureConfig",
    "FetcherFailureSpec",
    "FetcherFailureTwin",
]
