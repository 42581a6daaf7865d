"""The simulator's metadata store: plain dicts, a snapshot restored when a transaction fails."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from logwright.controller.store.interface import MetadataStore
from logwright.controller.store.records import (
    BrokerRegistration,
    ControllerRecord,
    PartitionState,
    PendingReassignment,
    TopicDeletion,
    TopicRecord,
)
from logwright.identity import TopicPartition

__all__ = ["MemoryStore"]


@dataclass
class _Tables:
    controller: ControllerRecord | None = None
    last_broker_epoch: int = 0
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    topics: dict[str, TopicRecord] = field(default_factory=dict)
    partitions: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    reassignments: dict[TopicPartition, PendingReassignment] = field(default_factory=dict)
    deletions: dict[str, TopicDeletion] = field(default_factory=dict)


class MemoryStore(MetadataStore):
    """The simulator's store: plain dicts; a transaction restores a snapshot on failure.

    Records are immutable, so the snapshot copies only the dicts.
    """

    def __init__(self) -> None:
        super().__init__()
        self._t = _Tables()
        self._cluster_id: str | None = None

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        snapshot = copy.copy(self._t)
        for name in ("brokers", "topics", "partitions", "reassignments", "deletions"):
            setattr(snapshot, name, dict(getattr(self._t, name)))
        try:
            yield
        except BaseException:
            self._t = snapshot
            raise

    def controller(self) -> ControllerRecord | None:
        return self._t.controller

    def cluster_id(self) -> str | None:
        return self._cluster_id

    def _set_cluster_id(self, cluster_id: str) -> None:
        self._cluster_id = cluster_id

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self._t.brokers.get(broker_id)

    def brokers(self) -> list[BrokerRegistration]:
        return [self._t.brokers[b] for b in sorted(self._t.brokers)]

    def last_broker_epoch(self) -> int:
        return self._t.last_broker_epoch

    def topic(self, name: str) -> TopicRecord | None:
        return self._t.topics.get(name)

    def topics(self) -> list[TopicRecord]:
        return [self._t.topics[n] for n in sorted(self._t.topics)]

    def partition(self, tp: TopicPartition) -> PartitionState | None:
        return self._t.partitions.get(tp)

    def partitions(self, topic: str | None = None) -> list[PartitionState]:
        return [s for tp, s in sorted(self._t.partitions.items())
                if topic is None or tp.topic == topic]

    def reassignments(self) -> list[PendingReassignment]:
        return [r for _, r in sorted(self._t.reassignments.items())]

    def deletions(self) -> list[TopicDeletion]:
        return [d for _, d in sorted(self._t.deletions.items())]

    def _set_controller(self, record: ControllerRecord) -> None:
        self._t.controller = record

    def _set_last_broker_epoch(self, epoch: int) -> None:
        self._t.last_broker_epoch = epoch

    def _put_broker(self, registration: BrokerRegistration) -> None:
        self._t.brokers[registration.broker_id] = registration

    def _put_topic(self, topic: TopicRecord) -> None:
        self._t.topics[topic.name] = topic

    def _put_partition(self, state: PartitionState) -> None:
        self._t.partitions[state.tp] = state

    def _put_reassignment(self, reassignment: PendingReassignment) -> None:
        self._t.reassignments[reassignment.tp] = reassignment

    def _delete_reassignment(self, tp: TopicPartition) -> None:
        self._t.reassignments.pop(tp, None)

    def _put_deletion(self, deletion: TopicDeletion) -> None:
        self._t.deletions[deletion.name] = deletion

    def _remove_topic(self, name: str) -> None:
        del self._t.topics[name]
        self._t.deletions.pop(name, None)
        for table in (self._t.partitions, self._t.reassignments):
            for tp in [tp for tp in table if tp.topic == name]:
                del table[tp]
