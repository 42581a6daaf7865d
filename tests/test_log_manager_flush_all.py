"""``LogManager.flush_all`` flushes every online log, whatever fails on the way, and traces it.

A log whose flush fails (its dir's disk fails) takes its dir offline; every other log, before or
after it, is still flushed (its recovery point reaches its log end offset). With a live trace
each flushed log records LogStartOffset's Flush step (its flushed offset), nothing otherwise.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import pytest

from logwright.identity import TopicPartition, Uuid
from logwright.logmanager import LogManager, LogManagerConfig
from logwright.records import build_simple_batch
from logwright.world import Fault, SimFileSystem, SimScheduler, VirtualClock
from logwright.world.trace import Json, TraceRecorder

TID = Uuid.from_random(random.Random(3))
DIRS = ["/d1", "/d2", "/d3"]


class Steps(TraceRecorder):
    """Keeps every LogStartOffset step as (node, instance, action, args, flushed)."""

    def __init__(self) -> None:
        super().__init__()
        self.enabled = True
        self.steps: list[tuple[str, str, str, dict[str, Json], int]] = []

    def replica_step(self, node: str, instance: str, replica: int, action: str,
                     args: Mapping[str, Json],
                     values: tuple[int, int, int, int, int | None, int],
                     durable: bool = False, always: bool = False) -> None:
        self.steps.append((node, instance, action, dict(args), values[5]))


def manager() -> tuple[LogManager, SimFileSystem]:
    clock = VirtualClock(1_000_000)
    fs = SimFileSystem(clock)
    lm = LogManager(fs, DIRS, clock, SimScheduler(clock, seed=2),
                    LogManagerConfig(initial_task_delay_ms=0), random.Random(2))
    lm.startup()
    for i, d in enumerate(DIRS):
        for p in (2 * i, 2 * i + 1):
            log = lm.create_log(TopicPartition("t", p), TID, d)
            log.append_as_leader(build_simple_batch([b"a", b"b", b"c"], 1_000_000))
    return lm, fs


@pytest.mark.parametrize("failing", DIRS)
def test_a_failing_log_does_not_stop_the_others_being_flushed(failing: str) -> None:
    lm, fs = manager()
    fs.inject_fault(failing, Fault.EIO)
    lm.flush_all()
    assert failing in lm.offline_dirs
    for d in DIRS:
        if d == failing:
            continue
        state = lm.dirs[d]
        assert state.logs and all(log.recovery_point == log.log_end_offset == 3
                                  for log in state.logs.values()), d


@pytest.mark.parametrize("live", [True, False])
def test_each_flushed_log_is_traced_only_when_the_trace_is_live(live: bool) -> None:
    lm, _ = manager()
    steps = Steps()
    lm.trace, lm.trace_live, lm.trace_replica = steps, live, 7
    lm.flush_all()
    if not live:
        assert steps.steps == []
        return
    assert sorted(steps.steps, key=lambda s: s[1]) == [
        ("broker-7", f"t-{p}", "Flush", {"replica": 7, "topicId": str(TID)}, 3)
        for p in sorted(range(6), key=lambda p: f"t-{p}")]
