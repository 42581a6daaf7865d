"""A partition the replica fetcher failed stays failed until a NEW leader epoch (KIP-461).

A LeaderAndIsr carrying the leader epoch the partition failed at (a repeat, an ISR change at the
same epoch, the full request a new controller sends) tells the broker nothing that would make the
failure go away, so it must not restart fetching; only a higher leader epoch (or StopReplica)
ends the failure. Named fault "a failed partition un-failed by any LeaderAndIsr"
(``make mutants``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from logwright.errors import Errors
from logwright.protocol import LeaderAndIsrPartitionState
from logwright.storage.naming import TopicPartition
from tests.test_broker_harness import T0, T1, World, state

FAILED = "kafka.server:type=ReplicaFetcherManager,name=FailedPartitionsCount,clientId=Replica"

SameEpoch = Callable[[TopicPartition], LeaderAndIsrPartitionState]
SAME_EPOCH: dict[str, SameEpoch] = {
    "repeat": lambda tp: state(tp, 1, 1, [1, 2]),
    "isr-shrink": lambda tp: state(tp, 1, 1, [1], [1, 2], partition_epoch=2),
    "new-controller": lambda tp: state(tp, 1, 1, [1, 2], controller_epoch=2),
}


def failed_follower() -> World:
    """Broker 2 follows T0 and T1 from broker 1; T0's leader moved to epoch 2 without telling
    broker 2, so broker 2's fetch at epoch 1 is fenced and T0 fails there. T1 is healthy."""
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.assign(T1, 1, 1, [1, 2])
    w.produce(1, T0, [b"a"])
    w.produce(1, T1, [b"a"])
    w.lair(1, [state(T0, 1, 2, [1, 2])])
    fetchers = w.brokers[2].replica_manager.replica_fetcher_manager
    assert w.run_until(lambda: T0 in fetchers.failed_partitions, 5_000)
    assert fetchers.failed_partitions[T0].leader_epoch == 1
    return w


@pytest.mark.parametrize("kind", sorted(SAME_EPOCH))
def test_a_leader_and_isr_at_the_failed_epoch_does_not_unfail(kind: str) -> None:
    w = failed_follower()
    broker = w.brokers[2]
    fetchers = broker.replica_manager.replica_fetcher_manager
    kw = {"controller_epoch": 2} if kind == "new-controller" else {}
    response = w.lair(2, [SAME_EPOCH[kind](T0), state(T1, 1, 1, [1, 2])], **kw)
    assert [e.error for e in response.partition_errors] == [Errors.NONE, Errors.NONE]
    assert T0 in fetchers.failed_partitions and fetchers.fetch_state(T0) is None
    w.run(2_000)
    assert set(fetchers.failed_partitions) == {T0}
    assert fetchers.failed_partitions[T0].leader_epoch == 1
    assert fetchers.fetch_state(T0) is None, "a failed partition is fetched again"
    assert broker.snapshot()[FAILED] == 1
    # The healthy partition kept replicating throughout.
    w.produce(1, T1, [b"b"])
    assert w.run_until(lambda: w.partition(2, T1).log_end_offset == 2, 5_000)


def test_a_new_leader_epoch_unfails_and_the_follower_catches_up() -> None:
    w = failed_follower()
    fetchers = w.brokers[2].replica_manager.replica_fetcher_manager
    w.lair(2, [state(T0, 1, 2, [1, 2])])
    assert fetchers.failed_partitions_count == 0
    st = fetchers.fetch_state(T0)
    assert st is not None and st.current_leader_epoch == 2
    w.produce(1, T0, [b"b"])
    assert w.run_until(lambda: w.partition(2, T0).log_end_offset == 2, 5_000)
    assert fetchers.failed_partitions_count == 0
