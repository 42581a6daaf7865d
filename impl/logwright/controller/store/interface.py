"""The controller's metadata store: the interface every backend implements.

Invariant upheld (hazard 4, StaleControllerFenced): no write by a deposed controller lands. Every
write except :meth:`MetadataStore.claim_controller` names the writer's controller epoch, and one
transaction first compares it with the current epoch, then applies the whole change or nothing.
A mismatch raises :class:`StaleControllerEpoch`. ``claim_controller`` is an atomic increment, so
two controllers can never hold the same epoch.

Also upheld here: broker epochs come from one durable sequence, so every registration gets an
epoch strictly larger than any before, for any broker (KIP-380); partition states are internally
consistent (asserted on construction: the leader is in the ISR, the ISR and the adding and removing
replicas lie within the replicas) and belong to a topic of the same topic id.

The checks live here once, in :meth:`MetadataStore.write`; a backend (``memory``,
``sqlite``) provides only the transaction and the row primitives.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace

from logwright.controller.errors import StaleControllerEpoch
from logwright.controller.store.records import (
    NO_CONTROLLER_EPOCH,
    BrokerRegistration,
    ControllerRecord,
    PartitionState,
    PendingReassignment,
    TopicDeletion,
    TopicRecord,
)
from logwright.identity import TopicPartition, Uuid

__all__ = ["MetadataDelta", "MetadataStore"]


@dataclass
class MetadataDelta:
    """A set of changes written as ONE transaction, conditional on the controller epoch.

    Applied in field order: broker and topic upserts, partition upserts, reassignment upserts and
    removals, deletion markers, then topic removals (which remove the topic's partitions,
    reassignments and deletion marker too).
    """

    brokers: list[BrokerRegistration] = field(default_factory=list)
    topics: list[TopicRecord] = field(default_factory=list)
    partitions: list[PartitionState] = field(default_factory=list)
    reassignments: list[PendingReassignment] = field(default_factory=list)
    cleared_reassignments: list[TopicPartition] = field(default_factory=list)
    deletions: list[TopicDeletion] = field(default_factory=list)
    removed_topics: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        """Whether the delta changes nothing."""
        return not (self.brokers or self.topics or self.partitions or self.reassignments
                    or self.cleared_reassignments or self.deletions or self.removed_topics)


# ---- the interface --------------------------------------------------------------------------


class MetadataStore(ABC):
    """What the controller keeps durable; every write is one epoch-checked transaction.

    Subclasses provide the transaction and the row primitives; the checks live here once, so
    both stores enforce exactly the same rules.
    """

    def __init__(self) -> None:
        # The core is single-threaded, but the real runtime may call admin methods from another
        # thread than the scheduler's; one lock keeps a transaction whole.
        self._lock = threading.RLock()

    # -- reads ------------------------------------------------------------------------------

    @abstractmethod
    def controller(self) -> ControllerRecord | None:
        """The active controller, or None if none ever claimed."""

    def controller_epoch(self) -> int:
        """The current controller epoch (NO_CONTROLLER_EPOCH if none ever claimed)."""
        record = self.controller()
        return NO_CONTROLLER_EPOCH if record is None else record.epoch

    @abstractmethod
    def broker(self, broker_id: int) -> BrokerRegistration | None:
        """The latest registration of ``broker_id``."""

    @abstractmethod
    def brokers(self) -> list[BrokerRegistration]:
        """Every registration, by broker id."""

    @abstractmethod
    def last_broker_epoch(self) -> int:
        """The last broker epoch the sequence handed out (0 before the first)."""

    @abstractmethod
    def topic(self, name: str) -> TopicRecord | None:
        """The topic called ``name``."""

    @abstractmethod
    def topics(self) -> list[TopicRecord]:
        """Every topic, by name."""

    @abstractmethod
    def partition(self, tp: TopicPartition) -> PartitionState | None:
        """The state of ``tp``."""

    @abstractmethod
    def partitions(self, topic: str | None = None) -> list[PartitionState]:
        """Every partition (of ``topic`` if given), by topic then partition."""

    @abstractmethod
    def reassignments(self) -> list[PendingReassignment]:
        """Every pending reassignment, by partition."""

    @abstractmethod
    def deletions(self) -> list[TopicDeletion]:
        """Every topic whose deletion started and is not finished, by name."""

    @abstractmethod
    def cluster_id(self) -> str | None:
        """The cluster id (a Kafka Uuid string), or None before ``ensure_cluster_id``."""

    # -- writes -----------------------------------------------------------------------------

    def ensure_cluster_id(self, candidate: str) -> str:
        """The cluster id: ``candidate`` if none is recorded yet (then recorded, durably),
        else the recorded one. Set once, never changed."""
        with self._lock, self._transaction():
            current = self.cluster_id()
            if current is None:
                self._set_cluster_id(candidate)
                current = candidate
        return current

    def claim_controller(self, controller_id: int) -> int:
        """Become the active controller: atomically increment the epoch and return it."""
        assert controller_id >= 0
        with self._lock, self._transaction():
            epoch = self.controller_epoch() + 1
            self._set_controller(ControllerRecord(controller_id, epoch))
        return epoch

    def register_broker(self, controller_epoch: int, broker_id: int, incarnation_id: Uuid,
                        log_dirs: Sequence[str]) -> BrokerRegistration:
        """Record a registration with the next broker epoch from the sequence, unfenced."""
        with self._lock, self._transaction():
            self._check_epoch(controller_epoch)
            previous = self.broker(broker_id)
            epoch = self.last_broker_epoch() + 1
            assert previous is None or previous.broker_epoch < epoch, "broker epochs only grow"
            registration = BrokerRegistration(broker_id, epoch, incarnation_id, tuple(log_dirs))
            self._set_last_broker_epoch(epoch)
            self._put_broker(registration)
        return registration

    def write(self, controller_epoch: int, delta: MetadataDelta) -> None:
        """Apply ``delta`` in one transaction if ``controller_epoch`` is the current epoch.

        Raises StaleControllerEpoch (nothing written) otherwise, and ValueError (nothing written)
        for a delta that breaks the store's referential rules.
        """
        with self._lock, self._transaction():
            self._check_epoch(controller_epoch)
            for registration in delta.brokers:
                previous = self.broker(registration.broker_id)
                if previous is None or previous.broker_epoch != registration.broker_epoch:
                    raise ValueError(f"broker {registration.broker_id} epoch "
                                     f"{registration.broker_epoch} is not its registered one")
                self._put_broker(registration)
            for topic in delta.topics:
                existing = self.topic(topic.name)
                if existing is not None and existing.topic_id != topic.topic_id:
                    raise ValueError(f"topic {topic.name!r} exists with another id")
                self._put_topic(topic)
            for state in delta.partitions:
                self._check_partition(state)
                self._put_partition(state)
            for reassignment in delta.reassignments:
                if self.partition(reassignment.tp) is None:
                    raise ValueError(f"reassignment of unknown partition {reassignment.tp}")
                self._put_reassignment(reassignment)
            for tp in delta.cleared_reassignments:
                self._delete_reassignment(tp)
            for deletion in delta.deletions:
                topic_record = self.topic(deletion.name)
                if topic_record is None or topic_record.topic_id != deletion.topic_id:
                    raise ValueError(f"deletion of unknown topic {deletion.name!r}")
                self._put_deletion(deletion)
            for name in delta.removed_topics:
                if self.topic(name) is None:
                    raise ValueError(f"removal of unknown topic {name!r}")
                self._remove_topic(name)

    def _check_epoch(self, controller_epoch: int) -> None:
        current = self.controller_epoch()
        if controller_epoch != current:
            raise StaleControllerEpoch(controller_epoch, current)

    def _check_partition(self, state: PartitionState) -> None:
        topic = self.topic(state.tp.topic)
        if topic is None or topic.topic_id != state.topic_id:
            raise ValueError(f"partition {state.tp} of topic id {state.topic_id} has no topic")
        if not 0 <= state.tp.partition < topic.partition_count:
            raise ValueError(f"partition {state.tp} outside the topic's "
                             f"{topic.partition_count} partitions")
        previous = self.partition(state.tp)
        if previous is not None and previous.topic_id == state.topic_id:
            # The lineage is the controller's own (no broker is told of it): recording it alone
            # keeps the partition epoch.
            assert (state.partition_epoch > previous.partition_epoch
                    or replace(state, lineage=previous.lineage) == previous), \
                f"{state.tp}: partition epoch must grow with every change"
            assert state.leader_epoch >= previous.leader_epoch, \
                f"{state.tp}: leader epoch never moves backwards"

    # -- primitives (inside a transaction) --------------------------------------------------

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[None]:
        """A context manager: commit on normal exit, roll back on an exception."""

    @abstractmethod
    def _set_controller(self, record: ControllerRecord) -> None: ...

    @abstractmethod
    def _set_cluster_id(self, cluster_id: str) -> None: ...

    @abstractmethod
    def _set_last_broker_epoch(self, epoch: int) -> None: ...

    @abstractmethod
    def _put_broker(self, registration: BrokerRegistration) -> None: ...

    @abstractmethod
    def _put_topic(self, topic: TopicRecord) -> None: ...

    @abstractmethod
    def _put_partition(self, state: PartitionState) -> None: ...

    @abstractmethod
    def _put_reassignment(self, reassignment: PendingReassignment) -> None: ...

    @abstractmethod
    def _delete_reassignment(self, tp: TopicPartition) -> None: ...

    @abstractmethod
    def _put_deletion(self, deletion: TopicDeletion) -> None: ...

    @abstractmethod
    def _remove_topic(self, name: str) -> None: ...

    def close(self) -> None:  # noqa: B027 - a no-op by default; SqliteStore closes its file
        """Release resources (the SQLite connection)."""
