"""Cluster benchmarks (issues 4 and 16): simulator speed, acks=all produce throughput on a
simulated 3-broker cluster, and stateful-test throughput.

Invariant upheld: each figure is the real code (controller, brokers, network, storage) in the
simulated world, judged beside a reference measured in the same run: the bare scheduler for
events/s, the storage layer alone for produce throughput, and the storage stateful machine for
steps/s. Each timed run checks that it did its work (offsets reached, steps taken).
"""

from __future__ import annotations

import time

from hypothesis import HealthCheck, settings
from hypothesis.stateful import invariant, run_state_machine_as_test

from common import Result, Samples, Target, interleaved, timed
from logwright import Cluster
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.storage.naming import TopicPartition
from logwright.world import SimFileSystem, SimScheduler, VirtualClock

RECORDS_PER_BATCH = 100
RECORD_BYTES = 100


def _values() -> list[bytes]:
    return [b"x" * RECORD_BYTES] * RECORDS_PER_BATCH


def _simulated_produce(batches: int) -> tuple[float, float, int]:
    """Produce ``batches`` acks=all batches to a new simulated cluster: (wall s, cpu s, events)."""
    cluster = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=5)
    cluster.create_topic("bench", partitions=1, replication_factor=3)
    values = _values()
    start_events = cluster.runtime.events
    last = [-1]

    def work() -> None:
        for _ in range(batches):
            last[0] = cluster.produce("bench", 0, values, acks=-1)

    t = timed(work)
    assert last[0] == (batches - 1) * RECORDS_PER_BATCH, "every batch was acknowledged in order"
    return t.wall_s, t.cpu_s, cluster.runtime.events - start_events


def _bare_scheduler_events_per_s(events: int) -> float:
    sched = SimScheduler(VirtualClock(0), seed=1)
    count = [0]

    def tick() -> None:
        count[0] += 1

    for i in range(events):
        sched.schedule("noop", tick, i % 50)
    t = timed(lambda: sched.advance(100))
    assert count[0] == events
    return events / t.wall_s


def bench_simulator_events(quick: bool) -> Result:
    """Events (scheduled tasks: message deliveries, timers) the simulator runs per second."""
    batches = 40 if quick else 300

    def figure() -> tuple[float, float]:
        wall, cpu, events = _simulated_produce(batches)
        return events / wall, events / cpu

    samples = interleaved(figure, lambda: _bare_scheduler_events_per_s(20_000), 1 if quick else 3)
    return Result.measured("simulator speed (3 brokers, acks=all traffic)", "events/s",
                           "events/s", "bare SimScheduler running no-op tasks",
                           Target("figure", ">=", 50_000), samples,
                           note="issue 16: >= 50,000 events/s, trace recording off")


def _storage_only_records_per_s(batches: int) -> float:
    clock = VirtualClock()
    fs = SimFileSystem(clock)
    fs.makedirs("/d")
    log = PartitionLog.create(fs, "/d/bench-0", TopicPartition("bench", 0), LogConfig(), clock)
    batch = build_simple_batch(_values(), clock.now_ms())
    t = timed(lambda: [log.append_as_leader(batch) for _ in range(batches)])
    assert log.log_end_offset == batches * RECORDS_PER_BATCH
    return batches * RECORDS_PER_BATCH / t.wall_s


def bench_acks_all_throughput(quick: bool) -> list[Result]:
    """acks=all produce through a simulated 3-broker cluster, records/s and MB/s."""
    batches = 40 if quick else 300
    walls: list[float] = []

    def figure() -> tuple[float, float]:
        wall, cpu, _ = _simulated_produce(batches)
        walls.append(wall)
        n = batches * RECORDS_PER_BATCH
        return n / wall, n / cpu

    samples = interleaved(figure, lambda: _storage_only_records_per_s(batches),
                          1 if quick else 3)
    records = Result.measured("acks=all produce, simulated 3 brokers", "records/s", "records/s",
                              "the same batches appended to one PartitionLog (storage alone)",
                              Target("figure", ">=", 10_000), samples,
                              note=f"{RECORDS_PER_BATCH} records of {RECORD_BYTES} B per batch; "
                              "no target in the issue")
    mb = Samples([f * RECORD_BYTES / 1e6 for f in samples.figures],
                 [f * RECORD_BYTES / 1e6 for f in samples.cpu_figures],
                 [r * RECORD_BYTES / 1e6 for r in samples.references])
    megabytes = Result.measured("acks=all produce, simulated 3 brokers", "MB/s", "MB/s",
                                "the same batches appended to one PartitionLog (storage alone)",
                                Target("figure", ">=", 1.0), mb,
                                note="record payload bytes; no target in the issue")
    return [records, megabytes]


def _steps_per_s(machine: type, examples: int) -> tuple[float, float]:
    """Run ``machine`` for ``examples`` derandomized examples; steps per wall and cpu second."""
    steps = [0]

    class Counting(machine):  # type: ignore[misc, valid-type]
        @invariant()
        def count_steps(self) -> None:
            steps[0] += 1

    config = settings(max_examples=examples, stateful_step_count=40, derandomize=True,
                      deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))
    wall, cpu = time.perf_counter(), time.process_time()
    run_state_machine_as_test(Counting, settings=config)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert steps[0] > examples, "the machine took steps"
    return steps[0] / wall, steps[0] / cpu


def bench_stateful_steps(quick: bool) -> Result:
    """Hypothesis stateful-test throughput of the cluster machine, its refinement checks on
    (issue 16's target: >= 5,000 steps/s)."""
    from logwright.verify.stateful_cluster import KNOWN_DEFECT_RULES, ClusterMachine
    from logwright.verify.stateful_storage import StorageMachine

    class CiAlphabet(ClusterMachine):  # what CI runs: the known open defects would stop a run
        avoid = KNOWN_DEFECT_RULES

    examples = 10 if quick else 60
    samples = interleaved(lambda: _steps_per_s(CiAlphabet, examples),
                          lambda: _steps_per_s(StorageMachine, examples)[0], 1 if quick else 3,
                          warm_up=False)
    return Result.measured("stateful test, cluster machine", "steps/s", "steps/s",
                           "the storage stateful machine in the same run",
                           Target("figure", ">=", 5_000), samples,
                           note="a step is one rule plus every invariant check after it; the "
                           "four models' refinement checks run after every simulated event")


def run(quick: bool = False) -> list[Result]:
    """Every cluster benchmark, in order."""
    return [bench_simulator_events(quick), *bench_acks_all_throughput(quick),
            bench_stateful_steps(quick)]
