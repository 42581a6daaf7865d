"""The controller's metadata store: one interface, an in-memory and a SQLite implementation.

Every write names the writer's controller epoch and is applied whole or not at all, only if that
epoch is current (StaleControllerFenced, hazard 4; the rules are in ``interface``).

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
    lineage_in_order,
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
    "lineage_in_order",
]
