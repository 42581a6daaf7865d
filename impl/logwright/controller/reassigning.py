"""The controller's side of a reassignment: start it, complete it, report its progress.

``reassignment.py`` beside it parses and validates Kafka's JSON and computes the states; this
room writes them and announces them. A reassignment is written in one transaction for all its
partitions; each partition completes once every target replica is in the ISR: leadership moves to
a target replica if needed, the old replicas get StopReplica(delete), and the leader epoch is
bumped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from logwright.controller.control import ControlRequests
from logwright.controller.core import decision
from logwright.controller.errors import StaleControllerEpoch
from logwright.controller.reassignment import (
    begin_reassignment,
    complete_reassignment,
    parse_reassignment,
    reassignment_done,
    validate_plan,
)
from logwright.controller.store import MetadataDelta, PendingReassignment
from logwright.identity import TopicPartition
from logwright.protocol.messages import StopReplicaPartition

__all__ = ["ReassignmentStatus", "Reassignments"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReassignmentStatus:
    """Progress of one partition's reassignment (``kafka-reassign-partitions --verify``).

    ``state`` is "in progress" (old replicas still there), "complete" (the replicas are the
    target) or "differs" (no reassignment pending, and the replicas are not the target).
    """

    tp: TopicPartition
    state: str
    target_replicas: tuple[int, ...]
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    waiting_for: tuple[int, ...]  # target replicas not yet in the ISR




class Reassignments(ControlRequests):
    """The room of the reassignment state machine."""

    @decision
    def reassign(self, json_text: str) -> tuple[TopicPartition, ...]:
        """Start the reassignment in Kafka's JSON; returns the partitions it covers.

        The whole request is validated first and written in one transaction (all partitions or
        none). Then each partition gets its new replicas (LeaderAndIsr), and completes once every
        target replica is in the ISR: leadership moves to a target replica if needed, the old
        replicas get StopReplica(delete), and the leader epoch is bumped.
        Raises ReassignmentError (see logwright.controller.reassignment) for bad input.
        """
        self._require_active()
        moves = validate_plan(parse_reassignment(json_text), self.store)
        delta = MetadataDelta()
        for move in moves:
            state = self.partition_state(move.tp)
            delta.partitions.append(begin_reassignment(state, move))
            delta.reassignments.append(PendingReassignment(move.tp, move.replicas, move.log_dirs))
        self._commit(delta)
        for state in delta.partitions:
            log.info("%s reassigning %s: replicas %s, adding %s, removing %s", self.node_id,
                     state.tp, state.replicas, state.adding_replicas, state.removing_replicas)
        self._send_leader_and_isr(delta.partitions)
        self._send_update_metadata(delta.partitions)
        for move in moves:
            self._maybe_complete_reassignment(move.tp)
        return tuple(move.tp for move in moves)

    def _maybe_complete_reassignment(self, tp: TopicPartition) -> None:
        if not self.active:
            return
        pending = next((r for r in self.store.reassignments() if r.tp == tp), None)
        state = self.store.partition(tp)
        if pending is None or state is None or not reassignment_done(state, pending):
            return
        new = complete_reassignment(state, pending,
                                    [r for r in state.replicas if self._replica_alive(r, tp)])
        removed = [r for r in state.replicas if r not in new.replicas]
        try:
            self._commit(MetadataDelta(partitions=[new], cleared_reassignments=[tp]))
        except StaleControllerEpoch:
            return
        log.info("%s completed the reassignment of %s: replicas %s, leader %d, leader epoch %d",
                 self.node_id, tp, new.replicas, new.leader, new.leader_epoch)
        self._send_leader_and_isr([new])
        for broker_id in removed:
            if broker_id in self._session_deadline_ms:
                self._send_stop_replica(broker_id, [StopReplicaPartition(
                    tp, new.leader_epoch, delete_partition=True, topic_id=new.topic_id)])
            self._offline_replicas.discard((tp, broker_id))
        self._send_update_metadata([new])

    def reassignment_status(self, json_text: str | None = None) -> list[ReassignmentStatus]:
        """Progress of the pending reassignments, or of the partitions named in ``json_text``."""
        pending = {r.tp: r for r in self.store.reassignments()}
        if json_text is None:
            wanted = [(tp, r.target_replicas) for tp, r in pending.items()]
        else:
            wanted = [(m.tp, m.replicas) for m in parse_reassignment(json_text).moves]
        statuses = []
        for tp, target in wanted:
            state = self.partition_state(tp)
            if tp in pending:
                target = pending[tp].target_replicas
                phase = "in progress"
            else:
                phase = "complete" if state.replicas == target else "differs"
            statuses.append(ReassignmentStatus(
                tp, phase, target, state.replicas, state.isr, state.leader,
                state.adding_replicas, state.removing_replicas,
                tuple(r for r in target if r not in state.isr)))
        return statuses

