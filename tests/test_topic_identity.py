"""Topic identity, strays and offline dirs on a simulated cluster (issue 10,
docs/topic-identity.md).

Each scenario runs over several seeds and checks, besides its own story, the two promises:
no record appended under one topic id is ever served under another (every replica of every
running broker holds only records sent to its own generation, and consumers read only those),
and every assigned replica is hosted, with the topic's id, once the faults stop.
"""

from __future__ import annotations

import json
import posixpath

import pytest

from logwright import Cluster
from logwright.identity import TopicPartition, Uuid
from logwright.world import Fault

SEEDS = range(3)


def values_of(cluster: Cluster, b: int, tp: TopicPartition) -> list[bytes | None]:
    """The distinct values of broker ``b``'s replica of ``tp``, in order (a produce retried
    after a timeout may append its batch twice, as Kafka's producer without idempotence)."""
    part = cluster.broker(b).replica_manager.describe()[tp]
    return list(dict.fromkeys(rec.value for _, rec in part.log.read_records()))


def consumed(cluster: Cluster, topic: str, p: int) -> list[bytes | None]:
    """The distinct values a consumer reads from offset 0, in order."""
    return list(dict.fromkeys(r.value for r in cluster.fetch(topic, p, 0)))


def check_identity(cluster: Cluster, sent: dict[Uuid, set[bytes]]) -> None:
    """Every replica hosted by a running broker is served under its log's own id and holds
    only records sent to that id."""
    for b, broker in sorted(cluster.brokers.items()):
        if not broker.alive:
            continue
        for tp, part in broker.replica_manager.describe().items():
            assert part.topic_id is not None and part.topic_id == part.log.topic_id
            if part.offline:
                continue
            own = sent.get(part.topic_id, set())
            for _, rec in part.log.read_records():
                assert rec.value in own, (
                    f"broker {b} holds {rec.value!r} in {tp} (topic id {part.topic_id}), a "
                    "record of another topic id")


def check_assigned_hosted(cluster: Cluster) -> None:
    """Every assigned replica is hosted (online) with the topic's id on its running broker."""
    for record in cluster.controller.topics():
        for p in range(record.partition_count):
            state = cluster.partition_state(record.name, p)
            for r in state.replicas:
                broker = cluster.broker(r)
                if not broker.alive:
                    continue
                part = broker.replica_manager.describe().get(state.tp)
                assert part is not None and not part.offline, f"broker {r} lacks {state.tp}"
                assert part.topic_id == state.topic_id


def strays(cluster: Cluster, b: int) -> list[tuple[TopicPartition, Uuid | None]]:
    return [(s.tp, s.topic_id) for s in cluster.broker(b).log_manager.stray_logs()]


def reassign(cluster: Cluster, tp: TopicPartition, replicas: list[int], wait: bool = True
             ) -> None:
    cluster.reassign(json.dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": replicas}]}), wait=wait)


@pytest.mark.parametrize("seed", SEEDS)
def test_kips_case_moved_away_while_offline_then_back(seed: int) -> None:
    """KIP-550's motivating case: a broker is down while a reassignment moves its partition
    away; restarted, its FULL LeaderAndIsr makes the old log a stray (not served); moved back,
    the stray is revived from its own data, and the replica catches up."""
    cluster = Cluster.simulated(brokers=3, seed=seed)
    topic_id = cluster.create_topic("t", partitions=1, replication_factor=2)
    tp = TopicPartition("t", 0)
    sent = {topic_id: {b"a", b"b", b"c", b"d"}}
    cluster.produce("t", 0, [b"a", b"b"], acks=-1)
    assert cluster.run_until_idle()
    state = cluster.partition_state("t", 0)
    away = next(r for r in state.replicas if r != state.leader)
    other = next(b for b in (1, 2, 3) if b not in state.replicas)
    cluster.crash_broker(away, power_loss=False)
    reassign(cluster, tp, [state.leader, other])
    cluster.produce("t", 0, [b"c"], acks=-1)
    cluster.restart_broker(away)
    cluster.advance_time(100)  # its FULL LeaderAndIsr arrives (nothing it hosts to wait for)
    assert cluster.run_until_idle()
    assert tp not in cluster.broker(away).replica_manager.describe()
    assert strays(cluster, away) == [(tp, topic_id)]
    assert cluster.broker(away).log_manager.full_request_applied
    check_identity(cluster, sent)
    reassign(cluster, tp, [state.leader, away])
    cluster.produce("t", 0, [b"d"], acks=-1)
    assert cluster.run_until_idle()
    assert strays(cluster, away) == [], "revived, not left aside"
    assert values_of(cluster, away, tp) == [b"a", b"b", b"c", b"d"]
    assert consumed(cluster, "t", 0) == [b"a", b"b", b"c", b"d"]
    check_identity(cluster, sent)
    check_assigned_hosted(cluster)


@pytest.mark.parametrize("seed", SEEDS)
def test_rehosted_before_deletion_is_revived_not_refetched(seed: int) -> None:
    """The stray's records are there the moment the replica is assigned back, before any
    fetch: the broker is cut off from the leader, so nothing can have been fetched."""
    cluster = Cluster.simulated(brokers=3, seed=seed)
    topic_id = cluster.create_topic("t", partitions=1, replication_factor=2)
    tp = TopicPartition("t", 0)
    cluster.produce("t", 0, [b"a", b"b", b"c"], acks=-1)
    assert cluster.run_until_idle()
    state = cluster.partition_state("t", 0)
    away = next(r for r in state.replicas if r != state.leader)
    other = next(b for b in (1, 2, 3) if b not in state.replicas)
    cluster.crash_broker(away, power_loss=False)
    reassign(cluster, tp, [state.leader, other])
    cluster.restart_broker(away)
    cluster.advance_time(100)
    assert strays(cluster, away) == [(tp, topic_id)]
    for b in (state.leader, other):
        cluster.partition_network(away, b)
    reassign(cluster, tp, [state.leader, other, away], wait=False)
    cluster.advance_time(1_000)
    part = cluster.broker(away).replica_manager.describe()[tp]
    assert part.topic_id == topic_id
    assert values_of(cluster, away, tp) == [b"a", b"b", b"c"], "its own data, at once"
    cluster.heal_network()
    assert cluster.run_until_idle()
    check_identity(cluster, {topic_id: {b"a", b"b", b"c"}})
    check_assigned_hosted(cluster)


@pytest.mark.parametrize("seed", SEEDS)
def test_topic_deleted_and_recreated_while_a_broker_is_down(seed: int) -> None:
    cluster = Cluster.simulated(brokers=3, seed=seed)
    old_id = cluster.create_topic("s", partitions=2, replication_factor=3)
    for p in (0, 1):
        cluster.produce("s", p, [b"old-%d" % p], acks=-1)
    assert cluster.run_until_idle()
    down = 1 + seed % 3
    cluster.crash_broker(down, power_loss=False)
    cluster.delete_topic("s")
    new_id = cluster.create_topic("s", partitions=1, replication_factor=3)
    cluster.produce("s", 0, [b"new"], acks=-1)
    cluster.restart_broker(down)
    cluster.advance_time(100)
    assert cluster.run_until_idle()
    s0, s1 = TopicPartition("s", 0), TopicPartition("s", 1)
    assert sorted(strays(cluster, down), key=str) == sorted([(s0, old_id), (s1, old_id)],
                                                            key=str)
    assert values_of(cluster, down, s0) == [b"new"]
    assert consumed(cluster, "s", 0) == [b"new"]
    check_identity(cluster, {old_id: {b"old-0", b"old-1"}, new_id: {b"new"}})
    check_assigned_hosted(cluster)


@pytest.mark.parametrize("seed", range(5))
def test_delete_and_recreate_at_once_on_a_reordering_duplicating_network(seed: int) -> None:
    """The controller deletes and re-creates at once; the network delays, reorders and
    duplicates every control request. A late LeaderAndIsr of the deleted topic must not
    re-create its replica, and no broker may serve the old records under the new id."""
    cluster = Cluster.simulated(brokers=3, seed=seed, max_delay_ms=40, duplicate_rate=0.3)
    old_id = cluster.create_topic("s", partitions=3, replication_factor=3)
    old = {b"old-%d" % i for i in range(3)}
    for p in range(3):
        cluster.produce("s", p, [b"old-%d" % p], acks=-1)
    cluster.controller.delete_topic("s")
    new_id = cluster.controller.create_topic("s", 2, 2, None)
    sent = {old_id: old, new_id: {b"new-0", b"new-1"}}
    for p in (0, 1):
        check_identity(cluster, sent)
        cluster.produce("s", p, [b"new-%d" % p], acks=-1, timeout_ms=60_000)
    assert cluster.run_until_idle()
    for p in (0, 1):
        assert consumed(cluster, "s", p) == [b"new-%d" % p]
    check_identity(cluster, sent)
    check_assigned_hosted(cluster)


@pytest.mark.parametrize("seed", SEEDS)
def test_controller_failover_sends_full_requests_that_find_the_strays(seed: int) -> None:
    """A broker cut off from the controller misses a topic's deletion; the new controller's
    FULL LeaderAndIsr makes the deleted topic's log a stray there."""
    cluster = Cluster.simulated(brokers=3, seed=seed)
    gone_id = cluster.create_topic("gone", partitions=1, replication_factor=3)
    kept_id = cluster.create_topic("kept", partitions=1, replication_factor=3)
    cluster.produce("gone", 0, [b"g"], acks=-1)
    cluster.produce("kept", 0, [b"k"], acks=-1)
    assert cluster.run_until_idle()
    cut = 1 + seed % 3
    cluster.partition_network(cut, cluster.controller.node_id)
    cluster.controller.delete_topic("gone")
    cluster.advance_time(200)
    gone = TopicPartition("gone", 0)
    assert gone in cluster.broker(cut).replica_manager.describe(), "it missed the StopReplica"
    cluster.fail_controller()
    cluster.heal_network()
    assert cluster.run_until_idle()
    for b in (1, 2, 3):
        assert cluster.broker(b).log_manager.full_request_applied
        assert gone not in cluster.broker(b).replica_manager.describe()
    assert strays(cluster, cut) == [(gone, gone_id)]
    check_identity(cluster, {gone_id: {b"g"}, kept_id: {b"k"}})
    check_assigned_hosted(cluster)
    assert consumed(cluster, "kept", 0) == [b"k"]


@pytest.mark.parametrize("seed", SEEDS)
def test_restart_with_a_failed_dir_serves_the_others_and_creates_no_empty_replica(
        seed: int) -> None:
    """A broker restarts with one dir failed: that dir is offline, the partitions of its other
    dir serve at once, a partition of the failed dir is not created empty elsewhere (it stays
    KAFKA_STORAGE_ERROR there), and the acks=all records survive the leadership changes."""
    cluster = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=seed)
    topic_id = cluster.create_topic("t", partitions=4, replication_factor=3)
    acked = {p: [b"v%d-%d" % (p, i) for i in range(3)] for p in range(4)}
    for p, values in acked.items():
        cluster.produce("t", p, values, acks=-1)
    assert cluster.run_until_idle()
    victim = 1 + seed % 3
    lm = cluster.broker(victim).log_manager
    failed = cluster.log_dirs[victim][0]
    on_failed = {tp for tp in (TopicPartition("t", p) for p in range(4))
                 if (d := lm.dir_of(tp)) is not None and d.path == failed}
    on_healthy = {TopicPartition("t", p) for p in range(4)} - on_failed
    assert on_failed and on_healthy
    cluster.crash_broker(victim, power_loss=False)
    disk = cluster.simulated_world.new_fs(f"broker-{victim}")
    disk.inject_fault(failed, Fault.EIO)
    cluster.restart_broker(victim)
    cluster.advance_time(5_000)  # (never idle: replicas on the failed dir cannot catch up)
    broker = cluster.broker(victim)
    assert broker.log_manager.offline_dirs == [failed]
    hosted = broker.replica_manager.describe()
    for tp in on_healthy:
        assert tp in hosted and not hosted[tp].offline
    for tp in on_failed:
        assert tp not in hosted, "no empty stand-in on the healthy dir"
        healthy = broker.log_manager.dirs[cluster.log_dirs[victim][1]]
        assert tp not in healthy.logs
    errors = {(e.tp, e.error.name) for e in cluster.controller.control_errors
              if e.tp is not None and e.broker == broker.node_id}
    assert {(tp, "KAFKA_STORAGE_ERROR") for tp in on_failed} <= errors
    # Leadership moves around; every acknowledged record is still read.
    for b in (1, 2, 3):
        if b != victim:
            cluster.crash_broker(b, power_loss=False)
            cluster.restart_broker(b)
            cluster.advance_time(20_000)
    for p, values in acked.items():
        assert consumed(cluster, "t", p) == values
    check_identity(cluster, {topic_id: {v for vs in acked.values() for v in vs}})
    # The dir is repaired: the broker comes back whole, with the data it had there.
    disk.clear_fault(failed)
    cluster.crash_broker(victim, power_loss=False)
    cluster.restart_broker(victim)
    assert cluster.run_until_idle()
    check_assigned_hosted(cluster)
    for tp in on_failed:
        assert posixpath.dirname(cluster.broker(victim).replica_manager.describe()[tp]
                                 .log.dir_path) == failed
        assert values_of(cluster, victim, tp) == acked[tp.partition]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_repaired_dir_holding_a_deleted_generation_hides_no_acknowledged_record(
        seed: int) -> None:
    """traces/regressions/0028 and 0029: a broker restarts with a dir failed, the topic is
    deleted and created again, and the new generation's replica lands on the healthy dir. Once
    the dir is repaired, start-up finds live copies of the partition under two topic ids: it
    sets both aside (R7) and the controller's LeaderAndIsr revives the new generation's, whose
    records it serves; the old generation's waits as a stray. Before the fix, start-up kept
    the first copy found, which the LeaderAndIsr then set aside for an empty log."""
    cluster = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=seed)
    cluster.create_topic("s", partitions=1, replication_factor=3)
    cluster.produce("s", 0, [b"old"], acks=-1)
    assert cluster.run_until_idle()
    tp, victim = TopicPartition("s", 0), 1 + seed % 3
    held = cluster.broker(victim).log_manager.dir_of(tp)
    assert held is not None
    failed = held.path
    cluster.crash_broker(victim, power_loss=False)
    disk = cluster.simulated_world.new_fs(f"broker-{victim}")
    disk.inject_fault(failed, Fault.EIO)
    cluster.restart_broker(victim)
    cluster.delete_topic("s")
    new_id = cluster.create_topic("s", partitions=1, replication_factor=3)
    assert cluster.run_until_idle(max_ms=120_000)
    new_dir = cluster.broker(victim).log_manager.dir_of(tp)
    assert new_dir is not None and new_dir.path != failed
    cluster.produce("s", 0, [b"new"], acks=-1)
    assert cluster.run_until_idle()
    disk.clear_fault(failed)
    cluster.crash_broker(victim, power_loss=False)
    cluster.restart_broker(victim)
    assert cluster.run_until_idle(max_ms=120_000)
    check_assigned_hosted(cluster)
    part = cluster.broker(victim).replica_manager.describe()[tp]
    assert part.topic_id == new_id and posixpath.dirname(part.log.dir_path) == new_dir.path
    assert values_of(cluster, victim, tp) == [b"new"]
    assert consumed(cluster, "s", 0) == [b"new"]
    assert new_id not in [tid for t, tid in strays(cluster, victim) if t == tp]
    check_identity(cluster, {new_id: {b"new"}})
