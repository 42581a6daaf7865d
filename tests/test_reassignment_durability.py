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
from typing import Any

import pytest

from logwright.broker.config import BrokerConfig
from logwright.cluster import Cluster
from logwright.errors import Errors
from logwright.identity import TopicPartition
from logwright.verify.cluster_run import ClusterRun
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


MIN = 60_000
ORPHAN_CONFIG = {"orphan.partition.removal.delay.ms": str(MIN), "log.retention.ms": str(3 * MIN),
                 "log.retention.check.interval.ms": str(MIN // 2)}


def _away_and_back(old_dir: int, power_loss: bool) -> tuple[ClusterRun, Any, int, int, int]:
    """A broker's replica sits on its dir ``old_dir``, which fails; a reassignment removes the
    broker (the deletion cannot reach the failed dir); the broker restarts with the dir still
    failed; another reassignment adds it back, whose first LeaderAndIsr creates a new log of
    the same topic id on the healthy dir, at generation 0 (the old copy is at generation 1 when
    it had been moved to ``old_dir`` first). Every step is checked as the fuzzer checks it (the
    durability properties, and the four models' refinement after every event). Returns the
    run, its step function, and the broker, the leader kept and the broker added."""
    run = ClusterRun({"brokers": 3, "log_dirs_per_broker": 2, "max_delay_ms": 10, "seed": 1,
                      "broker_config": BrokerConfig.from_properties(ORPHAN_CONFIG)})

    def do(**step: Any) -> None:
        run.apply(step)
        run.check()

    c = run.cluster
    do(op="create_topic", topic="s", partitions=1, replication_factor=2,
       configs={"retention.ms": "-1"})
    do(op="settle")
    do(op="produce", topic="s", partition=0, values=["a", "b"], acks=-1)
    first = c.partition_state("s", 0)
    b = next(r for r in first.replicas if r != first.leader)
    keep = first.leader
    other = next(r for r in (1, 2, 3) if r not in first.replicas)
    old_path, new_path = c.log_dirs[b][old_dir - 1], c.log_dirs[b][2 - old_dir]
    if c.broker(b).log_manager.dir_of(TP).path != old_path:
        do(op="alter_log_dir", broker=b, partition=0, dir=old_dir)
        do(op="settle")
    assert c.broker(b).log_manager.dir_of(TP).path == old_path
    do(op="fail_dir", broker=b, dir=old_dir)
    do(op="advance", ms=2_000)
    do(op="reassign", topic="s", partition=0, replicas=[keep, other])
    do(op="advance", ms=70_000)
    assert c.partition_state("s", 0).replicas == (keep, other)
    do(op="crash", broker=b, power_loss=power_loss)
    do(op="restart", broker=b)
    do(op="advance", ms=5_000)
    do(op="reassign", topic="s", partition=0, replicas=[keep, other, b])
    do(op="advance", ms=70_000)
    assert c.partition_state("s", 0).replicas == (keep, other, b)
    assert c.broker(b).log_manager.dir_of(TP).path == new_path, "created on the healthy dir"
    do(op="produce", topic="s", partition=0, values=["c"], acks=-1)
    do(op="advance", ms=5_000)
    return run, do, b, keep, other


@pytest.mark.parametrize("power_loss", [False, True])
@pytest.mark.parametrize("old_dir", [1, 2])
def test_a_copy_left_on_a_failed_dir_and_a_new_one_of_the_same_topic_id(
        old_dir: int, power_loss: bool) -> None:
    """Two live copies of one partition and one topic id that no move made (:func:`_away_and_back`),
    and the broker restarts with the dir repaired (docs/jbod.md, R8). The new copy, which holds
    every record of the old one and more, serves, whatever the generations say (the old one's
    is the higher when it had moved) and whatever the dirs' order; the old one goes
    ``-delete``. Before, R2 deleted the new copy by its lower generation, or the dir order
    served the old one and left the new one set aside."""
    run, do, b, keep, other = _away_and_back(old_dir, power_loss)
    c = run.cluster
    new_path = c.broker(b).log_manager.dir_of(TP).path
    do(op="crash", broker=b, power_loss=False)
    do(op="restart", broker=b, repair=True)
    broker = c.broker(b)
    assert broker.log_manager.dir_of(TP).path == new_path
    fs = run.world.new_fs(f"broker-{b}")
    old_path = next(p for p in c.log_dirs[b] if p != new_path)
    assert "s-0" not in fs.listdir(old_path)
    assert any(n.startswith("s-0.") and n.endswith("-delete") for n in fs.listdir(old_path))
    do(op="produce", topic="s", partition=0, values=["d"], acks=-1)
    do(op="advance", ms=4 * MIN)
    do(op="repair_and_settle")  # every acknowledged record read back, every replica caught up
    assert c.partition_state("s", 0).replicas == (keep, other, b)


@pytest.mark.parametrize("old_dir", [1, 2])
def test_the_last_isr_member_restarting_serves_its_copy_with_the_newest_records(
        old_dir: int) -> None:
    """The same two copies, and the broker is then the partition's last ISR member: it takes an
    acknowledged record alone, stops, and restarts with the dir repaired; the controller elects
    it again from what it loaded. Serving the old copy (by dir order, or by its higher
    generation with the new copy deleted) lost the acknowledged records only the new copy held
    (found by a directed run of the two-copies case, 2026-11-29)."""
    run, do, b, keep, other = _away_and_back(old_dir, power_loss=False)
    c = run.cluster
    do(op="crash", broker=keep, power_loss=False)
    do(op="advance", ms=30_000)
    do(op="crash", broker=other, power_loss=False)
    do(op="advance", ms=30_000)
    assert c.partition_state("s", 0).isr == (b,)
    do(op="produce", topic="s", partition=0, values=["d"], acks=-1)
    do(op="advance", ms=2_000)
    do(op="crash", broker=b, power_loss=False)
    do(op="advance", ms=30_000)
    do(op="restart", broker=b, repair=True)
    do(op="advance", ms=10_000)
    do(op="repair_and_settle")  # a consumer reads every acknowledged record, "d" included
