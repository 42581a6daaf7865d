"""The controller's metadata store: one interface, an in-memory and a SQLite implementation.

Invariant upheld (HAZARDS 4, StaleControllerFenced): no write by a deposed controller lands. Every
write except :meth:`MetadataStore.claim_controller` names the writer's controller epoch, and one
transaction first compares it with the current epoch, then applies the whole change or nothing.
A mismatch raises :class:`StaleControllerEpoch`. ``claim_controller`` is an atomic increment, so
two controllers can never hold the same epoch.

Also upheld here: broker epochs come from one durable sequence, so every registration gets an
epoch strictly larger than any before, for any broker (KIP-380); partition states are internally
consistent (asserted on construction: the leader is in the ISR, the ISR and the adding and removing
replicas lie within the replicas) and belong to a topic of the same topic id.

``MemoryStore`` serves the simulator; ``SqliteStore(path)`` is the embedded default (stdlib
``sqlite3``: each write is ``BEGIN IMMEDIATE`` ... ``COMMIT`` with ``synchronous=FULL``, so a
committed write survives a crash and a reopen). The same tests run against both.
"""

from __future__ import annotations

import copy
import json
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from logwright.controller.errors import StaleControllerEpoch
from logwright.identity import TopicPartition, Uuid

__all__ = [
    "ANY_LOG_DIR",
    "NO_CONTROLLER_EPOCH",
    "NO_LEADER",
    "BrokerRegistration",
    "ControllerRecord",
    "MemoryStore",
    "MetadataDelta",
    "MetadataStore",
    "PartitionState",
    "PendingReassignment",
    "SqliteStore",
    "StaleControllerEpoch",
    "TopicDeletion",
    "TopicRecord",
]

NO_LEADER = -1
"""``leader`` of a partition none of whose ISR members is alive (clean election only)."""

ANY_LOG_DIR = "any"
"""A replica's log dir when the reassignment JSON states no preference."""

NO_CONTROLLER_EPOCH = 0
"""The controller epoch of a store no controller ever claimed; the first claim gets 1."""


# ---- records --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ControllerRecord:
    """The active controller: its id (``controller-<id>``) and the epoch it claimed."""

    controller_id: int
    epoch: int


@dataclass(frozen=True)
class BrokerRegistration:
    """One broker's latest registration.

    ``fenced`` is set when the controller declared the broker dead (its session expired) and
    cleared when it registers again or heartbeats with this epoch; a new controller reads it to
    know which brokers were alive.
    """

    broker_id: int
    broker_epoch: int
    incarnation_id: Uuid
    log_dirs: tuple[str, ...]
    fenced: bool = False

    def __post_init__(self) -> None:
        assert self.broker_id >= 0, f"broker id {self.broker_id} is negative"
        assert self.broker_epoch >= 1, f"broker epoch {self.broker_epoch} was never assigned"


@dataclass(frozen=True)
class TopicRecord:
    """A topic: its id is new at every creation, so a re-created name has a different id."""

    name: str
    topic_id: Uuid
    partition_count: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...] = ()  # sorted (key, value) pairs

    def __post_init__(self) -> None:
        assert self.partition_count >= 1 and self.replication_factor >= 1
        assert list(self.configs) == sorted(dict(self.configs).items()), "configs sorted, unique"

    @property
    def config_map(self) -> dict[str, str]:
        """The topic configs as a dict."""
        return dict(self.configs)

    @staticmethod
    def configs_from(mapping: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
        """The canonical (sorted) form of a config mapping."""
        return tuple(sorted((mapping or {}).items()))


@dataclass(frozen=True)
class PartitionState:
    """The controller's state of one partition (what LeaderAndIsr carries).

    ``replicas`` is the assignment in preference order; during a reassignment it holds the old
    replicas followed by the ``adding_replicas``, and ``removing_replicas`` are the old ones that
    will go. ``target_log_dirs`` parallels ``replicas`` (empty: "any" for every replica).
    ``partition_epoch`` grows with every change; ``leader_epoch`` with every leader change (and at
    the end of a reassignment).
    """

    tp: TopicPartition
    topic_id: Uuid
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    target_log_dirs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        replicas = set(self.replicas)
        assert self.replicas and len(replicas) == len(self.replicas), \
            f"{self.tp}: replicas {self.replicas} empty or duplicated"
        assert len(set(self.isr)) == len(self.isr) and set(self.isr) <= replicas, \
            f"{self.tp}: ISR {self.isr} not a set within replicas {self.replicas}"
        assert self.isr, f"{self.tp}: the ISR is never empty (the last member stays)"
        assert self.leader == NO_LEADER or self.leader in self.isr, \
            f"{self.tp}: leader {self.leader} not in ISR {self.isr}"
        assert set(self.adding_replicas) <= replicas and set(self.removing_replicas) <= replicas
        assert not set(self.adding_replicas) & set(self.removing_replicas)
        assert not self.target_log_dirs or len(self.target_log_dirs) == len(self.replicas)
        assert self.leader_epoch >= 0 and self.partition_epoch >= 0

    def log_dir_for(self, broker_id: int) -> str:
        """The log dir ``broker_id`` should host this replica in ("any": no preference)."""
        if not self.target_log_dirs or broker_id not in self.replicas:
            return ANY_LOG_DIR
        return self.target_log_dirs[self.replicas.index(broker_id)]

    @property
    def reassigning(self) -> bool:
        """Whether a reassignment is under way (replicas are being added or removed)."""
        return bool(self.adding_replicas or self.removing_replicas)


@dataclass(frozen=True)
class PendingReassignment:
    """A reassignment not yet complete: where the partition's replicas (and dirs) should end up."""

    tp: TopicPartition
    target_replicas: tuple[int, ...]
    target_log_dirs: tuple[str, ...]

    def __post_init__(self) -> None:
        assert self.target_replicas and len(set(self.target_replicas)) == len(self.target_replicas)
        assert len(self.target_log_dirs) == len(self.target_replicas)


@dataclass(frozen=True)
class TopicDeletion:
    """A topic whose deletion started: StopReplica went out; the topic is not yet removed."""

    name: str
    topic_id: Uuid


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
            assert state.partition_epoch > previous.partition_epoch or state == previous, \
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


# ---- in memory ------------------------------------------------------------------------------


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


# ---- SQLite ---------------------------------------------------------------------------------

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE controller (
    singleton      INTEGER PRIMARY KEY CHECK (singleton = 0),
    controller_id  INTEGER NOT NULL,
    epoch          INTEGER NOT NULL
);
CREATE TABLE sequences (
    name   TEXT PRIMARY KEY,
    value  INTEGER NOT NULL
);
CREATE TABLE brokers (
    broker_id       INTEGER PRIMARY KEY,
    broker_epoch    INTEGER NOT NULL,
    incarnation_id  TEXT NOT NULL,
    log_dirs        TEXT NOT NULL,          -- JSON list of paths
    fenced          INTEGER NOT NULL
);
CREATE TABLE topics (
    name                TEXT PRIMARY KEY,
    topic_id            TEXT NOT NULL UNIQUE,
    partition_count     INTEGER NOT NULL,
    replication_factor  INTEGER NOT NULL,
    configs             TEXT NOT NULL       -- JSON object
);
CREATE TABLE partitions (
    topic              TEXT NOT NULL REFERENCES topics(name) ON DELETE CASCADE,
    partition          INTEGER NOT NULL,
    topic_id           TEXT NOT NULL,
    replicas           TEXT NOT NULL,       -- JSON lists of broker ids
    isr                TEXT NOT NULL,
    leader             INTEGER NOT NULL,
    leader_epoch       INTEGER NOT NULL,
    partition_epoch    INTEGER NOT NULL,
    adding_replicas    TEXT NOT NULL,
    removing_replicas  TEXT NOT NULL,
    target_log_dirs    TEXT NOT NULL,       -- JSON list parallel to replicas
    PRIMARY KEY (topic, partition)
);
CREATE TABLE reassignments (
    topic            TEXT NOT NULL REFERENCES topics(name) ON DELETE CASCADE,
    partition        INTEGER NOT NULL,
    target_replicas  TEXT NOT NULL,
    target_log_dirs  TEXT NOT NULL,
    PRIMARY KEY (topic, partition)
);
CREATE TABLE topic_deletions (
    name      TEXT PRIMARY KEY REFERENCES topics(name) ON DELETE CASCADE,
    topic_id  TEXT NOT NULL
);
"""

_BROKER_EPOCH_SEQUENCE = "broker_epoch"
# Added without a schema version bump: created on open when missing, so older files gain it.
_CLUSTER_TABLE = """CREATE TABLE IF NOT EXISTS cluster (
    singleton   INTEGER PRIMARY KEY CHECK (singleton = 0),
    cluster_id  TEXT NOT NULL
)"""


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in json.loads(text))


def _strs(text: str) -> tuple[str, ...]:
    return tuple(str(x) for x in json.loads(text))


class SqliteStore(MetadataStore):
    """The embedded default: one SQLite file, every write one ``BEGIN IMMEDIATE`` transaction.

    ``BEGIN IMMEDIATE`` takes the write lock before the epoch is read, so two controllers sharing
    the file cannot both pass the check; WAL with ``synchronous=FULL`` makes a commit durable.
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                                   timeout=10.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._in_transaction = False
        with self._lock:
            version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
            if version == 0:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    # Another opener may have created the schema between our read and the lock.
                    if int(self._db.execute("PRAGMA user_version").fetchone()[0]) == 0:
                        for statement in _SCHEMA.split(";"):
                            if statement.strip():
                                self._db.execute(statement)
                        self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
            elif version != SCHEMA_VERSION:
                self._db.close()
                raise ValueError(f"{path}: metadata store schema version {version}, this "
                                 f"logwright reads version {SCHEMA_VERSION}")
            self._db.execute(_CLUSTER_TABLE)

    def close(self) -> None:
        """Close the SQLite connection."""
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        assert not self._in_transaction, "transactions do not nest"
        self._db.execute("BEGIN IMMEDIATE")
        self._in_transaction = True
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        else:
            self._db.execute("COMMIT")
        finally:
            self._in_transaction = False

    def _q(self, sql: str, *args: object) -> list[Any]:
        with self._lock:
            return list(self._db.execute(sql, args).fetchall())

    # -- reads ------------------------------------------------------------------------------

    def controller(self) -> ControllerRecord | None:
        rows = self._q("SELECT controller_id, epoch FROM controller")
        return None if not rows else ControllerRecord(int(rows[0][0]), int(rows[0][1]))

    def cluster_id(self) -> str | None:
        rows = self._q("SELECT cluster_id FROM cluster")
        return None if not rows else str(rows[0][0])

    def _set_cluster_id(self, cluster_id: str) -> None:
        self._db.execute("INSERT INTO cluster VALUES (0, ?)", (cluster_id,))

    @staticmethod
    def _broker_of(row: Any) -> BrokerRegistration:
        broker_id, epoch, incarnation, log_dirs, fenced = row
        return BrokerRegistration(int(broker_id), int(epoch),
                                  Uuid.parse(str(incarnation)), _strs(str(log_dirs)),
                                  bool(fenced))

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        rows = self._q("SELECT * FROM brokers WHERE broker_id = ?", broker_id)
        return self._broker_of(rows[0]) if rows else None

    def brokers(self) -> list[BrokerRegistration]:
        return [self._broker_of(r) for r in self._q("SELECT * FROM brokers ORDER BY broker_id")]

    def last_broker_epoch(self) -> int:
        rows = self._q("SELECT value FROM sequences WHERE name = ?", _BROKER_EPOCH_SEQUENCE)
        return int(rows[0][0]) if rows else 0

    @staticmethod
    def _topic_of(row: Any) -> TopicRecord:
        name, topic_id, count, rf, configs = row
        return TopicRecord(str(name), Uuid.parse(str(topic_id)), int(count),
                           int(rf), TopicRecord.configs_from(json.loads(str(configs))))

    def topic(self, name: str) -> TopicRecord | None:
        rows = self._q("SELECT * FROM topics WHERE name = ?", name)
        return self._topic_of(rows[0]) if rows else None

    def topics(self) -> list[TopicRecord]:
        return [self._topic_of(r) for r in self._q("SELECT * FROM topics ORDER BY name")]

    @staticmethod
    def _partition_of(row: Any) -> PartitionState:
        (topic, partition, topic_id, replicas, isr, leader, leader_epoch, partition_epoch,
         adding, removing, dirs) = row
        return PartitionState(
            tp=TopicPartition(str(topic), int(partition)),
            topic_id=Uuid.parse(str(topic_id)), replicas=_ints(str(replicas)),
            isr=_ints(str(isr)), leader=int(leader),
            leader_epoch=int(leader_epoch), partition_epoch=int(partition_epoch),
            adding_replicas=_ints(str(adding)), removing_replicas=_ints(str(removing)),
            target_log_dirs=_strs(str(dirs)))

    def partition(self, tp: TopicPartition) -> PartitionState | None:
        rows = self._q("SELECT * FROM partitions WHERE topic = ? AND partition = ?",
                       tp.topic, tp.partition)
        return self._partition_of(rows[0]) if rows else None

    def partitions(self, topic: str | None = None) -> list[PartitionState]:
        if topic is None:
            rows = self._q("SELECT * FROM partitions ORDER BY topic, partition")
        else:
            rows = self._q("SELECT * FROM partitions WHERE topic = ? ORDER BY partition", topic)
        return [self._partition_of(r) for r in rows]

    def reassignments(self) -> list[PendingReassignment]:
        rows = self._q("SELECT * FROM reassignments ORDER BY topic, partition")
        return [PendingReassignment(TopicPartition(str(t), int(p)),
                                    _ints(str(r)), _strs(str(d))) for t, p, r, d in rows]

    def deletions(self) -> list[TopicDeletion]:
        rows = self._q("SELECT name, topic_id FROM topic_deletions ORDER BY name")
        return [TopicDeletion(str(n), Uuid.parse(str(i))) for n, i in rows]

    # -- primitives -------------------------------------------------------------------------

    def _set_controller(self, record: ControllerRecord) -> None:
        self._db.execute("INSERT OR REPLACE INTO controller VALUES (0, ?, ?)",
                         (record.controller_id, record.epoch))

    def _set_last_broker_epoch(self, epoch: int) -> None:
        self._db.execute("INSERT OR REPLACE INTO sequences VALUES (?, ?)",
                         (_BROKER_EPOCH_SEQUENCE, epoch))

    def _put_broker(self, registration: BrokerRegistration) -> None:
        r = registration
        self._db.execute("INSERT OR REPLACE INTO brokers VALUES (?, ?, ?, ?, ?)",
                         (r.broker_id, r.broker_epoch, str(r.incarnation_id),
                          json.dumps(list(r.log_dirs)), int(r.fenced)))

    def _put_topic(self, topic: TopicRecord) -> None:
        # An upsert, not INSERT OR REPLACE: replacing would cascade-delete the partitions.
        self._db.execute(
            "INSERT INTO topics VALUES (?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
            "partition_count = excluded.partition_count, "
            "replication_factor = excluded.replication_factor, configs = excluded.configs",
            (topic.name, str(topic.topic_id), topic.partition_count, topic.replication_factor,
             json.dumps(topic.config_map, sort_keys=True)))

    def _put_partition(self, state: PartitionState) -> None:
        s = state
        self._db.execute(
            "INSERT OR REPLACE INTO partitions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (s.tp.topic, s.tp.partition, str(s.topic_id), json.dumps(list(s.replicas)),
             json.dumps(list(s.isr)), s.leader, s.leader_epoch, s.partition_epoch,
             json.dumps(list(s.adding_replicas)), json.dumps(list(s.removing_replicas)),
             json.dumps(list(s.target_log_dirs))))

    def _put_reassignment(self, reassignment: PendingReassignment) -> None:
        r = reassignment
        self._db.execute("INSERT OR REPLACE INTO reassignments VALUES (?, ?, ?, ?)",
                         (r.tp.topic, r.tp.partition, json.dumps(list(r.target_replicas)),
                          json.dumps(list(r.target_log_dirs))))

    def _delete_reassignment(self, tp: TopicPartition) -> None:
        self._db.execute("DELETE FROM reassignments WHERE topic = ? AND partition = ?",
                         (tp.topic, tp.partition))

    def _put_deletion(self, deletion: TopicDeletion) -> None:
        self._db.execute("INSERT OR REPLACE INTO topic_deletions VALUES (?, ?)",
                         (deletion.name, str(deletion.topic_id)))

    def _remove_topic(self, name: str) -> None:
        # ON DELETE CASCADE removes its partitions, reassignments and deletion marker.
        self._db.execute("DELETE FROM topics WHERE name = ?", (name,))
