"""One simulated world: a seeded clock, scheduler, file system and network shared by every node.

One seed reproduces one whole run: every random choice (message delays, drops, task tie-breaks,
topic ids, torn writes at a crash) comes from generators seeded here. Simulated time runs as fast as
the CPU allows.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from logwright.world.clock import VirtualClock
from logwright.world.network import SimNetwork
from logwright.world.scheduler import SimScheduler
from logwright.world.simfs import SimFileSystem, SimulatedCrash


class SimWorld:
    """The injected world of a simulated cluster."""

    def __init__(self, seed: int, min_delay_ms: int = 1, max_delay_ms: int = 5,
                 drop_rate: float = 0.0, duplicate_rate: float = 0.0,
                 torn_crashes: bool = True) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.clock = VirtualClock(1_700_000_000_000)
        self.scheduler = SimScheduler(self.clock, seed=self.rng.randrange(1 << 62))
        # Each broker is its own machine with its own disk: a crash of one loses only its own
        # unsynced writes. (The metadata store stands for a replicated quorum and is in memory.)
        self.disks: dict[str, SimFileSystem] = {}
        self.network = SimNetwork(self.scheduler, seed=self.rng.randrange(1 << 62),
                                  min_delay_ms=min_delay_ms, max_delay_ms=max_delay_ms,
                                  drop_rate=drop_rate, duplicate_rate=duplicate_rate)
        self.torn_crashes = torn_crashes
        self.events = 0
        #: Told ``host`` when a machine loses power in the middle of a task (its disk's
        #: ``crash_after`` fired): the owner stops that machine's processes.
        self.crash_listeners: list[Callable[[str], None]] = []
        self.scheduler.on_task_error = self._task_error
        self._observers: list[Callable[[], None]] = []

    def _task_error(self, exc: BaseException) -> bool:
        """A ``SimulatedCrash`` of one of this world's disks, raised inside a task: that
        machine lost power there. Its processes stop (the listeners) and its disk keeps only
        what was durable; the rest of the world runs on."""
        if not isinstance(exc, SimulatedCrash) or exc.fs is None:
            return False
        host = next((h for h, fs in self.disks.items() if fs is exc.fs), None)
        if host is None:
            return False
        self.machine_crashed(host)
        return True

    def machine_crashed(self, host: str) -> None:
        """Machine ``host`` lost power in the middle of something: stop its processes (the
        listeners), then drop its unsynced writes."""
        for listener in list(self.crash_listeners):
            listener(host)
        self.power_loss(host)

    def observe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` after every event the world executes from now on (a task of the
        scheduler, message deliveries included); returns the function that stops it. With no
        observer registered, running the world costs what it did without this hook. An
        exception from ``callback`` propagates out of the call that ran the event."""
        self._observers.append(callback)

        def stop() -> None:
            if callback in self._observers:
                self._observers.remove(callback)
        return stop

    def _after_event(self) -> None:
        for callback in list(self._observers):
            callback()

    def new_fs(self, host: str = "") -> SimFileSystem:
        """The disk of machine ``host`` (created on first use, kept across restarts)."""
        if host not in self.disks:
            self.disks[host] = SimFileSystem(self.clock)
        return self.disks[host]

    def fork_rng(self) -> random.Random:
        """A new generator derived from the world's seed (for a node's ids)."""
        return random.Random(self.rng.randrange(1 << 62))

    def step(self) -> bool:
        """Run the next due task; False if nothing is scheduled."""
        return self._counted(self.scheduler.step())

    def _step_at(self, due_ms: int) -> bool:
        """``step()`` when the scheduler's ``next_due_ms()`` just answered ``due_ms``."""
        return self._counted(self.scheduler.step_at(due_ms))

    def _counted(self, ran: bool) -> bool:
        if ran:
            self.events += 1
            if self._observers:
                self._after_event()
        return ran

    def run_for(self, delta_ms: int) -> None:
        """Let ``delta_ms`` of virtual time pass."""
        if not self._observers:
            self.events += self.scheduler.advance(delta_ms)
            return
        # One event at a time, as the scheduler's advance runs them, so observers see each.
        end_ms = self.clock.now_ms() + delta_ms
        step_by = self.scheduler.step_by
        while step_by(end_ms):
            self._counted(True)
        self.clock.advance_to(end_ms)

    def run_until(self, done: Callable[[], bool], timeout_ms: int) -> bool:
        """Run tasks until ``done()`` or ``timeout_ms`` of virtual time passed; returns done()."""
        deadline = self.clock.now_ms() + timeout_ms
        step_by = self.scheduler.step_by
        while not done():
            if not step_by(deadline):
                self.clock.advance_to(deadline)
                return done()
            self.events += 1
            if self._observers:
                self._after_event()
        return True

    def power_loss(self, host: str) -> None:
        """Machine ``host`` loses power: its unsynced writes are lost (torn tails kept at random
        when configured)."""
        self.new_fs(host).crash(self.rng if self.torn_crashes else None)
