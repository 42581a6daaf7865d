"""The embedded cluster API: produce, fetch, offsets, faults, failover, errors."""

from __future__ import annotations

import json

import pytest

from logwright import Cluster, KafkaError
from logwright.cluster import ClusterError
from logwright.identity import TopicPartition


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=7)
    c.create_topic("t", partitions=2, replication_factor=3)
    return c


def values(c: Cluster, partition: int = 0, offset: int = 0) -> list[bytes | None]:
    return [r.value for r in c.fetch("t", partition, offset)]


def test_produce_fetch_and_offsets(cluster: Cluster) -> None:
    assert cluster.produce("t", 0, [b"a", b"b"]) == 0
    assert cluster.produce("t", 0, [b"c"], acks=1) == 2
    cluster.run_until_idle()
    assert values(cluster) == [b"a", b"b", b"c"]
    assert values(cluster, offset=1) == [b"b", b"c"]
    assert cluster.list_offsets("t", 0, "earliest") == 0
    assert cluster.list_offsets("t", 0, "latest") == 3
    assert values(cluster, partition=1) == []


def test_create_partitions_grows_a_topic_and_keeps_its_records(cluster: Cluster) -> None:
    cluster.produce("t", 0, [b"a", b"b"])
    assert cluster.create_partitions("t", 4) == [2, 3]
    for p in (2, 3):
        assert cluster.produce("t", p, [b"new"]) == 0
        assert values(cluster, partition=p) == [b"new"]
    assert values(cluster) == [b"a", b"b"]
    assert cluster.controller.topic("t").partition_count == 4
    with pytest.raises(KafkaError) as info:
        cluster.create_partitions("t", 4)
    assert info.value.name == "INVALID_PARTITIONS"
    # A broker that restarts gets the grown topic in its full LeaderAndIsr.
    cluster.crash_broker(1)
    cluster.restart_broker(1)
    cluster.run_until_idle()
    assert {tp.partition for tp in cluster.broker(1).replica_manager.describe()
            if tp.topic == "t"} == {0, 1, 2, 3}


def test_acks_all_is_on_every_in_sync_replica(cluster: Cluster) -> None:
    cluster.produce("t", 0, [b"x"], acks=-1)
    state = cluster.partition_state("t", 0)
    for b in state.isr:
        part = cluster.broker(b).replica_manager.describe()[state.tp]
        assert part.log_end_offset == 1


def test_leader_crash_elects_from_the_isr_and_keeps_committed_records(cluster: Cluster) -> None:
    for i in range(5):
        cluster.produce("t", 0, [b"v%d" % i])
    before = cluster.partition_state("t", 0)
    cluster.crash_broker(before.leader)
    cluster.advance_time(15_000)
    after = cluster.partition_state("t", 0)
    assert after.leader != before.leader and after.leader in before.isr
    assert after.leader_epoch > before.leader_epoch
    assert values(cluster) == [b"v%d" % i for i in range(5)]
    cluster.produce("t", 0, [b"more"])
    cluster.restart_broker(before.leader)
    assert cluster.run_until_idle()
    part = cluster.broker(before.leader).replica_manager.describe()[after.tp]
    assert part.log_end_offset == 6, "the restarted replica caught up"


def test_controller_failover_bumps_the_epoch_and_the_cluster_goes_on(cluster: Cluster) -> None:
    old_epoch = cluster.controller.epoch
    cluster.fail_controller()
    assert cluster.controller.epoch == old_epoch + 1
    cluster.produce("t", 1, [b"after failover"])
    assert values(cluster, partition=1) == [b"after failover"]


def test_a_zombie_controller_changes_nothing(cluster: Cluster) -> None:
    """hazard 4: the deposed controller keeps running; its writes and requests are fenced."""
    # The leaders' RecordLineage requests answered first: one reaching the zombie after the
    # failover would be its first fenced write, and it would resign before the one below.
    assert cluster.run_until_idle()
    zombie = cluster.controller
    cluster.fail_controller(zombie=True)
    with pytest.raises(KafkaError) as e:
        zombie.create_topic("ghost", 1, 1)
    assert e.value.name == "STALE_CONTROLLER_EPOCH"
    assert not zombie.active
    assert all(t.name != "ghost" for t in cluster.controller.topics())


def test_network_partition_of_the_leader_moves_leadership(cluster: Cluster) -> None:
    cluster.produce("t", 0, [b"a"])
    leader = cluster.partition_state("t", 0).leader
    cluster.partition_network(leader, "controller-1")
    cluster.advance_time(20_000)
    assert cluster.partition_state("t", 0).leader != leader
    cluster.heal_network()
    cluster.produce("t", 0, [b"b"])
    assert values(cluster) == [b"a", b"b"]


def test_reassignment_moves_replicas(cluster: Cluster) -> None:
    c = Cluster.simulated(brokers=4, seed=3)
    c.create_topic("r", partitions=1, replication_factor=2)
    c.produce("r", 0, [b"one", b"two"])
    state = c.partition_state("r", 0)
    target = sorted({1, 2, 3, 4} - set(state.replicas))
    c.reassign(json.dumps({"version": 1, "partitions": [
        {"topic": "r", "partition": 0, "replicas": target}]}))
    after = c.partition_state("r", 0)
    assert sorted(after.replicas) == target and after.leader in target
    assert [r.value for r in c.fetch("r", 0, 0)] == [b"one", b"two"]


def test_errors_carry_kafka_names_and_codes(cluster: Cluster) -> None:
    cluster.produce("t", 0, [b"a"])
    with pytest.raises(KafkaError) as e:
        cluster.fetch("t", 0, 5)
    assert (e.value.name, e.value.code) == ("OFFSET_OUT_OF_RANGE", 1)
    with pytest.raises(KafkaError) as e:
        cluster.produce("nope", 0, [b"x"])
    assert e.value.name == "UNKNOWN_TOPIC_OR_PARTITION"
    with pytest.raises(KafkaError) as e:
        cluster.create_topic("bad/name")
    assert e.value.name == "INVALID_TOPIC_EXCEPTION"
    with pytest.raises(KafkaError) as e:
        cluster.produce("t", 0, [b"x"], acks=2)  # type: ignore[arg-type]
    assert e.value.name == "INVALID_REQUEST"
    with pytest.raises(ClusterError):
        cluster.broker(99)


def test_a_real_cluster_never_reuses_a_deleted_topics_id_after_a_restart(
        tmp_path: object) -> None:
    """Regression: a real cluster's topic ids came from the runtime's seeded generator, so
    after a restart a topic deleted and created again got its deleted generation's id, which
    a broker that missed the deletion would take for the new topic."""
    path = str(tmp_path) + "/data"
    ids = set()
    for _ in range(3):
        with Cluster.real(path, brokers=1, log_dirs_per_broker=1) as c:
            if c.store.topic("a") is not None:
                c.delete_topic("a")
            ids.add(c.create_topic("a", partitions=1, replication_factor=1))
    assert len(ids) == 3


def test_acls_apply_to_every_broker_survive_a_restart_and_never_lock_the_cluster_out(
        tmp_path: object) -> None:
    from logwright.broker.acl_file import AclFileError
    from logwright.broker.authorizer import AclBinding, Operation, ResourceType
    from logwright.errors import TopicAuthorizationFailed

    path = str(tmp_path) + "/data"
    alice_reads = AclBinding("User:alice", ResourceType.TOPIC, "t", Operation.READ)
    quick = {"broker.session.timeout.ms": 2_000, "broker.heartbeat.interval.ms": 300}
    with Cluster.real(path, brokers=2, log_dirs_per_broker=1, broker_properties=quick) as c:
        c.create_topic("t", partitions=1, replication_factor=2)
        c.produce("t", 0, [b"before"])
        c.add_acls([alice_reads])
        assert all(b.authorizer is c.authorizer for b in c.brokers.values())
        with pytest.raises(TopicAuthorizationFailed):  # the anonymous client may not write
            c.produce("t", 0, [b"after"], timeout_ms=2_000)
        # The controller and the replica fetchers are not clients: a leader change still
        # happens and the follower still replicates.
        leader = c.partition_state("t", 0).leader
        c.crash_broker(leader)
        c.run_until_idle()
        assert c.partition_state("t", 0).leader not in (leader, -1)
        c.restart_broker(leader)
    with Cluster.real(path, brokers=2, log_dirs_per_broker=1) as c:
        assert c.authorizer.acls == (alice_reads,)
        assert c.remove_acls([alice_reads]) == [alice_reads]
        assert c.produce("t", 0, [b"open again"]) == 1
    with open(path + "/acls.json", "w") as f:
        f.write("{not json")
    with pytest.raises(AclFileError, match=r"acls\.json"):
        Cluster.real(path, brokers=2, log_dirs_per_broker=1)


def test_one_seed_reproduces_one_run() -> None:
    def run(seed: int) -> tuple[object, ...]:
        c = Cluster.simulated(brokers=3, seed=seed, max_delay_ms=20)
        c.create_topic("d", partitions=3)
        for i in range(6):
            c.produce("d", i % 3, [b"%d" % i])
        c.crash_broker(1)
        c.advance_time(12_000)
        return (c.runtime.clock.now_ms(), c.runtime.events,
                tuple(c.partition_state("d", p) for p in range(3)))

    assert run(11) == run(11)
    assert run(11) != run(12)


def test_real_cluster_on_disk_survives_a_restart(tmp_path: object) -> None:
    path = f"{tmp_path}/cluster"
    c = Cluster.real(path, brokers=2, log_dirs_per_broker=1)
    c.create_topic("t", partitions=1, replication_factor=2)
    c.produce("t", 0, [b"durable"])
    c.close()
    again = Cluster.real(path, brokers=2, log_dirs_per_broker=1)
    try:
        assert [r.value for r in again.fetch("t", 0, 0)] == [b"durable"]
    finally:
        again.close()


def test_run_until_idle_waits_for_an_elected_leader_to_create_its_replica() -> None:
    """Found by the fuzzer (traces/regressions/0005-...): a topic created while both of its
    replicas' brokers were down (not yet noticed) has no replica anywhere; when they come back
    the controller elects one and sends it a FULL LeaderAndIsr. run_until_idle used to count a
    live leader without the replica as "nothing can progress" and returned before that request
    arrived, so a settled cluster lacked an assigned replica."""
    c = Cluster.simulated(seed=1761, max_delay_ms=10)
    c.create_topic("s", partitions=3, replication_factor=3)
    c.crash_broker(1, power_loss=False)
    c.delete_topic("s")
    c.crash_broker(3, power_loss=False)
    with pytest.raises(KafkaError):
        c.create_topic("t", partitions=1, replication_factor=2)
    c.restart_broker(1)
    c.restart_broker(3)
    assert c.run_until_idle(max_ms=120_000)
    state = c.partition_state("t", 0)
    for r in state.replicas:
        assert TopicPartition("t", 0) in c.broker(r).replica_manager.describe(), r
    assert c.list_offsets("t", 0, "latest") == 0


def test_run_until_idle_waits_for_a_leader_once_the_brokers_reach_the_controller() -> None:
    """Found by the fuzzer (traces/regressions/0006-...): every broker cut off from the
    controller loses its session and every partition its leader; once the network heals, the
    brokers' next heartbeats get leaders elected. run_until_idle counted a partition without a
    live leader as unable to progress even with a live, reachable in-sync replica hosting it,
    and returned True with every partition still leaderless."""
    c = Cluster.simulated(seed=0, max_delay_ms=10)
    c.create_topic("s", partitions=3, replication_factor=3)
    for b in (1, 2, 3):
        c.partition_network(b, c.controller.node_id)
    with pytest.raises(KafkaError):
        c.create_topic("t", partitions=1, replication_factor=2)
    assert {c.partition_state("s", p).leader for p in range(3)} == {-1}
    c.heal_network()
    assert c.run_until_idle(max_ms=120_000)
    for topic, partitions in (("s", 3), ("t", 1)):
        for p in range(partitions):
            state = c.partition_state(topic, p)
            assert state.leader != -1, (topic, p)
            for r in state.replicas:
                assert TopicPartition(topic, p) in c.broker(r).replica_manager.describe()
