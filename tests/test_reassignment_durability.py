"""A reassignment deletes its old replicas only once its targets hold every committed record
durably (traces/regressions/0041, found by the fuzzer).

The controller deletes the removed replicas once every target is in the ISR and its broker has
answered a LeaderAndIsr sent since the reassignment began. Being in the ISR says a replica has the
committed records, not that it fsynced them: with the default flush policy the targets held them
in the page cache only, and when both lost power after the completion, the only replica that had
held them intact was gone. Now a target of a reassignment that removes replicas fsyncs its log
before it answers that LeaderAndIsr, and from then on its records are durable before they count
toward the high watermark (a follower fsyncs what it fetched before its next fetch reports it, a
leader before it advances the high watermark): every power loss below is survived.
"""

from __future__ import annotations

import json
from dataclasses import replace

from logwright.cluster import Cluster
from logwright.errors import Errors
from logwright.identity import TopicPartition
from logwright.world import Fault
from tests.test_broker_harness import T0, World, state

TP = TopicPartition("s", 0)


def _reassignment(*replicas: int) -> str:
    return json.dumps({"version": 1, "partitions": [
        {"topic": "s", "partition": 0, "replicas": list(replicas)}]})


def _lose_power_and_settle(c: Cluster, brokers: tuple[int, ...]) -> None:
    for b in brokers:
        c.crash_broker(b, power_loss=True)
    for b in brokers:
        c.restart_broker(b)
    assert c.run_until_idle(max_ms=120_000)


def _assert_durable_on(c: Cluster, brokers: tuple[int, ...]) -> None:
    """Each of ``brokers``' replicas of ``TP`` is fsynced to its end, which holds every
    committed record."""
    hw = c.partition_state("s", 0)
    leader = c.broker(hw.leader).replica_manager.describe()[TP]
    for b in brokers:
        log = c.broker(b).replica_manager.describe()[TP].log
        assert log.recovery_point == log.log_end_offset >= leader.high_watermark, (b, log)


def test_targets_fsync_the_committed_records_before_the_old_replica_goes() -> None:
    """0041's shape: acknowledged by 1, 2 and 3, not fsynced; reassigned to [1, 2] (3 is
    deleted); then both targets lose power."""
    c = Cluster.simulated(brokers=3, seed=3, max_delay_ms=10)
    c.create_topic("s", partitions=1, replication_factor=3, configs={"retention.ms": -1})
    assert c.run_until_idle()
    c.produce("s", 0, [b"m0", b"m1"], acks=-1)
    assert c.broker(1).replica_manager.describe()[TP].log.recovery_point == 0  # page cache only
    c.reassign(_reassignment(1, 2))
    assert c.partition_state("s", 0).replicas == (1, 2)
    _assert_durable_on(c, (1, 2))
    _lose_power_and_settle(c, (1, 2))
    assert [r.value for r in c.fetch("s", 0, 0)] == [b"m0", b"m1"]


def test_records_committed_while_the_reassignment_is_pending_are_durable_on_its_targets() -> None:
    """Acknowledged while the reassignment to [leader, new] waits for the new replica (cut off
    from the leader): the leader fsyncs before it advances the high watermark, the new replica
    before its next fetch reports what it copied; then both lose power after the two removed
    replicas were deleted."""
    c = Cluster.simulated(brokers=4, seed=5, max_delay_ms=10)
    c.create_topic("s", partitions=1, replication_factor=3, configs={"retention.ms": -1})
    assert c.run_until_idle()
    old = c.partition_state("s", 0)
    leader, new = old.leader, next(b for b in (1, 2, 3, 4) if b not in old.replicas)
    acked = {c.produce("s", 0, [b"before"], acks=-1): b"before"}
    c.partition_network(leader, new)
    c.reassign(_reassignment(leader, new), wait=False)
    acked[c.produce("s", 0, [b"during"], acks=-1)] = b"during"  # (a retry may repeat it)
    assert c.partition_state("s", 0).removing_replicas  # still pending
    c.heal_network()
    assert c.run_until_idle(max_ms=120_000)
    state = c.partition_state("s", 0)
    assert state.replicas == (leader, new) and state.leader == leader
    _assert_durable_on(c, (leader, new))
    _lose_power_and_settle(c, (leader, new))
    held = {r.offset: r.value for r in c.fetch("s", 0, 0)}
    assert {o: held.get(o) for o in acked} == acked


def test_each_broker_of_a_target_fsyncs_before_a_record_counts() -> None:
    """The three places, on brokers driven by hand: the LeaderAndIsr that tells a target of the
    reassignment is answered once its log is fsynced (the removed replica's is not); then the
    leader fsyncs before it advances the high watermark and the follower before it reports what
    it fetched; once the reassignment is complete, the topic's flush policy applies again."""
    w = World(broker_ids=(1, 2, 3))
    w.assign(T0, 1, 3, [1, 2, 3])
    assert w.produce(1, T0, [b"a", b"b"]).partitions[0].error is Errors.NONE
    assert [w.partition(b, T0).log.recovery_point for b in (1, 2, 3)] == [0, 0, 0]
    moving = replace(state(T0, 1, 4, [1, 2, 3], [1, 2, 3], partition_epoch=10),
                     removing_replicas=(3,))
    for b in (1, 2, 3):
        assert [e.error for e in w.lair(b, [moving]).partition_errors] == [Errors.NONE]
    assert [w.partition(b, T0).reassignment_target for b in (1, 2, 3)] == [True, True, False]
    assert [w.partition(b, T0).log.recovery_point for b in (1, 2, 3)] == [2, 2, 0]
    assert w.produce(1, T0, [b"c"]).partitions[0].error is Errors.NONE
    assert w.partition(1, T0).high_watermark == 3
    assert w.run_until(lambda: w.partition(2, T0).log_end_offset == 3, 10_000)
    assert [w.partition(b, T0).log.recovery_point for b in (1, 2, 3)] == [3, 3, 0]
    w.assign(T0, 1, 5, [1, 2], [1, 2], partition_epoch=11)  # complete: 3 is no replica
    assert not w.partition(1, T0).reassignment_target
    assert w.produce(1, T0, [b"d"]).partitions[0].error is Errors.NONE
    assert w.partition(1, T0).high_watermark == 4
    assert w.partition(1, T0).log.recovery_point == 3


def test_a_restarted_adding_replica_is_not_new_while_its_dir_is_offline() -> None:
    """traces/regressions/0052, found by the fuzzer: a replica a reassignment adds is new in
    that reassignment's first LeaderAndIsr only. Its broker created its log, the log's dir
    failed, and the broker restarted (power lost) with that dir offline while the reassignment
    was still pending: the FULL LeaderAndIsr of its registration used to say ``is_new`` again,
    and the broker created a second, empty log of the same topic id on its other dir, which
    later start-ups loaded once the first copy had been set aside (two strays of one topic id).
    Now the replica is not new then: the broker refuses it (KAFKA_STORAGE_ERROR) until the dir
    is back, and one copy of it exists throughout."""
    c = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=11, max_delay_ms=10)
    c.create_topic("s", partitions=1, replication_factor=2, configs={"retention.ms": -1})
    assert c.run_until_idle()
    old = c.partition_state("s", 0)
    new = next(b for b in (1, 2, 3) if b not in old.replicas)
    c.produce("s", 0, [b"m0", b"m1"], acks=-1)
    c.partition_network(old.leader, new)  # the added replica cannot catch up: still pending
    c.reassign(_reassignment(*old.replicas, new), wait=False)
    c.advance_time(200)
    assert c.partition_state("s", 0).adding_replicas == (new,)
    held = c.broker(new).log_manager.dir_of(TP)
    assert held is not None, "the reassignment's first request created the replica"
    first = held.path
    fs = c.simulated_world.new_fs(f"broker-{new}")
    fs.inject_fault(first, Fault.EIO)
    c.crash_broker(new, power_loss=True)
    c.restart_broker(new)
    c.advance_time(2000)
    assert c.partition_state("s", 0).adding_replicas == (new,)  # still pending
    broker = c.broker(new)
    assert first in broker.log_manager.offline_dirs
    assert all(TP not in d.logs for d in broker.log_manager.dirs.values() if d.online), \
        "no second log of the replica on the online dir"
    assert TP not in broker.replica_manager.describe()
    # The dir is back: its own copy is loaded, the only one, and the reassignment completes.
    fs.clear_fault(first)
    c.crash_broker(new, power_loss=False)
    c.restart_broker(new)
    c.heal_network()
    assert c.run_until_idle(max_ms=120_000)
    assert c.partition_state("s", 0).replicas == (*old.replicas, new)
    copies = [path for path in c.log_dirs[new] for name in fs.listdir(path) if name == "s-0"]
    assert copies == [first]
    assert [r.value for r in c.fetch("s", 0, 0)] == [b"m0", b"m1"]
