"""Layer 6: the embedded cluster facade, its client, the simulated world and the real-time
runtime."""

from logwright.cluster.client import Client, ClientConfig, ConsumerRecord
from logwright.cluster.cluster import Cluster, ClusterError
from logwright.cluster.world import SimWorld

__all__ = ["Client", "ClientConfig", "Cluster", "ClusterError", "ConsumerRecord", "SimWorld"]
