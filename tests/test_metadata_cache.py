"""The broker's metadata cache under a network that reorders UpdateMetadata requests.

Regression for traces/regressions/0034: a late UpdateMetadata, sent while a broker was out of the
live set, arrived after a newer one that named it live again. The cache took the late request's
live brokers, and every Metadata answer then gave LEADER_NOT_AVAILABLE for the partitions that
broker leads, until something else changed.
"""

from __future__ import annotations

from logwright.broker.metadata_cache import MetadataCache
from logwright.errors import Errors
from logwright.identity import TopicPartition, Uuid
from logwright.protocol import MetadataRequest, UpdateMetadataRequest
from logwright.protocol.messages import LeaderAndIsrPartitionState

TOPIC_ID = Uuid.parse("c1O7WXzTTqKFuNomqmQHng")
TP = TopicPartition("s", 1)


def _state(leader: int, leader_epoch: int = 0) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState(TP, TOPIC_ID, 1, leader, leader_epoch, (1, 2, 3), 0,
                                      (1, 2, 3))


def _update(cid: int, live: tuple[int, ...], states: tuple[LeaderAndIsrPartitionState, ...] = (),
            controller_epoch: int = 1, controller_id: int = 1) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(cid, controller_id, controller_epoch, 1, states, live)


def _answer(cache: MetadataCache) -> tuple[Errors, int]:
    response = cache.topic_metadata(MetadataRequest(1, ("s",)), lambda _t: True)
    partition = response.topics[0].partitions[0]
    return partition.error, partition.leader


def test_a_late_update_does_not_take_a_live_leader_out_of_the_live_set() -> None:
    cache = MetadataCache()
    cache.update(_update(15, (1, 2, 3), (_state(leader=2),)))
    assert _answer(cache) == (Errors.NONE, 2)
    cache.update(_update(5, (1, 3)))  # sent earlier, while broker 2 was fenced; arrives late
    assert cache.live_brokers == frozenset({1, 2, 3})
    assert _answer(cache) == (Errors.NONE, 2)


def test_a_newer_update_still_takes_a_broker_out() -> None:
    cache = MetadataCache()
    cache.update(_update(5, (1, 2, 3), (_state(leader=2),)))
    cache.update(_update(6, (1, 3)))
    assert _answer(cache) == (Errors.LEADER_NOT_AVAILABLE, -1)


def test_a_new_controller_epoch_wins_over_higher_correlation_ids_of_the_old_one() -> None:
    cache = MetadataCache()
    cache.update(_update(40, (1, 3), (_state(leader=2),), controller_epoch=1, controller_id=1))
    cache.update(_update(2, (1, 2, 3), controller_epoch=2, controller_id=3))
    assert (cache.live_brokers, cache.controller_id) == (frozenset({1, 2, 3}), 3)
    cache.update(_update(41, (1,), controller_epoch=1, controller_id=1))  # the old one, late
    assert (cache.live_brokers, cache.controller_id) == (frozenset({1, 2, 3}), 3)
    assert _answer(cache) == (Errors.NONE, 2)
