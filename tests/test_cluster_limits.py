"""Known limits of acks=all durability, kept as recorded traces (traces/cluster/).

Both sequences lose an acknowledged record because a replica that lost unsynced data is still
counted in the ISR (its failure not yet detected, or it is the last ISR member standing) and is
elected. Kafka before KIP-966 (eligible leader replicas, unclean-shutdown detection) behaves the
same. The tests are strict xfails: they assert the record survives, fail today, and turn into
failures of the suite the day the limit is closed, so the traces then become regressions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from logwright import Cluster, KafkaError
from logwright.world import Fault

TRACES = sorted((Path(__file__).parents[1] / "traces" / "cluster").glob("*.json"))


def replay(trace: dict[str, Any]) -> tuple[Cluster, int, dict[int, bytes]]:
    """Run a cluster trace; returns the cluster, the partition produced to and its acknowledged
    records."""
    c = Cluster.simulated(**trace["cluster"])
    acked: dict[int, bytes] = {}
    partition = 0
    for step in trace["steps"]:
        op = step["op"]
        if op == "create_topic":
            c.create_topic(step["topic"], step["partitions"], step["replication_factor"])
        elif op == "produce":
            values = [v.encode() for v in step["values"]]
            partition = step["partition"]
            try:
                base = c.produce("s", partition, values, acks=-1, timeout_ms=5_000)
            except KafkaError:
                continue
            acked.update({base + i: v for i, v in enumerate(values)})
        elif op == "fail_dir":
            d = c.log_dirs[step["broker"]][step["dir"] - 1]
            c.simulated_world.new_fs(f"broker-{step['broker']}").inject_fault(d, Fault.EIO)
        elif op == "crash":
            c.crash_broker(step["broker"], power_loss=step["power_loss"])
        elif op == "restart":
            c.restart_broker(step["broker"])
        elif op == "isolate":
            c.partition_network(step["broker"], c.controller.node_id)
        elif op == "reassign":
            c.reassign(json.dumps({"version": 1, "partitions": [
                {"topic": "s", "partition": step["partition"], "replicas": step["replicas"]}]}),
                wait=False)
        elif op == "advance":
            c.advance_time(step["ms"])
        elif op == "settle":
            c.heal_network()
            c.run_until_idle(max_ms=60_000)
        else:
            raise ValueError(f"unknown trace op {op!r}")
    return c, partition, acked


def test_there_are_cluster_traces() -> None:
    assert TRACES


@pytest.mark.xfail(strict=True, reason="known limit: a damaged replica still in the ISR is "
                   "elected (Kafka before KIP-966); see docs/cluster.md, Limits")
@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_acknowledged_record_survives(path: Path) -> None:
    cluster, partition, acked = replay(json.loads(path.read_text()))
    assert acked, "the trace acknowledged a record"
    state = cluster.partition_state("s", partition)
    log = cluster.broker(state.leader).replica_manager.describe()[state.tp].log
    held = {offset: rec.value for offset, rec in log.read_records()}
    assert all(held.get(o) == v for o, v in acked.items())
