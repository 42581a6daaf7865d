"""Layer 6: the embedded cluster facade, the simulated world and the real-time runtime."""

from logwright.cluster.cluster import Cluster, ClusterError, ConsumerRecord
from logwright.cluster.world import SimWorld

__all__ = ["Cluster", "ClusterError", "ConsumerRecord", "SimWorld"]
