"""Leader election and the ISR with eligible leader replicas (KIP-966): clean election, the
ELR, recovery elections after unclean shutdowns, unclean election where a topic allows it, the
AlterPartition requests of leaders, and replicas whose log dir failed.

Invariants upheld (the LeaderElection model, spec/README.md; docs/cluster.md):

- A leader is an ISR member that is alive. The ISR may be empty, and then there is no leader.
- An acknowledged record is never lost while a replica that acknowledged it still holds it: a
  replica leaves the ISR for the ELR only while the ISR is smaller than min.insync.replicas
  (the leader's high watermark cannot advance then); a replica that may have lost unflushed
  records (an unclean shutdown, a failed dir) is in neither and cannot lead until it rejoins
  the ISR, so the last ISR member is not kept when it is damaged. With the ISR and the ELR
  empty, a recovery election waits for every replica to report its log and picks the one whose
  log agrees longest with the partition's lineage (the latest leader's log as that leader
  recorded it: :meth:`Election._on_record_lineage`; a leader's high watermark does not advance
  in an epoch before then); only unclean.leader.election.enable lets a replica lead without
  that.
- Every change bumps the partition epoch; a change of the leader or (made by the controller)
  of the ISR also bumps the leader epoch. ISR changes a leader asked for with AlterPartition
  bump only the partition epoch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace

from logwright.controller.errors import StaleControllerEpoch
from logwright.controller.reassigning import Reassignments
from logwright.controller.store import (
    NO_LEADER,
    MetadataDelta,
    PartitionState,
    TopicRecord,
    lineage_in_order,
)
from logwright.errors import Errors
from logwright.identity import TopicPartition, broker_node_id
from logwright.protocol.messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    RecordLineageRequest,
    RecordLineageResponse,
    ReplicaReport,
    replica_reports_by_partition,
)
from logwright.storage.epoch_cache import epoch_at

__all__ = ["Election", "lineage_prefix"]

log = logging.getLogger(__name__)


class Election(Reassignments):
    """The room of leader election and ISR changes."""

    def _unclean_allowed(self, topic: TopicRecord | None) -> bool:
        """unclean.leader.election.enable of ``topic``: its override, else the default."""
        value = None if topic is None else topic.config_map.get("unclean.leader.election.enable")
        if value is None:
            return self.config.unclean_leader_election_enable
        return value == "true"

    def _min_insync_replicas(self, topic: TopicRecord | None) -> int:
        """min.insync.replicas of ``topic``: its override, else the controller's default."""
        value = None if topic is None else topic.config_map.get("min.insync.replicas")
        return self.config.min_insync_replicas if value is None else int(value)

    def _elect(self, state: PartitionState,
               topic: TopicRecord | None = None) -> PartitionState | None:
        """The state after the replicas that cannot serve leave the ISR, and a leader is
        elected where one is needed; None when nothing changes.

        ``topic``: the partition's topic record (read from the store when not given). The
        steps (docs/cluster.md, "Eligible leader replicas"; the LeaderElection model):

        - ISR members whose broker is dead leave the ISR; while the ISR left is smaller than
          min.insync.replicas they join the ELR (the high watermark cannot advance then, so
          they keep every committed record). Replicas on a failed dir may have lost unflushed
          records: they leave the ISR and the ELR.
        - The leader stays if it is a live ISR member; else the first live ISR member leads;
          else the first live ELR member, alone in the ISR; else, once the ISR and the ELR are
          empty and every replica is alive and has reported its log since, the one whose log
          agrees longest with the lineage (then last leader epoch, then end offset) leads (a
          recovery election,
          :meth:`_recovery_candidate`); else, only where the topic allows unclean election, the
          first live replica. Otherwise the partition has no leader (offline) rather than lose
          committed records.
        - Once the ISR has min.insync.replicas members the ELR is emptied: the high watermark
          may advance past its members from then on.
        """
        if topic is None:
            topic = self.store.topic(state.tp.topic)
        min_isr = self._min_insync_replicas(topic)
        tp = state.tp

        def alive(r: int) -> bool:
            return self._replica_alive(r, tp)

        damaged = {r for r in state.replicas if (tp, r) in self._offline_replicas}
        isr = [r for r in state.isr if alive(r)]
        elr = [r for r in state.elr if r not in damaged]
        if len(isr) < min_isr:
            elr += [r for r in state.isr if not alive(r) and r not in damaged]
        how = ""
        if state.leader in isr:
            leader = state.leader
        elif isr:
            leader = next(r for r in state.replicas if r in isr)
        elif live_elr := [r for r in state.replicas if r in elr and alive(r)]:
            leader, isr, how = live_elr[0], [live_elr[0]], "eligible leader replica"
        elif not elr and (best := self._recovery_candidate(state)) is not None:
            leader, isr, how = best, [best], "recovery"
        else:
            leader = NO_LEADER
            live = [r for r in state.replicas if alive(r) and r not in state.removing_replicas]
            if live and self._unclean_allowed(topic):
                leader, isr, how = live[0], [live[0]], "unclean"
                elr = []
        elr = [] if len(isr) >= min_isr else [r for r in state.replicas
                                             if r in elr and r not in isr]
        new = replace(state, leader=leader, isr=tuple(isr), elr=tuple(elr),
                      recovery_log_ends=() if isr or elr else state.recovery_log_ends)
        if new == state:
            return None
        new = replace(new, partition_epoch=state.partition_epoch + 1)
        if (leader, new.isr) != (state.leader, state.isr):
            new = replace(new, leader_epoch=state.leader_epoch + 1)
        if how:
            self._report_election(new, how, state)
        assert new.leader == NO_LEADER or (new.leader in new.isr and alive(new.leader))
        return new

    def _recovery_candidate(self, state: PartitionState) -> int | None:
        """The replica a recovery election picks, or None while it cannot happen.

        It happens once every replica of the partition is alive and has reported its log since
        the partition lost its last eligible replica (``recovery_log_ends``, from registrations
        and heartbeats); the one whose log agrees with the lineage up to the highest offset
        leads (then the latest last leader epoch, then the highest end offset; the first in
        assignment order on a tie). Every acknowledged record lies on the lineage (the high
        watermark advances in an epoch only once its lineage is recorded, and every leader
        holds every record acknowledged before its epoch), and a log that holds a record of the
        lineage's epoch at that record's offset holds the lineage's records below it too: so
        the one picked holds every acknowledged record some replica still holds. No replica's
        log and no lineage changes meanwhile (there is no leader)."""
        ends = {b: (agreeing, epoch, offset)
                for b, agreeing, epoch, offset in state.recovery_log_ends}
        if not all(r in ends and self._replica_alive(r, state.tp) for r in state.replicas):
            return None
        order = {r: i for i, r in enumerate(state.replicas)}
        return max(state.replicas, key=lambda r: (ends[r], -order[r]))

    def _note_log_ends(self, broker_id: int, reports: Iterable[ReplicaReport]) -> None:
        """Record the log ends ``broker_id`` reported for partitions with no replica left in
        the ISR or the ELR, then elect where a recovery election became possible."""
        reports = tuple(reports)  # read twice below
        states = {r.tp: self.store.partition(r.tp) for r in reports}
        # A replica of a deleted generation of the topic is not this partition's.
        by_tp = replica_reports_by_partition(
            reports, {tp: s.topic_id for tp, s in states.items() if s is not None})
        changes = []
        for tp, report in sorted(by_tp.items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
            state = states[tp]
            if (state is None or state.isr or state.elr or broker_id not in state.replicas
                    or tp.topic in self._deleting()):
                continue
            entry = (broker_id, lineage_prefix(state.lineage, report.epochs,
                                               report.log_start_offset, report.end_offset),
                     report.last_epoch, report.end_offset)
            start = max(state.leader_log_start_offset, report.log_start_offset)
            if entry in state.recovery_log_ends and start == state.leader_log_start_offset:
                continue
            ends = tuple(sorted((*(e for e in state.recovery_log_ends if e[0] != broker_id),
                                 entry)))
            new = replace(state, recovery_log_ends=ends, leader_log_start_offset=start,
                          partition_epoch=state.partition_epoch + 1)
            changes.append(self._elect(new) or new)
        if changes:
            try:
                self._commit(MetadataDelta(partitions=changes))
            except StaleControllerEpoch:
                return
            self._announce(changes)

    def _report_election(self, new: PartitionState, how: str, old: PartitionState) -> None:
        """Count an election from outside the ISR, and say it in the log (a warning when
        records may have been lost)."""
        self.elections_by_kind[how] = self.elections_by_kind.get(how, 0) + 1
        self.reported_elections.append((new.tp, new.topic_id, how, new.leader, new.leader_epoch))
        del self.reported_elections[:-1_000]
        if how == "unclean":
            log.warning("%s: unclean leader election for %s: broker %d leads from outside the "
                        "ISR %s and the ELR %s; records committed after it fell behind are lost",
                        self.node_id, new.tp, new.leader, list(old.isr), list(old.elr))
        elif how == "recovery":
            log.warning("%s: recovery election for %s: no replica was left in the ISR or the "
                        "ELR; broker %d, whose log agrees longest with the lineage %s of the "
                        "reports (broker, agreeing up to, last epoch, end) %s, leads. "
                        "Acknowledged records are lost only if every replica that held them "
                        "lost them (unflushed at a crash)", self.node_id, new.tp, new.leader,
                        list(old.lineage), sorted(old.recovery_log_ends))
        else:
            log.info("%s: broker %d leads %s from the eligible leader replicas %s",
                     self.node_id, new.leader, new.tp, list(old.elr))

    def _elect_where_needed(self) -> list[PartitionState]:
        """New states for every partition whose leader or ISR holds a replica that cannot serve
        (broker dead or dir failed), or that has no leader while an ISR member could lead."""
        deleting = self._deleting()
        return [new for state in self.store.partitions()
                if state.tp.topic not in deleting
                and (new := self._elect(state)) is not None]

    # -- ISR changes from leaders ----------------------------------------------------------

    def _on_alter_partition(self, src: str, request: AlterPartitionRequest) -> None:
        """A leader asks to change its ISR: answer, and on success tell every live broker."""
        state = self.store.partition(request.tp)
        error = self._alter_partition_error(src, request, state)
        if error is None and state is not None and tuple(request.new_isr) != state.isr:
            new = self._with_leader_isr(state, tuple(request.new_isr))
            try:
                self._commit(MetadataDelta(partitions=[new]))
            except StaleControllerEpoch:
                self._answer_alter_partition(src, request, Errors.STALE_CONTROLLER_EPOCH)
                return
            self._answer_alter_partition(src, request, Errors.NONE, new)
            self._send_update_metadata([new])
            self._maybe_complete_reassignment(request.tp)
        elif error is None:
            # Already so (a duplicated or retried request): answer with the current state, which
            # tells the leader the truth whatever partition epoch it sent.
            self._answer_alter_partition(src, request, Errors.NONE, state)
        else:
            self._answer_alter_partition(src, request, error)

    # -- lineage ------------------------------------------------------------------------------

    def _on_record_lineage(self, src: str, request: RecordLineageRequest) -> None:
        """A leader tells its leader epoch cache as it took up its epoch: keep it as the
        partition's lineage (the first told for an epoch stays) and answer. The leader's high
        watermark waits for the answer (the LeaderElection model's ``RecordLineage``)."""
        state = self.store.partition(request.tp)
        error = self._record_lineage_error(src, request, state)
        if error is None and state is not None and state.lineage_epoch != request.leader_epoch:
            try:
                self._commit(MetadataDelta(partitions=[replace(state,
                                                               lineage=request.lineage)]))
            except StaleControllerEpoch:
                error = Errors.STALE_CONTROLLER_EPOCH
        if error is not None:
            log.info("%s rejects RecordLineage %s from %s: %s", self.node_id, request.tp, src,
                     error.name)
        self._reply(src, RecordLineageResponse(request.correlation_id, request.tp,
                                               error or Errors.NONE, request.leader_epoch))

    def _record_lineage_error(self, src: str, request: RecordLineageRequest,
                              state: PartitionState | None) -> Errors | None:
        """Why ``request`` cannot be recorded (None: it can, or it is already)."""
        if state is not None and request.topic_id not in (None, state.topic_id):
            state = None  # another generation of the topic: not this partition's leader
        error = self._leader_request_error(src, request.broker_id, request.broker_epoch,
                                           request.tp, request.leader_epoch, state)
        if error is not None:
            return error
        lineage = request.lineage
        if not lineage or lineage[-1][0] != request.leader_epoch or not lineage_in_order(lineage):
            return Errors.INVALID_REQUEST
        return None

    def _with_leader_isr(self, state: PartitionState, isr: tuple[int, ...]) -> PartitionState:
        """``state`` with the ISR its leader asked for: replicas it drops while the ISR is
        smaller than min.insync.replicas join the ELR (they hold everything up to the high
        watermark, which cannot advance now); replicas it adds leave the ELR (they caught up from
        the leader); an ISR of min.insync.replicas members empties the ELR."""
        min_isr = self._min_insync_replicas(self.store.topic(state.tp.topic))
        if len(isr) >= min_isr:
            elr: tuple[int, ...] = ()
        else:
            dropped = set(state.isr) - set(isr)
            elr = tuple(r for r in state.replicas
                        if (r in state.elr or r in dropped) and r not in isr)
        return replace(state, isr=isr, elr=elr, recovery_log_ends=(),
                       partition_epoch=state.partition_epoch + 1)

    def _alter_partition_error(self, src: str, request: AlterPartitionRequest,
                               state: PartitionState | None) -> Errors | None:
        """Why ``request`` cannot change ``state`` (None: it can, or it already has)."""
        error = self._leader_request_error(src, request.broker_id, request.broker_epoch,
                                           request.tp, request.leader_epoch, state)
        if error is not None or state is None:
            return error
        new_isr = tuple(request.new_isr)
        if new_isr == state.isr:
            return None
        if request.partition_epoch != state.partition_epoch:
            return Errors.INVALID_REQUEST  # Kafka: INVALID_UPDATE_VERSION (95)
        if (not new_isr or len(set(new_isr)) != len(new_isr) or state.leader not in new_isr
                or not set(new_isr) <= set(state.replicas)
                or not all(self._replica_alive(r, request.tp) for r in new_isr)):
            return Errors.INVALID_REQUEST  # Kafka: INELIGIBLE_REPLICA (107) for a dead member
        if request.new_isr_broker_epochs and len(request.new_isr_broker_epochs) != len(new_isr):
            return Errors.INVALID_REQUEST
        if self._stale_new_members(request, state):
            return Errors.INELIGIBLE_REPLICA
        return None

    def _stale_new_members(self, request: AlterPartitionRequest,
                           state: PartitionState) -> list[int]:
        """Members ``request`` adds to the ISR whose broker epoch, as the leader knows it from
        their fetches, is not their broker's registered one (KIP-903): the leader judged them
        on what an earlier incarnation of the broker fetched, and the restart may have lost
        those records. -1 (unknown) is not checked."""
        epochs = request.new_isr_broker_epochs
        if not epochs:
            return []
        stale = []
        for r, epoch in zip(request.new_isr, epochs, strict=True):
            if r in state.isr or epoch == -1:
                continue
            registration = self.store.broker(r)
            if registration is None or registration.broker_epoch != epoch:
                stale.append(r)
        return stale

    def _leader_request_error(self, src: str, broker_id: int, broker_epoch: int,
                              tp: TopicPartition, leader_epoch: int,
                              state: PartitionState | None) -> Errors | None:
        """The checks a leader's request to the controller passes first (AlterPartition,
        RecordLineage), in order: this controller is active, the sender's broker epoch is its
        registered one, the partition exists and is not being deleted, the leader epoch is the
        current one, and the sender leads. None when all pass."""
        if not self.active:
            return Errors.STALE_CONTROLLER_EPOCH  # Kafka: NOT_CONTROLLER
        registration = self.store.broker(broker_id)
        if (registration is None or registration.broker_epoch != broker_epoch
                or src != broker_node_id(broker_id)):
            return Errors.STALE_BROKER_EPOCH
        if state is None or tp.topic in self._deleting():
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        if leader_epoch != state.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        if broker_id != state.leader:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return None

    def _answer_alter_partition(self, src: str, request: AlterPartitionRequest, error: Errors,
                                state: PartitionState | None = None) -> None:
        if error != Errors.NONE:
            log.info("%s rejects AlterPartition %s from %s: %s", self.node_id, request.tp,
                     src, error.name)
        if state is None:
            self._reply(src, AlterPartitionResponse(request.correlation_id, request.tp, error))
        else:
            self._reply(src, AlterPartitionResponse(
                request.correlation_id, request.tp, error, state.leader_epoch,
                state.partition_epoch, state.isr))

    def _replicas_offline(self, broker_id: int, tps: Iterable[TopicPartition]) -> None:
        """``broker_id``'s replicas of ``tps`` are on a failed dir: out of the ISR, no leading."""
        fresh = [tp for tp in tps if (tp, broker_id) not in self._offline_replicas]
        if not fresh:
            return
        self._offline_replicas.update((tp, broker_id) for tp in fresh)
        log.info("%s: replicas of %s on broker %d are offline", self.node_id,
                 [str(tp) for tp in fresh], broker_id)
        changes = [new for tp in fresh
                   if (state := self.store.partition(tp)) is not None
                   and broker_id in state.replicas and (new := self._elect(state)) is not None]
        try:
            self._commit(MetadataDelta(partitions=changes))
        except StaleControllerEpoch:
            return
        self._announce(changes)



def lineage_prefix(lineage: tuple[tuple[int, int], ...], epochs: tuple[tuple[int, int], ...],
                   log_start: int, log_end: int) -> int:
    """The offset up to which a log agrees with ``lineage`` (the LeaderElection model's
    ``LineagePrefix``, in offsets): the first offset from ``log_start`` on at which the log's
    records (their epochs as its leader epoch cache ``epochs`` gives them) and the lineage's
    leader's differ, else ``log_end``. Both are lists of (epoch, start offset) in order; an
    epoch runs to the next one's start, the lineage's last to no end (its leader writes only
    that epoch from there on). A record of the lineage's epoch at its offset is that leader's
    record, and so is every record below it (one leader per epoch, which only appends): so the
    records from ``log_start`` up to the result are the lineage's. Below the lineage's first
    start the leader had deleted its records, and nothing is compared; a log offset its cache
    gives no epoch for disagrees. With no lineage recorded, 0 (every log equal)."""
    if not lineage:
        return 0
    points = sorted({log_start, *(start for _, start in (*epochs, *lineage))})
    for offset in points:
        if offset < log_start or offset >= log_end:
            continue
        theirs = epoch_at(lineage, offset)
        if theirs is not None and epoch_at(epochs, offset) != theirs:
            return offset
    return max(log_start, log_end)
