"""The replica manager: every partition replica on one broker, as leader or follower.

Invariants upheld here (architecture.md "The safety invariants", hazards 5, 7 and 8):
- Control requests are applied partition by partition with a result per partition: one bad
  partition (offline dir, older leader epoch, unknown dir) does not fail the rest.
- A LeaderAndIsr partition state with an older leader epoch than the one held changes nothing
  (STALE_CONTROLLER_EPOCH for that partition, as Kafka answers); a StopReplica partition with an
  older leader epoch changes nothing (FENCED_LEADER_EPOCH), -2 bypasses the check.
- Consumers read from the leader only and only below the high watermark; followers read up to the
  log end offset. Nothing below the log start offset is ever served (OFFSET_OUT_OF_RANGE).
- The leader's high watermark is the minimum log end offset over the (maximal) ISR and never moves
  back; acks=all completes only when the high watermark passes the request's last offset.
- A follower below the leader's log start offset restarts empty at it (truncate fully); what a
  follower does with fetched records is ``fetch_adapters.py``'s, and it truncates only by the
  leader epoch protocol (``fetcher.py``).
- Topic identity (docs/topic-identity.md): a LeaderAndIsr or StopReplica changes nothing about a
  partition name for which a newer request (controller epoch, correlation id) was applied
  (STALE_CONTROLLER_EPOCH); a log is never served under a topic id other than its own (asserted
  where both are known); a live log of another topic id under a name a LeaderAndIsr assigns,
  and every live log an accepted FULL LeaderAndIsr does not assign, is set aside as a stray
  before anything of the request is made leader or follower; a stray of the assigned topic id
  is revived from its data rather than a new replica created; a StopReplica of another topic id
  than the log's changes nothing (INCONSISTENT_TOPIC_ID); a replica that is not new is never
  created while a log dir is offline (KAFKA_STORAGE_ERROR).

The manager decides; it performs nothing itself. What it sends (AlterPartition requests,
responses of delayed operations) and the timers it needs are effects handed to ``emit`` (the
broker's driver, ``driver.py``, performs them).
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable, Iterable, Mapping

from logwright.broker import tracing
from logwright.broker.config import BrokerConfig
from logwright.broker.delayed import (
    DelayedDeleteRecords,
    DelayedFetch,
    DelayedProduce,
    DeleteRecordsStatus,
    ProduceStatus,
)
from logwright.broker.dir_move import DirMoveFetcher
from logwright.broker.effects import ArmTask, Call, Effect, Emit, EmittedTimers
from logwright.broker.fetch_adapters import LeaderSource, ReplicaFetchTarget
from logwright.broker.fetcher import FetcherManager, InitialFetchState
from logwright.broker.metadata_cache import LEADER_DURING_DELETE, MetadataCache
from logwright.broker.partition import (
    LEADER,
    NO_LEADER,
    UNKNOWN_OFFSET,
    Partition,
    PendingIsrChange,
)
from logwright.broker.purgatory import Purgatory
from logwright.broker.strays import NO_VERSION, Version, full_request_strays, request_version
from logwright.configs import parse_topic_configs
from logwright.errors import (
    NO_ERROR,
    CheckpointError,
    CorruptRecordError,
    Errors,
    KafkaError,
    KafkaStorageError,
    LogwrightError,
    MessageTooLarge,
    OffsetOutOfRange,
    RecordBatchTooLarge,
)
from logwright.identity import TopicPartition, Uuid
from logwright.logmanager import LogManager
from logwright.protocol import (
    DELETE_TO_HIGH_WATERMARK,
    EARLIEST_TIMESTAMP,
    EPOCH_DURING_DELETE,
    LATEST_TIMESTAMP,
    NO_EPOCH,
    AlterPartitionRequest,
    AlterPartitionResponse,
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    FetchPartition,
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrType,
    ListOffsetsRequest,
    ListOffsetsResponse,
    Message,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResult,
    PartitionError,
    ProducePartitionResult,
    ProduceRequest,
    ProduceResponse,
    RecordLineageRequest,
    RecordLineageResponse,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from logwright.storage.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from logwright.storage.log import PartitionLog
from logwright.storage.log import TopicIdMismatch as TopicIdMismatch
from logwright.world.clock import Clock
from logwright.world.scheduler import Scheduler
from logwright.world.trace import (
    LOG_START_OFFSET,
    NO_TRACE,
    REPLICA_VARIABLES,
    TraceRecorder,
    topic_id_text,
)

_logger = logging.getLogger(__name__)


class ReplicaManager:
    """Partitions, fetchers and purgatories of one broker."""

    def __init__(self, broker_id: int, config: BrokerConfig, log_manager: LogManager,
                 clock: Clock, scheduler: Scheduler,
                 broker_epoch: Callable[[], int], controller_node: Callable[[], str | None],
                 emit: Emit, on_offline_dirs: Callable[[list[str]], None] | None = None) -> None:
        """Everything the manager decides to send or arm (its own requests, its fetchers'
        requests, answers of delayed operations, timers) goes to ``emit``."""
        self.broker_id = broker_id
        self.config = config
        self.log_manager = log_manager
        self.clock = clock
        self.scheduler = scheduler
        self.broker_epoch = broker_epoch
        self.controller_node = controller_node
        self.emit = emit
        self.on_offline_dirs = on_offline_dirs
        self.partitions: dict[TopicPartition, Partition] = {}
        self.metadata = MetadataCache()
        # Their expiry timers are effects too, in order with the responses of the same decision.
        self.produce_purgatory: Purgatory[DelayedProduce] = Purgatory(
            "produce", EmittedTimers(emit), config.max_purgatory_operations)
        self.fetch_purgatory: Purgatory[DelayedFetch] = Purgatory(
            "fetch", EmittedTimers(emit), config.max_purgatory_operations)
        self.delete_records_purgatory: Purgatory[DelayedDeleteRecords] = Purgatory(
            "delete-records", EmittedTimers(emit), config.max_purgatory_operations)
        self.fetch_target = ReplicaFetchTarget(self)
        self.replica_fetcher_manager = FetcherManager(
            f"broker-{broker_id} ReplicaFetcherManager", "Replica", config.num_replica_fetchers,
            lambda source_id, _fetcher_id: LeaderSource(source_id, self), self.fetch_target,
            clock, scheduler, config.replica_fetch_backoff_ms, config.replica_fetch_max_bytes)
        self.known_offline_dirs: set[str] = set(log_manager.offline_dirs)
        #: The JBOD move copier (KIP-113, ``dir_move.py``; Kafka's ReplicaAlterLogDirsManager).
        self.dir_mover = DirMoveFetcher(
            broker_id, log_manager, clock, scheduler,
            rate_bytes_per_s=config.replica_alter_log_dirs_io_max_bytes_per_second,
            max_bytes=config.replica_fetch_max_bytes, backoff_ms=config.replica_fetch_backoff_ms,
            leader_epoch=self._leader_epoch_of, on_swapped=self._on_swapped,
            on_start_offset=self._on_future_start_offset,
            on_storage_error=self.check_offline_dirs)
        #: Dirs asked for replicas not hosted yet (AlterReplicaLogDirs answered
        #: REPLICA_NOT_AVAILABLE): used when the replica is created (Kafka's preferred log dir).
        self.preferred_log_dirs: dict[TopicPartition, str] = {}
        self.isr_shrinks = 0
        self.isr_expands = 0
        self.truncations = 0  # counted by the fetch target
        # Per topic: (controller epoch, correlation id) of the message whose topic configs were
        # applied last; an older message's configs are stale and ignored.
        self.topic_config_versions: dict[str, tuple[int, int]] = {}
        #: Per partition name: the version (controller epoch, correlation id) of the newest
        #: LeaderAndIsr or StopReplica applied for it; an older one changes nothing about it.
        #: In memory only: requests to an earlier incarnation are fenced by broker epoch.
        self.applied_versions: dict[TopicPartition, Version] = {}
        #: The version of the newest FULL LeaderAndIsr applied: it decided about every name.
        self.full_version: Version = NO_VERSION
        #: The trace recorder (``world/trace.py``); off unless the broker is given one.
        self.trace: TraceRecorder = NO_TRACE
        self._trace_isr: dict[tuple[str, str], tuple[int, tuple[int, ...]]] = {}

    # ---- lifecycle ---------------------------------------------------------------------------

    def startup(self) -> list[Effect]:
        """The timer of ISR expiration (every replica.lag.time.max.ms / 2, as Kafka does)."""
        period = max(1, self.config.replica_lag_time_max_ms // 2)
        return [ArmTask("isr-expiration", period, self.maybe_shrink_isr, period)]

    def halt(self) -> None:
        """Stop everything at once, without I/O (the process died); the driver cancels the
        timers."""
        self.replica_fetcher_manager.shutdown()
        self.dir_mover.shutdown()
        self.produce_purgatory.cancel_all()
        self.fetch_purgatory.cancel_all()
        self.delete_records_purgatory.cancel_all()

    # ---- lookup ------------------------------------------------------------------------------

    def _leader_partition(self, tp: TopicPartition, current_leader_epoch: int = NO_EPOCH
                          ) -> Partition | Errors:
        partition = self.partitions.get(tp)
        if partition is None:
            return self.metadata.partition_error(tp)
        if partition.log.offline:  # partition.offline
            return Errors.KAFKA_STORAGE_ERROR
        if partition.role is not LEADER:  # not partition.is_leader
            return Errors.NOT_LEADER_OR_FOLLOWER
        if current_leader_epoch >= 0:
            if current_leader_epoch < partition.leader_epoch:
                return Errors.FENCED_LEADER_EPOCH
            if current_leader_epoch > partition.leader_epoch:
                # This leader has not yet heard of the asker's epoch: retriable.
                return Errors.UNKNOWN_LEADER_EPOCH
        return partition

    def leader_partitions(self) -> list[Partition]:
        """The partitions this broker leads."""
        return [p for p in self.partitions.values() if p.is_leader]

    # ---- LeaderAndIsr ------------------------------------------------------------------------

    def applied_version(self, tp: TopicPartition) -> Version:
        """The version of the newest control request applied for the name ``tp`` (a FULL
        LeaderAndIsr counts for every name)."""
        return max(self.applied_versions.get(tp, NO_VERSION), self.full_version)

    def become_leader_or_follower(self, request: LeaderAndIsrRequest) -> list[PartitionError]:
        """Apply each partition state on its own; the caller has already fenced the request.
        A partition named twice takes its first state only.

        Implied deletions first: a live log of another topic id under a name the request
        assigns is set aside as a stray, and so (FULL request) is every live log of an online
        dir the request does not assign; only then are partitions created (or revived from a
        stray of their topic id) and made leader or follower."""
        self.apply_topic_configs(request)
        version = request_version(request.controller_epoch, request.correlation_id)
        results: dict[TopicPartition, Errors] = {}
        states: list[LeaderAndIsrPartitionState] = []
        seen: set[TopicPartition] = set()
        for state in request.partition_states:
            if state.tp in seen:
                continue  # a repeated partition: the first state stands
            seen.add(state.tp)
            if self.applied_version(state.tp) > version:
                results[state.tp] = Errors.STALE_CONTROLLER_EPOCH  # newer news already applied
                continue
            self.applied_versions[state.tp] = version
            states.append(state)
        full = request.type == LeaderAndIsrType.FULL and version >= self.full_version
        if full:
            self._set_aside_unassigned(request, version, results)
        for state in states:
            if state.tp not in results:
                error = self._set_aside_other_generation(state, version)
                if error is not None:
                    results[state.tp] = error
        to_lead: list[tuple[Partition, LeaderAndIsrPartitionState]] = []
        to_follow: list[tuple[Partition, LeaderAndIsrPartitionState]] = []
        now = self.clock.now_ms()
        for state in states:
            if state.tp in results:
                continue
            found = self._partition_to_change(state, now)
            if isinstance(found, Errors):
                results[state.tp] = found
            elif state.leader == self.broker_id:
                to_lead.append((found, state))
            else:
                to_follow.append((found, state))
        self._make_leaders(to_lead, results)
        self._make_followers(to_follow, results)
        self._sync_reassignment_targets(states, results)
        for partition, state in to_lead + to_follow:
            if results.get(partition.tp) is Errors.NONE and not partition.offline:
                # A move resumes (a future log found at start-up, R3) or, failed, is resumed
                # only with a higher leader epoch (KIP-461).
                self.dir_mover.leader_and_isr(partition.tp, state.leader_epoch)
        self.replica_fetcher_manager.shutdown_idle_fetchers()
        self.check_offline_dirs()
        if full:
            self.full_version = version
            self.log_manager.full_request_applied = True
        # One result per partition, in the request's order (a leader or follower change that
        # failed left its error in ``results``).
        return [PartitionError(tp, results.get(tp, Errors.NONE))
                for tp in dict.fromkeys(s.tp for s in request.partition_states)]

    def _sync_reassignment_targets(self, states: list[LeaderAndIsrPartitionState],
                                   results: dict[TopicPartition, Errors]) -> None:
        """Fsync the log of every replica accepted as a target of a reassignment that removes
        replicas (``Partition.reassignment_target``) before the answer says it was applied: the
        controller deletes the removed replicas once every target answered, and the records
        this replica fetched or appended before it knew must not depend on them. From now on
        its records are durable before they count (``sync_log``'s callers). An I/O error
        answers KAFKA_STORAGE_ERROR for the partition (its dir goes offline)."""
        for state in states:
            partition = self.partitions.get(state.tp)
            if (results.get(state.tp) is not Errors.NONE or partition is None
                    or not partition.reassignment_target or partition.offline
                    or partition.log.recovery_point >= partition.log_end_offset):
                continue
            try:
                self.sync_log(partition)
            except KafkaStorageError:
                results[state.tp] = Errors.KAFKA_STORAGE_ERROR

    def sync_log(self, partition: Partition) -> None:
        """Fsync ``partition``'s log to its end (LogStartOffset's ``Flush``), for a target of a
        reassignment (``Partition.reassignment_target``). KafkaStorageError on an I/O error:
        the caller takes its dir offline."""
        partition.log.flush()
        assert partition.log.recovery_point == partition.log_end_offset
        self.log_manager.trace_flushed(partition.log)

    # ---- strays (KIP-550) --------------------------------------------------------------------

    def _set_aside_unassigned(self, request: LeaderAndIsrRequest, version: Version,
                              results: dict[TopicPartition, Errors]) -> None:
        """FULL LeaderAndIsr: every live log of an online dir that the request does not assign
        (or assigns under another topic id) stops being served and is set aside as a stray,
        unless a newer request decided about its name. Logs of offline dirs are not touched."""
        on_disk = {tp: log.topic_id for state in self.log_manager.dirs.values() if state.online
                   for tp, log in state.logs.items()}
        requested: dict[TopicPartition, Uuid] = {}
        for s in request.partition_states:
            requested.setdefault(s.tp, s.topic_id)
        strays = full_request_strays(on_disk, requested, self.applied_versions, version)
        where = f"controller epoch {version[0]}, correlation id {version[1]}"
        for tp in sorted(strays, key=str):
            error = self._set_aside(tp, f"{strays[tp]} ({where})")
            if error is not None and tp in requested and tp not in results:
                results[tp] = error

    def _set_aside_other_generation(self, state: LeaderAndIsrPartitionState, version: Version
                                    ) -> Errors | None:
        """``state`` assigns ``state.tp`` under another topic id than its live log's here: the
        log (of a deleted generation of the topic) is set aside as a stray. Returns the
        partition's error if that could not be done (its dir is offline)."""
        if state.topic_id == Uuid.ZERO:
            return None
        partition = self.partitions.get(state.tp)
        log = partition.log if partition is not None else self.log_manager.get_log(state.tp)
        if log is None:
            return None
        held = partition.topic_id if partition is not None else log.topic_id
        if held is None or held == state.topic_id:
            return None
        if log.offline:
            return Errors.KAFKA_STORAGE_ERROR  # nothing is served from it meanwhile
        return self._set_aside(state.tp, (
            f"LeaderAndIsr (controller epoch {version[0]}, correlation id {version[1]}) assigns "
            f"it under topic id {topic_id_text(state.topic_id)}, the log holds "
            f"{topic_id_text(held)}"))

    def _set_aside(self, tp: TopicPartition, reason: str) -> Errors | None:
        """Stop serving ``tp`` here (its fetcher removed, its waiting requests answered, its
        Partition gone), then rename its live log ``-stray``. Returns KAFKA_STORAGE_ERROR if
        its dir failed meanwhile (then nothing is served from it either)."""
        partition = self.partitions.pop(tp, None)
        topic_id = partition.topic_id if partition is not None else None
        if self._trace_followed(tp):
            tracing.fetcher(self.trace, self.broker_id, tp, "StopReplica",
                            {"reason": "set aside as a stray"},
                            {"knownEpoch": -1, "fetching": False, "failedEpoch": -1}, topic_id)
        self.replica_fetcher_manager.remove_fetcher_for_partitions([tp])
        if partition is not None:
            partition.stop()
        self._complete_delayed(tp)
        try:
            stray = self.log_manager.mark_stray(tp, reason)
        except KafkaStorageError:
            self.check_offline_dirs()
            return Errors.KAFKA_STORAGE_ERROR
        if stray is not None and self.trace.enabled:  # the log manager logged it, with why
            tracing.stray(self.trace, self.broker_id, tp, "MarkStray", stray.topic_id, reason,
                          stray.path)
            self._trace_replica_deleted(tp, stray.topic_id)
        return None

    def _partition_to_change(self, state: LeaderAndIsrPartitionState, now: int
                             ) -> Partition | Errors:
        """The partition ``state`` makes leader or follower (created if new), or the
        partition's result when its role does not change (NONE when only its ISR or replicas
        may have)."""
        if self.broker_id not in state.replicas:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        partition = self.partitions.get(state.tp)
        if partition is None:
            return self._create_partition(state)
        if partition.offline:
            return Errors.KAFKA_STORAGE_ERROR
        assert (state.topic_id == Uuid.ZERO or partition.topic_id is None
                or partition.topic_id == state.topic_id), \
            f"{state.tp}: a log of another topic id is set aside before its name is assigned"
        if state.leader_epoch < partition.leader_epoch:
            return Errors.STALE_CONTROLLER_EPOCH
        if state.leader_epoch == partition.leader_epoch:
            # Nothing new for the role; a newer partition epoch carries a new ISR or replica
            # set (the FULL request a new controller sends repeats the rest).
            if state.partition_epoch > partition.partition_epoch:
                partition.update_assignment(state, now)
                if self.trace.enabled and partition.is_leader:
                    self._trace_leader(partition, "LeaderAndIsr update")
                self._maybe_increment_hw(partition)
            return Errors.NONE
        return partition

    def _create_partition(self, state: LeaderAndIsrPartitionState) -> Partition | Errors:
        tp = state.tp
        topic_id = state.topic_id if state.topic_id != Uuid.ZERO else None
        try:
            log = self.log_manager.get_log(tp)
            if log is None and not state.is_new and self.log_manager.offline_dirs:
                # docs/hazards.md, 13: the replica may sit on an offline dir; an empty one
                # created on a healthy dir could be elected and truncate its followers to
                # nothing (as in Kafka, a replica that is not new is not created while any log
                # dir is offline).
                return Errors.KAFKA_STORAGE_ERROR
            if log is None:
                log = self._revive(tp, topic_id)
            if log is None:
                log_dir = None if state.log_dir == "any" else state.log_dir
                if log_dir is None:
                    log_dir = self.preferred_log_dirs.get(tp)
                log = self.log_manager.create_log(tp, topic_id, log_dir)
                self.preferred_log_dirs.pop(tp, None)
            if topic_id is not None:
                # A dir without its topic id file (hazard 2) adopts the controller's id; a
                # different one raises TopicIdMismatch.
                log.assign_topic_id(topic_id)
            if log.offline:
                return Errors.KAFKA_STORAGE_ERROR
        except KafkaStorageError:
            return Errors.KAFKA_STORAGE_ERROR
        except (OSError, CheckpointError) as exc:
            self._fail_dir_of(tp, exc)
            return Errors.KAFKA_STORAGE_ERROR
        except TopicIdMismatch:
            # Not reached: a log of another topic id was set aside first.
            return Errors.INCONSISTENT_TOPIC_ID
        except LogwrightError:
            return Errors.LOG_DIR_NOT_FOUND  # the named log dir is not one of this broker's
        partition = Partition(tp, self.broker_id, log)
        partition.topic_id = topic_id if topic_id is not None else log.topic_id
        self.partitions[tp] = partition
        return partition

    def _revive(self, tp: TopicPartition, topic_id: Uuid | None) -> PartitionLog | None:
        """The stray of ``tp`` under ``topic_id`` on an online dir, made live again from its
        own data (not re-fetched); None when there is none. KafkaStorageError if its dir
        fails meanwhile."""
        stray = self.log_manager.find_stray(tp, topic_id)
        if stray is None:
            return None
        log = self.log_manager.revive_stray(stray)
        reason = (f"assigned again under its topic id {topic_id_text(topic_id)}: revived from "
                  f"its data (offsets {log.log_start_offset} to {log.log_end_offset})")
        _logger.info("broker %d: %s stray %s revived: %s", self.broker_id, tp, stray.path, reason)
        if self.trace.enabled:
            tracing.stray(self.trace, self.broker_id, tp, "ReviveStray", topic_id, reason,
                          stray.path)
            tracing.replica(self.trace, self.broker_id, log, "ReviveReplica",
                            {"h": log.high_watermark}, always=True)
        return log

    def _fail_dir_of(self, tp: TopicPartition, exc: BaseException) -> None:
        state = self.log_manager.dir_of(tp)
        if state is not None and state.online:
            self.log_manager.fail_dir(state.path, f"{tp}: {type(exc).__name__}: {exc}")

    def _make_leaders(self, items: list[tuple[Partition, LeaderAndIsrPartitionState]],
                      results: dict[TopicPartition, Errors]) -> None:
        if not items:
            return
        followed = {p.tp for p, _ in items if self._trace_followed(p.tp)}
        self.replica_fetcher_manager.remove_fetcher_for_partitions(p.tp for p, _ in items)
        for tp in sorted(followed, key=str):
            tracing.fetcher(self.trace, self.broker_id, tp, "StopReplica",
                            {"reason": "became leader"},
                            {"knownEpoch": -1, "fetching": False, "failedEpoch": -1},
                            self.topic_id_of(tp))
        now = self.clock.now_ms()
        for partition, state in items:
            try:
                start = partition.log.log_start_offset
                partition.make_leader(state, now)
                results[partition.tp] = Errors.NONE
                if self.trace.enabled:
                    # A recovery election's start offset, adopted: its BecomeLeader says so.
                    self._trace_leader(partition, "LeaderAndIsr",
                                       with_log=partition.log.log_start_offset != start)
                self._record_lineage(partition)
                self._maybe_increment_hw(partition)
            except KafkaStorageError:
                results[partition.tp] = Errors.KAFKA_STORAGE_ERROR
            self._complete_delayed(partition.tp)

    def _make_followers(self, items: list[tuple[Partition, LeaderAndIsrPartitionState]],
                        results: dict[TopicPartition, Errors]) -> None:
        if not items:
            return
        changed = []
        for partition, state in items:
            if partition.make_follower(state):
                changed.append(partition)
            results[partition.tp] = Errors.NONE
        followed = {p.tp for p in changed if self._trace_followed(p.tp)}
        self.replica_fetcher_manager.remove_fetcher_for_partitions(p.tp for p in changed)
        for partition in changed:
            self._complete_delayed(partition.tp)
        initial = {
            p.tp: InitialFetchState(p.leader_id, p.leader_epoch, p.log_end_offset)
            for p in changed
            if p.leader_id not in (NO_LEADER, self.broker_id) and not p.offline}
        if self.trace.enabled:
            for tp in sorted(followed - initial.keys(), key=str):
                # No leader to fetch from (or the replica is offline): fetched no more.
                tracing.fetcher(self.trace, self.broker_id, tp, "StopReplica",
                                {"reason": "no leader to fetch from"},
                                {"knownEpoch": -1, "fetching": False, "failedEpoch": -1},
                                self.topic_id_of(tp))
        if initial:
            self.replica_fetcher_manager.add_fetcher_for_partitions(initial)
            if self.trace.enabled:
                for tp, init in initial.items():
                    tracing.fetcher(self.trace, self.broker_id, tp, "LeaderAndIsr",
                                    {"epoch": init.current_leader_epoch},
                                    {"knownEpoch": init.current_leader_epoch, "fetching": True,
                                     "failedEpoch": -1, "alive": True},
                                    self.topic_id_of(tp))

    # ---- topic configs ------------------------------------------------------------------------

    def apply_topic_configs(self, request: LeaderAndIsrRequest | UpdateMetadataRequest) -> None:
        """Make the topic configs a control request carries the overrides of this broker's logs.

        Only a message newer (controller epoch, then correlation id) than the one applied last
        for a topic counts: a late or duplicated message never rolls a config back. States of
        a topic being deleted (leader -2) say nothing about configs.
        """
        version = (request.controller_epoch, request.correlation_id)
        done: set[str] = set()
        for state in request.partition_states:
            topic = state.tp.topic
            if topic in done or state.leader == LEADER_DURING_DELETE:
                continue
            done.add(topic)
            if version <= self.topic_config_versions.get(topic, (-1, -1)):
                continue
            try:
                overrides = parse_topic_configs(dict(state.topic_configs))
            except KafkaError as exc:  # the controller validated them: a bug, not an input
                raise AssertionError(f"{topic}: the controller sent bad configs: {exc}") from exc
            self.topic_config_versions[topic] = version
            self.log_manager.set_topic_overrides(topic, overrides)

    def min_insync_replicas(self, topic: str) -> int:
        """``topic``'s min.insync.replicas: its override, else the broker's default."""
        overrides = self.log_manager.topic_overrides.get(topic)
        value = None if overrides is None else overrides.get("min.insync.replicas")
        return value if isinstance(value, int) else self.config.min_insync_replicas

    # ---- StopReplica and UpdateMetadata ------------------------------------------------------

    def stop_replicas(self, request: StopReplicaRequest) -> list[PartitionError]:
        """Stop (and with ``delete_partition`` delete) each partition on its own."""
        results: dict[TopicPartition, Errors] = {}
        accepted = []
        version = request_version(request.controller_epoch, request.correlation_id)
        for sp in request.partitions:
            if sp.tp in results:
                continue
            if self.applied_version(sp.tp) > version:
                results[sp.tp] = Errors.STALE_CONTROLLER_EPOCH  # newer news already applied
                continue
            self.applied_versions[sp.tp] = version
            partition = self.partitions.get(sp.tp)
            log = partition.log if partition is not None else self.log_manager.get_log(sp.tp)
            held = partition.topic_id if partition is not None else (
                log.topic_id if log is not None else None)
            if sp.topic_id != Uuid.ZERO and held is not None and held != sp.topic_id:
                # Another generation of the topic lives under this name now: its log is not
                # stopped nor deleted on the deleted generation's behalf.
                results[sp.tp] = Errors.INCONSISTENT_TOPIC_ID
            elif partition is not None and partition.offline:
                results[sp.tp] = Errors.KAFKA_STORAGE_ERROR
            elif (partition is not None and sp.leader_epoch not in (EPOCH_DURING_DELETE, NO_EPOCH)
                  and sp.leader_epoch < partition.leader_epoch):
                results[sp.tp] = Errors.FENCED_LEADER_EPOCH
            else:
                results[sp.tp] = Errors.NONE
                accepted.append(sp)
        if self.trace.enabled:
            for sp in accepted:
                if self._trace_followed(sp.tp):
                    tracing.fetcher(self.trace, self.broker_id, sp.tp, "StopReplica", {},
                                    {"knownEpoch": -1, "fetching": False, "failedEpoch": -1},
                                    self.topic_id_of(sp.tp))
        self.replica_fetcher_manager.remove_fetcher_for_partitions(sp.tp for sp in accepted)
        for sp in accepted:
            partition = self.partitions.get(sp.tp)
            self.dir_mover.remove(sp.tp)
            if sp.delete_partition:
                gone = self.partitions.pop(sp.tp, None)
                self.preferred_log_dirs.pop(sp.tp, None)
                try:
                    self.log_manager.delete_log(sp.tp)
                except KafkaStorageError:
                    results[sp.tp] = Errors.KAFKA_STORAGE_ERROR
                else:
                    if self.trace.enabled:
                        # A log that knew no topic id was deleted for the generation the
                        # request names: its event says which (a re-created topic's instance
                        # is another generation's).
                        known = gone.topic_id if gone is not None else None
                        self._trace_replica_deleted(
                            sp.tp, known if known is not None
                            else sp.topic_id if sp.topic_id != Uuid.ZERO else None)
            elif partition is not None:
                partition.stop()
            self._complete_delayed(sp.tp)
        self.replica_fetcher_manager.shutdown_idle_fetchers()
        self.check_offline_dirs()
        return [PartitionError(tp, error) for tp, error in results.items()]

    def update_metadata(self, request: UpdateMetadataRequest) -> None:
        """Apply the topic configs ``request`` carries, then remember its view of partitions
        and live brokers in the metadata cache (``MetadataCache.update``)."""
        self.apply_topic_configs(request)
        self.metadata.update(request)
        # A broker no longer live stops counting in the low watermark of DeleteRecords waiting.
        for tp in list(self.partitions):
            if self.delete_records_purgatory.watched(tp):
                self.delete_records_purgatory.check_and_complete(tp)

    # ---- produce -----------------------------------------------------------------------------

    def append_records(self, request: ProduceRequest, denied: Mapping[TopicPartition, Errors],
                       respond: Callable[[ProduceResponse], None]) -> ProduceResponse | None:
        """Append each allowed partition's records as leader and return the answer; None when
        there is none yet: acks=0 is never answered, and an acks=all produce waits in the
        purgatory, which gives its answer to ``respond`` once the ISR has the records (or the
        request timed out)."""
        results: list[ProducePartitionResult] = []
        statuses: dict[TopicPartition, ProduceStatus] = {}
        if request.acks not in (0, 1, -1):
            results = [ProducePartitionResult(tp, Errors.INVALID_REQUEST,
                                              error_message=f"acks must be 0, 1 or -1, not "
                                              f"{request.acks}")
                       for tp, _ in request.partitions]
            return ProduceResponse(request.correlation_id, tuple(results))
        topic_ids = dict(request.topic_ids)
        for tp, records in request.partitions:
            if tp in denied:
                results.append(ProducePartitionResult(tp, denied[tp]))
                continue
            wrong_id = self._topic_id_error(tp, topic_ids.get(tp.topic, Uuid.ZERO))
            if wrong_id is not None:
                results.append(ProducePartitionResult(
                    tp, wrong_id, error_message=f"{tp} is not held here under topic id "
                    f"{topic_id_text(topic_ids[tp.topic])}"))
                continue
            result, required = self._append_one(tp, records, request.acks)
            results.append(result)
            if request.acks == -1 and result.error is NO_ERROR:
                partition = self.partitions[tp]
                statuses[tp] = ProduceStatus(required, partition.leader_epoch, result,
                                             self.min_insync_replicas(tp.topic))
        if request.acks == 0:
            return None
        if request.acks == 1 or not statuses:
            return ProduceResponse(request.correlation_id, tuple(results))
        op = DelayedProduce(self, request.correlation_id, results, statuses, respond)
        self.produce_purgatory.try_complete_else_watch(op, list(statuses), request.timeout_ms)
        return None

    def _append_one(self, tp: TopicPartition, records: bytes, acks: int
                    ) -> tuple[ProducePartitionResult, int]:
        found = self._leader_partition(tp)
        if isinstance(found, Errors):
            return ProducePartitionResult(tp, found), -1
        partition = found
        if not records:
            return ProducePartitionResult(tp, Errors.INVALID_REQUEST,
                                          error_message="no record batch to append"), -1
        min_isr = self.min_insync_replicas(tp.topic)
        if acks == -1 and len(partition.isr) < min_isr:
            return ProducePartitionResult(
                tp, Errors.NOT_ENOUGH_REPLICAS,
                error_message=f"ISR {list(partition.isr)} is smaller than min.insync.replicas "
                f"{min_isr}"), -1
        partition.check_topic_identity()
        # S1..S6 of a JBOD swap run as one step of this broker: appends wait, none lands on the
        # source once the swap began (docs/jbod.md).
        assert tp not in self.dir_mover.swapping, f"{tp}: an append during its swap"
        try:
            info = partition.log.append_as_leader(records, partition.leader_epoch)
        except CorruptRecordError as exc:
            return ProducePartitionResult(tp, Errors.CORRUPT_MESSAGE,
                                          error_message=exc.message), -1
        except (MessageTooLarge, RecordBatchTooLarge) as exc:
            # The message alone: the error's name and code travel as the error itself.
            return ProducePartitionResult(tp, exc.error, error_message=exc.message), -1
        except KafkaStorageError as exc:
            self.check_offline_dirs()
            return ProducePartitionResult(tp, Errors.KAFKA_STORAGE_ERROR,
                                          error_message=exc.message), -1
        if self.trace.enabled:
            tracing.replica(self.trace, self.broker_id, partition.log, "Append",
                            {"records": info.last_offset + 1 - info.first_offset})
        # Followers parked on this partition have data now; a single-replica ISR commits at once.
        self.fetch_purgatory.check_and_complete(tp)
        self._maybe_increment_hw(partition)
        return ProducePartitionResult(tp, NO_ERROR, info.first_offset,
                                      partition.log_start_offset), info.last_offset + 1

    # ---- fetch -------------------------------------------------------------------------------

    def fetch_messages(self, request: FetchRequest, denied: Mapping[TopicPartition, Errors],
                       respond: Callable[[FetchResponse], None]) -> FetchResponse | None:
        """Serve a consumer or follower fetch and return the answer; None if there is nothing
        yet and it may wait: then it is parked and ``respond`` gets the answer later."""
        if request.replica_id >= 0:
            self._record_follower_fetches(request, denied)
        datas, size, has_error = self.read_partitions(request, denied)
        if (request.max_wait_ms <= 0 or size >= request.min_bytes or has_error
                or not request.partitions):
            return FetchResponse(request.correlation_id, Errors.NONE, tuple(datas))
        # Its first try (in try_complete_else_watch, next) judges this read: a read is pure and
        # nothing runs in between, so reading again would give the same answer.
        op = DelayedFetch(self, request, denied, respond, (datas, size, has_error))
        self.fetch_purgatory.try_complete_else_watch(
            op, [p.tp for p in request.partitions], request.max_wait_ms)
        return None

    def _record_follower_fetches(self, request: FetchRequest,
                                 denied: Mapping[TopicPartition, Errors]) -> None:
        now = self.clock.now_ms()
        for fp in request.partitions:
            if fp.tp in denied:
                continue
            if self._topic_id_error(fp.tp, fp.topic_id) is not None:
                continue  # a fetch for another generation of the topic says nothing here
            found = self._leader_partition(fp.tp, fp.current_leader_epoch)
            if isinstance(found, Errors) or request.replica_id not in found.replicas:
                continue
            partition = found
            log = partition.log
            if not log.log_start_offset <= fp.fetch_offset <= log.log_end_offset:
                continue  # answered OFFSET_OUT_OF_RANGE; says nothing about its progress
            partition.update_follower_fetch_state(request.replica_id, fp.fetch_offset,
                                                  fp.log_start_offset, now,
                                                  fp.last_fetched_epoch, request.replica_epoch)
            self._maybe_expand_isr(partition)
            self._maybe_increment_hw(partition)
            # The follower reported its (durable) start offset: the low watermark may rise.
            self.delete_records_purgatory.check_and_complete(fp.tp)

    def read_partitions(self, request: FetchRequest, denied: Mapping[TopicPartition, Errors]
                        ) -> tuple[list[FetchPartitionData], int, bool]:
        """Read every partition of ``request``: (data, bytes read, whether any partition erred)."""
        is_follower = request.replica_id >= 0
        budget = max(0, request.max_bytes)
        out: list[FetchPartitionData] = []
        size = 0
        has_error = False
        for fp in request.partitions:
            if fp.tp in denied:
                out.append(FetchPartitionData(fp.tp, denied[fp.tp]))
                has_error = True
                continue
            data = self._read_one(fp, is_follower, request.replica_id, budget - size,
                                  first=size == 0)
            out.append(data)
            size += len(data.records)
            has_error = has_error or data.error is not NO_ERROR
        return out, size, has_error

    def _topic_id_error(self, tp: TopicPartition, topic_id: Uuid) -> Errors | None:
        """Fetch and Produce v13+ (KIP-516), and logwright's DeleteRecords and ListOffsets: the
        error for a request for ``tp`` meaning ``topic_id``, if any: INCONSISTENT_TOPIC_ID when
        the partition here has another id; UNKNOWN_TOPIC_ID when neither this broker nor its
        metadata knows the id under that name."""
        partition = self.partitions.get(tp)
        if partition is not None and partition.topic_id is topic_id:
            return None  # the id held here, the very object of the request's (usually): no __eq__
        zero = Uuid.ZERO
        if topic_id is zero or topic_id == zero:
            return None  # an older version: no id to check
        if partition is not None:
            held = partition.topic_id
            if held is not None and held != topic_id:
                return Errors.INCONSISTENT_TOPIC_ID
            return None
        known = self.metadata.partitions.get(tp)
        if known is None or known.topic_id != topic_id:
            return Errors.UNKNOWN_TOPIC_ID
        return None

    def _read_one(self, fp: FetchPartition, is_follower: bool, replica_id: int,
                  budget: int, first: bool) -> FetchPartitionData:
        wrong_id = self._topic_id_error(fp.tp, fp.topic_id)
        if wrong_id is not None:
            return FetchPartitionData(fp.tp, wrong_id)
        found = self._leader_partition(fp.tp, fp.current_leader_epoch)
        if isinstance(found, Errors):
            return FetchPartitionData(fp.tp, found)
        partition = found
        log = partition.log
        if partition.topic_id is not log.topic_id:  # the same object, usually: nothing to check
            partition.check_topic_identity()
        if is_follower and replica_id not in partition.replicas:
            return FetchPartitionData(fp.tp, Errors.NOT_LEADER_OR_FOLLOWER)
        max_offset = None if is_follower else log.high_watermark
        # The first partition with data gets at least one whole batch (progress is guaranteed);
        # later ones only what is left of the response's max_bytes.
        limit = fp.partition_max_bytes if first else min(fp.partition_max_bytes, max(0, budget))
        try:
            read = log.read(fp.fetch_offset, limit, max_offset, min_one_batch=first)
        except OffsetOutOfRange:
            return FetchPartitionData(fp.tp, Errors.OFFSET_OUT_OF_RANGE, partition.high_watermark,
                                      log.log_start_offset)
        except KafkaStorageError:
            self.check_offline_dirs()
            return FetchPartitionData(fp.tp, Errors.KAFKA_STORAGE_ERROR)
        # The log's offsets as the read took them (nothing changed them since).
        if not is_follower:
            return FetchPartitionData(fp.tp, NO_ERROR, read.high_watermark,
                                      read.log_start_offset, read.records)
        return FetchPartitionData(fp.tp, NO_ERROR, read.high_watermark, read.log_start_offset,
                                  read.records, leader_epoch=partition.leader_epoch,
                                  epoch_start_offset=partition.leader_epoch_start_offset)

    # ---- ListOffsets and OffsetForLeaderEpoch ------------------------------------------------

    def list_offsets(self, request: ListOffsetsRequest, denied: Mapping[TopicPartition, Errors]
                     ) -> ListOffsetsResponse:
        """Earliest = log start offset; latest = high watermark (log end offset for replicas)."""
        out: list[tuple[TopicPartition, Errors, int]] = []
        topic_ids = dict(request.topic_ids)
        for tp, timestamp in request.partitions:
            error = denied.get(tp) or self._topic_id_error(tp, topic_ids.get(tp.topic, Uuid.ZERO))
            if error is not None:
                out.append((tp, error, -1))
                continue
            found = self._leader_partition(tp)
            if isinstance(found, Errors):
                out.append((tp, found, -1))
                continue
            partition = found
            try:
                if timestamp == EARLIEST_TIMESTAMP:
                    offset = partition.log_start_offset
                elif timestamp == LATEST_TIMESTAMP:
                    offset = (partition.log_end_offset if request.replica_id >= 0
                              else partition.high_watermark)
                elif timestamp >= 0:
                    found_offset = partition.log.offset_for_timestamp(timestamp)
                    offset = (found_offset if found_offset is not None
                              and found_offset < partition.high_watermark else -1)
                else:
                    out.append((tp, Errors.INVALID_REQUEST, -1))
                    continue
            except KafkaStorageError:
                self.check_offline_dirs()
                out.append((tp, Errors.KAFKA_STORAGE_ERROR, -1))
                continue
            assert offset == -1 or offset >= partition.log_start_offset, "NeverServeBelowLogStart"
            out.append((tp, Errors.NONE, offset))
        return ListOffsetsResponse(request.correlation_id, tuple(out))

    def offsets_for_leader_epoch(self, request: OffsetForLeaderEpochRequest,
                                 denied: Mapping[TopicPartition, Errors]
                                 ) -> OffsetForLeaderEpochResponse:
        """For each partition: the largest epoch <= the one asked and where it ended here."""
        out = []
        for part in request.partitions:
            if part.tp in denied:
                out.append(OffsetForLeaderEpochResult(part.tp, denied[part.tp]))
                continue
            found = self._leader_partition(part.tp, part.current_leader_epoch)
            if isinstance(found, Errors):
                out.append(OffsetForLeaderEpochResult(part.tp, found))
                continue
            epoch, end_offset = found.log.end_offset_for_epoch(part.leader_epoch) or (
                UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
            out.append(OffsetForLeaderEpochResult(part.tp, Errors.NONE, epoch, end_offset))
        return OffsetForLeaderEpochResponse(request.correlation_id, tuple(out))

    # ---- high watermark, ISR -----------------------------------------------------------------

    def _maybe_increment_hw(self, partition: Partition) -> None:
        min_isr = self.min_insync_replicas(partition.tp.topic)
        target = partition.next_high_watermark(min_isr)
        if target is None:
            return
        if partition.reassignment_target and target > partition.log.recovery_point:
            # Durable here before it counts as committed (Partition.reassignment_target).
            try:
                self.sync_log(partition)
            except KafkaStorageError:
                self.check_offline_dirs()
                return
        if (partition.maybe_increment_high_watermark(min_isr) if partition.reassignment_target
                # Nothing ran since next_high_watermark() answered: the same candidate.
                else partition.raise_high_watermark_to(target)):
            if self.trace.enabled:
                tracing.replica(self.trace, self.broker_id, partition.log, "AdvanceHW", {
                    "known": {str(r): (partition.log_end_offset if r == self.broker_id
                                       else partition.followers[r].log_end_offset)
                              for r in partition.maximal_isr}})
            self._complete_delayed(partition.tp)

    def _complete_delayed(self, tp: TopicPartition) -> None:
        self.produce_purgatory.check_and_complete(tp)
        self.fetch_purgatory.check_and_complete(tp)
        self.delete_records_purgatory.check_and_complete(tp)

    def maybe_shrink_isr(self) -> None:
        """Drop ISR members that have not caught up for replica.lag.time.max.ms; tell the
        controller the lineage of a leader epoch it has not recorded yet (a refused or lost
        RecordLineage is asked again here)."""
        now = self.clock.now_ms()
        for partition in self.leader_partitions():
            if partition.offline:
                continue
            self._record_lineage(partition)
            if partition.pending_isr is not None:
                continue
            out = partition.out_of_sync_replicas(now, self.config.replica_lag_time_max_ms)
            if out:
                self.isr_shrinks += 1
                self._alter_isr(partition, tuple(r for r in partition.isr if r not in out))

    def _maybe_expand_isr(self, partition: Partition) -> None:
        if partition.pending_isr is not None:
            return
        joining = partition.replicas_to_add_to_isr()
        if joining:
            self.isr_expands += 1
            self._alter_isr(partition, partition.isr + tuple(sorted(joining)))

    def _alter_isr(self, partition: Partition, new_isr: tuple[int, ...]) -> None:
        controller = self.controller_node()
        if controller is None:
            return  # no controller known yet; the next check or fetch tries again
        assert self.broker_id in new_isr, "a leader never removes itself from the ISR"
        pending = PendingIsrChange(new_isr, partition.leader_epoch, partition.partition_epoch)
        partition.pending_isr = pending
        if self.trace.enabled:
            self._trace_leader(partition, "AlterPartition proposed")
        broker_epoch = self.broker_epoch()
        # KIP-903: each member's broker epoch as its last fetch gave it, so the controller
        # refuses a member added on what an earlier incarnation of its broker had fetched.
        epochs = tuple(broker_epoch if r == self.broker_id
                       else partition.followers[r].broker_epoch if r in partition.followers
                       else -1 for r in new_isr)
        self.emit(Call(
            controller,
            lambda cid: AlterPartitionRequest(cid, self.broker_id, broker_epoch, partition.tp,
                                              pending.leader_epoch, pending.partition_epoch,
                                              new_isr, epochs),
            lambda response: self._on_alter_partition(partition, pending, response),
            self.config.controller_socket_timeout_ms))

    def _on_alter_partition(self, partition: Partition, pending: PendingIsrChange,
                            response: Message | None) -> None:
        if (self.partitions.get(partition.tp) is not partition
                or partition.pending_isr is not pending):
            return  # superseded by a LeaderAndIsr, a StopReplica or another change
        if response is None and partition.is_leader:
            # Lost on the way (or its answer was): send the same change again, as Kafka's
            # AlterPartitionManager does. A controller that already applied it answers with
            # the current state, so the leader learns the partition epoch it missed.
            partition.pending_isr = None
            self._alter_isr(partition, pending.new_isr)
            return
        partition.pending_isr = None
        if (not isinstance(response, AlterPartitionResponse) or response.error is not Errors.NONE
                or not partition.is_leader or response.leader_epoch != partition.leader_epoch
                or response.partition_epoch <= partition.partition_epoch):
            if (isinstance(response, AlterPartitionResponse)
                    and response.error is Errors.INELIGIBLE_REPLICA):
                # A member it added fetched last from an earlier incarnation of its broker
                # (KIP-903): forget what the added members fetched, so none is proposed again
                # before a fetch of its broker's present incarnation says where its log ends.
                for r in set(pending.new_isr) - set(partition.isr):
                    partition.forget_follower(r)
            if self.trace.enabled and partition.is_leader:
                self._trace_leader(partition, "AlterPartition refused")
            return  # refused or stale: a LeaderAndIsr brings the state, or the next check asks
        partition.isr = tuple(response.isr)
        partition.partition_epoch = response.partition_epoch
        if self.trace.enabled:
            self._trace_leader(partition, "AlterPartition committed")
        self._maybe_increment_hw(partition)
        self.delete_records_purgatory.check_and_complete(partition.tp)  # fewer replicas counted

    def _record_lineage(self, partition: Partition) -> None:
        """Tell the controller this leader's log as it took up its epoch (its leader epoch
        cache), unless the controller has it or a request is on its way: the high watermark
        waits for the answer (``Partition.lineage_epoch``)."""
        epoch = partition.leader_epoch
        if (not partition.is_leader or partition.offline or partition.lineage_epoch == epoch
                or partition.lineage_in_flight == epoch):
            return
        controller = self.controller_node()
        if controller is None:
            return  # the next check asks
        lineage = partition.epoch_cache.pairs
        assert lineage and lineage[-1][0] == epoch, (
            f"{partition.tp}: leads in epoch {epoch} with leader epoch cache {lineage}")
        partition.lineage_in_flight = epoch
        broker_epoch = self.broker_epoch()
        self.emit(Call(
            controller,
            lambda cid: RecordLineageRequest(cid, self.broker_id, broker_epoch, partition.tp,
                                             partition.topic_id, epoch, lineage),
            lambda response: self._on_record_lineage(partition, epoch, response),
            self.config.controller_socket_timeout_ms))

    def _on_record_lineage(self, partition: Partition, epoch: int,
                           response: Message | None) -> None:
        if (self.partitions.get(partition.tp) is not partition
                or partition.lineage_in_flight != epoch):
            return  # superseded (a StopReplica, a restart)
        partition.lineage_in_flight = None
        if not partition.is_leader or partition.leader_epoch != epoch:
            return  # a newer epoch: its own request is sent
        if response is None:
            self._record_lineage(partition)  # lost on the way, or its answer was: again
            return
        if (isinstance(response, RecordLineageResponse) and response.error is Errors.NONE
                and response.leader_epoch == epoch):
            partition.lineage_epoch = epoch
            self._maybe_increment_hw(partition)
        # Refused: a LeaderAndIsr brings a newer epoch, or the next check asks again.

    # ---- offline dirs ------------------------------------------------------------------------

    def check_offline_dirs(self) -> list[str]:
        """React to log dirs that went offline since the last check: their partitions stop
        fetching (failed, KIP-461) and waiting requests on them are answered. Returns the new
        ones."""
        new = [d for d in self.log_manager.offline_dirs if d not in self.known_offline_dirs]
        if not new:
            return []
        self.known_offline_dirs.update(new)
        hit = [p.tp for p in self.partitions.values()
               if posixpath.dirname(p.log.dir_path) in new or p.offline]
        self.replica_fetcher_manager.mark_partitions_failed(
            hit, f"storage error: log dir {', '.join(sorted(new))} went offline")
        for tp in hit:
            self._complete_delayed(tp)
        self._stop_moves_on(new)
        if self.on_offline_dirs is not None:
            self.on_offline_dirs(new)
        return new

    # ---- JBOD moves (KIP-113; docs/jbod.md) --------------------------------------------------

    def alter_replica_log_dirs(self, assignments: Mapping[TopicPartition, str]
                               ) -> dict[TopicPartition, Errors]:
        """Move each partition's replica here to the dir given (AlterReplicaLogDirs): NONE when
        the move started, restarted towards a new dir (the running one cancelled) or the
        replica is already there (a move elsewhere is cancelled); LOG_DIR_NOT_FOUND when the
        dir is not one of this broker's; KAFKA_STORAGE_ERROR when the destination or the
        replica's dir is offline; REPLICA_NOT_AVAILABLE when the replica is not hosted here
        yet (the dir is remembered and used when it is created). A topic whose future dir
        name would be too long gets INVALID_TOPIC_EXCEPTION."""
        lm = self.log_manager
        out: dict[TopicPartition, Errors] = {}
        for tp, log_dir in assignments.items():
            path = posixpath.normpath(log_dir) if log_dir else log_dir
            dest = lm.dirs.get(path) if posixpath.isabs(path) else None
            if dest is None:
                out[tp] = Errors.LOG_DIR_NOT_FOUND
                continue
            if not dest.online:
                out[tp] = Errors.KAFKA_STORAGE_ERROR
                continue
            partition = self.partitions.get(tp)
            current = lm.dir_of(tp)
            if partition is None or current is None:
                self.preferred_log_dirs[tp] = dest.path
                out[tp] = Errors.REPLICA_NOT_AVAILABLE
                continue
            if not current.online or partition.offline:
                out[tp] = Errors.KAFKA_STORAGE_ERROR
                continue
            try:
                if current is dest:
                    self.dir_mover.remove(tp)
                    lm.abort_future_log(tp)
                elif lm.future_dir_of(tp) is not dest or tp not in self.dir_mover.moves:
                    self.dir_mover.remove(tp)
                    lm.create_future_log(tp, dest.path)
                    self.dir_mover.add(tp)
                out[tp] = Errors.NONE
            except KafkaStorageError:
                self.check_offline_dirs()
                out[tp] = Errors.KAFKA_STORAGE_ERROR
            except KafkaError as exc:
                out[tp] = exc.error
            except LogwrightError:
                out[tp] = Errors.KAFKA_STORAGE_ERROR
        return out

    def _leader_epoch_of(self, tp: TopicPartition) -> int:
        partition = self.partitions.get(tp)
        return partition.leader_epoch if partition is not None else NO_EPOCH

    def _on_swapped(self, tp: TopicPartition, log: PartitionLog) -> None:
        """S6 EndSwap: ``log`` (the moved one) is the partition's log from now on."""
        partition = self.partitions.get(tp)
        if partition is not None:
            partition.log = log
            latest = log.latest_epoch
            if (partition.is_leader and partition.leader_epoch_start_offset >= 0
                    and (latest is None or latest < partition.leader_epoch)):
                # Loading the moved log forgot the epochs that begin at its end, the leader's
                # own among them when nothing was appended in it yet: record it again, or the
                # leader could not answer a follower's OffsetForLeaderEpoch for it (or for an
                # older epoch it never held) and the follower would ask forever.
                log.assign_epoch_start_offset(
                    partition.leader_epoch,
                    max(partition.leader_epoch_start_offset, log.log_start_offset))
            self._complete_delayed(tp)
        _logger.info("broker %d: %s moved to %s", self.broker_id, tp,
                     posixpath.dirname(log.dir_path))

    def _on_future_start_offset(self, tp: TopicPartition) -> None:
        """A future log's start offset rose: a DeleteRecords waiting on it may complete."""
        self.delete_records_purgatory.check_and_complete(tp)

    def _stop_moves_on(self, offline: list[str]) -> None:
        """Moves whose source or destination dir went offline stop: the future log is
        dropped (its files stay), the partition failed in the dir-move fetcher."""
        lm = self.log_manager
        for tp in sorted(self.dir_mover.moves, key=lambda t: (t.topic, t.partition)):
            fut_dir, src_dir = lm.future_dir_of(tp), lm.dir_of(tp)
            if any(d is not None and d.path in offline for d in (fut_dir, src_dir)):
                self.dir_mover.fail(tp, f"storage error: log dir {', '.join(offline)} went "
                                    "offline", drop_future=True)

    # ---- metrics -----------------------------------------------------------------------------

    def under_replicated_count(self) -> int:
        """Partitions led here whose ISR is smaller than their replica set."""
        return sum(1 for p in self.partitions.values() if p.is_under_replicated and not p.offline)

    def offline_replica_count(self) -> int:
        """Replicas whose log dir is offline."""
        tps = {p.tp for p in self.partitions.values() if p.offline}
        for state in self.log_manager.dirs.values():
            if not state.online:
                tps.update(state.logs)
        return len(tps)

    def describe(self) -> dict[TopicPartition, Partition]:
        """Every hosted partition (for tests and the facade)."""
        return dict(self.partitions)

    def hosted(self, tps: Iterable[TopicPartition]) -> list[Partition]:
        """The partitions of ``tps`` hosted here."""
        return [self.partitions[tp] for tp in tps if tp in self.partitions]



    # ---- DeleteRecords (KIP-107) ---------------------------------------------------------------

    def delete_records(self, tp: TopicPartition, offset: int) -> int:
        """The leader's effect of a DeleteRecords on ``tp`` alone, with no purgatory: raise its
        log start offset to ``offset`` (-1: the HW; OFFSET_OUT_OF_RANGE above the HW),
        durably, and delete the segments wholly below it; returns the new log start offset.
        Any refusal raises its ``KafkaError``. Clients use the request
        (``handle_delete_records``)."""
        found = self._delete_one(tp, offset)
        if isinstance(found, Errors):
            raise KafkaError.of(found, f"{tp}: delete records below {offset}")
        return self.partitions[tp].log_start_offset

    def handle_delete_records(self, request: DeleteRecordsRequest,
                              denied: Mapping[TopicPartition, Errors],
                              respond: Callable[[DeleteRecordsResponse], None]
                              ) -> DeleteRecordsResponse | None:
        """DeleteRecords on the partitions this broker leads (docs/delete-records.md): each
        partition's start offset is raised at once, durably, and its segments wholly below it
        deleted; the answer waits in the purgatory until every partition's low watermark
        (``low_watermark``) reached its offset, or ``request.timeout_ms`` passed. Returns the
        answer if there is one at once, else None (``respond`` gets it later). A partition
        named twice takes its first offset."""
        results: list[tuple[TopicPartition, DeleteRecordsPartitionResult]] = []
        statuses: dict[TopicPartition, DeleteRecordsStatus] = {}
        seen: set[TopicPartition] = set()
        topic_ids = dict(request.topic_ids)
        for topic in request.topics:
            for part in topic.partitions:
                tp = TopicPartition(topic.name, part.partition_index)
                if tp in seen:
                    continue
                seen.add(tp)
                error = denied.get(tp)
                if error is None:
                    error = self._topic_id_error(tp, topic_ids.get(tp.topic, Uuid.ZERO))
                if error is None:
                    found = self._delete_one(tp, part.offset)
                    if isinstance(found, DeleteRecordsStatus):
                        statuses[tp] = found
                        found_result = DeleteRecordsPartitionResult(tp.partition, -1)
                        results.append((tp, found_result))
                        continue
                    error = found
                results.append((tp, DeleteRecordsPartitionResult(tp.partition, -1, error)))
        op = DelayedDeleteRecords(self, request.correlation_id, results, statuses, respond)
        answered: list[DeleteRecordsResponse] = []
        op.respond = answered.append  # an answer at once is returned, not sent
        if not statuses:
            op.force_complete()
            return answered[0]
        if self.delete_records_purgatory.try_complete_else_watch(
                op, list(statuses), max(0, request.timeout_ms)):
            return answered[0]
        op.respond = respond
        return None

    def _delete_one(self, tp: TopicPartition, offset: int) -> DeleteRecordsStatus | Errors:
        """Raise ``tp``'s start offset for a DeleteRecords; its status to wait on, or its
        error."""
        found = self._leader_partition(tp)
        if isinstance(found, Errors):
            return found
        partition = found
        log = partition.log
        if not log.config.deletes:
            return Errors.POLICY_VIOLATION  # cleanup.policy without "delete"
        hw = partition.high_watermark
        wanted = hw if offset == DELETE_TO_HIGH_WATERMARK else offset
        if wanted < 0 or wanted > hw:
            return Errors.OFFSET_OUT_OF_RANGE
        partition.check_topic_identity()
        if self.trace.enabled and wanted > log.log_start_offset:
            tracing.intent(self.trace, self.broker_id, log, "DeleteRecords", {"o": wanted},
                           log_start=wanted)
        try:
            log.increment_log_start_offset(wanted)  # never backwards; durable when it returns
            if self.trace.enabled:
                tracing.replica(self.trace, self.broker_id, log, "DeleteRecords",
                                {"o": log.log_start_offset})
            # Then the segments wholly below it, whatever the cleanup policy (hazard 9).
            tracing.delete_segments_below_start_offset(self.trace, self.broker_id, log)
        except KafkaStorageError:
            self.check_offline_dirs()
            return Errors.KAFKA_STORAGE_ERROR
        partition.check_offsets()
        self.fetch_purgatory.check_and_complete(tp)  # parked followers learn it now
        return DeleteRecordsStatus(wanted, partition.leader_epoch)

    def low_watermark(self, partition: Partition) -> int:
        """The smallest durable log start offset over the leader, every replica on a live
        broker (the last UpdateMetadata's), and every member of the (maximal) ISR, live or not
        (-1 while one of them has not reported since this leadership began; with the log
        manager's ``durable_log_start_offset`` off, the start offsets in memory, as Kafka
        counts them). Beyond Kafka, an
        in-sync replica on a dead broker counts: it may be elected when it comes back, and
        must not bring deleted records back (docs/delete-records.md)."""
        assert partition.is_leader
        low = partition.durable_start_offset
        future = self.log_manager.get_future_log(partition.tp)
        if future is not None and not future.offline:
            # A JBOD move's future log becomes the partition's log at the swap: it counts too.
            low = min(low, future.counted_start_offset)
        live = self.metadata.live_brokers
        counted = {r for r in partition.replicas if r in live} | set(partition.maximal_isr)
        for r in counted:
            if r == self.broker_id:
                continue
            follower = partition.followers.get(r)
            low = min(low, follower.log_start_offset if follower is not None else UNKNOWN_OFFSET)
        return low

    # ---- trace (world/trace.py) ----------------------------------------------------------------

    def _trace_replica_deleted(self, tp: TopicPartition, topic_id: Uuid | None) -> None:
        """LogStartOffset: this broker's replica of ``tp`` and its log are gone; a replica
        created here again starts empty."""
        inst, b = tracing.instance(tp), self.broker_id
        self.trace.emit(f"broker-{b}", LOG_START_OFFSET, inst, "DeleteReplica",
                        {"replica": b, "topicId": topic_id_text(topic_id)},
                        {name: {str(b): 0} for name in REPLICA_VARIABLES})
        self.trace.forget_replica(inst, b)

    def topic_id_of(self, tp: TopicPartition) -> Uuid | None:
        """The topic id of this broker's replica of ``tp`` (None: none here, or unknown)."""
        partition = self.partitions.get(tp)
        return partition.topic_id if partition is not None else None

    def _trace_followed(self, tp: TopicPartition) -> bool:
        """Whether ``tp`` is in this broker's fetchers or failed set (FetcherFailure hosts it)."""
        if not self.trace.enabled:
            return False
        fm = self.replica_fetcher_manager
        return fm.fetch_state(tp) is not None or tp in fm.failed_partitions

    def _trace_leader(self, partition: Partition, cause: str, with_log: bool = False) -> None:
        """This broker leads ``partition``: record a change of leader or of its maximal ISR;
        ``with_log``: a BecomeLeader carries the changes of the leader's own log too."""
        inst = tracing.instance(partition.tp)
        key = ("isr", inst)
        previous = self._trace_isr.get(key)
        now = tuple(sorted(partition.maximal_isr))
        if previous is None or previous[0] != self.broker_id or cause == "LeaderAndIsr":
            self.trace.emit(f"broker-{self.broker_id}", LOG_START_OFFSET, inst, "BecomeLeader",
                            {"leader": self.broker_id, "leaderEpoch": partition.leader_epoch,
                             "replicas": sorted(partition.replicas),
                             "topicId": topic_id_text(partition.topic_id)},
                            {"isr": list(now), "epochStart": partition.leader_epoch_start_offset,
                             **(tracing.replica_changes(self.trace, self.broker_id, partition.log)
                                if with_log else {})})
        elif previous[1] != now:
            known = {r: f.log_end_offset for r, f in partition.followers.items()}
            known[self.broker_id] = partition.log_end_offset
            tracing.isr(self.trace, self.broker_id, partition.tp, previous[1], now, cause, known,
                        topic_id_text(partition.topic_id),
                        {r: f.broker_epoch for r, f in partition.followers.items()})
        self._trace_isr[key] = (self.broker_id, now)

__all__ = ["ReplicaManager", "TopicIdMismatch"]
