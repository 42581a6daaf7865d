"""Reassignment with log dirs end to end, over the simulated cluster: the controller's requests
(tests/test_reassignment_log_dirs.py) meet real brokers.

A move to a named dir on a NEW broker is made by the LeaderAndIsr that adds the replica (it
creates it in the dir); a move between two dirs of one broker by the broker's dir-move engine
(ReplicaManager.alter_replica_log_dirs, docs/jbod.md).
"""

from __future__ import annotations

import json

import pytest

from logwright.cluster import Cluster
from logwright.identity import TopicPartition


def plan(topic: str, partition: int, replicas: list[int], log_dirs: list[str]) -> str:
    return json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": partition, "replicas": replicas, "log_dirs": log_dirs}]})


def where(cluster: Cluster, broker: int, tp: TopicPartition) -> list[tuple[str, bool]]:
    """(dir, is future) of every log of ``tp`` broker ``broker`` reports."""
    [answer] = cluster.describe_log_dirs(broker).values()
    return [(r.log_dir, p.is_future) for r in answer.results for t in r.topics
            for p in t.partitions if (t.name, p.partition_index) == (tp.topic, tp.partition)]


def values(cluster: Cluster, topic: str, partition: int) -> list[bytes | None]:
    return [r.value for r in cluster.fetch(topic, partition, 0)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_new_replica_lands_in_its_named_dir_and_the_reassignment_completes(seed: int) -> None:
    c = Cluster.simulated(brokers=4, seed=seed)
    c.controller.create_topic("r", 1, 2, assignment=[[1, 2]])
    assert c.run_until_idle()
    c.produce("r", 0, [b"one", b"two"])
    tp = TopicPartition("r", 0)
    target = c.log_dirs[4][1]
    c.reassign(plan("r", 0, [4, 1], [target, "any"]))
    state = c.partition_state("r", 0)
    assert state.replicas == (4, 1) and state.log_dir_for(4) == target
    assert where(c, 4, tp) == [(target, False)]
    assert values(c, "r", 0) == [b"one", b"two"]
    assert c.controller.reassignment_status() == []


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("role", ["leader", "follower"])
def test_a_same_broker_move_completes_with_no_new_leader_epoch(seed: int, role: str) -> None:
    c = Cluster.simulated(brokers=3, seed=seed)
    c.controller.create_topic("m", 1, 3, assignment=[[1, 2, 3]])
    assert c.run_until_idle()
    c.produce("m", 0, [b"a", b"b", b"c"])
    before = c.partition_state("m", 0)
    broker = before.leader if role == "leader" else next(
        r for r in before.replicas if r != before.leader)
    tp = TopicPartition("m", 0)
    [(source, _)] = where(c, broker, tp)
    target = next(d for d in c.log_dirs[broker] if d != source)
    dirs = [target if r == broker else "any" for r in before.replicas]
    c.reassign(plan("m", 0, list(before.replicas), dirs), wait=False)
    c.produce("m", 0, [b"d"])  # appends race the copy
    assert c.runtime.run_until(lambda: c.controller.reassignment_status() == [], 120_000)
    after = c.partition_state("m", 0)
    assert (after.leader_epoch, after.leader, after.isr) == (
        before.leader_epoch, before.leader, before.isr)
    assert where(c, broker, tp) == [(target, False)], "in its dir, no future log left"
    assert values(c, "m", 0) == [b"a", b"b", b"c", b"d"]


def test_a_move_survives_its_broker_restarting_and_completes() -> None:
    c = Cluster.simulated(brokers=3, seed=5)
    c.controller.create_topic("m", 1, 2, assignment=[[1, 2]])
    assert c.run_until_idle()
    c.produce("m", 0, [b"x"] * 50)
    tp = TopicPartition("m", 0)
    [(source, _)] = where(c, 2, tp)
    target = next(d for d in c.log_dirs[2] if d != source)
    c.reassign(plan("m", 0, [1, 2], ["any", target]), wait=False)
    c.crash_broker(2)
    c.advance_time(2_000)
    c.restart_broker(2)
    assert c.runtime.run_until(lambda: c.controller.reassignment_status() == [], 120_000)
    assert where(c, 2, tp) == [(target, False)]
    assert values(c, "m", 0) == [b"x"] * 50


@pytest.mark.parametrize("seed", [4, 5, 6, 7, 8, 9])
def test_a_lossy_network_delays_but_does_not_stop_a_move_to_a_named_dir(seed: int) -> None:
    c = Cluster.simulated(brokers=4, seed=seed)
    c.controller.create_topic("r", 1, 2, assignment=[[1, 2]])
    assert c.run_until_idle()
    c.produce("r", 0, [b"kept"])
    target = c.log_dirs[3][0]
    network = c.simulated_world.network
    network.drop_rate, network.duplicate_rate = 0.3, 0.1  # requests and answers get lost
    # A lost fetch costs its follower replica.socket.timeout.ms (30 s): give it ten minutes.
    c.reassign(plan("r", 0, [1, 3], ["any", target]), timeout_ms=600_000)
    assert c.partition_state("r", 0).replicas == (1, 3)
    network.drop_rate = network.duplicate_rate = 0.0
    assert where(c, 3, TopicPartition("r", 0)) == [(target, False)]
    assert values(c, "r", 0) == [b"kept"]
