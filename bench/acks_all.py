"""acks=all on ``Cluster.real`` with and without fsync-before-ack (issue 13): what
``flush.messages=1`` costs a producer, beside one plain fsync measured in the same run.

Invariant upheld: every figure is judged beside a reference measured in the same run.

- Latency: wall ms of one acks=all produce of a small batch (3 brokers, replication factor 3,
  one log dir each), to a topic with the default ``flush.messages`` (the page cache holds the
  record when it is acknowledged) and to one with ``flush.messages=1`` (every replica has
  fsynced it: the leader before it counts the append, each follower before its next fetch
  reports it). Reference: one fsync of a small file on the same disk.
- Throughput: records per second of a run of acks=all produces one after another, each way.
  Reference: fsyncs per second of the same small file.

Both topics live in the same cluster and their runs are interleaved, so load from neighbours
falls on both alike.

    python bench/acks_all.py     # or: python bench/run.py (every module)
"""

from __future__ import annotations

import json
import os
import sys

from common import Result, Samples, Target, fsync_ms, interleaved, scratch_dir, timed
from logwright import Cluster

BATCH = [b"x" * 100] * 10  # one batch of ten 100-byte records


def _measure(quick: bool) -> dict[str, Samples]:
    repeats, run_length = (2, 5) if quick else (15, 40)
    out = {name: Samples() for name in ("latency-default", "latency-fsync",
                                         "throughput-default", "throughput-fsync")}
    with scratch_dir("acks-all") as root:
        path = os.path.join(root, "cluster")
        with Cluster.real(path, brokers=3, log_dirs_per_broker=1) as c:
            c.create_topic("plain", partitions=1, replication_factor=3)
            c.create_topic("synced", partitions=1, replication_factor=3,
                           configs={"flush.messages": 1})

            def latency(topic: str) -> tuple[float, float]:
                t = timed(lambda: c.produce(topic, 0, BATCH, acks=-1))
                return t.wall_s * 1_000, t.cpu_s * 1_000

            def throughput(topic: str) -> tuple[float, float]:
                def burst() -> None:
                    for _ in range(run_length):
                        c.produce(topic, 0, BATCH, acks=-1)
                t = timed(burst)
                records = run_length * len(BATCH)
                return records / t.wall_s, records / max(t.cpu_s, 1e-9)

            def fsyncs_per_s() -> float:
                return 1_000 / max(fsync_ms(root), 1e-6)

            for name, topic in (("default", "plain"), ("fsync", "synced")):
                out[f"latency-{name}"] = interleaved(lambda t=topic: latency(t),
                                                     lambda: fsync_ms(root), repeats)
                out[f"throughput-{name}"] = interleaved(lambda t=topic: throughput(t),
                                                        fsyncs_per_s, max(3, repeats // 3))
    return out


def run(quick: bool = False) -> list[Result]:
    samples = _measure(quick)
    note = ("3 brokers, replication factor 3, one log dir each; batches of ten 100-byte records; "
            "medians of interleaved runs")
    return [
        Result.measured("acks=all produce latency, Cluster.real (wall)", "ms", "ms",
                        "one fsync of a small file on the same disk (same run)",
                        Target("figure", "<", 1_000.0), samples["latency-default"],
                        note=note + "; default flush.messages (acknowledged from the page "
                        "cache)"),
        Result.measured("acks=all produce latency, flush.messages=1, Cluster.real (wall)",
                        "ms", "ms", "one fsync of a small file on the same disk (same run)",
                        Target("ratio", "<", 20.0), samples["latency-fsync"],
                        note=note + "; every replica fsyncs before the record counts"),
        Result.measured("acks=all produce throughput, Cluster.real (wall)", "records/s",
                        "fsyncs/s", "fsyncs per second of a small file (same run)",
                        Target("figure", ">=", 100.0), samples["throughput-default"],
                        note=note + "; one produce after another, default flush.messages"),
        Result.measured("acks=all produce throughput, flush.messages=1, Cluster.real (wall)",
                        "records/s", "fsyncs/s", "fsyncs per second of a small file (same run)",
                        Target("figure", ">=", 100.0), samples["throughput-fsync"],
                        note=note + "; one produce after another, flush.messages=1"),
    ]


if __name__ == "__main__":
    results = run(quick="--quick" in sys.argv)
    print(json.dumps([r.to_json() for r in results], indent=1))
