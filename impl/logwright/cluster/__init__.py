"""Layer 6: the embedded cluster facade, its client, the simulated world and the real-time
runtime."""

from logwright.cluster.client import Client, ClientConfig, ConsumerRecord
from logwright.cluster.cluster import Cluster
from logwright.cluster.world import SimWorld
from logwright.errors import ClusterError, InvalidArgument

__all__ = ["Client", "ClientConfig", "Cluster", "ClusterError", "ConsumerRecord", "InvalidArgument",
           "SimWorld"]
