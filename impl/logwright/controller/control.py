"""The control requests the controller sends: LeaderAndIsr (FULL and INCREMENTAL), StopReplica
and UpdateMetadata, how each is built from the stored state, and how one is rebuilt when its
answer does not come.

Invariants upheld:

- Every control request carries the controller's epoch and the addressee's current broker epoch
  (KIP-380), and every partition state in it carries the topic's stored configs, so a replica
  never creates or keeps a log with configs older than the newest message it accepted.
- A control request the network lost is sent again while its broker lives, rebuilt from the
  current state with a new correlation id: a retry never carries a state older than one already
  sent, and within one controller epoch correlation ids grow in send order.
- Nothing is sent once this controller is no longer active.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TypeAlias

from logwright.controller.core import ControllerCore
from logwright.controller.store import PartitionState
from logwright.identity import TopicPartition, Uuid, broker_node_id
from logwright.protocol.effects import ForgetRequests, Request
from logwright.protocol.messages import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrType,
    StopReplicaPartition,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)

__all__ = [
    "CONTROL_REQUESTS",
    "CONTROL_RESPONSES",
    "LEADER_DURING_DELETE",
    "ControlRequest",
    "ControlRequests",
    "ControlResponse",
]

log = logging.getLogger(__name__)

ControlRequest: TypeAlias = LeaderAndIsrRequest | StopReplicaRequest | UpdateMetadataRequest
ControlResponse: TypeAlias = LeaderAndIsrResponse | StopReplicaResponse | UpdateMetadataResponse
CONTROL_REQUESTS = (LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest)
CONTROL_RESPONSES = (LeaderAndIsrResponse, StopReplicaResponse, UpdateMetadataResponse)

LEADER_DURING_DELETE = -2
"""``leader`` in the UpdateMetadata state of a partition whose topic was deleted (Kafka's
LeaderDuringDelete): brokers drop the partition from their metadata cache."""


class ControlRequests(ControllerCore):
    """The room that builds and sends control requests (as Request effects)."""

    def _send(self, broker_id: int, request: ControlRequest) -> None:
        """Send a control request, remember it until answered, and retry it if it goes missing
        (the driver's request channel keeps it, bounded by ``max_outstanding_requests``)."""
        if not self.active:
            return
        dst = broker_node_id(broker_id)
        self._control_dsts[dst] = broker_id
        self._emit(Request(dst, request, self.config.control_request_retry_ms,
                           f"{self.node_id} retry {type(request).__name__} "
                           f"{request.correlation_id}"))

    def _forget_requests_to(self, broker_id: int) -> None:
        self._emit(ForgetRequests(broker_node_id(broker_id)))

    def _resend(self, broker_id: int, request: ControlRequest) -> None:
        """No answer came to ``request``: send what it meant again, as the state is NOW."""
        if not self.active:
            return
        registration = self.store.broker(broker_id)
        if (broker_id not in self._session_deadline_ms or registration is None
                or registration.broker_epoch != request.broker_epoch):
            return  # a dead broker gets everything again (FULL) when it registers
        log.debug("%s: no answer to %s %d from broker %d; sending again", self.node_id,
                  type(request).__name__, request.correlation_id, broker_id)
        if isinstance(request, LeaderAndIsrRequest) and request.type == LeaderAndIsrType.FULL:
            self._send_full_leader_and_isr(broker_id)
        elif isinstance(request, LeaderAndIsrRequest):
            states = [s for w in request.partition_states
                      if (s := self.store.partition(w.tp)) is not None
                      and s.topic_id == w.topic_id and broker_id in s.replicas]
            new = {w.tp for w in request.partition_states if w.is_new}
            if states:
                self._leader_and_isr(broker_id, LeaderAndIsrType.INCREMENTAL, states, new)
        elif isinstance(request, StopReplicaRequest):
            # Not if the broker became a replica of the partition again since. A name the
            # broker hosts again under another topic id (the topic was deleted and created
            # again) gets the current decision instead: a LeaderAndIsr of the new topic, which
            # sets the old log aside as a stray. A StopReplica of the old id sent now would
            # carry a newer version than the new topic's LeaderAndIsr already sent, and the
            # broker, which takes only the newest version per name, would refuse that one.
            partitions, recreated = [], []
            for p in request.partitions:
                s = self.store.partition(p.tp)
                if s is None or broker_id not in s.replicas:
                    partitions.append(p)
                elif s.topic_id != p.topic_id:
                    recreated.append(s)
            if partitions:
                self._send_stop_replica(broker_id, partitions)
            if recreated:
                # Not new: its replica may already hold records, on a dir now offline.
                self._leader_and_isr(broker_id, LeaderAndIsrType.INCREMENTAL, recreated)
        elif request.update_type == LeaderAndIsrType.FULL:
            self._send_full_update_metadata([broker_id])
        else:
            current = [s for w in request.partition_states
                       if (s := self.store.partition(w.tp)) is not None
                       and s.topic_id == w.topic_id]
            # A deleted topic's partition is sent as gone again only while its name is free. A
            # name created again under another topic id gets its current state instead: the
            # broker's cache takes the newest request per name, and a deletion resent now would
            # be newer than the new topic's UpdateMetadata and hide the new topic (0040).
            gone: list[LeaderAndIsrPartitionState] = []
            for w in request.partition_states:
                if w.leader != LEADER_DURING_DELETE:
                    continue
                s = self.store.partition(w.tp)
                if s is None:
                    gone.append(w)
                elif s.topic_id != w.topic_id and s not in current:
                    current.append(s)
            configs = self._topic_configs()
            self._update_metadata_to(broker_id, tuple(self._wire_state(s, configs=configs)
                                                      for s in current) + tuple(gone))

    def _broker_epoch(self, broker_id: int) -> int:
        registration = self.store.broker(broker_id)
        assert registration is not None, f"broker {broker_id} is live but not registered"
        return registration.broker_epoch

    def _topic_configs(self) -> dict[tuple[str, Uuid], tuple[tuple[str, str], ...]]:
        """Every topic's stored configs, by (name, id): read once per message built."""
        return {(t.name, t.topic_id): t.configs for t in self.store.topics()}

    def _wire_state(self, state: PartitionState, broker_id: int | None = None,
                    is_new: bool = False,
                    configs: Mapping[tuple[str, Uuid], tuple[tuple[str, str], ...]] | None = None,
                    ) -> LeaderAndIsrPartitionState:
        if configs is None:
            configs = self._topic_configs()
        return LeaderAndIsrPartitionState(
            tp=state.tp, topic_id=state.topic_id, controller_epoch=self.epoch,
            leader=state.leader, leader_epoch=state.leader_epoch, isr=state.isr,
            partition_epoch=state.partition_epoch, replicas=state.replicas,
            adding_replicas=state.adding_replicas, removing_replicas=state.removing_replicas,
            is_new=is_new,
            log_dir=state.log_dir_for(broker_id) if broker_id is not None else "any",
            topic_configs=configs.get((state.tp.topic, state.topic_id), ()),
            leader_log_start_offset=state.leader_log_start_offset)

    def _leader_and_isr(self, broker_id: int, kind: LeaderAndIsrType,
                        states: Iterable[PartitionState],
                        new: Iterable[TopicPartition] = ()) -> None:
        """A LeaderAndIsr of ``states`` to ``broker_id``; ``is_new`` for the partitions of
        ``new`` only: those whose replica on this broker the request itself creates (a topic's
        creation, a reassignment's first request to the replicas it adds, that request sent
        again unanswered). Never in a FULL request (a registration's or a failover's), nor in
        any other: the replica may already hold records on a dir that is offline now, and a
        broker told ``is_new`` creates an empty log of it on another dir (as Kafka's
        ZooKeeper-mode controller, which sends ``isNew`` only on the NewReplica transition;
        traces/regressions/0052)."""
        new_tps = set(new)
        assert kind == LeaderAndIsrType.INCREMENTAL or not new_tps, \
            "a FULL LeaderAndIsr creates no replica as new"
        configs = self._topic_configs()
        wire = tuple(self._wire_state(s, broker_id, is_new=s.tp in new_tps, configs=configs)
                     for s in states)
        leaders = tuple(sorted({s.leader for s in wire if s.leader in self._session_deadline_ms}))
        self._send(broker_id, LeaderAndIsrRequest(
            self._next_correlation_id(), self.controller_id, self.epoch,
            self._broker_epoch(broker_id), kind, wire, leaders, principal=self.config.principal))

    def _send_full_leader_and_isr(self, broker_id: int) -> None:
        """FULL: every partition the broker hosts (KIP-550); anything else it holds is a stray."""
        self._leader_and_isr(broker_id, LeaderAndIsrType.FULL, self._hosted_by(broker_id))

    def _hosted_by(self, broker_id: int) -> list[PartitionState]:
        """Every partition ``broker_id`` hosts, topics being deleted left out."""
        deleting = self._deleting()
        return [s for s in self.store.partitions()
                if broker_id in s.replicas and s.tp.topic not in deleting]

    def _send_leader_and_isr(self, states: Sequence[PartitionState],
                             new: Iterable[TopicPartition] = (),
                             exclude: Iterable[int] = (), adding_new: bool = False) -> None:
        """INCREMENTAL LeaderAndIsr to every live replica of ``states``: ``is_new`` for every
        replica of the partitions of ``new`` (a topic's creation) and, with ``adding_new`` (a
        reassignment's first request), for each state's adding replicas."""
        skip = set(exclude)
        new_tps = set(new)
        per_broker: dict[int, list[PartitionState]] = {}
        for state in states:
            for broker_id in state.replicas:
                if broker_id in self._session_deadline_ms and broker_id not in skip:
                    per_broker.setdefault(broker_id, []).append(state)
        for broker_id in sorted(per_broker):
            added = {s.tp for s in per_broker[broker_id]
                     if adding_new and broker_id in s.adding_replicas}
            self._leader_and_isr(broker_id, LeaderAndIsrType.INCREMENTAL, per_broker[broker_id],
                                 new_tps | added)

    def _send_stop_replica(self, broker_id: int,
                           partitions: Sequence[StopReplicaPartition]) -> None:
        self._send(broker_id, StopReplicaRequest(
            self._next_correlation_id(), self.controller_id, self.epoch,
            self._broker_epoch(broker_id), tuple(partitions), principal=self.config.principal))

    def _send_update_metadata(self, states: Sequence[PartitionState],
                              leader_override: int | None = None,
                              update_type: LeaderAndIsrType = LeaderAndIsrType.INCREMENTAL,
                              brokers: Sequence[int] | None = None) -> None:
        """UpdateMetadata of ``states`` to ``brokers`` (every live one by default)."""
        configs = self._topic_configs()
        wire = tuple(self._wire_state(s, configs=configs) for s in states)
        if leader_override is not None:
            wire = tuple(replace(w, leader=leader_override) for w in wire)
        for broker_id in self.live_brokers() if brokers is None else brokers:
            self._update_metadata_to(broker_id, wire, update_type)

    def _send_full_update_metadata(self, brokers: Sequence[int] | None = None) -> None:
        """Every partition of every topic, as FULL, to ``brokers`` (every live one by
        default): a broker that missed a deletion (cut off from the controller that made it,
        its requests forgotten when its session ended) drops the deleted topic from its
        metadata cache."""
        self._send_update_metadata(self.store.partitions(), update_type=LeaderAndIsrType.FULL,
                                   brokers=brokers)

    def _update_metadata_to(self, broker_id: int,
                            wire: tuple[LeaderAndIsrPartitionState, ...],
                            update_type: LeaderAndIsrType = LeaderAndIsrType.INCREMENTAL
                            ) -> None:
        self._send(broker_id, UpdateMetadataRequest(
            self._next_correlation_id(), self.controller_id, self.epoch,
            self._broker_epoch(broker_id), wire, self.live_brokers(),
            principal=self.config.principal, update_type=update_type))

    def _announce(self, changes: Sequence[PartitionState]) -> None:
        """Tell the live replicas (LeaderAndIsr) and every live broker (UpdateMetadata)."""
        if changes:
            self._send_leader_and_isr(changes)
            self._send_update_metadata(changes)
