"""One partition's replica on this broker: its role, its leader epoch, its ISR, and (as leader)
what it knows of each follower.

Invariants upheld here:
- The leader's high watermark only moves forward, and only to the smallest log end offset over the
  maximal ISR (the ISR plus any replica an expansion in flight would add), so nothing is counted
  committed before every replica that may be in the ISR has it.
- 0 <= log start offset <= high watermark <= log end offset, asserted after every change made here.
- A role or ISR change is applied only from a state with a leader epoch at least as new as the one
  held (the caller refuses older ones); a new leader epoch as leader is recorded in the log's
  leader epoch cache at the log end offset before any record is appended under it.
- While this replica is a target of a reassignment that removes replicas
  (``reassignment_target``), the high watermark it advances as leader never passes its log's
  recovery point: what counts as committed is durable here first (asserted).

The partition's files (segments, leader epoch cache, topic id, start offset) belong to its
``PartitionLog``; this module changes them only through the log's methods.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Final

from logwright.identity import TopicPartition, Uuid
from logwright.protocol import LeaderAndIsrPartitionState
from logwright.storage.epoch_cache import LeaderEpochCache
from logwright.storage.log import PartitionLog

_logger = logging.getLogger(__name__)

NO_LEADER = -1
UNKNOWN_OFFSET = -1


class Role(enum.Enum):
    """What this broker does for the partition."""

    NONE = "none"  # hosted but stopped (StopReplica without delete), or not yet told
    LEADER = "leader"
    FOLLOWER = "follower"


# Read per message: globals, not enum lookups (``logwright.errors.NO_ERROR`` says why).
LEADER: Final = Role.LEADER
FOLLOWER: Final = Role.FOLLOWER


@dataclass
class FollowerState:
    """The leader's view of one follower, from the follower's fetches."""

    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET  # its fetch offset
    log_start_offset: int = UNKNOWN_OFFSET
    last_caught_up_time_ms: int = 0
    last_fetch_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    #: The latest epoch in its leader epoch cache, as its last fetch said (NO_EPOCH: none).
    last_fetched_epoch: int = -1
    #: The broker epoch its last fetch came from (KIP-903): the controller refuses to add it
    #: to the ISR on what an earlier incarnation of its broker fetched (NO_EPOCH: no fetch).
    broker_epoch: int = -1


@dataclass(frozen=True)
class PendingIsrChange:
    """An AlterPartition in flight: the ISR asked for, from which leader and partition epoch."""

    new_isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int


class Partition:
    """The local replica of ``tp``: its log (with the log's leader epoch cache), role and
    replication state."""

    def __init__(self, tp: TopicPartition, local_broker_id: int, log: PartitionLog) -> None:
        self.tp = tp
        self.local_broker_id = local_broker_id
        self.log = log
        self.topic_id: Uuid | None = log.topic_id
        self.role = Role.NONE
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.controller_epoch = -1
        self.isr: tuple[int, ...] = ()
        self.replicas: tuple[int, ...] = ()
        self.leader_epoch_start_offset = UNKNOWN_OFFSET
        self.isr_floor = 0
        """While leading: the least durable start offset a follower must have reported to join
        the ISR (the LogStartOffset model's ``isrFloor``): the leader's durable start offset when
        its leadership began, raised to every low watermark a DeleteRecords was acknowledged
        with (``raise_isr_floor``). Beyond Kafka: docs/delete-records.md."""
        self.followers: dict[int, FollowerState] = {}
        self.pending_isr: PendingIsrChange | None = None
        self.lineage_epoch = -1
        """While leading: the leader epoch whose lineage (this log's leader epoch cache as it
        took up the epoch) the controller has recorded; the high watermark does not advance
        before it is the current one (docs/cluster.md, "Recovery elections and the lineage";
        the LeaderElection model's ``RecordLineage``)."""
        self.lineage_in_flight: int | None = None
        """The leader epoch of a RecordLineage awaiting its answer, if any."""
        self.reassignment_target = False
        """Whether the controller's latest state for the partition is a reassignment that
        removes replicas and keeps this one (docs/controller.md, Reassignment). While it is, a
        record counts toward the high watermark only once it is durable here: the broker
        fsyncs the log before it answers such a LeaderAndIsr, a follower before its next fetch
        reports what it fetched, a leader before it advances the high watermark past its
        recovery point. The reassignment deletes the removed replicas once every target has
        answered from the ISR; each then holds every committed record durably, so a power
        loss of all the targets cannot take a record the removed replicas held intact
        (traces/regressions/0041)."""

    def __repr__(self) -> str:
        return (f"Partition({self.tp}, {self.role.value}, leader={self.leader_id}, "
                f"epoch={self.leader_epoch}, isr={list(self.isr)}, lso={self.log_start_offset}, "
                f"hw={self.high_watermark}, leo={self.log_end_offset})")

    # ---- offsets -------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        """The local log's start offset."""
        return self.log.log_start_offset

    @property
    def high_watermark(self) -> int:
        """The local log's high watermark."""
        return self.log.high_watermark

    @property
    def log_end_offset(self) -> int:
        """The local log's end offset."""
        return self.log.log_end_offset

    @property
    def epoch_cache(self) -> LeaderEpochCache:
        """The log's leader epoch cache, to read (OffsetForLeaderEpoch); the log changes it."""
        return self.log.leader_epoch_cache

    @property
    def is_leader(self) -> bool:
        """Whether this replica leads the partition."""
        return self.role is LEADER

    @property
    def offline(self) -> bool:
        """Whether the log's dir is offline."""
        return self.log.offline

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR, plus the replicas a pending expansion would add (KIP-497's maximal ISR)."""
        if self.pending_isr is None:
            return self.isr
        extra = tuple(r for r in self.pending_isr.new_isr if r not in self.isr)
        return self.isr + extra

    @property
    def is_under_replicated(self) -> bool:
        """A leader whose ISR is smaller than its replica set."""
        return self.is_leader and len(self.isr) < len(self.replicas)

    def check_topic_identity(self) -> None:
        """Assert that the log is served under its own topic id (topic identity: no record
        appended under one topic id is ever served under another)."""
        held = self.log.topic_id
        assert (self.topic_id is held or self.topic_id is None or held is None
                or self.topic_id == held), \
            f"{self.tp}: served as topic id {self.topic_id} from a log of topic id {held}"

    def check_offsets(self) -> None:
        """Assert NeverServeBelowLogStart's offset order on this replica, and, on a leader, the
        model's ``isrFloor <= DurableStart(leader)``."""
        log = self.log  # its offsets and role read directly, not through this one's properties
        lso, hw, leo = log.log_start_offset, log.high_watermark, log.log_end_offset
        assert 0 <= lso <= hw <= leo, f"{self.tp}: start {lso} hw {hw} leo {leo}"
        assert self.role is not LEADER or self.isr_floor <= log.counted_start_offset, (
            f"{self.tp}: ISR floor {self.isr_floor} above the durable start offset "
            f"{self.durable_start_offset}")

    @property
    def durable_start_offset(self) -> int:
        """The start offset a restart of this replica loads (the model's ``DurableStart``); with
        the log manager's ``durable_log_start_offset`` off, the start offset in memory, as
        Kafka has it."""
        return self.log.counted_start_offset

    def raise_isr_floor(self, low_watermark: int) -> None:
        """A DeleteRecords was acknowledged with ``low_watermark``: no follower below it may
        join the ISR while this leadership lasts (the model's ``AcknowledgeDeleteRecords``)."""
        assert self.is_leader
        self.isr_floor = max(self.isr_floor, low_watermark)

    # ---- role changes --------------------------------------------------------------------------

    def _apply_assignment(self, state: LeaderAndIsrPartitionState) -> None:
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.controller_epoch = state.controller_epoch
        self.isr = tuple(state.isr)
        self.replicas = tuple(state.replicas)
        self.leader_id = state.leader
        self.pending_isr = None
        self.reassignment_target = (bool(state.removing_replicas)
                                    and self.local_broker_id not in state.removing_replicas)

    def make_leader(self, state: LeaderAndIsrPartitionState, now_ms: int) -> bool:
        """Lead under ``state`` (its leader epoch is newer than the one held).

        Records (leader epoch, log end offset) in the epoch cache, durably, before anything is
        appended under the new epoch; forgets what it knew of followers, except that the ISR
        members count as caught up now (so they are not dropped before they can fetch).
        Returns True (a new leader epoch always starts a new term).
        """
        assert state.leader == self.local_broker_id
        assert state.leader_epoch > self.leader_epoch or self.role is not Role.LEADER
        if state.leader_log_start_offset > self.log.log_start_offset:
            self._adopt_start_offset(state.leader_log_start_offset)
        if state.leader_epoch >= 0:
            self.log.assign_epoch_start_offset(state.leader_epoch, self.log_end_offset)
        self._apply_assignment(state)
        self.role = Role.LEADER
        self.leader_epoch_start_offset = self.log_end_offset
        self.isr_floor = self.durable_start_offset  # the model's ElectLeader
        self.followers = {
            r: FollowerState(r, last_caught_up_time_ms=now_ms if r in self.isr else 0)
            for r in self.replicas if r != self.local_broker_id}
        self.check_offsets()
        return True

    def _adopt_start_offset(self, offset: int) -> None:
        """Start the log at ``offset``, the highest log start offset a replica reported to the
        recovery election that made this replica leader (``leader_log_start_offset``): the
        records below it were removed by a DeleteRecords (or retention) that replica
        acknowledged, and must not be served again. The records from the high watermark up to
        ``offset`` are committed (a start offset never passes a high watermark), so the high
        watermark rises to it first; a log that ends below it restarts empty there. Durable
        before anything is served (KafkaStorageError on an I/O error)."""
        log = self.log
        if offset > log.log_end_offset:
            log.truncate_fully_and_start_at(offset)
        else:
            if log.high_watermark < offset:
                log.update_high_watermark(offset)
            log.increment_log_start_offset(offset)
        _logger.warning("%s: leads from a recovery election: its log now starts at %d, the "
                        "highest log start offset a replica reported", self.tp, offset)

    def make_follower(self, state: LeaderAndIsrPartitionState) -> bool:
        """Follow ``state.leader`` (-1: no leader). Returns True when the leader or the leader
        epoch changed, i.e. fetching must restart with truncation."""
        changed = (state.leader_epoch > self.leader_epoch or state.leader != self.leader_id
                   or self.role is not Role.FOLLOWER)
        self._apply_assignment(state)
        self.role = Role.FOLLOWER
        self.followers = {}
        self.leader_epoch_start_offset = UNKNOWN_OFFSET
        return changed

    def update_assignment(self, state: LeaderAndIsrPartitionState, now_ms: int) -> None:
        """Same leader epoch, newer partition epoch: take the ISR and replicas, keep the role."""
        assert state.leader_epoch == self.leader_epoch
        assert state.partition_epoch > self.partition_epoch
        self._apply_assignment(state)
        if self.is_leader:
            for r in self.replicas:
                if r != self.local_broker_id and r not in self.followers:
                    self.followers[r] = FollowerState(
                        r, last_caught_up_time_ms=now_ms if r in self.isr else 0)
            for r in list(self.followers):
                if r not in self.replicas:
                    del self.followers[r]

    def stop(self) -> None:
        """StopReplica without delete: keep the log and the epoch, stop leading and following."""
        self.role = Role.NONE
        self.followers = {}
        self.pending_isr = None
        self.lineage_in_flight = None


    # ---- leader: followers, high watermark, ISR ------------------------------------------------

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int,
                                    follower_log_start_offset: int, now_ms: int,
                                    last_fetched_epoch: int = -1,
                                    broker_epoch: int = -1) -> None:
        """Record a follower's fetch (its log end offset is the fetch offset; ``broker_epoch``
        the epoch of the broker that sent it).

        A follower is caught up at a fetch if it asked for the leader's end offset, or at its
        previous fetch if it has now reached what the leader's end offset was then; ISR shrink
        measures from that time.
        """
        assert self.role is LEADER  # is_leader
        follower = self.followers.get(replica_id)
        if follower is None:
            return
        leader_end = self.log.log_end_offset
        assert fetch_offset <= leader_end, "a follower cannot be ahead of its leader"
        if fetch_offset >= leader_end:
            follower.last_caught_up_time_ms = max(follower.last_caught_up_time_ms, now_ms)
        elif fetch_offset >= follower.last_fetch_leader_log_end_offset >= 0:
            follower.last_caught_up_time_ms = max(follower.last_caught_up_time_ms,
                                                  follower.last_fetch_time_ms)
        follower.log_end_offset = fetch_offset
        follower.log_start_offset = follower_log_start_offset
        follower.last_fetch_leader_log_end_offset = leader_end
        follower.last_fetch_time_ms = now_ms
        follower.last_fetched_epoch = last_fetched_epoch
        follower.broker_epoch = broker_epoch

    def forget_follower(self, replica_id: int) -> None:
        """Drop what follower ``replica_id``'s fetches said (its broker restarted since, as far
        as the controller knows): unknown until its next fetch. Only for a follower outside
        the ISR."""
        assert replica_id not in self.isr, f"{self.tp}: {replica_id} is in the ISR"
        if replica_id in self.followers:
            self.followers[replica_id] = FollowerState(replica_id)

    def high_watermark_candidate(self) -> int | None:
        """min(log end offset) over the maximal ISR, or None while a member's is unknown."""
        candidate = self.log.log_end_offset
        local, followers = self.local_broker_id, self.followers
        for r in self.isr if self.pending_isr is None else self.maximal_isr:
            if r == local:
                continue
            follower = followers.get(r)
            if follower is None or follower.log_end_offset == UNKNOWN_OFFSET:
                return None
            candidate = min(candidate, follower.log_end_offset)
        return candidate

    def next_high_watermark(self, min_insync_replicas: int = 1) -> int | None:
        """The high watermark :meth:`maybe_increment_high_watermark` would move to now, or None
        when it would not move (not leading, offline, strict min ISR, the epoch's lineage not
        recorded, nothing new). A reassignment target's caller fsyncs the log up to it first
        (``reassignment_target``). Beyond Kafka, not before the controller has recorded this
        epoch's lineage (``lineage_epoch``): a recovery election judges logs by it, so every
        record committed must lie on it."""
        log = self.log
        if (self.role is not LEADER or log.offline or len(self.isr) < min_insync_replicas
                or self.lineage_epoch != self.leader_epoch):
            return None  # (not is_leader, offline)
        candidate = self.high_watermark_candidate()
        if candidate is None or candidate <= log.high_watermark:
            return None
        return candidate

    def maybe_increment_high_watermark(self, min_insync_replicas: int = 1) -> bool:
        """Advance the high watermark to the candidate if that is higher; never backwards.

        Strict min ISR (KIP-966): not while the ISR has fewer than ``min_insync_replicas``
        members, so a replica that leaves an ISR that small keeps every committed record and
        the controller may elect it from the ELR. Beyond Kafka, not before the controller has
        recorded this epoch's lineage (``lineage_epoch``, :meth:`next_high_watermark`)."""
        candidate = self.next_high_watermark(min_insync_replicas)
        if candidate is None:
            return False
        return self.raise_high_watermark_to(candidate)

    def raise_high_watermark_to(self, candidate: int) -> bool:
        """The rest of :meth:`maybe_increment_high_watermark` once :meth:`next_high_watermark`
        answered ``candidate`` (not None) and nothing has changed since; returns True."""
        assert not self.reassignment_target or candidate <= self.log.recovery_point, (
            f"{self.tp}: a reassignment target would count offsets up to {candidate} as "
            f"committed with its log durable to {self.log.recovery_point} only")
        log = self.log
        previous = log.high_watermark
        log.update_high_watermark(candidate)
        assert log.high_watermark > previous
        self.check_offsets()
        return True

    def out_of_sync_replicas(self, now_ms: int, max_lag_ms: int) -> list[int]:
        """ISR members (not the leader) that have not caught up within ``max_lag_ms``."""
        out = []
        for r in self.isr:
            if r == self.local_broker_id:
                continue
            follower = self.followers.get(r)
            if follower is None or now_ms - follower.last_caught_up_time_ms > max_lag_ms:
                out.append(r)
        return out

    def replicas_to_add_to_isr(self) -> list[int]:
        """Followers outside the ISR that have reached the high watermark and the start of the
        current leader epoch (so they hold everything committed in it) and, beyond Kafka, have
        reported a durable start offset at least the ISR floor (``isr_floor``): an in-sync
        replica may be elected, and must not serve records a DeleteRecords acknowledged as
        gone (docs/delete-records.md; the LogStartOffset model's ``ExpandIsr``). Also beyond
        Kafka, the follower's fetch says it has recorded the current leader epoch: a member of
        the ISR that loses power then still reports that epoch to a recovery election, not the
        older epoch of its records (the LeaderElection model's
        ``IsrExpandBeforeFollowLeaderEpoch``)."""
        out = []
        for r, follower in self.followers.items():
            if r in self.isr or r not in self.replicas:
                continue
            if (follower.log_end_offset >= self.high_watermark
                    and follower.log_end_offset >= self.leader_epoch_start_offset
                    and follower.log_start_offset >= self.isr_floor
                    and follower.last_fetched_epoch >= self.leader_epoch):
                out.append(r)
        return out
