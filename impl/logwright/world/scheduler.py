"""Schedulers for background work (retention, checkpoints, delayed deletes, fetchers, copiers).

Every periodic or delayed task goes through a ``Scheduler``. ``SimScheduler`` runs tasks in
virtual time and breaks ties between tasks due at the same instant with a seeded random number
generator, so the interleaving is chosen by the seed. ``RealScheduler`` runs the same tasks on
one thread against the wall clock.
"""

from __future__ import annotations

import heapq
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from heapq import heappush as _heappush

from logwright.world.clock import Clock, VirtualClock, WallClock


def _nothing() -> None:
    """What a cancelled task would run: nothing."""


@dataclass(eq=False, slots=True, init=False)
class Task:
    """A scheduled unit of background work."""

    name: str
    fn: Callable[[], object]
    due_ms: int
    period_ms: int | None = None
    cancelled: bool = False
    runs: int = field(default=0)
    #: The scheduler whose queue holds the task now (None: not queued, e.g. while it runs).
    queue: Scheduler | None = field(default=None, repr=False)

    def __init__(self, name: str, fn: Callable[[], object], due_ms: int,
                 period_ms: int | None = None, cancelled: bool = False, runs: int = 0,
                 queue: Scheduler | None = None) -> None:
        # The generated __init__'s, written out: compiled by mypyc it is native (a dataclass's
        # generated __init__ stays interpreted), and a task is made for every event.
        self.name = name
        self.fn = fn
        self.due_ms = due_ms
        self.period_ms = period_ms
        self.cancelled = cancelled
        self.runs = runs
        self.queue = queue

    def cancel(self) -> None:
        """Stop the task from running again, and let go of what its work holds at once (a
        cancelled expiry timer must not keep its completed request alive until it was due)."""
        if self.cancelled:
            return
        self.cancelled = True
        self.fn = _nothing
        if self.queue is not None:
            self.queue._cancelled_in_queue()


_COMPACT_AT = 256
"""The queue is rebuilt only once more than this many cancelled tasks are in it."""


class Scheduler:
    """A queue of tasks ordered by due time; subclasses decide how time passes."""

    def __init__(self, clock: Clock, *, seed: int) -> None:
        self.clock = clock
        self._rng = random.Random(seed)
        self._heap: list[tuple[int, float, int, Task]] = []
        self._cancelled = 0  # cancelled tasks still in the heap
        self._seq = 0
        self._lock = threading.Lock()
        #: Called with what a task raised; returning True absorbs it (the simulated world uses
        #: it to turn a machine's power loss inside a task into that machine's crash).
        self.on_task_error: Callable[[BaseException], bool] | None = None

    def schedule(
        self, name: str, fn: Callable[[], object], delay_ms: int = 0, period_ms: int | None = None
    ) -> Task:
        """Run ``fn`` after ``delay_ms``, then every ``period_ms`` if given."""
        assert delay_ms >= 0, "a task cannot be scheduled in the past"
        assert period_ms is None or period_ms > 0, "a periodic task needs a positive period"
        task = Task(name, fn, self.clock.now_ms() + delay_ms, period_ms)
        self._push(task)
        return task

    def _push(self, task: Task) -> None:
        with self._lock:
            self._seq += 1
            task.queue = self
            heapq.heappush(self._heap, (task.due_ms, self._rng.random(), self._seq, task))

    def _cancelled_in_queue(self) -> None:
        """A queued task was cancelled. Once cancelled tasks are most of the queue, the queue
        is rebuilt without them (as asyncio's event loop does), so the queue's size follows the
        live tasks, not every timer armed within the longest delay. The order tasks run in is
        unchanged: it is the order of the entries' keys, whatever the heap's shape."""
        with self._lock:
            self._count_cancelled()

    def _count_cancelled(self) -> None:
        """``_cancelled_in_queue``'s work (the caller holds the lock, or runs on one thread)."""
        self._cancelled += 1
        if self._cancelled > _COMPACT_AT and 2 * self._cancelled > len(self._heap):
            for entry in self._heap:
                if entry[3].cancelled:
                    entry[3].queue = None
            self._heap = [entry for entry in self._heap if not entry[3].cancelled]
            heapq.heapify(self._heap)
            self._cancelled = 0

    def _pop(self) -> Task:
        """The earliest entry, out of the heap (the lock held)."""
        task = heapq.heappop(self._heap)[3]
        task.queue = None
        if task.cancelled:
            self._cancelled -= 1
        return task

    def _drop_cancelled_head(self) -> None:
        while self._heap and self._heap[0][3].cancelled:
            self._pop()

    def next_due_ms(self) -> int | None:
        """When the earliest live task is due, or None if nothing is scheduled."""
        with self._lock:
            return self._head_due_ms()

    def _head_due_ms(self) -> int | None:
        """``next_due_ms`` without the lock (the caller holds it, or runs on one thread)."""
        heap = self._heap
        if heap and heap[0][3].cancelled:
            self._drop_cancelled_head()
        return heap[0][0] if heap else None

    @property
    def queued(self) -> int:
        """Entries in the queue, cancelled ones not yet dropped included (for memory checks)."""
        return len(self._heap)

    def pending(self) -> list[Task]:
        """The live tasks, in the order they would run."""
        with self._lock:
            return [t for (_, _, _, t) in sorted(self._heap) if not t.cancelled]

    def _run_one_due(self, now_ms: int) -> bool:
        with self._lock:
            task = self._take_due(now_ms)
        return task is not None and self._execute(task, now_ms)

    def _take_due(self, now_ms: int) -> Task | None:
        """The earliest live task if it is due at ``now_ms``, taken off the queue (the caller
        holds the lock, or runs on one thread)."""
        heap = self._heap
        if heap and heap[0][3].cancelled:
            self._drop_cancelled_head()
        if not heap or heap[0][0] > now_ms:
            return None
        # _pop() inlined: the head is live here, so no cancelled count to correct.
        task = heapq.heappop(heap)[3]
        task.queue = None
        return task

    def _execute(self, task: Task, now_ms: int) -> bool:
        """Run a task taken off the queue (outside the lock); a periodic one goes back."""
        task.runs += 1
        if task.period_ms is not None:
            task.due_ms = now_ms + task.period_ms
        try:
            task.fn()
        except BaseException as exc:
            if self.on_task_error is None or not self.on_task_error(exc):
                raise
        finally:
            if task.period_ms is not None and not task.cancelled:
                self._push(task)
        return True

    def run_pending(self) -> int:
        """Run every task due now; returns how many ran."""
        count = 0
        while self._run_one_due(self.clock.now_ms()):
            count += 1
        return count


class SimScheduler(Scheduler):
    """Virtual-time scheduler: jumping to the next due task costs nothing.

    A simulated world runs on one thread (one seed, one interleaving), so the hot paths here
    (scheduling a task, finding and running the next one) take no lock: they are
    ``Scheduler``'s, the lock left out, with the same draws and the same order."""

    def __init__(self, clock: VirtualClock | None = None, *, seed: int) -> None:
        self.vclock = clock if clock is not None else VirtualClock()
        super().__init__(self.vclock, seed=seed)

    def schedule(
        self, name: str, fn: Callable[[], object], delay_ms: int = 0, period_ms: int | None = None
    ) -> Task:
        assert delay_ms >= 0, "a task cannot be scheduled in the past"
        assert period_ms is None or period_ms > 0, "a periodic task needs a positive period"
        due = self.vclock._now_ms + delay_ms  # vclock.now_ms() + delay_ms
        task = Task(name, fn, due, period_ms, False, 0, self)  # queued here, below
        seq = self._seq = self._seq + 1
        _heappush(self._heap, (due, self._rng.random(), seq, task))
        return task

    def next_due_ms(self) -> int | None:
        return self._head_due_ms()

    def _cancelled_in_queue(self) -> None:
        self._count_cancelled()  # no lock to take

    def _run_one_due(self, now_ms: int) -> bool:
        task = self._take_due(now_ms)
        return task is not None and self._execute(task, now_ms)

    def step_by(self, deadline_ms: int) -> bool:
        """Run the earliest live task if it is due by ``deadline_ms``, time advanced to its due
        time first; False (time unmoved) when none is. ``step_at(next_due_ms())`` in one call:
        the same task, the same time, the same draws."""
        heap = self._heap
        while heap and heap[0][3].cancelled:
            self._pop()
        if not heap or heap[0][0] > deadline_ms:
            return False
        due, _, _, task = heapq.heappop(heap)  # the head is live: no cancelled count to correct
        task.queue = None
        clock = self.vclock
        if due > clock._now_ms:
            clock._now_ms = due
        if task.period_ms is not None:
            return self._execute(task, clock._now_ms)
        # _execute() for a one-shot task, inlined.
        task.runs += 1
        try:
            task.fn()
        except BaseException as exc:
            if self.on_task_error is None or not self.on_task_error(exc):
                raise
        return True

    def step(self) -> bool:
        """Advance time to the next due task and run it; False when nothing is scheduled."""
        due = self.next_due_ms()
        if due is None:
            return False
        return self.step_at(due)

    def step_at(self, due_ms: int) -> bool:
        """``step()`` when ``next_due_ms()`` just answered ``due_ms`` (nothing ran since)."""
        self.vclock.advance_to(due_ms)
        return self._run_one_due(self.vclock.now_ms())

    def advance(self, delta_ms: int) -> int:
        """Let ``delta_ms`` of virtual time pass, running every task that falls due."""
        assert delta_ms >= 0
        end_ms = self.vclock.now_ms() + delta_ms
        count = 0
        step_by = self.step_by
        while step_by(end_ms):
            count += 1
        self.vclock.advance_to(end_ms)
        return count


class RealScheduler(Scheduler):
    """Wall-clock scheduler: one thread runs the tasks as they fall due."""

    def __init__(self, clock: Clock | None = None, *, seed: int) -> None:
        super().__init__(clock if clock is not None else WallClock(), seed=seed)

    def run_until(self, stop: threading.Event, max_sleep_ms: int = 100) -> None:
        """Run tasks as they fall due until ``stop`` is set."""
        while not stop.is_set():
            self.run_pending()
            due = self.next_due_ms()
            wait_ms = max_sleep_ms if due is None else max(0, due - self.clock.now_ms())
            stop.wait(min(wait_ms, max_sleep_ms) / 1000.0)
