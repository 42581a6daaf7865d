"""The real-time runtime: the same nodes on the real file system and wall clock, in one process.

Everything still runs on one thread: the facade drives the scheduler while it waits for an answer,
so the deterministic core never sees a second thread.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from logwright.world.clock import WallClock
from logwright.world.fs import FileSystem
from logwright.world.network import LocalNetwork
from logwright.world.realfs import RealFileSystem
from logwright.world.scheduler import RealScheduler


class RealRuntime:
    """Wall clock, real disk, in-process network."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.clock = WallClock()
        self.scheduler = RealScheduler(self.clock, seed=seed)
        self.network = LocalNetwork(self.scheduler)
        self.events = 0

    def new_fs(self) -> RealFileSystem:
        """The file system a broker uses (the one real disk)."""
        return RealFileSystem()

    def fork_rng(self) -> random.Random:
        """A generator derived from the runtime's seed."""
        return random.Random(self.rng.randrange(1 << 62))

    def run_for(self, delta_ms: int) -> None:
        """Run due tasks for ``delta_ms`` of wall time."""
        self.run_until(lambda: False, delta_ms)

    def run_until(self, done: Callable[[], bool], timeout_ms: int) -> bool:
        """Run due tasks until ``done()`` or ``timeout_ms`` of wall time passed."""
        deadline = self.clock.now_ms() + timeout_ms
        while not done():
            ran = self.scheduler.run_pending()
            self.events += ran
            now = self.clock.now_ms()
            if now >= deadline:
                return done()
            if ran == 0:
                due = self.scheduler.next_due_ms()
                wait_ms = 1 if due is None else max(0, min(due - now, deadline - now, 5))
                time.sleep(wait_ms / 1000.0)
        return True


def make_data_root(fs: FileSystem, path: str) -> str:
    """The absolute path of a real cluster's data directory ``path``, created with any missing
    parents through ``fs`` (each new entry's parent fsynced)."""
    root = fs.abspath(path)
    fs.makedirs(root)
    return root
