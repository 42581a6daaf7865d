"""The broker's effects: what its decisions return for the driver (``driver.py``) to perform.

``Send`` is shared by every node (``logwright.protocol.effects``). The broker's timers and
requests carry their continuation (a decision of the broker) with them, where the controller's
are keyed and fed back; so they have names of their own here. Two kinds need the node's request
channel, which numbers requests and pairs them with their answers:
``Call`` expects an answer (or a timeout), ``Notify`` expects none but still takes a fresh
correlation id. Both carry a ``build`` function from correlation id to message, so that the id
is drawn when, and only when, the message is really sent. ``CancelTask`` forgets a timer armed
under a key (a delayed operation that completed before its timeout).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from logwright.frozen import fast_init
from logwright.protocol import Message
from logwright.protocol.effects import Send


@fast_init
@dataclass(frozen=True)
class ArmTask:
    """Run ``action`` (itself a decision of the node) after ``delay_ms``, then every
    ``period_ms`` if given. ``key`` names the timer (and the scheduler task)."""

    key: str
    delay_ms: int
    action: Callable[[], None]
    period_ms: int | None = None

    def __post_init__(self) -> None:
        assert self.delay_ms >= 0, "a timer cannot be armed in the past"
        assert self.period_ms is None or self.period_ms > 0, "a period must be positive"


@fast_init
@dataclass(frozen=True)
class Call:
    """Send ``build(correlation_id)`` to ``dst``; ``on_response`` (a decision of the node) gets
    the answer, or None after ``timeout_ms``."""

    dst: str
    build: Callable[[int], Message]
    on_response: Callable[[Message | None], None]
    timeout_ms: int

    def __post_init__(self) -> None:
        assert self.timeout_ms > 0, "a request needs a positive timeout"


@dataclass(frozen=True)
class Notify:
    """Send ``build(correlation_id)`` to ``dst`` and expect no answer (heartbeats)."""

    dst: str
    build: Callable[[int], Message]


@fast_init
@dataclass(frozen=True)
class CancelTask:
    """Forget the timer last armed under ``key``, if it has not run."""

    key: str


Effect = Send | ArmTask | Call | Notify | CancelTask
"""Everything a broker decision may ask of the world."""

Emit = Callable[[Effect], None]
"""Where a part of the broker puts an effect it decides on while a decision runs."""


class EmittedTimers:
    """A purgatory's timers (``purgatory.Timers``) as effects: arming and cancelling are
    ``ArmTask`` and ``CancelTask`` handed to ``emit``."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit

    def arm(self, key: str, delay_ms: int, action: Callable[[], None]) -> None:
        """Emit ``ArmTask(key, delay_ms, action)``."""
        self.emit(ArmTask(key, delay_ms, action))

    def cancel(self, key: str) -> None:
        """Emit ``CancelTask(key)``."""
        self.emit(CancelTask(key))


__all__ = [
    "ArmTask",
    "Call",
    "CancelTask",
    "Effect",
    "Emit",
    "EmittedTimers",
    "Notify",
    "Send",
]
