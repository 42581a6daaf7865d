"""The partition events a broker records carry the arguments traces/SCHEMA.md names (found by
`make mutmut`: the replay checks the changed variables, so the names and values of BecomeLeader's
and DeleteReplica's arguments could change unseen)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logwright import Cluster


@pytest.mark.parametrize("seed", [5, 11])
def test_become_leader_and_delete_replica_carry_the_partitions_identity(
        seed: int, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    c = Cluster.simulated(seed=seed, trace=path)
    c.create_topic("t", 1, 3)
    c.produce("t", 0, [b"a", b"b"])
    first = c.partition_state("t", 0).leader
    c.crash_broker(first)
    c.advance_time(3_000)
    c.produce("t", 0, [b"c"])
    c.restart_broker(first)
    c.advance_time(3_000)
    c.delete_topic("t")
    c.advance_time(10_000)
    c.close()
    events = [json.loads(line) for line in path.read_text().splitlines()]
    init = next(e for e in events if e["action"] == "Init" and e["instance"] == "t-0")
    topic_id, replicas = init["args"]["topicId"], sorted(init["args"]["replicas"])
    assert topic_id
    leaders = [e for e in events if e["action"] == "BecomeLeader" and e["instance"] == "t-0"]
    assert len(leaders) >= 2, "the failover elects a second leader"
    for e in leaders:
        assert e["args"]["topicId"] == topic_id
        assert e["args"]["replicas"] == replicas
        assert f"broker-{e['args']['leader']}" == e["node"]
        assert e["args"]["leaderEpoch"] >= 0 and "isr" in e["changed"]
    assert [e["args"]["leaderEpoch"] for e in leaders] == sorted(
        e["args"]["leaderEpoch"] for e in leaders)
    deleted = [e for e in events if e["action"] == "DeleteReplica" and e["instance"] == "t-0"]
    assert sorted(e["args"]["replica"] for e in deleted) == replicas
    for e in deleted:
        assert e["args"]["topicId"] == topic_id and e["node"] == f"broker-{e['args']['replica']}"
