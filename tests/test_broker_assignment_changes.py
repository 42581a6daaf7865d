"""A leader told of a new replica set at the same leader epoch (a reassignment adding replicas)
follows the new replicas and lets them into the ISR once they have caught up (found by
`make mutmut`: no test added a replica without a leader change, so the leader's bookkeeping of
a replica added that way was never exercised)."""

from __future__ import annotations

import pytest

from logwright.broker.partition import Role
from logwright.errors import Errors
from logwright.protocol import StopReplicaPartition
from logwright.world import Fault
from tests.test_broker_harness import T0, T1, World, fast_config, state


@pytest.mark.parametrize("added", [(3,), (3, 4)])
@pytest.mark.parametrize("records", [0, 3])
def test_a_replica_added_at_the_same_leader_epoch_catches_up_and_joins_the_isr(
        added: tuple[int, ...], records: int) -> None:
    w = World(broker_ids=(1, 2, 3, 4))
    w.assign(T0, 1, 3, [1, 2])
    for n in range(records):
        assert w.produce(1, T0, [b"v%d" % n]).partitions[0].error is Errors.NONE
    replicas = (1, 2, *added)
    st = state(T0, 1, 3, [1, 2], replicas, partition_epoch=50)
    for broker_id in replicas:
        assert [e.error for e in w.lair(broker_id, [st]).partition_errors] == [Errors.NONE]
    leader = w.partition(1, T0)
    assert leader.is_leader and leader.leader_epoch == 3 and leader.replicas == replicas
    assert w.run_until(lambda: set(replicas) <= set(w.partition(1, T0).isr), 10_000), \
        f"the added replicas never joined the ISR: {w.partition(1, T0).isr}"
    for broker_id in added:
        assert w.values(broker_id, T0) == w.values(1, T0)
    # Now in the ISR, the added replicas count for acks=all: a write is acknowledged only
    # once they have it too.
    r = w.produce(1, T0, [b"after"])
    assert r.partitions[0].error is Errors.NONE
    for broker_id in added:
        assert w.partition(broker_id, T0).log_end_offset == records + 1
    assert w.partition(1, T0).high_watermark == records + 1


@pytest.mark.parametrize("lag_ms", [2_000, 30_000])
def test_a_replica_added_straight_into_the_isr_has_the_full_lag_time_to_fetch(lag_ms: int) -> None:
    """A replica the leader has not heard from yet, named in the ISR by a new assignment, counts
    as caught up from that moment: it is dropped only if it then stays silent for
    replica.lag.time.max.ms, as a member of the ISR a new leader starts with is."""
    w = World(broker_ids=(1, 2, 3), config=fast_config(replica_lag_time_max_ms=lag_ms))
    w.assign(T0, 1, 3, [1, 2])
    w.run(3 * lag_ms)  # long after the leader started: a record of "never caught up" is old
    w.crash_broker(3)  # the added replica will never fetch
    w.lair(1, [state(T0, 1, 3, [1, 2, 3], [1, 2, 3], partition_epoch=50)])
    assert w.partition(1, T0).isr == (1, 2, 3)
    w.run(lag_ms // 2)
    assert 3 in w.partition(1, T0).isr, "dropped before its lag time was up"
    assert w.run_until(lambda: w.partition(1, T0).isr == (1, 2), 2 * lag_ms)


@pytest.mark.parametrize("fault", [Fault.EIO, Fault.ENOSPC])
def test_a_replica_whose_leadership_failed_on_its_disk_shows_no_role_leader_or_epoch(
        fault: Fault) -> None:
    """LeaderAndIsr creates the replica, then fails to record the new epoch on its dir: the
    replica is answered KAFKA_STORAGE_ERROR and shown as it was before any LeaderAndIsr (no
    role, no leader, no epoch, no ISR), counted offline and not under-replicated, while a
    partition on the healthy dir leads."""
    w = World(broker_ids=(1,), dirs=2)
    for d in (1, 2):
        w.fs.inject_fault(f"/b1/d{d}/t-0/leader-epoch-checkpoint.tmp", fault)
    r = w.lair(1, [state(T0, 1, 4, [1, 2], [1, 2], partition_epoch=7), state(T1, 1, 0, [1])])
    assert [(e.tp, e.error) for e in r.partition_errors] == [
        (T0, Errors.KAFKA_STORAGE_ERROR), (T1, Errors.NONE)]
    rm = w.brokers[1].replica_manager
    p = rm.describe()[T0]
    assert (p.role, p.leader_id, p.leader_epoch, p.partition_epoch) == (Role.NONE, -1, -1, -1)
    assert (p.isr, p.replicas, p.maximal_isr, p.followers) == ((), (), (), {})
    assert not p.is_leader and not p.is_under_replicated and p.offline
    assert "none" in repr(p) and "leader=-1" in repr(p)
    assert rm.offline_replica_count() == 1 and rm.under_replicated_count() == 0
    assert w.partition(1, T1).is_leader
    # Retried, it is refused at once: its dir is offline.
    r = w.lair(1, [state(T0, 1, 5, [1])])
    assert [e.error for e in r.partition_errors] == [Errors.KAFKA_STORAGE_ERROR]


def test_a_stop_replica_naming_a_partition_twice_still_stops_every_partition_after_it() -> None:
    """One answer per partition, in the request's order; a repeated name is applied once and
    does not end the request early."""
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.assign(T1, 1, 1, [1, 2])
    r = w.stop(2, [StopReplicaPartition(T0, 1, True), StopReplicaPartition(T0, 1, True),
                   StopReplicaPartition(T1, 1, False)])
    assert [(e.tp, e.error) for e in r.partition_errors] == [(T0, Errors.NONE), (T1, Errors.NONE)]
    rm = w.brokers[2].replica_manager
    assert T0 not in rm.partitions and rm.partitions[T1].role is Role.NONE


def test_a_stop_replica_deleting_a_partition_not_hosted_here_is_answered_none() -> None:
    """A deletion may reach a broker that never hosted the partition (or no longer does): it is
    answered NONE, and a partition hosted beside it in the same request is deleted."""
    w = World(broker_ids=(1, 2))
    w.assign(T1, 1, 1, [1, 2])
    r = w.stop(2, [StopReplicaPartition(T0, -2, True), StopReplicaPartition(T1, -2, True)])
    assert [(e.tp, e.error) for e in r.partition_errors] == [(T0, Errors.NONE), (T1, Errors.NONE)]
    assert not w.brokers[2].replica_manager.partitions
