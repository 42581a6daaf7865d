"""Effects: what a node's decision asks the world to do (h11's lesson).

A decision (a node handling a message, or a timer of the node firing) changes only the node's own
state and returns effects; the node's driver performs them over the injected network and
scheduler. A decision can therefore be run, replayed and checked without a network, and each
effect is the natural point where a trace event is recorded.

Invariant upheld: an effect is plain data, made before anything is performed; performing it is
the driver's job alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from logwright.protocol.messages import Message


@dataclass(frozen=True)
class Send:
    """Send ``message`` to the node ``dst`` (a response, or a message needing no answer)."""

    dst: str
    message: Message


@dataclass(frozen=True)
class ArmTimer:
    """Run ``action`` (itself a decision of the node) after ``delay_ms``, then every
    ``period_ms`` if given. ``key`` names the timer (and the scheduler task)."""

    key: str
    delay_ms: int
    action: Callable[[], None]
    period_ms: int | None = None

    def __post_init__(self) -> None:
        assert self.delay_ms >= 0, "a timer cannot be armed in the past"
        assert self.period_ms is None or self.period_ms > 0, "a period must be positive"


__all__ = ["ArmTimer", "Send"]
