"""A fenced control request is answered per partition: the controller learns, for each partition
it named, that this partition's change was refused and why (found by `make mutmut`: the answers'
per-partition lists were never looked at, only the top-level error)."""

from __future__ import annotations

import pytest

from logwright.errors import Errors
from logwright.protocol import EPOCH_DURING_DELETE, PartitionError, StopReplicaPartition
from logwright.storage.naming import TopicPartition
from tests.test_broker_harness import T0, T1, World, state

T2 = TopicPartition("other", 3)


def _fenced_world(why: Errors) -> tuple[World, dict[str, int]]:
    """A broker 1 with T0 assigned, and the request arguments that ``why`` fences."""
    w = World(broker_ids=(1,))
    w.assign(T0, 1, 1, [1])
    if why is Errors.STALE_BROKER_EPOCH:
        old_epoch = w.brokers[1].broker_epoch
        w.crash_broker(1)
        w.start_broker(1)
        return w, {"broker_epoch": old_epoch}
    w.controller.controller_epoch = 3
    w.assign(T0, 1, 2, [1], controller_epoch=3)
    return w, {"controller_epoch": 2}


def _epochs(w: World) -> dict[TopicPartition, int]:
    return {tp: p.leader_epoch for tp, p in w.brokers[1].replica_manager.partitions.items()}


@pytest.mark.parametrize("why", [Errors.STALE_BROKER_EPOCH, Errors.STALE_CONTROLLER_EPOCH])
@pytest.mark.parametrize("tps", [(T0,), (T0, T1, T2), ()])
def test_a_fenced_leader_and_isr_names_every_partition_with_the_error(
        why: Errors, tps: tuple[TopicPartition, ...]) -> None:
    w, kw = _fenced_world(why)
    before = _epochs(w)
    r = w.lair(1, [state(tp, 1, 9, [1]) for tp in tps], **kw)
    assert r.error is why
    assert r.partition_errors == tuple(PartitionError(tp, why) for tp in tps)
    assert _epochs(w) == before


@pytest.mark.parametrize("why", [Errors.STALE_BROKER_EPOCH, Errors.STALE_CONTROLLER_EPOCH])
@pytest.mark.parametrize("tps", [(T0,), (T0, T1, T2), ()])
def test_a_fenced_stop_replica_names_every_partition_with_the_error(
        why: Errors, tps: tuple[TopicPartition, ...]) -> None:
    w, kw = _fenced_world(why)
    before = _epochs(w)
    r = w.stop(1, [StopReplicaPartition(tp, EPOCH_DURING_DELETE, True) for tp in tps], **kw)
    assert r.error is why
    assert r.partition_errors == tuple(PartitionError(tp, why) for tp in tps)
    assert _epochs(w) == before
