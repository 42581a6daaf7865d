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

from logwright import Cluster
from logwright.verify import cluster_run

TRACES = sorted((Path(__file__).parents[1] / "traces" / "cluster").glob("*.json"))


def replay(trace: dict[str, Any]) -> tuple[Cluster, int, dict[int, bytes]]:
    """Run a cluster trace with the fuzzer's replay (no property checked on the way); returns
    the cluster, the partition produced to and its acknowledged records."""
    run = cluster_run.replay(trace, check=False)
    partition = next(s["partition"] for s in trace["steps"] if s["op"] == "produce")
    return run.cluster, partition, run.topics["s"].acked[partition]


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
