"""Layer 6: the embedded cluster facade and its client (the simulated world and the real-time
runtime they run in live in :mod:`logwright.world`; ``SimWorld`` is re-exported here)."""

from logwright.cluster.client import Client, ClientConfig, ConsumerRecord, DeleteRecordsResult
from logwright.cluster.cluster import Cluster
from logwright.errors import ClusterError, InvalidArgument
from logwright.world.sim import SimWorld

__all__ = ["Client", "ClientConfig", "Cluster", "ClusterError", "ConsumerRecord",
           "DeleteRecordsResult", "InvalidArgument", "SimWorld"]
