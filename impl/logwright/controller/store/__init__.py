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

Layout: ``records`` (the immutable dataclasses), ``interface`` (``MetadataStore`` and
``MetadataDelta``: the epoch check and the referential rules, once), and one module per backend,
``memory`` and ``sqlite``. Backends import the interface and the records, never each other.
"""

from logwright.controller.errors import StaleControllerEpoch
from logwright.controller.store.interface import MetadataDelta, MetadataStore
from logwright.controller.store.memory import MemoryStore
from logwright.controller.store.records import (
    ANY_LOG_DIR,
    NO_CONTROLLER_EPOCH,
    NO_LEADER,
    BrokerRegistration,
    ControllerRecord,
    PartitionState,
    PendingReassignment,
    TopicDeletion,
    TopicRecord,
)
from logwright.controller.store.sqlite import SqliteStore

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
