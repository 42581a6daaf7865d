"""The three sequences that lost acknowledged acks=all records before eligible leader replicas
and unclean-shutdown detection (traces/cluster/), now regressions.

Each lost a record because a replica that had lost unflushed data was still counted in the ISR
(its failure not yet noticed, or it was the last ISR member standing) and was elected; Kafka
before KIP-966 behaves the same. Now such a replica leaves the ISR and the ELR when it
registers again, and the partition stays offline rather than elect it: every property of the
fuzzer holds after every step. Once every replica is back (repaired and restarted), the
recovery election picks the replica whose log ends highest, the intact one, and a consumer reads
every acknowledged record (docs/cluster.md, "Eligible leader replicas"). The reassignment of
0003 no longer completes on targets that lost power: it waits until each has answered a
LeaderAndIsr from the incarnation registered now, and by then they have caught up.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logwright.controller.store import NO_LEADER
from logwright.verify import cluster_run

TRACES = sorted((Path(__file__).parents[1] / "traces" / "cluster").glob("*.json"))


def test_there_are_cluster_traces() -> None:
    assert TRACES


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_acknowledged_record_survives(path: Path) -> None:
    trace = json.loads(path.read_text())
    run = cluster_run.replay(trace)  # every property, after every step
    partition = next(s["partition"] for s in trace["steps"] if s["op"] == "produce")
    acked = run.topics["s"].acked[partition]
    assert acked, "the trace acknowledged a record"
    state = run.cluster.partition_state("s", partition)
    # The damaged replica was not elected: the partition waits for every replica to report
    # (offline), or a recovery election already picked the intact one.
    if state.leader == NO_LEADER:
        assert run.cluster.controller.elections_by_kind.get("recovery", 0) == 0
    else:
        log = run.cluster.broker(state.leader).replica_manager.describe()[state.tp].log
        held = {offset: rec.value for offset, rec in log.read_records()}
        assert all(held.get(o) == v for o, v in acked.items())
    run.apply({"op": "repair_and_settle"})  # a consumer reads every acknowledged record
    run.check()
    state = run.cluster.partition_state("s", partition)
    log = run.cluster.broker(state.leader).replica_manager.describe()[state.tp].log
    held = {offset: rec.value for offset, rec in log.read_records()}
    assert all(held.get(o) == v for o, v in acked.items())
    if any(s["op"] == "reassign" for s in trace["steps"]):
        # The reassignment waited for its targets to answer from their new incarnations and to
        # catch up from the intact replica: no election from outside the ISR was needed.
        assert state.replicas == tuple(next(s["replicas"] for s in trace["steps"]
                                            if s["op"] == "reassign"))
        assert run.cluster.controller.elections_by_kind == {}
    else:
        assert run.cluster.controller.elections_by_kind.get("recovery", 0) >= 1
