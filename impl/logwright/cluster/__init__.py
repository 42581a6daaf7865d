"""Layer 6: the embedded cluster facade, the simulated world and the real-time runtime."""

from logwright.cluster.cluster import Cluster, ConsumerRecord
from logwright.cluster.world import SimWorld
from logwright.errors import ClusterError, InvalidArgument

__all__ = ["Cluster", "ClusterError", "ConsumerRecord", "InvalidArgument", "SimWorld"]
