"""logwright: a verified reference implementation of the Kafka broker's log lifecycle.

The package is layered bottom up (see docs/architecture.md): ``world`` (injected clock, scheduler
and file system), ``records`` (the v2 RecordBatch codec), ``storage`` (segments, partition logs,
checkpoints), ``logmanager`` (all log dirs of one broker), and beside them ``model`` (the
executable reference model and its checker) and ``verify`` (``make verify``).
"""

import importlib
import logging
from typing import TYPE_CHECKING

from logwright import _native
from logwright.errors import (
    ClusterError,
    CorruptRecordError,
    DataDirError,
    DataDirLockedError,
    DataDirMismatchError,
    Errors,
    FencedLeaderEpoch,
    InvalidArgument,
    InvalidConfig,
    InvalidRequest,
    KafkaError,
    KafkaStorageError,
    LeaderNotAvailable,
    LogwrightError,
    MessageTooLarge,
    NotEnoughReplicas,
    NotLeaderOrFollower,
    OffsetOutOfRange,
    RecordBatchTooLarge,
    RequestTimedOut,
    TopicAuthorizationFailed,
    UnknownLeaderEpoch,
    UnknownTopicOrPartition,
)

# Before any compiled module can load (errors and _native never are): the compiled build runs
# only if it was built from exactly these sources (docs/native.md).
_native.guard()

if TYPE_CHECKING:  # mypy sees the names; at run time __getattr__ imports them on first use
    from logwright.broker.config import BrokerConfig
    from logwright.cluster.client import ClientConfig, ConsumerRecord
    from logwright.cluster.cluster import Cluster
    from logwright.controller.config import ControllerConfig

# A library logs, it does not print: nothing shows unless the application configures logging.
logging.getLogger("logwright").addHandler(logging.NullHandler())

_LAZY = {
    "BrokerConfig": "logwright.broker.config",
    "ClientConfig": "logwright.cluster.client",
    "Cluster": "logwright.cluster.cluster",
    "ConsumerRecord": "logwright.cluster.client",
    "ControllerConfig": "logwright.controller.config",
}


if not TYPE_CHECKING:  # hidden from mypy, which then knows exactly the names above

    def __getattr__(name: str) -> object:
        """The cluster layers' public names, without importing those layers for every
        ``import logwright`` (they cost ~0.25 s; the package itself ~15 ms)."""
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'logwright' has no attribute {name!r}")
        value: object = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value


__version__ = "0.1.0"

__all__ = [
    "BrokerConfig",
    "ClientConfig",
    "Cluster",
    "ClusterError",
    "ConsumerRecord",
    "ControllerConfig",
    "CorruptRecordError",
    "DataDirError",
    "DataDirLockedError",
    "DataDirMismatchError",
    "Errors",
    "FencedLeaderEpoch",
    "InvalidArgument",
    "InvalidConfig",
    "InvalidRequest",
    "KafkaError",
    "KafkaStorageError",
    "LeaderNotAvailable",
    "LogwrightError",
    "MessageTooLarge",
    "NotEnoughReplicas",
    "NotLeaderOrFollower",
    "OffsetOutOfRange",
    "RecordBatchTooLarge",
    "RequestTimedOut",
    "TopicAuthorizationFailed",
    "UnknownLeaderEpoch",
    "UnknownTopicOrPartition",
    "__version__",
]
