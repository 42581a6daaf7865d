"""Trace benchmarks (issue 9): what recording a trace costs on the produce path, and how fast
``logwright traces check`` replays one.

Invariant upheld: each figure is judged beside a reference from the same run. Recording is the
same acks=all produce on the same seeded simulated cluster with recording on (JSON Lines to a
scratch file) and off, interleaved; the ratio is on / off (1.0: free). Replay is the checker over
a trace of that run, beside reading and decoding the same file alone (the floor any checker
pays); TLC's published trace validation (hundreds of events in 7 to 23 s) is in the note.

    python bench/traces.py            # or: python bench/run.py (every module)
"""

from __future__ import annotations

import json
import os
import sys

from common import Result, Target, interleaved, scratch_dir, timed
from logwright import Cluster
from logwright.verify.traces import CheckReport, check_paths

RECORDS_PER_BATCH = 10
RECORD_BYTES = 100


def _produce(batches: int, trace: str | None) -> tuple[float, float]:
    """acks=all produce of ``batches`` batches on a new simulated cluster: records per wall
    and per CPU second, recording to ``trace`` (None: off)."""
    cluster = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=5, trace=trace)
    cluster.create_topic("bench", partitions=1, replication_factor=3)
    values = [b"x" * RECORD_BYTES] * RECORDS_PER_BATCH
    last = [-1]

    def work() -> None:
        for _ in range(batches):
            last[0] = cluster.produce("bench", 0, values, acks=-1)

    t = timed(work)
    cluster.close()
    assert last[0] == (batches - 1) * RECORDS_PER_BATCH, "every batch was acknowledged"
    n = batches * RECORDS_PER_BATCH
    return n / t.wall_s, n / t.cpu_s


def bench_recording_cost(quick: bool, directory: str) -> Result:
    """Records/s of acks=all produce with a trace recorded, beside the same with none."""
    batches = 20 if quick else 200
    path = os.path.join(directory, "produce.jsonl")
    samples = interleaved(lambda: _produce(batches, path),
                          lambda: _produce(batches, None)[0], 1 if quick else 5)
    return Result.measured("acks=all produce with a trace recorded", "records/s", "records/s",
                           "the same produce with recording off (same run)",
                           Target("ratio", ">=", 0.7), samples,
                           note=f"{RECORDS_PER_BATCH} records of {RECORD_BYTES} B per batch, "
                           "3 brokers; ratio = on / off, medians")


def _parse_only(path: str) -> float:
    """Events/s of reading and decoding ``path`` alone."""
    count = [0]

    def work() -> None:
        with open(path, encoding="utf-8") as f:
            count[0] = sum(1 for line in f if json.loads(line))

    wall = timed(work).wall_s
    return count[0] / wall


def bench_replay(quick: bool, directory: str) -> Result:
    """Events/s ``logwright traces check`` replays against the twins."""
    path = os.path.join(directory, "replay.jsonl")
    _produce(20 if quick else 300, path)

    def figure() -> tuple[float, float]:
        reports: list[CheckReport] = []
        t = timed(lambda: reports.append(check_paths([path])))
        report = reports[0]
        assert report.ok, report.failures[0].format() if report.failures else ""
        return report.events / t.wall_s, report.events / t.cpu_s

    samples = interleaved(figure, lambda: _parse_only(path), 1 if quick else 5)
    with open(path, encoding="utf-8") as f:
        events = sum(1 for _ in f)
    return Result.measured("traces check replay", "events/s", "events/s",
                           "reading and decoding the same trace alone",
                           Target("figure", ">=", 1_000), samples,
                           note=f"{events:,} events per replay; TLC's published trace "
                           "validation: hundreds of events in 7-23 s (tens of events/s)")


def run(quick: bool = False) -> list[Result]:
    """Every trace figure."""
    with scratch_dir("traces") as directory:
        return [bench_recording_cost(quick, directory), bench_replay(quick, directory)]


if __name__ == "__main__":
    for result in run("--quick" in sys.argv):
        print(json.dumps(result.to_json(), indent=1))
