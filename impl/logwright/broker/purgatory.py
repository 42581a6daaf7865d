"""Delayed operations: requests that wait for a condition or a timeout (Kafka's purgatory).

Invariant upheld: every operation completes exactly once, either when its condition holds (checked
when one of its keys changes) or when its timeout fires, never both; completing cancels the timer.
The number of waiting operations is bounded.

acks=all produce waits here until the high watermark passes its last offset; a fetch with
``max_wait_ms`` waits for data. Expiry timers are armed and cancelled through ``Timers``: in a
broker, as effects its driver performs (so they keep their order with the responses the same
decision sends); alone, straight on a scheduler. Either way time is the injected one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from functools import partial
from typing import Generic, Protocol, TypeVar

from mypy_extensions import mypyc_attr

from logwright.errors import LogwrightError
from logwright.world.scheduler import Scheduler, Task


class PurgatoryFull(LogwrightError):
    """More operations are waiting than the purgatory's bound allows."""


class Timers(Protocol):
    """Where a purgatory arms and cancels its expiry timers, each under its own key."""

    def arm(self, key: str, delay_ms: int, action: Callable[[], None]) -> None:
        """Run ``action`` after ``delay_ms`` unless ``key`` is cancelled first."""
        ...

    def cancel(self, key: str) -> None:
        """Forget the timer armed under ``key`` (nothing if it ran or was never armed)."""
        ...


class SchedulerTimers:
    """Timers straight on a scheduler, for a purgatory used on its own."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self._tasks: dict[str, Task] = {}

    def arm(self, key: str, delay_ms: int, action: Callable[[], None]) -> None:
        """Schedule ``action`` as the task ``key``."""
        def run() -> None:
            self._tasks.pop(key, None)
            action()
        self._tasks[key] = self.scheduler.schedule(key, run, delay_ms)

    def cancel(self, key: str) -> None:
        """Cancel the task ``key`` if it has not run."""
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()


@mypyc_attr(allow_interpreted_subclasses=True)
class DelayedOperation:
    """An operation that completes when ``try_complete`` finds its condition, or on expiry.

    Subclasses implement ``try_complete`` (call ``force_complete`` when the condition holds and
    return its result), ``on_complete`` (send the answer, from the state at that moment) and
    optionally ``on_expiration``. (Compiled by mypyc, the class still takes subclasses written
    in Python: ``allow_interpreted_subclasses``.)
    """

    def __init__(self) -> None:
        self.completed = False
        self.expired = False
        self._cancel_timer: Callable[[], None] | None = None

    def try_complete(self) -> bool:
        """Complete if the condition holds; True if this call completed the operation."""
        raise NotImplementedError

    def on_complete(self) -> None:
        """Send the answer (runs exactly once)."""
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Called after an expiry completed the operation (counters, logging)."""

    def force_complete(self) -> bool:
        """Complete now, whatever the condition; False if it was already completed."""
        if self.completed:
            return False
        self.completed = True
        if self._cancel_timer is not None:
            cancel, self._cancel_timer = self._cancel_timer, None
            cancel()
        self.on_complete()
        return True

    def _expire(self) -> None:
        self._cancel_timer = None
        if not self.completed:
            self.expired = True
            self.force_complete()
            self.on_expiration()


Op = TypeVar("Op", bound=DelayedOperation)


class Purgatory(Generic[Op]):
    """Operations watched by keys (topic partitions), expired by timers."""

    def __init__(self, name: str, timers: Timers | Scheduler, max_operations: int) -> None:
        """``timers``: where expiry timers go (a scheduler is used directly)."""
        assert max_operations > 0
        self.name = name
        self.timers: Timers = (SchedulerTimers(timers) if isinstance(timers, Scheduler)
                               else timers)
        self.max_operations = max_operations
        self._armed = 0  # expiry timers armed so far: each gets its own key
        self._watchers: dict[Hashable, list[Op]] = {}
        self._ops: dict[int, Op] = {}
        self.expired_count = 0

    def __len__(self) -> int:
        self._purge()
        return len(self._ops)

    def try_complete_else_watch(self, op: Op, keys: Iterable[Hashable], timeout_ms: int) -> bool:
        """Complete ``op`` now if it can; otherwise watch it under ``keys`` until ``timeout_ms``.

        Returns True if it completed at once.
        """
        assert timeout_ms >= 0
        if op.try_complete():
            return True
        self._purge()
        if len(self._ops) >= self.max_operations:
            raise PurgatoryFull(f"{self.name} purgatory holds {len(self._ops)} operations, the "
                                f"limit is {self.max_operations}")
        for key in keys:
            self._watchers.setdefault(key, []).append(op)
        self._ops[id(op)] = op
        self._armed += 1
        key = f"{self.name}-expiry {self._armed}"
        timers = self.timers
        timers.arm(key, timeout_ms, partial(self._on_timeout, op))
        op._cancel_timer = partial(timers.cancel, key)
        return False

    def _on_timeout(self, op: Op) -> None:
        self._ops.pop(id(op), None)
        if not op.completed:
            self.expired_count += 1
        op._expire()

    def check_and_complete(self, key: Hashable) -> int:
        """Try every operation watched under ``key``; returns how many completed."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        completed = 0
        for op in list(ops):
            if not op.completed and op.try_complete():
                completed += 1
        remaining = [op for op in ops if not op.completed]
        if remaining:
            self._watchers[key] = remaining
        else:
            del self._watchers[key]
        self._purge()
        return completed

    def watched(self, key: Hashable) -> int:
        """How many incomplete operations watch ``key``."""
        return sum(1 for op in self._watchers.get(key, ()) if not op.completed)

    def cancel_all(self) -> None:
        """Drop every operation without answering it (the broker halted or shut down)."""
        for op in list(self._ops.values()):
            if op._cancel_timer is not None:
                cancel, op._cancel_timer = op._cancel_timer, None
                cancel()
            op.completed = True
        self._ops.clear()
        self._watchers.clear()

    def _purge(self) -> None:
        done = [key for key, op in self._ops.items() if op.completed]
        for key in done:
            del self._ops[key]
