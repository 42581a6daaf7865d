"""What a node's decision asks its driver to do: the effects (h11's lesson).

A decision takes one input (a message, a timer firing, an admin call), changes the node's state
and returns a list of effects; it never touches the network or the scheduler itself. The node's
driver performs the effects in order over the injected world, and feeds what comes back (answers,
timeouts, timers) in as new inputs. Performed in the order they were decided, the effects make
exactly the calls the decision would have made itself, so one seed still replays one run. They
are also where a trace records what a node did.

Plain frozen dataclasses, so a test can compare them and a trace can print them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from logwright.frozen import fast_init
from logwright.protocol.messages import Message

__all__ = [
    "ArmTimer",
    "CancelTimer",
    "Effect",
    "ForgetRequests",
    "Request",
    "Send",
    "TimerKey",
]

TimerKey: TypeAlias = tuple[str, int]
"""Names one timer of a node, for example ("session", 3): the session of broker 3."""


@fast_init
@dataclass(frozen=True)
class Send:
    """Send ``message`` to node ``dst``; no answer is awaited (a response, a heartbeat)."""

    dst: str
    message: Message


@dataclass(frozen=True)
class Request:
    """Send ``message`` to ``dst`` through the node's request channel and await its answer.

    The answer, or None when ``timeout_ms`` passes first (None: no timer), is fed back to the
    node with the request it answers. ``timer_name`` names the timer in the scheduler.
    """

    dst: str
    message: Message
    timeout_ms: int | None
    timer_name: str = ""


@dataclass(frozen=True)
class ForgetRequests:
    """Forget the outstanding requests to ``dst`` (to every node when None): no answer to them
    will be fed back and their timers are cancelled."""

    dst: str | None = None


@dataclass(frozen=True)
class ArmTimer:
    """Fire timer ``key`` after ``delay_ms`` (``name`` names it in the scheduler); the driver
    feeds the firing back to the node. Arming an armed key is a decision error."""

    key: TimerKey
    delay_ms: int
    name: str

    def __post_init__(self) -> None:
        assert self.delay_ms >= 0, f"timer {self.key} armed in the past"


@dataclass(frozen=True)
class CancelTimer:
    """Cancel timer ``key`` if it is armed."""

    key: TimerKey


Effect: TypeAlias = Send | Request | ForgetRequests | ArmTimer | CancelTimer
