"""The replica manager: every partition replica on one broker, as leader or follower.

Invariants upheld here (DESIGN.md "The safety invariants", HAZARDS 5, 7, 8):
- Control requests are applied partition by partition with a result per partition: one bad
  partition (offline dir, older leader epoch, unknown dir) does not fail the rest.
- A LeaderAndIsr partition state with an older leader epoch than the one held changes nothing
  (STALE_CONTROLLER_EPOCH for that partition, as Kafka answers); a StopReplica partition with an
  older leader epoch changes nothing (FENCED_LEADER_EPOCH), -2 bypasses the check.
- Consumers read from the leader only and only below the high watermark; followers read up to the
  log end offset. Nothing below the log start offset is ever served (OFFSET_OUT_OF_RANGE).
- The leader's high watermark is the minimum log end offset over the (maximal) ISR and never moves
  back; acks=all completes only when the high watermark passes the request's last offset.
- A follower appends, sets its high watermark to min(leader's, own log end offset), and only then
  raises its log start offset to the leader's, never above its high watermark (HAZARDS 8); a
  follower below the leader's log start offset restarts empty at it (truncate fully).
- A follower truncates only by the leader epoch protocol (see ``fetcher.py``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from logwright.broker.channel import RequestChannel
from logwright.broker.config import BrokerConfig
from logwright.broker.fetcher import (
    EpochCallback,
    FetchCallback,
    FetcherManager,
    InitialFetchState,
)
from logwright.broker.partition import NO_LEADER, Partition, PendingIsrChange, Role
from logwright.broker.purgatory import DelayedOperation, Purgatory
from logwright.configs import parse_topic_configs
from logwright.errors import (
    CheckpointError,
    CorruptRecordError,
    Errors,
    KafkaError,
    KafkaStorageError,
    LogwrightError,
    MessageTooLarge,
    OffsetOutOfRange,
    RecordBatchTooLarge,
    UnexpectedAppendOffset,
)
from logwright.identity import TopicPartition, Uuid
from logwright.logmanager import LogManager
from logwright.protocol import (
    EARLIEST_TIMESTAMP,
    EPOCH_DURING_DELETE,
    LATEST_TIMESTAMP,
    NO_EPOCH,
    AlterPartitionRequest,
    AlterPartitionResponse,
    FetchPartition,
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    ListOffsetsRequest,
    ListOffsetsResponse,
    Message,
    MetadataBroker,
    MetadataPartition,
    MetadataRequest,
    MetadataResponse,
    MetadataTopic,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResult,
    PartitionError,
    ProducePartitionResult,
    ProduceRequest,
    ProduceResponse,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from logwright.storage.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from logwright.storage.log import TopicIdMismatch as TopicIdMismatch
from logwright.world.clock import Clock
from logwright.world.scheduler import Scheduler, Task

LEADER_DURING_DELETE = -2
"""UpdateMetadata's leader for a partition of a deleted topic (Kafka's LeaderDuringDelete)."""


class NotFollowing(LogwrightError):
    """A fetcher touched a partition this broker no longer follows."""


@dataclass
class MetadataCache:
    """What the last accepted UpdateMetadata said: partition states and live brokers."""

    partitions: dict[TopicPartition, LeaderAndIsrPartitionState] = field(default_factory=dict)
    live_brokers: frozenset[int] = frozenset()
    controller_id: int = -1

    def topic_metadata(self, request: MetadataRequest, authorized: Callable[[str], bool]
                       ) -> MetadataResponse:
        """Kafka's Metadata answer from this cache. A partition whose leader is not a live
        broker is LEADER_NOT_AVAILABLE; a topic not in the cache UNKNOWN_TOPIC_OR_PARTITION.
        Asked for every topic, topics the principal may not describe are left out; named, they
        answer TOPIC_AUTHORIZATION_FAILED."""
        by_topic: dict[str, list[LeaderAndIsrPartitionState]] = {}
        for tp, state in self.partitions.items():
            by_topic.setdefault(tp.topic, []).append(state)
        if request.topics is None:
            names: Sequence[str] = sorted(t for t in by_topic if authorized(t))
        else:
            names = request.topics
        topics: list[MetadataTopic] = []
        for name in names:
            states = by_topic.get(name)
            if not authorized(name):
                topics.append(MetadataTopic(name, Errors.TOPIC_AUTHORIZATION_FAILED))
            elif not states:
                topics.append(MetadataTopic(name, Errors.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                parts = tuple(
                    MetadataPartition(s.tp.partition, Errors.NONE, s.leader, s.leader_epoch,
                                      s.replicas, s.isr)
                    if s.leader in self.live_brokers else
                    MetadataPartition(s.tp.partition, Errors.LEADER_NOT_AVAILABLE, -1,
                                      s.leader_epoch, s.replicas, s.isr)
                    for s in sorted(states, key=lambda s: s.tp.partition))
                topics.append(MetadataTopic(name, Errors.NONE, states[0].topic_id, parts))
        brokers = tuple(MetadataBroker(b, f"broker-{b}") for b in sorted(self.live_brokers))
        return MetadataResponse(request.correlation_id, brokers, self.controller_id,
                                tuple(topics))


_LEADER_DURING_DELETE = -2  # the controller's UpdateMetadata leader of a deleted topic


# ---- the fetch source and target for replica fetchers -------------------------------------------


class LeaderSource:
    """A fetch source that is a leader broker, reached over the network."""

    def __init__(self, source_id: int, rm: ReplicaManager) -> None:
        self.source_id = source_id
        self.node_id = f"broker-{source_id}"
        self.rm = rm
        self.closed = False

    def fetch(self, partitions: Sequence[FetchPartition], callback: FetchCallback) -> None:
        cfg = self.rm.config

        def on_response(message: Message | None) -> None:
            if self.closed:
                return
            if isinstance(message, FetchResponse) and message.error is Errors.NONE:
                callback({p.tp: p for p in message.partitions})
            else:
                callback(None)

        self.rm.channel.send(
            self.node_id,
            lambda cid: FetchRequest(cid, self.rm.broker_id, self.rm.broker_epoch(),
                                     cfg.replica_fetch_wait_max_ms, cfg.replica_fetch_min_bytes,
                                     cfg.replica_fetch_response_max_bytes, tuple(partitions),
                                     principal=cfg.inter_broker_principal),
            on_response, cfg.replica_socket_timeout_ms)

    def end_offsets_for_epochs(self, partitions: Sequence[OffsetForLeaderEpochPartition],
                               callback: EpochCallback) -> None:
        cfg = self.rm.config

        def on_response(message: Message | None) -> None:
            if self.closed:
                return
            if isinstance(message, OffsetForLeaderEpochResponse):
                callback({r.tp: r for r in message.results})
            else:
                callback(None)

        self.rm.channel.send(
            self.node_id,
            lambda cid: OffsetForLeaderEpochRequest(cid, self.rm.broker_id, tuple(partitions),
                                                    principal=cfg.inter_broker_principal),
            on_response, cfg.replica_socket_timeout_ms)

    def close(self) -> None:
        self.closed = True


class ReplicaFetchTarget:
    """The follower replicas a replica fetcher fills."""

    def __init__(self, rm: ReplicaManager) -> None:
        self.rm = rm

    def _follower(self, tp: TopicPartition) -> Partition:
        partition = self.rm.partitions.get(tp)
        if partition is None or partition.role is not Role.FOLLOWER:
            raise NotFollowing(f"{tp} is not a follower on broker {self.rm.broker_id}")
        return partition

    def _storage(self, fn: Callable[[], int]) -> int:
        try:
            return fn()
        except KafkaStorageError:
            self.rm.check_offline_dirs()
            raise

    def log_end_offset(self, tp: TopicPartition) -> int:
        return self._follower(tp).log_end_offset

    def log_start_offset(self, tp: TopicPartition) -> int:
        partition = self._follower(tp)
        if partition.offline:
            self.rm.check_offline_dirs()
            raise KafkaStorageError(f"{tp}: its log dir is offline")
        return partition.log_start_offset

    def high_watermark(self, tp: TopicPartition) -> int:
        return self._follower(tp).high_watermark

    def latest_epoch(self, tp: TopicPartition) -> int | None:
        return self._follower(tp).log.latest_epoch

    def end_offset_for_epoch(self, tp: TopicPartition, epoch: int) -> tuple[int, int] | None:
        return self._follower(tp).log.end_offset_for_epoch(epoch)

    def truncate(self, tp: TopicPartition, offset: int) -> None:
        partition = self._follower(tp)

        def run() -> int:
            partition.log.truncate_to(offset)  # the log trims its epoch cache
            partition.check_offsets()
            return 0
        self._storage(run)
        self.rm.truncations += 1

    def truncate_fully_and_start_at(self, tp: TopicPartition, offset: int) -> None:
        partition = self._follower(tp)

        def run() -> int:
            partition.log.truncate_fully_and_start_at(offset)  # epoch cache cleared with it
            partition.check_offsets()
            return 0
        self._storage(run)

    def process_partition_data(self, tp: TopicPartition, fetch_offset: int,
                               data: FetchPartitionData) -> int:
        partition = self._follower(tp)
        log = partition.log

        def run() -> int:
            if fetch_offset != log.log_end_offset:
                raise UnexpectedAppendOffset(
                    f"{tp}: fetched at {fetch_offset} but the log ends at {log.log_end_offset}")
            if data.records:
                log.append_as_follower(data.records)  # and the batches' epochs to its cache
            # HW first, then the start offset, which may never pass the HW (HAZARDS 8).
            if data.high_watermark >= 0:
                log.update_high_watermark(max(log.log_start_offset,
                                              min(data.high_watermark, log.log_end_offset)))
            if data.log_start_offset > log.log_start_offset:
                # Durable, and the epoch cache trimmed, before it returns.
                log.increment_log_start_offset(min(data.log_start_offset, log.high_watermark))
            partition.check_offsets()
            return log.log_end_offset
        return self._storage(run)


# ---- delayed operations --------------------------------------------------------------------------


@dataclass
class _ProduceStatus:
    required_offset: int  # the HW that acknowledges the append (last offset + 1)
    leader_epoch: int
    result: ProducePartitionResult
    pending: bool = True


class DelayedProduce(DelayedOperation):
    """acks=all: waits until the HW passes each partition's last appended offset."""

    def __init__(self, rm: ReplicaManager, correlation_id: int,
                 results: list[ProducePartitionResult], statuses: dict[TopicPartition,
                                                                      _ProduceStatus],
                 respond: Callable[[ProduceResponse], None]) -> None:
        super().__init__()
        self.rm = rm
        self.correlation_id = correlation_id
        self.results = results
        self.statuses = statuses
        self.respond = respond

    def try_complete(self) -> bool:
        for tp, status in self.statuses.items():
            if not status.pending:
                continue
            partition = self.rm.partitions.get(tp)
            if (partition is None or not partition.is_leader
                    or partition.leader_epoch != status.leader_epoch):
                status.result = ProducePartitionResult(tp, Errors.NOT_LEADER_OR_FOLLOWER)
                status.pending = False
            elif partition.offline:
                status.result = ProducePartitionResult(tp, Errors.KAFKA_STORAGE_ERROR)
                status.pending = False
            elif partition.high_watermark >= status.required_offset:
                status.pending = False
        if any(s.pending for s in self.statuses.values()):
            return False
        return self.force_complete()

    def on_complete(self) -> None:
        out = []
        for result in self.results:
            status = self.statuses.get(result.tp)
            if status is None:
                out.append(result)
            elif status.pending:
                out.append(ProducePartitionResult(result.tp, Errors.REQUEST_TIMED_OUT,
                                                  error_message="not replicated to the ISR "
                                                  "within the request timeout"))
            else:
                out.append(status.result)
        self.respond(ProduceResponse(self.correlation_id, tuple(out)))


class DelayedFetch(DelayedOperation):
    """A fetch with ``max_wait_ms`` that found nothing: waits for data (or the HW, for
    consumers) to move, then reads again."""

    def __init__(self, rm: ReplicaManager, request: FetchRequest,
                 denied: Mapping[TopicPartition, Errors],
                 respond: Callable[[FetchResponse], None]) -> None:
        super().__init__()
        self.rm = rm
        self.request = request
        self.denied = denied
        self.respond = respond
        self._datas: list[FetchPartitionData] | None = None

    def try_complete(self) -> bool:
        datas, size, has_error = self.rm.read_partitions(self.request, self.denied)
        if size >= self.request.min_bytes or has_error:
            self._datas = datas
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        datas = self._datas
        if datas is None:  # expired: read what there is now
            datas, _, _ = self.rm.read_partitions(self.request, self.denied)
        self.respond(FetchResponse(self.request.correlation_id, Errors.NONE, tuple(datas)))


# ---- the replica manager -------------------------------------------------------------------------


class ReplicaManager:
    """Partitions, fetchers and purgatories of one broker."""

    def __init__(self, broker_id: int, config: BrokerConfig, log_manager: LogManager,
                 clock: Clock, scheduler: Scheduler, channel: RequestChannel,
                 broker_epoch: Callable[[], int], controller_node: Callable[[], str | None],
                 on_offline_dirs: Callable[[list[str]], None] | None = None) -> None:
        self.broker_id = broker_id
        self.config = config
        self.log_manager = log_manager
        self.clock = clock
        self.scheduler = scheduler
        self.channel = channel
        self.broker_epoch = broker_epoch
        self.controller_node = controller_node
        self.on_offline_dirs = on_offline_dirs
        self.partitions: dict[TopicPartition, Partition] = {}
        self.metadata = MetadataCache()
        self.produce_purgatory: Purgatory[DelayedProduce] = Purgatory(
            f"broker-{broker_id} produce", scheduler, config.max_purgatory_operations)
        self.fetch_purgatory: Purgatory[DelayedFetch] = Purgatory(
            f"broker-{broker_id} fetch", scheduler, config.max_purgatory_operations)
        self.fetch_target = ReplicaFetchTarget(self)
        self.replica_fetcher_manager = FetcherManager(
            f"broker-{broker_id} ReplicaFetcherManager", "Replica", config.num_replica_fetchers,
            lambda source_id, _fetcher_id: LeaderSource(source_id, self), self.fetch_target,
            clock, scheduler, config.replica_fetch_backoff_ms, config.replica_fetch_max_bytes)
        self.known_offline_dirs: set[str] = set(log_manager.offline_dirs)
        self._tasks: list[Task] = []
        self.isr_shrinks = 0
        self.isr_expands = 0
        self.truncations = 0
        # Per topic: (controller epoch, correlation id) of the message whose topic configs were
        # applied last; an older message's configs are stale and ignored.
        self.topic_config_versions: dict[str, tuple[int, int]] = {}

    # ---- lifecycle ---------------------------------------------------------------------------

    def startup(self) -> None:
        """Schedule ISR expiration (every replica.lag.time.max.ms / 2, as Kafka does)."""
        period = max(1, self.config.replica_lag_time_max_ms // 2)
        self._tasks.append(self.scheduler.schedule(f"broker-{self.broker_id} isr-expiration",
                                                   self.maybe_shrink_isr, period, period))

    def halt(self) -> None:
        """Stop everything at once, without I/O (the process died)."""
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        self.replica_fetcher_manager.shutdown()
        self.produce_purgatory.cancel_all()
        self.fetch_purgatory.cancel_all()

    # ---- lookup ------------------------------------------------------------------------------

    def _partition_error(self, tp: TopicPartition) -> Errors:
        """The error for a partition this broker does not host (Kafka's getPartitionOrError)."""
        if tp in self.metadata.partitions:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return Errors.UNKNOWN_TOPIC_OR_PARTITION

    def _leader_partition(self, tp: TopicPartition, current_leader_epoch: int = NO_EPOCH
                          ) -> Partition | Errors:
        partition = self.partitions.get(tp)
        if partition is None:
            return self._partition_error(tp)
        if partition.offline:
            return Errors.KAFKA_STORAGE_ERROR
        if not partition.is_leader:
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

    def become_leader_or_follower(self, request: LeaderAndIsrRequest) -> list[PartitionError]:
        """Apply each partition state on its own; the caller has already fenced the request."""
        self.apply_topic_configs(request)
        results: dict[TopicPartition, Errors] = {}
        to_lead: list[tuple[Partition, LeaderAndIsrPartitionState]] = []
        to_follow: list[tuple[Partition, LeaderAndIsrPartitionState]] = []
        now = self.clock.now_ms()
        for state in request.partition_states:
            tp = state.tp
            if tp in results:
                continue  # a repeated partition: the first state stands
            if self.broker_id not in state.replicas:
                results[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                continue
            partition = self.partitions.get(tp)
            if partition is not None:
                if partition.offline:
                    results[tp] = Errors.KAFKA_STORAGE_ERROR
                    continue
                if state.leader_epoch < partition.leader_epoch:
                    results[tp] = Errors.STALE_CONTROLLER_EPOCH
                    continue
                if state.leader_epoch == partition.leader_epoch:
                    # Nothing new for the role; a newer partition epoch carries a new ISR or
                    # replica set (the FULL request a new controller sends repeats the rest).
                    if state.partition_epoch > partition.partition_epoch:
                        partition.update_assignment(state, now)
                        self._maybe_increment_hw(partition)
                    results[tp] = Errors.NONE
                    continue
            else:
                created = self._create_partition(state)
                if isinstance(created, Errors):
                    results[tp] = created
                    continue
                partition = created
            if state.leader == self.broker_id:
                to_lead.append((partition, state))
            else:
                to_follow.append((partition, state))
        self._make_leaders(to_lead, results)
        self._make_followers(to_follow, results)
        self.replica_fetcher_manager.shutdown_idle_fetchers()
        self.check_offline_dirs()
        seen: set[TopicPartition] = set()
        out = []
        for state in request.partition_states:
            if state.tp not in seen:
                seen.add(state.tp)
                out.append(PartitionError(state.tp, results.get(state.tp, Errors.NONE)))
        return out

    def _create_partition(self, state: LeaderAndIsrPartitionState) -> Partition | Errors:
        tp = state.tp
        topic_id = state.topic_id if state.topic_id != Uuid.ZERO else None
        try:
            log = self.log_manager.get_log(tp)
            if log is None:
                log_dir = None if state.log_dir == "any" else state.log_dir
                log = self.log_manager.create_log(tp, topic_id, log_dir)
            if topic_id is not None:
                # A dir without its topic id file (HAZARDS 2) adopts the controller's id; a
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
            # The stray issue decides what to do with the old log; nothing is served from it
            # meanwhile.
            return Errors.INCONSISTENT_TOPIC_ID
        except LogwrightError:
            return Errors.LOG_DIR_NOT_FOUND  # the named log dir is not one of this broker's
        partition = Partition(tp, self.broker_id, log)
        partition.topic_id = topic_id if topic_id is not None else log.topic_id
        self.partitions[tp] = partition
        return partition

    def _fail_dir_of(self, tp: TopicPartition, exc: BaseException) -> None:
        state = self.log_manager.dir_of(tp)
        if state is not None and state.online:
            self.log_manager.fail_dir(state.path, f"{tp}: {type(exc).__name__}: {exc}")

    def _make_leaders(self, items: list[tuple[Partition, LeaderAndIsrPartitionState]],
                      results: dict[TopicPartition, Errors]) -> None:
        if not items:
            return
        self.replica_fetcher_manager.remove_fetcher_for_partitions(p.tp for p, _ in items)
        now = self.clock.now_ms()
        for partition, state in items:
            try:
                partition.make_leader(state, now)
                results[partition.tp] = Errors.NONE
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
        self.replica_fetcher_manager.remove_fetcher_for_partitions(p.tp for p in changed)
        for partition in changed:
            self._complete_delayed(partition.tp)
        initial = {
            p.tp: InitialFetchState(p.leader_id, p.leader_epoch, p.log_end_offset)
            for p in changed
            if p.leader_id not in (NO_LEADER, self.broker_id) and not p.offline}
        if initial:
            self.replica_fetcher_manager.add_fetcher_for_partitions(initial)

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
            if topic in done or state.leader == _LEADER_DURING_DELETE:
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
        value = self.log_manager.topic_overrides.get(topic, {}).get("min.insync.replicas")
        return value if isinstance(value, int) else self.config.min_insync_replicas

    # ---- StopReplica and UpdateMetadata ------------------------------------------------------

    def stop_replicas(self, request: StopReplicaRequest) -> list[PartitionError]:
        """Stop (and with ``delete_partition`` delete) each partition on its own."""
        results: dict[TopicPartition, Errors] = {}
        accepted = []
        for sp in request.partitions:
            if sp.tp in results:
                continue
            partition = self.partitions.get(sp.tp)
            if partition is not None and partition.offline:
                results[sp.tp] = Errors.KAFKA_STORAGE_ERROR
            elif (partition is not None and sp.leader_epoch not in (EPOCH_DURING_DELETE, NO_EPOCH)
                  and sp.leader_epoch < partition.leader_epoch):
                results[sp.tp] = Errors.FENCED_LEADER_EPOCH
            else:
                results[sp.tp] = Errors.NONE
                accepted.append(sp)
        self.replica_fetcher_manager.remove_fetcher_for_partitions(sp.tp for sp in accepted)
        for sp in accepted:
            partition = self.partitions.get(sp.tp)
            if sp.delete_partition:
                self.partitions.pop(sp.tp, None)
                try:
                    self.log_manager.delete_log(sp.tp)
                except KafkaStorageError:
                    results[sp.tp] = Errors.KAFKA_STORAGE_ERROR
            elif partition is not None:
                partition.stop()
            self._complete_delayed(sp.tp)
        self.replica_fetcher_manager.shutdown_idle_fetchers()
        self.check_offline_dirs()
        return [PartitionError(tp, error) for tp, error in results.items()]

    def update_metadata(self, request: UpdateMetadataRequest) -> None:
        """Remember the controller's view of partitions and live brokers. A partition of a
        deleted topic (leader LeaderDuringDelete, -2) leaves the cache, unless the cache already
        holds a newer topic of the same name (another topic id). The network may reorder two
        UpdateMetadata requests: a partition state older (leader epoch, partition epoch) than
        the one held for the same topic id changes nothing, else clients would be sent back to
        a deposed leader. The topic configs it carries are
        applied first."""
        self.apply_topic_configs(request)
        for state in request.partition_states:
            held = self.metadata.partitions.get(state.tp)
            same_topic = held is not None and held.topic_id == state.topic_id
            if state.leader == LEADER_DURING_DELETE:
                if same_topic:
                    del self.metadata.partitions[state.tp]
            elif not same_topic or held is None or (
                    (state.leader_epoch, state.partition_epoch)
                    >= (held.leader_epoch, held.partition_epoch)):
                self.metadata.partitions[state.tp] = state
        self.metadata.live_brokers = frozenset(request.live_brokers)
        self.metadata.controller_id = request.controller_id

    # ---- produce -----------------------------------------------------------------------------

    def append_records(self, request: ProduceRequest, denied: Mapping[TopicPartition, Errors],
                       respond: Callable[[ProduceResponse], None]) -> None:
        """Append each allowed partition's records as leader; answer per ``request.acks``."""
        results: list[ProducePartitionResult] = []
        statuses: dict[TopicPartition, _ProduceStatus] = {}
        if request.acks not in (0, 1, -1):
            results = [ProducePartitionResult(tp, Errors.INVALID_REQUEST,
                                              error_message=f"acks must be 0, 1 or -1, not "
                                              f"{request.acks}")
                       for tp, _ in request.partitions]
            respond(ProduceResponse(request.correlation_id, tuple(results)))
            return
        for tp, records in request.partitions:
            if tp in denied:
                results.append(ProducePartitionResult(tp, denied[tp]))
                continue
            result, required = self._append_one(tp, records, request.acks)
            results.append(result)
            if request.acks == -1 and result.error is Errors.NONE:
                partition = self.partitions[tp]
                statuses[tp] = _ProduceStatus(required, partition.leader_epoch, result)
        if request.acks == 0:
            return
        if request.acks == 1 or not statuses:
            respond(ProduceResponse(request.correlation_id, tuple(results)))
            return
        op = DelayedProduce(self, request.correlation_id, results, statuses, respond)
        self.produce_purgatory.try_complete_else_watch(op, list(statuses), request.timeout_ms)

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
        try:
            info = partition.log.append_as_leader(records, partition.leader_epoch)
        except CorruptRecordError as exc:
            return ProducePartitionResult(tp, Errors.CORRUPT_MESSAGE, error_message=str(exc)), -1
        except (MessageTooLarge, RecordBatchTooLarge) as exc:
            return ProducePartitionResult(tp, exc.error, error_message=str(exc)), -1
        except KafkaStorageError as exc:
            self.check_offline_dirs()
            return ProducePartitionResult(tp, Errors.KAFKA_STORAGE_ERROR,
                                          error_message=str(exc)), -1
        # Followers parked on this partition have data now; a single-replica ISR commits at once.
        self.fetch_purgatory.check_and_complete(tp)
        self._maybe_increment_hw(partition)
        return ProducePartitionResult(tp, Errors.NONE, info.first_offset,
                                      partition.log_start_offset), info.last_offset + 1

    # ---- fetch -------------------------------------------------------------------------------

    def fetch_messages(self, request: FetchRequest, denied: Mapping[TopicPartition, Errors],
                       respond: Callable[[FetchResponse], None]) -> None:
        """Serve a consumer or follower fetch; park it if there is nothing yet and it may wait."""
        if request.replica_id >= 0:
            self._record_follower_fetches(request, denied)
        datas, size, has_error = self.read_partitions(request, denied)
        if (request.max_wait_ms <= 0 or size >= request.min_bytes or has_error
                or not request.partitions):
            respond(FetchResponse(request.correlation_id, Errors.NONE, tuple(datas)))
            return
        op = DelayedFetch(self, request, denied, respond)
        self.fetch_purgatory.try_complete_else_watch(
            op, [p.tp for p in request.partitions], request.max_wait_ms)

    def _record_follower_fetches(self, request: FetchRequest,
                                 denied: Mapping[TopicPartition, Errors]) -> None:
        now = self.clock.now_ms()
        for fp in request.partitions:
            if fp.tp in denied:
                continue
            found = self._leader_partition(fp.tp, fp.current_leader_epoch)
            if isinstance(found, Errors) or request.replica_id not in found.replicas:
                continue
            partition = found
            if not partition.log_start_offset <= fp.fetch_offset <= partition.log_end_offset:
                continue  # answered OFFSET_OUT_OF_RANGE; says nothing about its progress
            partition.update_follower_fetch_state(request.replica_id, fp.fetch_offset,
                                                  fp.log_start_offset, now)
            self._maybe_expand_isr(partition)
            self._maybe_increment_hw(partition)

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
            has_error = has_error or data.error is not Errors.NONE
        return out, size, has_error

    def _read_one(self, fp: FetchPartition, is_follower: bool, replica_id: int,
                  budget: int, first: bool) -> FetchPartitionData:
        found = self._leader_partition(fp.tp, fp.current_leader_epoch)
        if isinstance(found, Errors):
            return FetchPartitionData(fp.tp, found)
        partition = found
        log = partition.log
        if is_follower and replica_id not in partition.replicas:
            return FetchPartitionData(fp.tp, Errors.NOT_LEADER_OR_FOLLOWER)
        max_offset = None if is_follower else partition.high_watermark
        # The first partition with data gets at least one whole batch (progress is guaranteed);
        # later ones only what is left of the response's max_bytes.
        limit = fp.partition_max_bytes if first else min(fp.partition_max_bytes, max(0, budget))
        try:
            records = log.read(fp.fetch_offset, limit, max_offset, min_one_batch=first).records
        except OffsetOutOfRange:
            return FetchPartitionData(fp.tp, Errors.OFFSET_OUT_OF_RANGE, partition.high_watermark,
                                      log.log_start_offset)
        except KafkaStorageError:
            self.check_offline_dirs()
            return FetchPartitionData(fp.tp, Errors.KAFKA_STORAGE_ERROR)
        return FetchPartitionData(fp.tp, Errors.NONE, partition.high_watermark,
                                  log.log_start_offset, records)

    # ---- ListOffsets and OffsetForLeaderEpoch ------------------------------------------------

    def list_offsets(self, request: ListOffsetsRequest, denied: Mapping[TopicPartition, Errors]
                     ) -> ListOffsetsResponse:
        """Earliest = log start offset; latest = high watermark (log end offset for replicas)."""
        out: list[tuple[TopicPartition, Errors, int]] = []
        for tp, timestamp in request.partitions:
            if tp in denied:
                out.append((tp, denied[tp], -1))
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
        if partition.maybe_increment_high_watermark():
            self._complete_delayed(partition.tp)

    def _complete_delayed(self, tp: TopicPartition) -> None:
        self.produce_purgatory.check_and_complete(tp)
        self.fetch_purgatory.check_and_complete(tp)

    def maybe_shrink_isr(self) -> None:
        """Drop ISR members that have not caught up for replica.lag.time.max.ms."""
        now = self.clock.now_ms()
        for partition in self.leader_partitions():
            if partition.pending_isr is not None or partition.offline:
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
        broker_epoch = self.broker_epoch()
        self.channel.send(
            controller,
            lambda cid: AlterPartitionRequest(cid, self.broker_id, broker_epoch, partition.tp,
                                              pending.leader_epoch, pending.partition_epoch,
                                              new_isr),
            lambda response: self._on_alter_partition(partition, pending, response),
            self.config.controller_socket_timeout_ms)

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
            return  # refused or stale: a LeaderAndIsr brings the state, or the next check asks
        partition.isr = tuple(response.isr)
        partition.partition_epoch = response.partition_epoch
        self._maybe_increment_hw(partition)

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
        if self.on_offline_dirs is not None:
            self.on_offline_dirs(new)
        return new

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


__all__ = [
    "DelayedFetch",
    "DelayedProduce",
    "LeaderSource",
    "MetadataCache",
    "ReplicaFetchTarget",
    "ReplicaManager",
]
