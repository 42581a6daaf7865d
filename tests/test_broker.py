"""Control requests on real brokers: fencing (hazards 3 and 4, KIP-380), per-partition results,
StopReplica's leader epoch check, and authorization of every handler."""

from __future__ import annotations

from dataclasses import replace
from random import Random

from logwright.broker import AclAuthorizer, AclBinding, BrokerState, Operation, ResourceType
from logwright.broker.authorizer import CLUSTER_NAME, Permission
from logwright.broker.partition import Role
from logwright.errors import Errors
from logwright.identity import Uuid
from logwright.protocol import (
    EARLIEST_TIMESTAMP,
    EPOCH_DURING_DELETE,
    NO_EPOCH,
    LeaderAndIsrResponse,
    StopReplicaPartition,
)
from logwright.storage.naming import TopicPartition
from logwright.world import Fault
from tests.test_broker_harness import T0, T1, TOPIC_ID, World, state


def snapshot_state(w: World, broker_id: int) -> tuple[object, ...]:
    """Everything a control request could change on a broker."""
    b = w.brokers[broker_id]
    rm = b.replica_manager
    return (
        b.controller_epoch, b.broker_epoch,
        {tp: (p.role, p.leader_id, p.leader_epoch, p.partition_epoch, p.isr, p.replicas,
              p.log_end_offset, p.high_watermark, p.log_start_offset)
         for tp, p in rm.partitions.items()},
        dict(rm.metadata.partitions), rm.metadata.live_brokers,
        sorted(w.fs.listdir(f"/b{broker_id}/d1") + w.fs.listdir(f"/b{broker_id}/d2")),
        {tp: st.current_leader_epoch for f in rm.replica_fetcher_manager.fetchers.values()
         for tp, st in f.partitions.items()},
    )


# ---- hazard 3: a restarted broker rejects requests meant for its earlier incarnation -----------


def test_restarted_broker_rejects_requests_for_its_earlier_incarnation() -> None:
    w = World(broker_ids=(1,))
    old_epoch = w.brokers[1].broker_epoch
    w.assign(T0, 1, 1, [1])
    w.crash_broker(1)
    w.start_broker(1)
    new_epoch = w.brokers[1].broker_epoch
    assert new_epoch > old_epoch
    before = snapshot_state(w, 1)
    # The controller has not noticed the restart yet: it addresses the old incarnation.
    response = w.lair(1, [state(T0, 1, 2, [1]), state(T1, 1, 1, [1])], broker_epoch=old_epoch)
    assert response.error is Errors.STALE_BROKER_EPOCH
    assert {e.error for e in response.partition_errors} == {Errors.STALE_BROKER_EPOCH}
    stop = w.stop(1, [StopReplicaPartition(T0, EPOCH_DURING_DELETE, True)], broker_epoch=old_epoch)
    assert stop.error is Errors.STALE_BROKER_EPOCH
    assert w.metadata(1, [state(T0, 1, 9, [1])]).error is Errors.NONE  # current epoch: applied
    after = snapshot_state(w, 1)
    assert before[:3] == after[:3] and before[5:] == after[5:], "a fenced request changed state"
    assert w.brokers[1].fenced_requests == 2
    # Newer (or unknown, -1) broker epochs are not fenced (KIP-380).
    assert w.lair(1, [state(T0, 1, 2, [1])], broker_epoch=new_epoch + 5).error is Errors.NONE
    assert w.lair(1, [state(T0, 1, 3, [1])], broker_epoch=NO_EPOCH).error is Errors.NONE
    assert w.partition(1, T0).leader_epoch == 3


def test_requests_that_arrive_before_registration_wait_and_are_then_fenced() -> None:
    w = World(broker_ids=(1,))
    old_epoch = w.brokers[1].broker_epoch
    w.crash_broker(1)
    w.controller.answer_registrations = False
    broker = w.start_broker(1, wait=False)
    w.run(10)
    assert broker.state is BrokerState.REGISTERING
    # Both arrive while the new process does not know its epoch yet.
    stale = w.controller.leader_and_isr(1, [state(T0, 1, 1, [1])], broker_epoch=old_epoch)
    w.run(20)
    assert stale not in w.controller.responses and not broker.replica_manager.partitions
    src, request = w.controller.pending_registrations[-1]
    w.controller.answer_registration(src, request)
    fresh = w.controller.leader_and_isr(1, [state(T1, 1, 1, [1])])
    assert w.run_until(lambda: fresh in w.controller.responses, 1_000)
    assert w.run_until(lambda: stale in w.controller.responses, 1_000)
    stale_response = w.controller.responses[stale]
    assert isinstance(stale_response, LeaderAndIsrResponse)
    assert stale_response.error is Errors.STALE_BROKER_EPOCH
    assert set(broker.replica_manager.partitions) == {T1}
    assert broker.log_manager.get_log(T0) is None


# ---- hazard 4: a deposed controller's requests change nothing ----------------------------------


def test_lower_controller_epoch_is_rejected_and_changes_nothing() -> None:
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a", b"b"])
    w.controller.controller_epoch = 2  # a new controller took over and was heard
    w.assign(T0, 1, 2, [1, 2], controller_epoch=2)
    w.metadata(1, [state(T0, 1, 2, [1, 2], controller_epoch=2)])
    w.run(1_000)
    before = {b: snapshot_state(w, b) for b in (1, 2)}
    # The deposed controller (epoch 1) keeps sending: leadership, deletion, metadata.
    for broker_id in (1, 2):
        r = w.lair(broker_id, [state(T0, 2, 5, [2]), state(T1, 2, 1, [2])], controller_epoch=1)
        assert r.error is Errors.STALE_CONTROLLER_EPOCH
        s = w.stop(broker_id, [StopReplicaPartition(T0, EPOCH_DURING_DELETE, True)],
                   controller_epoch=1)
        assert s.error is Errors.STALE_CONTROLLER_EPOCH
        m = w.metadata(broker_id, [state(T0, 2, 5, [2])], controller_epoch=1)
        assert m.error is Errors.STALE_CONTROLLER_EPOCH
    w.run(1_000)
    after = {b: snapshot_state(w, b) for b in (1, 2)}
    assert before == after
    assert w.brokers[1].controller_epoch == 2
    assert w.brokers[1].last_fence == ("UpdateMetadataRequest", Errors.STALE_CONTROLLER_EPOCH)


def test_a_higher_controller_epoch_is_adopted_with_its_controller() -> None:
    w = World(broker_ids=(1,))
    w.assign(T0, 1, 1, [1])
    assert w.brokers[1].active_controller == "controller-1"
    w.controller.controller_epoch = 7
    w.controller.controller_id = 3  # same stub node, claiming to be controller 3
    w.lair(1, [state(T0, 1, 2, [1], controller_epoch=7)])
    assert w.brokers[1].controller_epoch == 7
    assert w.brokers[1].active_controller == "controller-3"


# ---- per-partition results -----------------------------------------------------------------------


def test_leader_and_isr_applies_partition_by_partition() -> None:
    w = World(broker_ids=(1, 2))
    a, b, c, d, e, f = (TopicPartition("t", n) for n in range(6))
    w.assign(a, 1, 5, [1])
    w.fs.inject_fault("/b1/d2", Fault.EIO)
    r = w.lair(1, [
        state(a, 1, 4, [1]),                        # older leader epoch than held
        state(b, 1, 1, [1], log_dir="/b1/d2"),      # its dir fails
        replace(state(c, 1, 1, [1], log_dir="/nowhere"), is_new=True),  # not a dir of ours
        state(d, 2, 1, [2]),                        # this broker is not a replica
        replace(state(e, 1, 1, [1], log_dir="/b1/d1"), is_new=True),  # fine
        state(f, 1, 1, [1]),                        # not new, and a dir is offline now
    ])
    assert r.error is Errors.NONE
    assert [(x.tp, x.error) for x in r.partition_errors] == [
        (a, Errors.STALE_CONTROLLER_EPOCH), (b, Errors.KAFKA_STORAGE_ERROR),
        (c, Errors.LOG_DIR_NOT_FOUND), (d, Errors.UNKNOWN_TOPIC_OR_PARTITION), (e, Errors.NONE),
        (f, Errors.KAFKA_STORAGE_ERROR)]  # docs/hazards.md 13: it may be on the offline dir
    assert w.partition(1, a).leader_epoch == 5
    assert w.partition(1, e).is_leader and w.partition(1, e).log.dir_path == "/b1/d1/t-4"
    assert w.brokers[1].log_manager.offline_dirs == ["/b1/d2"]
    assert w.produce(1, e, [b"x"]).partitions[0].error is Errors.NONE


def test_a_partition_named_twice_takes_its_first_state_only() -> None:
    # Regression: the second state of a repeated partition used to be applied as well (the
    # replica became leader twice, at both epochs, and the epoch cache learnt both).
    w = World(broker_ids=(1, 2))
    r = w.lair(1, [state(T0, 1, 2, [1]), state(T1, 1, 1, [1]), state(T0, 2, 3, [2, 1])])
    assert [(x.tp, x.error) for x in r.partition_errors] == [(T0, Errors.NONE),
                                                            (T1, Errors.NONE)]
    p = w.partition(1, T0)
    assert p.is_leader and p.leader_epoch == 2
    assert [e.epoch for e in p.epoch_cache.entries] == [2]
    w.produce(1, T0, [b"a"])
    # On a partition already held: the first (newer) state is taken, the repeat ignored.
    r = w.lair(1, [state(T0, 1, 4, [1]), state(T0, 1, 5, [1])])
    assert [x.error for x in r.partition_errors] == [Errors.NONE]
    assert w.partition(1, T0).leader_epoch == 4
    assert [e.epoch for e in w.partition(1, T0).epoch_cache.entries] == [2, 4]
    # A stale first state is refused and its repeat changes nothing either.
    r = w.lair(1, [state(T0, 1, 3, [1]), state(T0, 1, 6, [1])])
    assert [x.error for x in r.partition_errors] == [Errors.STALE_CONTROLLER_EPOCH]
    assert w.partition(1, T0).leader_epoch == 4


def test_same_leader_epoch_repeats_nothing_but_takes_a_newer_isr() -> None:
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 3, [1, 2])
    w.produce(1, T0, [b"a"])
    fetcher = w.brokers[2].replica_manager.replica_fetcher_manager.fetcher_of(T0)
    truncations = w.brokers[2].replica_manager.truncations
    # A new controller's FULL request repeats the current state: accepted, nothing restarts.
    for broker_id in (1, 2):
        r = w.lair(broker_id, [state(T0, 1, 3, [1, 2])], full=True)
        assert [x.error for x in r.partition_errors] == [Errors.NONE]
    assert w.brokers[2].replica_manager.replica_fetcher_manager.fetcher_of(T0) is fetcher
    assert w.brokers[2].replica_manager.truncations == truncations
    # Same leader epoch, newer partition epoch: the ISR changes, the role does not.
    w.lair(1, [state(T0, 1, 3, [1], [1, 2], partition_epoch=9)])
    p = w.partition(1, T0)
    assert p.is_leader and p.isr == (1,) and p.partition_epoch == 9


# ---- StopReplica -----------------------------------------------------------------------------


def test_stop_replica_fences_older_leader_epochs_per_partition() -> None:
    w = World(broker_ids=(1,))
    w.assign(T0, 1, 5, [1])
    w.assign(T1, 1, 5, [1])
    t2 = TopicPartition("t", 2)
    w.assign(t2, 1, 5, [1])
    r = w.stop(1, [StopReplicaPartition(T0, 4, True),          # older: fenced
                   StopReplicaPartition(T1, EPOCH_DURING_DELETE, True),  # -2 bypasses
                   StopReplicaPartition(t2, 5, False)])        # equal: accepted, kept
    assert r.error is Errors.NONE
    assert [(x.tp, x.error) for x in r.partition_errors] == [
        (T0, Errors.FENCED_LEADER_EPOCH), (T1, Errors.NONE), (t2, Errors.NONE)]
    broker = w.brokers[1]
    assert w.partition(1, T0).is_leader
    assert T1 not in broker.replica_manager.partitions and broker.log_manager.get_log(T1) is None
    assert any(name.startswith("t-1.") and name.endswith("-delete")
               for d in ("/b1/d1", "/b1/d2") for name in w.fs.listdir(d))
    stopped = w.partition(1, t2)
    assert stopped.role is Role.NONE and broker.log_manager.get_log(t2) is not None
    assert w.produce(1, t2, [b"x"]).partitions[0].error is Errors.NOT_LEADER_OR_FOLLOWER


def test_stop_replica_on_an_offline_dir_is_refused_and_the_failure_kept() -> None:
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.assign(T1, 1, 1, [1, 2])
    t0_dir = w.partition(2, T0).log.dir_path.rsplit("/", 1)[0]
    assert w.partition(2, T1).log.dir_path.rsplit("/", 1)[0] != t0_dir
    w.fs.inject_fault(t0_dir, Fault.EIO)
    w.produce(1, T0, [b"a"], acks=1)
    w.produce(1, T1, [b"a"], acks=1)
    w.run(2_000)
    fetchers = w.brokers[2].replica_manager.replica_fetcher_manager
    assert set(fetchers.failed_partitions) == {T0}
    r = w.stop(2, [StopReplicaPartition(T0, 1, False), StopReplicaPartition(T1, 1, False)])
    assert [x.error for x in r.partition_errors] == [Errors.KAFKA_STORAGE_ERROR, Errors.NONE]
    assert set(fetchers.failed_partitions) == {T0}
    assert w.partition(2, T1).role is Role.NONE and fetchers.fetcher_of(T1) is None


def test_stop_replica_with_delete_clears_the_failure_record() -> None:
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a"])
    # Fence the follower at its current epoch: the leader moved to epoch 2, the follower was
    # not told, so its fetch at epoch 1 is fenced and the partition fails (KIP-461).
    w.lair(1, [state(T0, 1, 2, [1, 2])])
    fetchers = w.brokers[2].replica_manager.replica_fetcher_manager
    assert w.run_until(lambda: T0 in fetchers.failed_partitions, 5_000)
    assert w.brokers[2].snapshot()[
        "kafka.server:type=ReplicaFetcherManager,name=FailedPartitionsCount,clientId=Replica"] == 1
    r = w.stop(2, [StopReplicaPartition(T0, 2, True)])
    assert r.partition_errors[0].error is Errors.NONE
    assert fetchers.failed_partitions_count == 0
    assert T0 not in w.brokers[2].replica_manager.partitions


# ---- authorization -------------------------------------------------------------------------------


def acls(_broker_id: int) -> AclAuthorizer:
    return AclAuthorizer([
        AclBinding("User:controller", ResourceType.CLUSTER, CLUSTER_NAME, Operation.CLUSTER_ACTION),
        AclBinding("User:alice", ResourceType.TOPIC, "t", Operation.WRITE),
        AclBinding("User:alice", ResourceType.TOPIC, "*", Operation.READ),
        AclBinding("User:bob", ResourceType.TOPIC, "t", Operation.ALL),
        AclBinding("User:bob", ResourceType.TOPIC, "t", Operation.WRITE, Permission.DENY),
    ], super_users=["User:ANONYMOUS"])  # the brokers' own and the stub controller's principal


def test_every_handler_consults_the_authorizer() -> None:
    w = World(broker_ids=(1, 2), authorizer=acls)
    w.assign(T0, 1, 1, [1, 2])
    before = snapshot_state(w, 1)
    cid = w.controller.leader_and_isr(1, [state(T0, 2, 9, [2])], principal="User:mallory")
    assert w.run_until(lambda: cid in w.controller.responses, 1_000)
    response = w.controller.responses[cid]
    assert isinstance(response, LeaderAndIsrResponse)
    assert response.error is Errors.CLUSTER_AUTHORIZATION_FAILED
    assert snapshot_state(w, 1) == before
    for broker_id in (1, 2):
        response = w.lair(broker_id, [state(T0, 1, 2, [1, 2])], principal="User:controller")
        assert response.error is Errors.NONE
    assert w.partition(1, T0).leader_epoch == 2
    # Produce: alice may write t; bob's DENY wins over his ALL; carol has nothing.
    assert w.produce(1, T0, [b"a"], principal="User:alice").partitions[0].error is Errors.NONE
    for who in ("User:bob", "User:carol"):
        denied = w.produce(1, T0, [b"b"], principal=who).partitions[0].error
        assert denied is Errors.TOPIC_AUTHORIZATION_FAILED
    # Fetch needs READ (alice: via "*"; bob: via ALL, his DENY is on WRITE only).
    assert w.fetch(1, T0, 0, "User:alice").partitions[0].error is Errors.NONE
    assert w.fetch(1, T0, 0, "User:bob").partitions[0].error is Errors.NONE
    assert w.fetch(1, T0, 0, "User:carol").partitions[0].error is \
        Errors.TOPIC_AUTHORIZATION_FAILED
    assert w.values(1, T0) == [(0, b"a")]
    # ListOffsets needs DESCRIBE, which READ implies.
    assert w.list_offsets(1, T0, EARLIEST_TIMESTAMP, "User:alice") == (Errors.NONE, 0)
    assert w.list_offsets(1, T0, EARLIEST_TIMESTAMP, "User:carol") == \
        (Errors.TOPIC_AUTHORIZATION_FAILED, -1)


def test_the_authorizer_rules() -> None:
    az = AclAuthorizer()
    assert az.authorize_topic("User:anyone", Operation.DELETE, "t"), "no ACL: allow all"
    az.add_acl(AclBinding("User:*", ResourceType.TOPIC, "t", Operation.READ))
    az.add_acl(AclBinding("User:eve", ResourceType.TOPIC, "*", Operation.ALL, Permission.DENY))
    assert az.authorize_topic("User:x", Operation.READ, "t")
    assert az.authorize_topic("User:x", Operation.DESCRIBE, "t"), "READ implies DESCRIBE"
    assert not az.authorize_topic("User:x", Operation.WRITE, "t")
    assert not az.authorize_topic("User:x", Operation.READ, "u"), "no ACL for u: denied"
    assert not az.authorize_topic("User:eve", Operation.READ, "t"), "deny wins"
    assert not az.authorize_cluster("User:x", Operation.CLUSTER_ACTION)
    assert az.remove_acl(AclBinding("User:*", ResourceType.TOPIC, "t", Operation.READ))
    assert not az.authorize_topic("User:x", Operation.READ, "t")


def test_follower_fetches_need_cluster_action() -> None:
    def deny_brokers(_b: int) -> AclAuthorizer:
        return AclAuthorizer([AclBinding("User:controller", ResourceType.CLUSTER, CLUSTER_NAME,
                                         Operation.CLUSTER_ACTION)],
                             super_users=["User:controller"])
    w = World(broker_ids=(1, 2), authorizer=deny_brokers)
    for b in (1, 2):
        r = w.lair(b, [state(T0, 1, 1, [1, 2])], principal="User:controller")
        assert r.error is Errors.NONE
    w.produce_async(1, T0, [b"a"], acks=1, principal="User:controller")
    w.run(3_000)
    # The follower's own principal (ANONYMOUS) may not replicate: nothing reaches it, so the
    # record the controller's principal (a super user) wrote is never committed.
    assert w.partition(1, T0).log_end_offset == 1 and w.partition(1, T0).high_watermark == 0
    assert w.partition(2, T0).log_end_offset == 0
    assert w.produce(1, T0, [b"b"], acks=1).partitions[0].error is \
        Errors.TOPIC_AUTHORIZATION_FAILED  # and ANONYMOUS clients may not write



def test_metrics_have_kafkas_names_and_one_registry_per_broker() -> None:
    from logwright.broker import metrics as m

    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a"])
    s1, s2 = w.brokers[1].snapshot(), w.brokers[2].snapshot()
    expected = {m.FAILED_PARTITIONS, m.ALTER_LOG_DIRS_FAILED_PARTITIONS, m.DEAD_THREADS,
                m.MAX_LAG, m.UNDER_REPLICATED, m.OFFLINE_REPLICAS, m.LEADER_COUNT,
                m.PARTITION_COUNT, m.OFFLINE_LOG_DIRS, m.LOG_DIR_OFFLINE.format("/b1/d1"),
                m.LOG_DIR_OFFLINE.format("/b1/d2"), m.ORPHAN_COUNT, m.ORPHAN_SIZE}
    per_log = {m.LOG_START_OFFSET.format(T0.topic, T0.partition),
               m.LOG_END_OFFSET.format(T0.topic, T0.partition),
               m.LOG_SIZE.format(T0.topic, T0.partition)}
    assert set(s1) == expected | per_log
    assert s1[m.LEADER_COUNT] == 1 and s2[m.LEADER_COUNT] == 0, "registries are separate"
    assert s1[m.PARTITION_COUNT] == s2[m.PARTITION_COUNT] == 1
    text = w.brokers[2].metrics.exposition().decode()
    assert ('kafka_server_replicafetchermanager_failedpartitionscount'
            '{broker="2",clientId="Replica"} 0.0') in text
    assert "kafka.server:type=ReplicaFetcherManager,name=FailedPartitionsCount" in text


def test_a_partition_of_another_topic_generation_is_judged_by_its_id_first() -> None:
    """Regression (found by the trace checker): a topic deleted and re-created under the same
    name, whose StopReplica has not reached a broker yet. The new generation's LeaderAndIsr
    (leader epoch 0) met the old partition (epoch 2) and was answered STALE_CONTROLLER_EPOCH,
    comparing epochs of two different topics. Topic ids are compared first, whatever the
    epochs (issue 10): the old generation's log is set aside as a stray and the new
    generation's replica created, in the same request; the old one's late requests change
    nothing."""
    for leader_epoch in (0, 2, 5):  # older, equal and newer than the old generation's
        w = World(broker_ids=(1,))
        w.assign(T0, 1, 2, [1])
        w.produce(1, T0, [b"old"])
        new_generation = replace(state(T0, 1, leader_epoch, [1]),
                                 topic_id=Uuid.from_random(Random(8)), is_new=True)
        response = w.lair(1, [new_generation])
        assert [e.error for e in response.partition_errors] == [Errors.NONE]
        partition = w.brokers[1].replica_manager.partitions[T0]
        assert (partition.leader_epoch, partition.topic_id) == (leader_epoch,
                                                                new_generation.topic_id)
        assert w.values(1, T0) == []
        assert [s.topic_id for s in w.brokers[1].log_manager.stray_logs()] == [TOPIC_ID]
        # The new generation moves on.
        moved = w.lair(1, [replace(new_generation, leader_epoch=leader_epoch + 1, is_new=False)])
        assert [e.error for e in moved.partition_errors] == [Errors.NONE]
        assert w.brokers[1].replica_manager.partitions[T0].leader_epoch == leader_epoch + 1
