"""Clocks: virtual time for simulation, wall time for the real runtime. Milliseconds throughout."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """A source of the current time in milliseconds since the epoch."""

    def now_ms(self) -> int:
        """The current time in milliseconds."""
        ...


class VirtualClock:
    """A clock that moves only when told to, so a simulated run is reproducible."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        assert start_ms >= 0, "time starts at or after the epoch"
        self._now_ms = start_ms

    def now_ms(self) -> int:
        """The current virtual time."""
        return self._now_ms

    def advance(self, delta_ms: int) -> None:
        """Move time forward by ``delta_ms`` (never backwards)."""
        assert delta_ms >= 0, "virtual time never moves backwards"
        self._now_ms += delta_ms

    def advance_to(self, when_ms: int) -> None:
        """Move time forward to ``when_ms`` if it lies in the future."""
        if when_ms > self._now_ms:
            self._now_ms = when_ms


class WallClock:
    """The real clock, for the real-time runtime only."""

    def now_ms(self) -> int:
        """Milliseconds since the epoch from the system clock."""
        return time.time_ns() // 1_000_000
