"""The broker's effects: what its decisions return for the driver (``driver.py``) to perform.

``Send`` and ``ArmTimer`` are shared by every node (``logwright.protocol.effects``). Two kinds
here need the node's request channel, which numbers requests and pairs them with their answers:
``Request`` expects an answer (or a timeout), ``Notify`` expects none but still takes a fresh
correlation id. Both carry a ``build`` function from correlation id to message, so that the id
is drawn when, and only when, the message is really sent. ``CancelTimer`` forgets a timer armed
under a key (a delayed operation that completed before its timeout).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from logwright.protocol import Message
from logwright.protocol.effects import ArmTimer, Send


@dataclass(frozen=True)
class Request:
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


@dataclass(frozen=True)
class CancelTimer:
    """Forget the timer last armed under ``key``, if it has not run."""

    key: str


Effect = Send | ArmTimer | Request | Notify | CancelTimer
"""Everything a broker decision may ask of the world."""

Emit = Callable[[Effect], None]
"""Where a part of the broker puts an effect it decides on while a decision runs."""


class EmittedTimers:
    """A purgatory's timers (``purgatory.Timers``) as effects: arming and cancelling are
    ``ArmTimer`` and ``CancelTimer`` handed to ``emit``."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit

    def arm(self, key: str, delay_ms: int, action: Callable[[], None]) -> None:
        """Emit ``ArmTimer(key, delay_ms, action)``."""
        self.emit(ArmTimer(key, delay_ms, action))

    def cancel(self, key: str) -> None:
        """Emit ``CancelTimer(key)``."""
        self.emit(CancelTimer(key))


__all__ = ["ArmTimer", "CancelTimer", "Effect", "Emit", "EmittedTimers", "Notify", "Request",
           "Send"]
