"""Fencing of control requests: which LeaderAndIsr, StopReplica or UpdateMetadata may change a
broker, and the answer of one that may not.

Invariant upheld: StaleControllerFenced (spec/ControllerFencing.tla, hazards 3 and 4). A control
request changes nothing on a broker when
- its principal may not CLUSTER_ACTION the cluster (CLUSTER_AUTHORIZATION_FAILED), or
- it is addressed to an older incarnation: its broker epoch is below the broker's own
  (STALE_BROKER_EPOCH; a newer epoch, or -1, is not rejected, KIP-380), or
- it comes from a controller epoch below the highest the broker accepted
  (STALE_CONTROLLER_EPOCH).
The checks run in that order, as Kafka's do; a fenced request is answered with the error for
every partition it names.
"""

from __future__ import annotations

from logwright.broker.authorizer import AclAuthorizer, Operation
from logwright.errors import Errors
from logwright.protocol import (
    NO_EPOCH,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    Message,
    PartitionError,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)

ControlRequest = LeaderAndIsrRequest | StopReplicaRequest | UpdateMetadataRequest
"""The requests only a controller sends a broker."""


def fence(request: ControlRequest, authorizer: AclAuthorizer, broker_epoch: int,
          controller_epoch: int) -> Errors | None:
    """Why ``request`` must change nothing on a broker whose own broker epoch is
    ``broker_epoch`` and that accepted controller epochs up to ``controller_epoch``; None if it
    may be applied."""
    if not authorizer.authorize_cluster(request.principal, Operation.CLUSTER_ACTION):
        return Errors.CLUSTER_AUTHORIZATION_FAILED
    if request.broker_epoch != NO_EPOCH and request.broker_epoch < broker_epoch:
        return Errors.STALE_BROKER_EPOCH
    if request.controller_epoch < controller_epoch:
        return Errors.STALE_CONTROLLER_EPOCH
    return None


def fenced_response(request: ControlRequest, error: Errors) -> Message:
    """The answer to a fenced ``request``: ``error`` for the request and each partition."""
    if isinstance(request, LeaderAndIsrRequest):
        return LeaderAndIsrResponse(request.correlation_id, error, tuple(
            PartitionError(s.tp, error) for s in request.partition_states))
    if isinstance(request, StopReplicaRequest):
        return StopReplicaResponse(request.correlation_id, error, tuple(
            PartitionError(p.tp, error) for p in request.partitions))
    return UpdateMetadataResponse(request.correlation_id, error)


__all__ = ["ControlRequest", "fence", "fenced_response"]
