"""The broker's metadata cache: the controller's view, as the last UpdateMetadata told it.

Any broker answers a Metadata request from here, leader or not (as Kafka does), and a broker
tells "not hosted here" (NOT_LEADER_OR_FOLLOWER) from "no such partition"
(UNKNOWN_TOPIC_OR_PARTITION) by it.

Invariant upheld: the network may reorder two UpdateMetadata requests, and a client sent to a
deposed leader would be sent back and forth; so a partition state older (leader epoch, partition
epoch) than the one held for the same topic id never replaces it, and a partition state from a
request older (controller epoch, correlation id) than the newest applied for the same partition
name changes nothing: a late state of a deleted topic does not bring it back after the deletion
removed it (clients get UNKNOWN_TOPIC_OR_PARTITION). The cache holds one topic id per topic
name, that of the newest request that named one: a state of a topic taken from a request newer
than the one that told of another topic of the same name drops that topic's partitions (it was
deleted since, though this broker may have missed the deletion while cut off from the controller:
the UpdateMetadata of its registration names only the topics that exist), and a state from an
older one is not taken. A Metadata answer then never gives one topic's partitions under
another's id (a client took a deleted topic's partition epochs for the new topic's and ignored
its leaders). Likewise the live brokers and the
controller id are taken only from a request newer than every one applied before: a late request
naming a broker dead that has since come back would otherwise hide its partitions' leader until
the next change (clients saw LEADER_NOT_AVAILABLE for a led partition).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from logwright.errors import Errors
from logwright.identity import TopicPartition, Uuid
from logwright.protocol import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrType,
    MetadataBroker,
    MetadataPartition,
    MetadataRequest,
    MetadataResponse,
    MetadataTopic,
    UpdateMetadataRequest,
)

LEADER_DURING_DELETE = -2
"""UpdateMetadata's leader for a partition of a deleted topic (Kafka's LeaderDuringDelete)."""


@dataclass
class MetadataCache:
    """What the last accepted UpdateMetadata said: partition states and live brokers."""

    partitions: dict[TopicPartition, LeaderAndIsrPartitionState] = field(default_factory=dict)
    live_brokers: frozenset[int] = frozenset()
    controller_id: int = -1
    #: Per partition name: (controller epoch, correlation id) of the newest request applied.
    versions: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)
    #: (controller epoch, correlation id) of the newest request whose live brokers were taken.
    brokers_version: tuple[int, int] = (-1, -1)
    #: Per partition name held by no topic now: the topic id whose partition a newer topic of
    #: the name removed (``versions`` then dates that removal, not news of the partition).
    retired: dict[TopicPartition, Uuid] = field(default_factory=dict)

    def topic_metadata(self, request: MetadataRequest, authorized: Callable[[str], bool]
                       ) -> MetadataResponse:
        """Kafka's Metadata answer from this cache. A partition whose leader is not a live
        broker is LEADER_NOT_AVAILABLE; a topic not in the cache UNKNOWN_TOPIC_OR_PARTITION.
        Asked for every topic, topics the principal may not describe are left out; named, they
        answer TOPIC_AUTHORIZATION_FAILED."""
        by_topic: dict[str, list[LeaderAndIsrPartitionState]] = {}
        for tp, state in self.partitions.items():
            by_topic.setdefault(tp.topic, []).append(state)
        if request.topics is None:
            names: Sequence[str] = sorted(t for t in by_topic if authorized(t))
        else:
            names = request.topics
        topics: list[MetadataTopic] = []
        for name in names:
            states = by_topic.get(name)
            if not authorized(name):
                topics.append(MetadataTopic(name, Errors.TOPIC_AUTHORIZATION_FAILED))
            elif not states:
                topics.append(MetadataTopic(name, Errors.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                parts = tuple(
                    MetadataPartition(s.tp.partition, Errors.NONE, s.leader, s.leader_epoch,
                                      s.replicas, s.isr)
                    if s.leader in self.live_brokers else
                    MetadataPartition(s.tp.partition, Errors.LEADER_NOT_AVAILABLE, -1,
                                      s.leader_epoch, s.replicas, s.isr)
                    for s in sorted(states, key=lambda s: s.tp.partition))
                topics.append(MetadataTopic(name, Errors.NONE, states[0].topic_id, parts))
        brokers = tuple(MetadataBroker(b, f"broker-{b}") for b in sorted(self.live_brokers))
        return MetadataResponse(request.correlation_id, brokers, self.controller_id,
                                tuple(topics))

    def update(self, request: UpdateMetadataRequest) -> None:
        """Remember the controller's view of partitions and live brokers. A partition of a
        deleted topic (leader LeaderDuringDelete, -2) leaves the cache, unless the cache already
        holds a newer topic of the same name (another topic id). A partition state older
        (leader epoch, partition epoch) than the one held for the same topic id, or of a
        request older than the newest applied for its name, changes nothing; nor does an older
        request change the live brokers or the controller id. A state of another topic id than
        the cached partitions of its topic name replaces them all if its request is newer than
        theirs, and is ignored if not. A request older than such a removal still tells of the
        name's partitions under the newer topic id (they may arrive out of order: a newer request
        naming one partition of the new topic removed the old topic's others before the new
        topic's creation named them)."""
        version = (request.controller_epoch, request.correlation_id)
        by_topic: dict[str, set[TopicPartition]] = {}
        for tp in self.partitions:
            by_topic.setdefault(tp.topic, set()).add(tp)
        for state in request.partition_states:
            if self.versions.get(state.tp, (-1, -1)) > version and (
                    state.tp in self.partitions
                    or self.retired.get(state.tp, state.topic_id) == state.topic_id):
                continue  # a newer request told of this name already
            named = by_topic.setdefault(state.tp.topic, set())
            if state.leader != LEADER_DURING_DELETE:
                others = [tp for tp in named if self.partitions[tp].topic_id != state.topic_id]
                if any(self.versions.get(tp, (-1, -1)) > version for tp in others):
                    continue  # a newer request told of a newer topic of this name
                for tp in others:
                    # Told of an older topic of this name: it was deleted since, though this
                    # broker may have missed the deletion (0043).
                    self.retired[tp] = self.partitions.pop(tp).topic_id
                    named.discard(tp)
                    self.versions[tp] = version  # no newer than this (checked above)
            self.versions[state.tp] = version
            held = self.partitions.get(state.tp)
            same_topic = held is not None and held.topic_id == state.topic_id
            if state.leader == LEADER_DURING_DELETE:
                if same_topic:
                    del self.partitions[state.tp]
                    named.discard(state.tp)
            elif not same_topic or held is None or (
                    (state.leader_epoch, state.partition_epoch)
                    >= (held.leader_epoch, held.partition_epoch)):
                self.partitions[state.tp] = state
                self.retired.pop(state.tp, None)
                named.add(state.tp)
        if request.update_type == LeaderAndIsrType.FULL:
            # Every partition of every topic the cluster has: one the cache holds that the
            # request does not name (by name and topic id) was deleted, unless a newer request
            # told of it since.
            named_ids = {(state.tp, state.topic_id) for state in request.partition_states}
            for tp in [tp for tp, held in self.partitions.items()
                       if (tp, held.topic_id) not in named_ids
                       and self.versions.get(tp, (-1, -1)) < version]:
                del self.partitions[tp]
                self.versions[tp] = version
        if version > self.brokers_version:
            self.brokers_version = version
            self.live_brokers = frozenset(request.live_brokers)
            self.controller_id = request.controller_id

    def partition_error(self, tp: TopicPartition) -> Errors:
        """The error for a partition this broker does not host (Kafka's getPartitionOrError):
        one the cluster knows is led elsewhere, any other is unknown."""
        if tp in self.partitions:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return Errors.UNKNOWN_TOPIC_OR_PARTITION


__all__ = ["LEADER_DURING_DELETE", "MetadataCache"]
