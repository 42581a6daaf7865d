"""Seeded runs of one partition through JBOD faults and reassignments, every fuzzer check on.

The cluster fuzzer reaches these sequences rarely: a broker's dir fails while it holds the
replica, a reassignment moves the replica away (perhaps while the broker is down) and back,
the broker restarts with the dir failed and again with it repaired, moves between dirs race the
rest, and brokers lose power. Each step is followed by the durability properties and the four
models' refinement checks (``ClusterRun.check`` and the per-event projections), and every run
ends repaired and settled, where a consumer must read every acknowledged record.

Such runs (2026-11-29, 1,500 seeds) found ``traces/regressions/0055`` and ``0056``, and the case
of two live copies of one topic id that start-up must tell apart by their records
(docs/jbod.md, R8; ``traces/regressions/0054``). The seeds below include the five that failed.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from logwright.verify.cluster_run import ClusterRun

MIN = 60_000
CONFIG = {"orphan.partition.removal.delay.ms": str(MIN), "log.retention.ms": str(3 * MIN),
          "log.retention.check.interval.ms": str(MIN // 2)}


def steps_for(seed: int, n: int = 60) -> list[dict[str, Any]]:
    """``n`` seeded steps on topic ``s`` (one partition, two or three replicas, kept forever):
    acks=-1 produce, reassignments to one to three brokers, dir failures, dir moves, crashes
    (at most two brokers down, some with power lost), restarts with or without the dirs
    repaired, and time passing; then healed, repaired and settled, twice, four minutes apart."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [
        {"op": "create_topic", "topic": "s", "partitions": 1,
         "replication_factor": rng.choice([2, 3]), "configs": {"retention.ms": "-1"}},
        {"op": "settle"}]
    down: set[int] = set()
    for i in range(n):
        k, b = rng.random(), rng.randint(1, 3)
        if k < 0.22:
            out.append({"op": "produce", "topic": "s", "partition": 0, "values": [f"v{i}"],
                        "acks": -1})
        elif k < 0.34:
            out.append({"op": "reassign", "topic": "s", "partition": 0,
                        "replicas": rng.sample([1, 2, 3], rng.choice([1, 2, 2, 3]))})
        elif k < 0.44:
            out.append({"op": "fail_dir", "broker": b, "dir": rng.randint(1, 2)})
        elif k < 0.52:
            out.append({"op": "alter_log_dir", "broker": b, "partition": 0,
                        "dir": rng.randint(1, 2)})
        elif k < 0.62 and len(down) < 2:
            out.append({"op": "crash", "broker": b, "power_loss": rng.random() < 0.3})
            down.add(b)
        elif k < 0.76:
            out.append({"op": "restart", "broker": down.pop() if down else b,
                        "repair": rng.random() < 0.5})
        else:
            out.append({"op": "advance", "ms": rng.choice([200, 2_000, 15_000, 40_000, 2 * MIN])})
    return [*out, {"op": "heal"}, {"op": "repair_and_settle"}, {"op": "advance", "ms": 4 * MIN},
            {"op": "repair_and_settle"}]


SEEDS = [1049, 1394, 1437, 1509, 2464, 0, 1, 2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_seeded_jbod_and_reassignment_run_keeps_every_property(seed: int) -> None:
    run = ClusterRun({"brokers": 3, "log_dirs_per_broker": 2, "max_delay_ms": 10, "seed": seed,
                      "broker_properties": CONFIG})
    run.check()
    for step in steps_for(seed):
        run.apply(step)
        run.check()
