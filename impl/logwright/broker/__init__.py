"""Layer 4: the broker. Replica manager and partitions (leader or follower, leader epoch cache,
ISR, high watermark), fetchers that contain partition failures (KIP-461), purgatories, fencing of
stale control requests (KIP-380), ACL authorization, and metrics with Kafka's names."""

from logwright.broker.authorizer import (
    AclAuthorizer,
    AclBinding,
    Operation,
    Permission,
    ResourceType,
)
from logwright.broker.broker import Broker, BrokerState
from logwright.broker.config import ANONYMOUS, BrokerConfig
from logwright.broker.fetcher import FetcherManager, FetchSource, FetchTarget
from logwright.broker.metrics import BrokerMetrics
from logwright.broker.partition import Partition, Role
from logwright.broker.replica_manager import ReplicaManager
from logwright.storage.epoch_cache import LeaderEpochCache

__all__ = [
    "ANONYMOUS",
    "AclAuthorizer",
    "AclBinding",
    "Broker",
    "BrokerConfig",
    "BrokerMetrics",
    "BrokerState",
    "FetchSource",
    "FetchTarget",
    "FetcherManager",
    "LeaderEpochCache",
    "Operation",
    "Partition",
    "Permission",
    "ReplicaManager",
    "ResourceType",
    "Role",
]
