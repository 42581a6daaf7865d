"""Stray benchmark (issue 10): how long a broker takes to decide which of its logs a FULL
LeaderAndIsr makes strays, for 100,000 partitions named against 100,000 logs on disk.

Invariant upheld: the figure is judged beside a reference from the same run. The figure is the
broker's decision alone (``logwright.broker.strays.full_request_strays``, with the request's
partitions read into a map as the replica manager does), over a request that names most logs
under their own topic id, some under another, and leaves some out; the reference is the floor
any such decision pays in Python: one pass over the same logs looking each name up in the
request's partitions. Medians of interleaved repetitions; the issue's target is < 200 ms.

    python bench/strays.py            # or: python bench/run.py (every module)
"""

from __future__ import annotations

import json
import random
import sys

from common import Result, Samples, Target, interleaved, timed
from logwright.broker.strays import full_request_strays
from logwright.identity import TopicPartition, Uuid
from logwright.protocol import LeaderAndIsrPartitionState

PARTITIONS = 100_000
TOPICS = 1_000  # 100 partitions each


def _workload(n: int, seed: int = 1) -> tuple[dict[TopicPartition, Uuid | None],
                                                tuple[LeaderAndIsrPartitionState, ...],
                                                dict[TopicPartition, tuple[int, int]]]:
    """``n`` logs on disk and a FULL request of ``n`` partitions: 98% the same partitions under
    the same ids, 1% under another id, 1% of the logs left out (and as many partitions the disk
    does not hold, to be created); the applied versions of a tenth of the names."""
    rng = random.Random(seed)
    ids = [Uuid.from_random(rng) for _ in range(TOPICS)]
    other = [Uuid.from_random(rng) for _ in range(TOPICS)]
    per_topic = max(1, n // TOPICS)
    tps = [TopicPartition(f"topic-{t}", p) for t in range(TOPICS) for p in range(per_topic)][:n]
    on_disk: dict[TopicPartition, Uuid | None] = {tp: ids[int(tp.topic[6:])] for tp in tps}
    states = []
    for i, tp in enumerate(tps):
        t = int(tp.topic[6:])
        if i % 100 == 0:
            continue  # left out: a stray
        topic_id = other[t] if i % 100 == 1 else ids[t]
        states.append(LeaderAndIsrPartitionState(tp, topic_id, 2, 1, 5, (1, 2, 3), 7, (1, 2, 3)))
    for i in range(n - len(states)):
        tp = TopicPartition(f"new-{i % TOPICS}", i // TOPICS)
        states.append(LeaderAndIsrPartitionState(tp, other[i % TOPICS], 2, 1, 0, (1,), 0, (1,)))
    applied = {tp: (2, 10) for tp in tps[::10]}
    return on_disk, tuple(states), applied


def bench_full_request_strays(quick: bool) -> Result:
    """Milliseconds to decide the strays of a FULL LeaderAndIsr, beside one bare pass."""
    n = 2_000 if quick else PARTITIONS
    on_disk, states, applied = _workload(n)
    version = (2, 11)
    found: list[int] = []

    def figure() -> tuple[float, float]:
        def work() -> None:
            requested: dict[TopicPartition, Uuid] = {}
            for s in states:
                requested.setdefault(s.tp, s.topic_id)
            found.append(len(full_request_strays(on_disk, requested, applied, version)))
        t = timed(work)
        return t.wall_s * 1_000, t.cpu_s * 1_000

    requested_once = {s.tp: s.topic_id for s in states}

    def reference() -> float:
        def work() -> None:
            found.append(-sum(1 for tp in on_disk if tp not in requested_once))
        return timed(work).wall_s * 1_000

    samples: Samples = interleaved(figure, reference, 1 if quick else 9)
    strays = next(f for f in found if f >= 0)
    assert strays == sum(1 for i in range(n) if i % 100 in (0, 1)), "left out, or another id"
    return Result.measured("FULL LeaderAndIsr stray decision", "ms", "ms",
                           "one bare pass over the same logs (same run)",
                           Target("figure", "<", 200), samples,
                           note=f"{n:,} partitions named against {n:,} logs on disk; "
                           f"{strays:,} strays; medians of interleaved runs")


def run(quick: bool = False) -> list[Result]:
    """Every stray figure."""
    return [bench_full_request_strays(quick)]


if __name__ == "__main__":
    for result in run("--quick" in sys.argv):
        print(json.dumps(result.to_json(), indent=1))
