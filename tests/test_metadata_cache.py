"""The broker's metadata cache under a network that reorders UpdateMetadata requests.

Regressions for traces/regressions/0034 and 0043 (below). 0034: a late UpdateMetadata, sent
while a broker was out of the live set, arrived after a newer one that named it live again. The
cache took the late request's live brokers, and every Metadata answer then gave
LEADER_NOT_AVAILABLE for the partitions that broker leads, until something else changed.
"""

from __future__ import annotations

from logwright import Cluster
from logwright.broker.metadata_cache import MetadataCache
from logwright.errors import Errors
from logwright.identity import TopicPartition, Uuid
from logwright.protocol import MetadataRequest, UpdateMetadataRequest
from logwright.protocol.messages import LeaderAndIsrPartitionState, LeaderAndIsrType

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


# ---- one topic id per name (traces/regressions/0043) ----------------------------------------
#
# A broker cut off from the controller missed the UpdateMetadata of a deletion; the UpdateMetadata
# of its registration named only the topics that exist, so the deleted topic's third partition
# stayed in its cache. Once the name was created again with two partitions, its Metadata answer
# gave the new topic's partitions under the deleted topic's id (that of the first cached state),
# and the client, which compares leader epochs per topic id (KIP-320), kept an older leader.

OLD_ID = Uuid.parse("TyC0M8KwRKmDULJkWX9XWg")
NEW_ID = Uuid.parse("PNjQih8DQEusvaMjlryWtw")


def _of(topic_id: Uuid, p: int, leader: int, leader_epoch: int = 0
        ) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState(TopicPartition("s", p), topic_id, 1, leader, leader_epoch,
                                      (1, 2, 3), 0, (1, 2, 3))


def _topic(cache: MetadataCache) -> tuple[Uuid, dict[int, tuple[int, int]]]:
    topic = cache.topic_metadata(MetadataRequest(1, ("s",)), lambda _t: True).topics[0]
    assert topic.error is Errors.NONE
    return topic.topic_id, {p.partition: (p.leader, p.leader_epoch) for p in topic.partitions}


def test_a_newer_topic_of_the_name_drops_the_partitions_of_a_deletion_the_broker_missed() -> None:
    cache = MetadataCache()
    cache.update(_update(15, (1, 2, 3), tuple(_of(OLD_ID, p, p + 1) for p in range(3))))
    # The deletion (leader -2 for the three) never reached this broker; the new topic has two.
    cache.update(_update(158, (1, 2, 3), (_of(NEW_ID, 0, 3), _of(NEW_ID, 1, 1))))
    assert _topic(cache) == (NEW_ID, {0: (3, 0), 1: (1, 0)})
    assert cache.partition_error(TopicPartition("s", 2)) is Errors.UNKNOWN_TOPIC_OR_PARTITION
    # A late state of the deleted topic does not bring its partition back.
    cache.update(_update(20, (1, 2, 3), (_of(OLD_ID, 2, 1, leader_epoch=1),)))
    assert _topic(cache) == (NEW_ID, {0: (3, 0), 1: (1, 0)})


def test_a_late_state_of_an_older_topic_of_the_name_is_not_taken() -> None:
    cache = MetadataCache()
    cache.update(_update(158, (1, 2, 3), (_of(NEW_ID, 0, 3), _of(NEW_ID, 1, 1))))
    # Sent before the new topic existed, about a partition the new topic does not have.
    cache.update(_update(15, (1, 2, 3), (_of(OLD_ID, 2, 1),)))
    assert _topic(cache) == (NEW_ID, {0: (3, 0), 1: (1, 0)})


def test_the_new_topic_s_creation_arriving_after_a_newer_state_of_one_of_its_partitions(
        ) -> None:
    """A late creation still tells of the partitions a newer request did not name: the topic
    was deleted and created again with two partitions, and a reassignment's UpdateMetadata
    for its partition 0 reached this broker first. It removed the old topic's three; the
    creation (older) then came and was skipped whole, leaving partition 1 of the new topic
    unknown to this broker for good (a client told the topic had one partition; found by the
    fuzzer, seed 420595, ``traces/regressions/0057``)."""
    cache = MetadataCache()
    cache.update(_update(15, (1, 2, 3), tuple(_of(OLD_ID, p, p + 1) for p in range(3))))
    cache.update(_update(31, (1, 2, 3), (_of(NEW_ID, 0, 2, leader_epoch=1),)))
    assert _topic(cache) == (NEW_ID, {0: (2, 1)})
    cache.update(_update(19, (1, 2, 3), tuple(_of(OLD_ID, p, -2) for p in range(3))))  # deletion
    cache.update(_update(25, (1, 2, 3), (_of(NEW_ID, 0, 2), _of(NEW_ID, 1, 3))))  # creation
    assert _topic(cache) == (NEW_ID, {0: (2, 1), 1: (3, 0)})  # partition 0 as the newer said
    # Neither a late state of the deleted topic nor an older one of the new topic's partition 1
    # changes what is held.
    cache.update(_update(20, (1, 2, 3), (_of(OLD_ID, 1, 2, leader_epoch=3),)))
    cache.update(_update(24, (1, 2, 3), (_of(NEW_ID, 1, 1, leader_epoch=0),)))
    assert _topic(cache) == (NEW_ID, {0: (2, 1), 1: (3, 0)})
    assert cache.partition_error(TopicPartition("s", 2)) is Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_a_topic_of_the_same_id_keeps_its_other_partitions() -> None:
    cache = MetadataCache()
    cache.update(_update(15, (1, 2, 3), tuple(_of(NEW_ID, p, p + 1) for p in range(3))))
    cache.update(_update(16, (1, 2, 3), (_of(NEW_ID, 0, 2, leader_epoch=1),)))
    assert _topic(cache) == (NEW_ID, {0: (2, 1), 1: (2, 0), 2: (3, 0)})


# ---- a FULL UpdateMetadata (KIP-866's Type) -----------------------------------------------------
#
# The same broker, when the deleted name is never created again: the UpdateMetadata of its
# registration (and of a controller's activation) is FULL, naming every partition of every topic
# the cluster has, and the cache drops what it does not name.

OTHER = TopicPartition("t", 0)


def _full(cid: int, states: tuple[LeaderAndIsrPartitionState, ...],
          controller_epoch: int = 1) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(cid, 1, controller_epoch, 1, states, (1, 2, 3),
                                 update_type=LeaderAndIsrType.FULL)


def _t(leader: int) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState(OTHER, NEW_ID, 1, leader, 0, (1, 2, 3), 0, (1, 2, 3))


def test_a_full_update_drops_a_topic_it_does_not_name() -> None:
    cache = MetadataCache()
    cache.update(_update(15, (1, 2, 3), (*(_of(OLD_ID, p, p + 1) for p in range(3)), _t(1))))
    cache.update(_full(40, (_t(2),)))
    assert set(cache.partitions) == {OTHER}
    assert cache.partition_error(TopicPartition("s", 0)) is Errors.UNKNOWN_TOPIC_OR_PARTITION
    answer = cache.topic_metadata(MetadataRequest(1, ("s", "t")), lambda _t: True).topics
    assert [t.error for t in answer] == [Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NONE]
    # A late state of the dropped topic, sent before the FULL one, does not bring it back.
    cache.update(_update(20, (1, 2, 3), (_of(OLD_ID, 1, 2, leader_epoch=1),)))
    assert set(cache.partitions) == {OTHER}


def test_a_full_update_keeps_a_topic_a_newer_request_told_of() -> None:
    """Created after the FULL request was sent, its UpdateMetadata arrived first."""
    cache = MetadataCache()
    cache.update(_update(41, (1, 2, 3), (_of(OLD_ID, 0, 1),)))
    cache.update(_full(40, (_t(2),)))
    assert set(cache.partitions) == {TopicPartition("s", 0), OTHER}
    # A FULL request of a newer controller epoch is newer than any of the old one's.
    cache.update(_full(1, (_t(3),), controller_epoch=2))
    assert set(cache.partitions) == {OTHER} and cache.partitions[OTHER].leader == 3


def test_a_full_update_drops_an_older_topic_id_of_a_name_it_names() -> None:
    cache = MetadataCache()
    cache.update(_update(15, (1, 2, 3), tuple(_of(OLD_ID, p, p + 1) for p in range(3))))
    cache.update(_full(40, (_of(NEW_ID, 0, 3),)))
    assert _topic(cache) == (NEW_ID, {0: (3, 0)})


def test_an_incremental_update_drops_nothing_it_does_not_name() -> None:
    cache = MetadataCache()
    cache.update(_update(15, (1, 2, 3), (_of(OLD_ID, 0, 1), _t(1))))
    cache.update(_update(40, (1, 2, 3), (_t(2),)))
    assert set(cache.partitions) == {TopicPartition("s", 0), OTHER}


def test_a_broker_that_missed_a_deletion_forgets_the_topic_when_it_registers_again() -> None:
    """Broker 3 is cut off from the controller while s is deleted; its session ends, so the
    controller forgets the deletion's UpdateMetadata to it. When the cut heals it registers
    again, and the FULL UpdateMetadata of its registration takes s out of its cache: its
    Metadata answer says s is unknown, as the other brokers' do (before, it kept s for good)."""
    c = Cluster.simulated(seed=3, max_delay_ms=10)
    c.create_topic("s", partitions=2, replication_factor=3)
    c.create_topic("t", partitions=1, replication_factor=3)
    assert c.run_until_idle()
    c.partition_network(3, "controller-1")
    c.delete_topic("s")
    c.advance_time(30_000)
    c.heal_network()
    c.advance_time(30_000)
    assert c.run_until_idle()
    for b in (1, 2, 3):
        cache = c.broker(b).replica_manager.metadata
        assert set(cache.partitions) == {TopicPartition("t", 0)}, b
        topics = cache.topic_metadata(MetadataRequest(1, ("s",)), lambda _t: True).topics
        assert topics[0].error is Errors.UNKNOWN_TOPIC_OR_PARTITION, b
    c.close()
