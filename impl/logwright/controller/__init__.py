"""The controller layer: the metadata store (conditional on the controller epoch), broker
registration and liveness, leader and ISR, topics, reassignment, and the control requests
(LeaderAndIsr FULL and INCREMENTAL, StopReplica, UpdateMetadata). See docs/controller.md.

Layout (each module imports only those listed before it, and the floors below: identity,
configs, errors, protocol, world): ``errors``, ``config``, ``store`` (records, interface,
backends), ``reassignment`` (parsing and planning), ``core`` (shared state, effects out),
the rooms ``control``, ``dir_moves``, ``reassigning``, ``election``, ``liveness``, ``topics``, then
``decisions`` (every input, returning effects) and ``driver`` (:class:`Controller`: performs them).
"""

from logwright.controller.config import ControllerConfig
from logwright.controller.dir_moves import DirMoveStatus
from logwright.controller.driver import (
    LEADER_DURING_DELETE,
    ControlError,
    Controller,
    ReassignmentStatus,
    broker_node_id,
    controller_node_id,
)
from logwright.controller.errors import (
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    NotController,
    StaleControllerEpoch,
    TopicAlreadyExists,
)
from logwright.controller.reassignment import (
    PartitionMove,
    ReassignmentError,
    ReassignmentPlan,
    parse_reassignment,
)
from logwright.controller.store import (
    BrokerRegistration,
    ControllerRecord,
    MemoryStore,
    MetadataDelta,
    MetadataStore,
    PartitionState,
    PendingReassignment,
    SqliteStore,
    TopicDeletion,
    TopicRecord,
)

__all__ = [
    "LEADER_DURING_DELETE",
    "BrokerRegistration",
    "ControlError",
    "Controller",
    "ControllerConfig",
    "ControllerRecord",
    "DirMoveStatus",
    "InvalidPartitions",
    "InvalidReplicaAssignment",
    "InvalidReplicationFactor",
    "MemoryStore",
    "MetadataDelta",
    "MetadataStore",
    "NotController",
    "PartitionMove",
    "PartitionState",
    "PendingReassignment",
    "ReassignmentError",
    "ReassignmentPlan",
    "ReassignmentStatus",
    "SqliteStore",
    "StaleControllerEpoch",
    "TopicAlreadyExists",
    "TopicDeletion",
    "TopicRecord",
    "broker_node_id",
    "controller_node_id",
    "parse_reassignment",
]
