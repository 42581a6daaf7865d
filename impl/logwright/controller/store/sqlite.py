"""The embedded default metadata store: one SQLite file (stdlib ``sqlite3``).

Each write is ``BEGIN IMMEDIATE`` ... ``COMMIT`` with ``synchronous=FULL``, so a committed write
survives a crash and a reopen. The same tests run against it and the in-memory store.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from logwright.controller.store.interface import MetadataStore
from logwright.controller.store.records import (
    BrokerRegistration,
    ControllerRecord,
    PartitionState,
    PendingReassignment,
    TopicDeletion,
    TopicRecord,
)
from logwright.identity import TopicPartition, Uuid

__all__ = ["SCHEMA_VERSION", "SqliteStore"]


SCHEMA_VERSION = 4

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
    elr                TEXT NOT NULL DEFAULT '[]',
    recovery_log_ends  TEXT NOT NULL DEFAULT '[]',  -- JSON list of [broker, agreeing, epoch, end]
    leader_log_start_offset  INTEGER NOT NULL DEFAULT 0,
    lineage            TEXT NOT NULL DEFAULT '[]',  -- JSON list of [leader epoch, start offset]
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

#: What turns a version 1 file into a version 2 one (eligible leader replicas, KIP-966).
_MIGRATE_1_TO_2 = (
    "ALTER TABLE partitions ADD COLUMN elr TEXT NOT NULL DEFAULT '[]'",
    "ALTER TABLE partitions ADD COLUMN recovery_log_ends TEXT NOT NULL DEFAULT '[]'",
)

#: Version 2 to 3: the log start offset a recovery election's leader adopts.
_MIGRATE_2_TO_3 = (
    "ALTER TABLE partitions ADD COLUMN leader_log_start_offset INTEGER NOT NULL DEFAULT 0",
)

#: Version 3 to 4: the lineage of the latest leader epoch, and reports that say how far a log
#: agrees with it. A version 3 report has no such figure: the reports are dropped (a replica of a
#: partition without a leader reports again with every heartbeat).
_MIGRATE_3_TO_4 = (
    "ALTER TABLE partitions ADD COLUMN lineage TEXT NOT NULL DEFAULT '[]'",
    "UPDATE partitions SET recovery_log_ends = '[]'",
)

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
        if int(self._db.execute("PRAGMA user_version").fetchone()[0]) == 0 and \
                self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            # Another program's database: refused before anything (not even the journal mode,
            # which lives in the file's header) is written to it.
            self._db.close()
            raise ValueError(f"{path}: an SQLite database of another program (tables but no "
                             "logwright schema version); refused, left as it is")
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
            elif version in (1, 2, 3):
                if version == 1:
                    self._migrate(_MIGRATE_1_TO_2, 2)
                if version <= 2:
                    self._migrate(_MIGRATE_2_TO_3, 3)
                self._migrate(_MIGRATE_3_TO_4, 4)
            elif version != SCHEMA_VERSION:
                self._db.close()
                raise ValueError(f"{path}: metadata store schema version {version}, this "
                                 f"logwright reads version {SCHEMA_VERSION}")
            self._db.execute(_CLUSTER_TABLE)

    def _migrate(self, statements: tuple[str, ...], version: int) -> None:
        """Bring the file to ``version`` in one transaction (another opener may have first)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if int(self._db.execute("PRAGMA user_version").fetchone()[0]) < version:
                for statement in statements:
                    self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {version}")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def check_readable(self) -> None:
        """Read every record once, so a store whose content is damaged (a table gone, a value
        that does not decode) is found when it is opened, not halfway through start-up. Raises
        what decoding raises (``sqlite3.Error``, ``ValueError``, ``KeyError``, ``TypeError``)."""
        self.controller()
        self.brokers()
        for topic in self.topics():
            self.partitions(topic.name)
        self.partitions()
        self.reassignments()
        self.deletions()
        self.cluster_id()

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
         adding, removing, dirs, elr, log_ends, leader_start, lineage) = row
        return PartitionState(
            tp=TopicPartition(str(topic), int(partition)),
            topic_id=Uuid.parse(str(topic_id)), replicas=_ints(str(replicas)),
            isr=_ints(str(isr)), leader=int(leader),
            leader_epoch=int(leader_epoch), partition_epoch=int(partition_epoch),
            adding_replicas=_ints(str(adding)), removing_replicas=_ints(str(removing)),
            target_log_dirs=_strs(str(dirs)), elr=_ints(str(elr)),
            recovery_log_ends=tuple((int(b), int(a), int(e), int(o))
                                    for b, a, e, o in json.loads(str(log_ends))),
            leader_log_start_offset=int(leader_start),
            lineage=tuple((int(e), int(o)) for e, o in json.loads(str(lineage))))

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
            "INSERT OR REPLACE INTO partitions VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (s.tp.topic, s.tp.partition, str(s.topic_id), json.dumps(list(s.replicas)),
             json.dumps(list(s.isr)), s.leader, s.leader_epoch, s.partition_epoch,
             json.dumps(list(s.adding_replicas)), json.dumps(list(s.removing_replicas)),
             json.dumps(list(s.target_log_dirs)), json.dumps(list(s.elr)),
             json.dumps([list(e) for e in s.recovery_log_ends]), s.leader_log_start_offset,
             json.dumps([list(e) for e in s.lineage])))

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
