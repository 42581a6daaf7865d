"""The controller's side of a reassignment: start it, complete it, report its progress.

``reassignment.py`` beside it parses and validates Kafka's JSON and computes the states; this
room writes them and announces them. A reassignment is written in one transaction for all its
partitions; each partition completes once every target replica is in the ISR: leadership moves to
a target replica if needed, the old replicas get StopReplica(delete), and the leader epoch is
bumped.

Invariant upheld: the old replicas are removed only once every target replica's broker has
answered a LeaderAndIsr of the partition sent after the reassignment began, from the incarnation
registered now. A target that lost power keeps its place in the ISR until it registers again or
its session expires; counted on the ISR alone, it would let the reassignment delete the only
intact copies (Kafka has that window). The answer also means durability: a broker fsyncs a
target's log before it answers a LeaderAndIsr with removing replicas, and from then on makes the
target's records durable before they count toward the high watermark
(``Partition.reassignment_target``), so every target holds every committed record durably when
the old replicas go (0041).

A reassignment whose ``log_dirs`` names dirs also waits for those moves (``dir_moves``); one that
keeps the replicas as they are and only moves dirs bumps no leader epoch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from logwright.controller.core import decision
from logwright.controller.dir_moves import DirMoves, DirMoveStatus
from logwright.controller.errors import StaleControllerEpoch
from logwright.controller.reassignment import (
    begin_reassignment,
    complete_reassignment,
    keeps_replicas,
    parse_reassignment,
    reassignment_done,
    validate_plan,
)
from logwright.controller.store import MetadataDelta, PartitionState, PendingReassignment
from logwright.errors import Errors
from logwright.identity import TopicPartition
from logwright.protocol.messages import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaPartition,
)

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
    waiting_for: tuple[int, ...]  # target replicas not yet in the ISR, or not yet heard from
    dir_moves: tuple[DirMoveStatus, ...] = ()  # the replicas that name a dir (KIP-113)

    @property
    def moves_in_progress(self) -> tuple[DirMoveStatus, ...]:
        """The dir moves not known to be done yet."""
        return tuple(m for m in self.dir_moves if not m.done)




class Reassignments(DirMoves):
    """The room of the reassignment state machine."""

    @decision
    def reassign(self, json_text: str) -> tuple[TopicPartition, ...]:
        """Start the reassignment in Kafka's JSON; returns the partitions it covers.

        The whole request is validated first and written in one transaction (all partitions or
        none). Then each partition gets its new replicas (LeaderAndIsr), and completes once every
        target replica is in the ISR and every replica whose log dir is named is in that dir
        with no future log left (AlterReplicaLogDirs to its broker, then DescribeLogDirs until
        it is: ``dir_moves``): leadership moves to a target replica if needed, the old replicas
        get StopReplica(delete), and the leader epoch is bumped. A reassignment that keeps the
        replicas (same brokers, same order) and only names dirs changes neither the leader
        epoch nor the ISR.
        Raises ReassignmentError (see logwright.controller.reassignment) for bad input.
        """
        self._require_active()
        moves = validate_plan(parse_reassignment(json_text), self.store)
        delta = MetadataDelta()
        for move in moves:
            state = self.partition_state(move.tp)
            new = begin_reassignment(state, move)
            if new != state:
                delta.partitions.append(new)
            delta.reassignments.append(PendingReassignment(move.tp, move.replicas, move.log_dirs))
        self._commit(delta)
        for state in delta.partitions:
            self._reassignment_since[state.tp] = state.leader_epoch
            log.info("%s reassigning %s: replicas %s, adding %s, removing %s, log dirs %s",
                     self.node_id, state.tp, state.replicas, state.adding_replicas,
                     state.removing_replicas, state.target_log_dirs or "any")
        # The added replicas are new in this request only (control.py, _leader_and_isr).
        self._send_leader_and_isr(delta.partitions, adding_new=True)
        self._send_update_metadata(delta.partitions)
        for move in moves:
            self._maybe_complete_reassignment(move.tp)
        return tuple(move.tp for move in moves)

    def _maybe_complete_reassignment(self, tp: TopicPartition) -> None:
        if not self.active:
            return
        pending = next((r for r in self.store.reassignments() if r.tp == tp), None)
        state = self.store.partition(tp)
        if pending is None or state is None:
            self._forget_reassignment_answers(tp)
            return
        # First, so that the dir moves start with the reassignment, not once the ISR is full.
        moved = self._dir_moves_settled(pending)
        if not moved or not reassignment_done(state, pending):
            return  # an ISR change or the dir moves' answers call this again
        if not keeps_replicas(state, pending) and self._unheard_targets(state, pending):
            return  # a LeaderAndIsr answer (_note_leader_and_isr_answer) calls this again
        new = complete_reassignment(state, pending,
                                    [r for r in state.replicas if self._replica_alive(r, tp)])
        if keeps_replicas(state, pending):
            try:
                self._commit(MetadataDelta(cleared_reassignments=[tp]))
            except StaleControllerEpoch:
                return
            self._forget_dir_moves(tp)
            self._forget_reassignment_answers(tp)
            log.info("%s completed the reassignment of %s: its replicas are in their log dirs "
                     "%s", self.node_id, tp, pending.target_log_dirs)
            return
        removed = [r for r in state.replicas if r not in new.replicas]
        try:
            self._commit(MetadataDelta(partitions=[new], cleared_reassignments=[tp]))
        except StaleControllerEpoch:
            return
        self._forget_dir_moves(tp)
        self._forget_reassignment_answers(tp)
        log.info("%s completed the reassignment of %s: replicas %s, leader %d, leader epoch %d",
                 self.node_id, tp, new.replicas, new.leader, new.leader_epoch)
        self._send_leader_and_isr([new])
        for broker_id in removed:
            if broker_id in self._session_deadline_ms:
                self._send_stop_replica(broker_id, [StopReplicaPartition(
                    tp, new.leader_epoch, delete_partition=True, topic_id=new.topic_id)])
            self._offline_replicas.discard((tp, broker_id))
        self._send_update_metadata([new])

    def _unheard_targets(self, state: PartitionState, pending: PendingReassignment
                         ) -> tuple[int, ...]:
        """The target replicas whose broker has not answered, from the incarnation registered
        now, a LeaderAndIsr of ``state``'s topic id sent since the reassignment began (or since
        this controller took over): each may have lost power and still count in the ISR."""
        since = self._reassignment_since.setdefault(state.tp, state.leader_epoch)
        unheard = []
        for r in pending.target_replicas:
            registration = self.store.broker(r)
            answer = self._reassignment_answers.get((state.tp, r))
            if (registration is None or answer is None
                    or answer[:2] != (registration.broker_epoch, state.topic_id)
                    or answer[2] < since):
                unheard.append(r)
        return tuple(unheard)

    def _note_leader_and_isr_answer(self, broker_id: int, sent: LeaderAndIsrRequest,
                                    response: LeaderAndIsrResponse) -> None:
        """``broker_id``'s incarnation that ``sent`` was addressed to answered it: remember,
        for each partition under reassignment it accepted, that it was alive and applied that
        leader epoch; a reassignment waiting on it may complete. A late answer to a request
        for an earlier incarnation of the broker, or for a deleted topic of the same name, is
        not remembered: it would take the place of the answer that counts (0038)."""
        if response.error != Errors.NONE or not self._reassignment_since:
            return
        registration = self.store.broker(broker_id)
        if registration is None or registration.broker_epoch != sent.broker_epoch:
            return
        errors = {r.tp: r.error for r in response.partition_errors}
        answered = []
        for w in sent.partition_states:
            if w.tp not in self._reassignment_since or errors.get(w.tp, Errors.NONE) != Errors.NONE:
                continue
            state = self.store.partition(w.tp)
            if state is None or state.topic_id != w.topic_id:
                continue
            key = (w.tp, broker_id)
            held = self._reassignment_answers.get(key)
            if held is None or held[:2] != (sent.broker_epoch, w.topic_id) \
                    or held[2] < w.leader_epoch:
                self._reassignment_answers[key] = (sent.broker_epoch, w.topic_id, w.leader_epoch)
                answered.append(w.tp)
        for tp in answered:
            self._maybe_complete_reassignment(tp)

    def _forget_reassignment_answers(self, tp: TopicPartition) -> None:
        if self._reassignment_since.pop(tp, None) is not None:
            for key in [k for k in self._reassignment_answers if k[0] == tp]:
                del self._reassignment_answers[key]

    def reassignment_status(self, json_text: str | None = None) -> list[ReassignmentStatus]:
        """Progress of the pending reassignments, or of the partitions named in ``json_text``
        (each with what the controller last learnt of its dir moves while it is pending)."""
        pending = {r.tp: r for r in self.store.reassignments()}
        if json_text is None:
            wanted = [(tp, r.target_replicas) for tp, r in pending.items()]
        else:
            wanted = [(m.tp, m.replicas) for m in parse_reassignment(json_text).moves]
        statuses = []
        for tp, target in wanted:
            state = self.partition_state(tp)
            unheard = (self._unheard_targets(state, pending[tp])
                       if tp in pending and not keeps_replicas(state, pending[tp]) else ())
            if tp in pending:
                target = pending[tp].target_replicas
                phase = "in progress"
            else:
                phase = "complete" if state.replicas == target else "differs"
            statuses.append(ReassignmentStatus(
                tp, phase, target, state.replicas, state.isr, state.leader,
                state.adding_replicas, state.removing_replicas,
                tuple(r for r in target if r not in state.isr or r in unheard),
                self.dir_move_statuses(tp) if tp in pending else ()))
        return statuses

