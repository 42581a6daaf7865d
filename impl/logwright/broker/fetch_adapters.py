"""The two sides a replica fetcher (``fetcher.py``) works between, on a follower broker.

``LeaderSource`` is the leader, reached over the network: its requests are ``Request`` effects,
which the broker's driver sends through the request channel like every other request of the
broker; ``ReplicaFetchTarget`` is the follower replicas hosted here, which the fetched records fill.

Invariants upheld (hazard 8): a follower appends, sets its high watermark to min(leader's, own
log end offset), and only then raises its log start offset to the leader's, never above its high
watermark; a follower truncates only as the fetcher's leader epoch protocol says; a storage error
on a partition takes its log dir offline here, at once, before the fetcher marks it failed; a
target of a reassignment that removes replicas fsyncs what it fetched before its next fetch
reports it (``Partition.reassignment_target``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from logwright.broker import tracing
from logwright.broker.config import BrokerConfig
from logwright.broker.effects import Call, Emit
from logwright.broker.fetcher import EpochCallback, FetchCallback
from logwright.broker.partition import FOLLOWER, Partition
from logwright.errors import NO_ERROR, KafkaStorageError, LogwrightError, UnexpectedAppendOffset
from logwright.identity import TopicPartition
from logwright.protocol import (
    FetchPartition,
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
    Message,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from logwright.records.scan import scan_valid_prefix
from logwright.storage.log import PartitionLog
from logwright.world.trace import TraceRecorder

logger = logging.getLogger(__name__)


class NotFollowing(LogwrightError):
    """A fetcher touched a partition this broker no longer follows."""


class ReplicaHost(Protocol):
    """What the adapters need of the broker's replica manager (no import of it: the manager
    sits above them)."""

    broker_id: int
    config: BrokerConfig
    emit: Emit
    partitions: dict[TopicPartition, Partition]
    truncations: int
    trace: TraceRecorder

    def broker_epoch(self) -> int:
        """This broker's current broker epoch."""
        ...

    def check_offline_dirs(self) -> list[str]:
        """React to log dirs that went offline since the last check."""
        ...

    def sync_log(self, partition: Partition) -> None:
        """Fsync ``partition``'s log to its end (a reassignment target's)."""
        ...


class LeaderSource:
    """A fetch source that is a leader broker, reached over the network."""

    def __init__(self, source_id: int, rm: ReplicaHost) -> None:
        self.source_id = source_id
        self.node_id = f"broker-{source_id}"
        self.rm = rm
        self.closed = False

    def fetch(self, partitions: Sequence[FetchPartition], callback: FetchCallback) -> None:
        cfg = self.rm.config

        def on_response(message: Message | None) -> None:
            if self.closed:
                return
            if isinstance(message, FetchResponse) and message.error is NO_ERROR:
                callback({p.tp: p for p in message.partitions})
            else:
                callback(None)

        wanted = tuple(self._with_topic_ids(partitions))
        self.rm.emit(Call(
            self.node_id,
            lambda cid: FetchRequest(cid, self.rm.broker_id, self.rm.broker_epoch(),
                                     cfg.replica_fetch_wait_max_ms, cfg.replica_fetch_min_bytes,
                                     cfg.replica_fetch_response_max_bytes, wanted,
                                     principal=cfg.inter_broker_principal),
            on_response, cfg.replica_socket_timeout_ms))

    def _with_topic_ids(self, partitions: Sequence[FetchPartition]) -> list[FetchPartition]:
        """Each partition with the topic id of this broker's replica (Fetch v13+, KIP-516):
        a leader holding another generation of the topic answers INCONSISTENT_TOPIC_ID.

        The log start offset reported is the replica's durable one when its log writes each
        raise at once (the two are then equal): the leader acknowledges a DeleteRecords on
        what the followers report (docs/delete-records.md)."""
        out = []
        for fp in partitions:
            partition = self.rm.partitions.get(fp.tp)
            if partition is None:
                out.append(fp)
                continue
            topic_id = partition.topic_id
            start = fp.log_start_offset
            if partition.log.start_offset_checkpoint is not None:
                start = min(start, partition.log.durable_log_start_offset)
            elif topic_id is None:
                out.append(fp)
                continue
            # Both changes in one new FetchPartition, every field given (what
            # dataclasses.replace would make, without its microseconds of looking fields up).
            out.append(FetchPartition(fp.tp, fp.current_leader_epoch, fp.fetch_offset, start,
                                      fp.partition_max_bytes, fp.last_fetched_epoch,
                                      fp.topic_id if topic_id is None else topic_id))
        return out

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

        self.rm.emit(Call(
            self.node_id,
            lambda cid: OffsetForLeaderEpochRequest(cid, self.rm.broker_id, tuple(partitions),
                                                    principal=cfg.inter_broker_principal),
            on_response, cfg.replica_socket_timeout_ms))

    def close(self) -> None:
        self.closed = True


class ReplicaFetchTarget:
    """The follower replicas a replica fetcher fills."""

    def __init__(self, rm: ReplicaHost) -> None:
        self.rm = rm

    def _follower(self, tp: TopicPartition) -> Partition:
        partition = self.rm.partitions.get(tp)
        if partition is None or partition.role is not FOLLOWER:
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
        if self.rm.trace.enabled:
            tracing.replica(self.rm.trace, self.rm.broker_id, partition.log, "Truncate",
                            {"offset": offset})

    def truncate_fully_and_start_at(self, tp: TopicPartition, offset: int) -> None:
        partition = self._follower(tp)
        if self.rm.trace.enabled and offset > partition.log.log_start_offset:
            tracing.intent(self.rm.trace, self.rm.broker_id, partition.log, "FollowerFetch",
                           {"outOfRange": True, "leaderLogStart": offset}, log_start=offset,
                           restart_at=True)

        def run() -> int:
            partition.log.truncate_fully_and_start_at(offset)  # epoch cache cleared with it
            partition.check_offsets()
            return 0
        self._storage(run)
        if self.rm.trace.enabled:
            tracing.replica(self.rm.trace, self.rm.broker_id, partition.log, "FollowerFetch",
                            {"outOfRange": True, "leaderLogStart": offset})

    def restart_below_start(self, tp: TopicPartition, offset: int) -> None:
        partition = self._follower(tp)
        if self.rm.trace.enabled:  # the start offset it lowers is written before the event
            tracing.intent(self.rm.trace, self.rm.broker_id, partition.log, "RestartBelowStart",
                           {"offset": offset}, log_start=offset, restart_at=True)

        def run() -> int:
            logger.warning("%s on broker %d: the leader's log ends at %d, below this replica's "
                        "start offset %d (records lost by every replica that held them); "
                        "restarting empty there", tp, self.rm.broker_id, offset,
                        partition.log.log_start_offset)
            partition.log.restart_below_start(offset)
            partition.check_offsets()
            return 0
        self._storage(run)
        if self.rm.trace.enabled:
            tracing.replica(self.rm.trace, self.rm.broker_id, partition.log, "RestartBelowStart",
                            {"offset": offset})

    @staticmethod
    def _follow_epoch(partition: Partition, epoch: int, epoch_start_offset: int,
                      leader_log_start: int) -> None:
        """Once the log reaches the offset the leader's epoch began at, record that epoch there,
        as the leader did (durably, before the fetch returns). The log matches the leader's from
        the leader's start offset to its end (a fetch that diverged truncates first), so the
        epoch's records, if any, would already have put it in the cache: only an epoch that
        begins at the log's end is new. Below the leader's start offset the log may still hold
        a record the leader never had (0039: the leader's epoch cache no longer knew that
        epoch, so no divergence was found); this same fetch raises the start offset past it.
        Without this, a follower that copied a record of an older epoch committed under this one
        reports that older epoch, and a recovery election may rank a divergent log above it."""
        log = partition.log
        if (epoch < 0 or epoch != partition.leader_epoch
                or not 0 <= epoch_start_offset <= log.log_end_offset):
            return  # not the leader this replica follows now, or not reached yet
        latest = log.latest_epoch
        if latest is None or latest < epoch:
            # The epoch's records would be at [start, log end): there are none, so it begins at
            # the log's end, or where the log starts now (or starts once this fetch raises its
            # start offset to the leader's) if a DeleteRecords or a restart at the leader's
            # start offset removed the offsets from the epoch's start on.
            start = max(epoch_start_offset, log.log_start_offset,
                        min(leader_log_start, log.log_end_offset))
            assert start == log.log_end_offset, (
                f"{partition.tp}: epoch {epoch} began at {epoch_start_offset} but the log holds "
                f"records from {log.log_start_offset} to {log.log_end_offset} of epoch "
                f"{latest} at most")
            log.assign_epoch_start_offset(epoch, start)

    def _intend_fetch(self, log: PartitionLog, data: FetchPartitionData) -> None:
        """Before a fetch's records are appended: the ``Intent`` of the FollowerFetch they make,
        with the offsets its event will record (the records, flushed by a roll, an epoch's
        checkpoint or the flush interval before that event, can outlive a power loss that cuts
        it). What ``process_partition_data`` then does, computed ahead: the log ends after the
        last record fetched; the HW and the start offset follow the leader's as it sets them."""
        scan = scan_valid_prefix(data.records, 0, verify_crc=False)
        if scan.last_offset is None:
            return
        leo = scan.last_offset + 1
        first = int.from_bytes(bytes(data.records[:8]), "big", signed=True)
        seg = first if (log.size_bytes == 0 and first < log.log_end_offset) \
            else log.segments[0].base_offset
        start = log.log_start_offset
        hw = max(start, min(data.high_watermark, leo)) if data.high_watermark >= 0 \
            else log.high_watermark
        if data.log_start_offset > start:
            start = max(start, min(data.log_start_offset, hw))
        tracing.intent_with(self.rm.trace, self.rm.broker_id, log, "FollowerFetch",
                            {"leaderHw": data.high_watermark,
                             "leaderLogStart": data.log_start_offset, "fetchedTo": leo},
                            (leo, hw, start, seg, None, log.recovery_point))

    def process_partition_data(self, tp: TopicPartition, fetch_offset: int,
                               data: FetchPartitionData) -> int:
        partition = self._follower(tp)
        log = partition.log
        try:  # self._storage(...) of what follows, without a closure and a call
            if fetch_offset != log.log_end_offset:
                raise UnexpectedAppendOffset(
                    f"{tp}: fetched at {fetch_offset} but the log ends at {log.log_end_offset}")
            if data.records:
                if self.rm.trace.enabled:
                    self._intend_fetch(log, data)
                log.append_as_follower(data.records)  # and the batches' epochs to its cache
            self._follow_epoch(partition, data.leader_epoch, data.epoch_start_offset,
                               data.log_start_offset)
            # HW first, then the start offset, which may never pass the HW (hazard 8).
            if data.high_watermark >= 0:
                log.update_high_watermark(max(log.log_start_offset,
                                              min(data.high_watermark, log.log_end_offset)))
            # Durable, and the epoch cache trimmed, before it returns.
            if data.log_start_offset > log.log_start_offset:
                raised = min(data.log_start_offset, log.high_watermark)
                if self.rm.trace.enabled and raised > log.log_start_offset:
                    tracing.intent(self.rm.trace, self.rm.broker_id, log, "FollowerFetch",
                                   {"leaderHw": data.high_watermark,
                                    "leaderLogStart": data.log_start_offset,
                                    "fetchedTo": log.log_end_offset}, log_start=raised)
                log.increment_log_start_offset(raised)
            partition.check_offsets()
            end = log.log_end_offset
        except KafkaStorageError:
            self.rm.check_offline_dirs()
            raise
        if self.rm.trace.enabled:
            tracing.replica(self.rm.trace, self.rm.broker_id, log, "FollowerFetch",
                            {"leaderHw": data.high_watermark,
                             "leaderLogStart": data.log_start_offset, "fetchedTo": end})
        if partition.reassignment_target and log.recovery_point < end:
            # A reassignment target's fetched records are durable before its next fetch
            # reports them to the leader (Partition.reassignment_target).
            def sync() -> int:
                self.rm.sync_log(partition)
                return 0
            self._storage(sync)
        # Then the segments wholly below the start offset, whatever the cleanup policy (hazard
        # 9); a step of its own, as retention's.
        if log.segments[0].next_offset <= log.log_start_offset and len(log.segments) > 1:
            self._storage(lambda: tracing.delete_segments_below_start_offset(
                self.rm.trace, self.rm.broker_id, log))
        return end


__all__ = ["LeaderSource", "NotFollowing", "ReplicaFetchTarget", "ReplicaHost"]
