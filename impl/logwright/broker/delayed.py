"""The broker's delayed operations, kept in purgatories (``purgatory.py``) until they complete.

``DelayedProduce`` is an acks=all produce waiting for the ISR; ``DelayedFetch`` a fetch with
``max_wait_ms`` waiting for data. Each answers through its ``respond`` function exactly once (the
purgatory's invariant); the broker makes that answer a ``Send`` effect, so a response completed
later takes the same path as one answered at once.

Invariants upheld: an acks=all produce is acknowledged only once the high watermark passes its
last offset, and only by the leader of the epoch that appended it (a new leader, or a dir gone
offline, answers NOT_LEADER_OR_FOLLOWER or KAFKA_STORAGE_ERROR; a timeout REQUEST_TIMED_OUT).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from logwright.broker.partition import LEADER, Partition
from logwright.broker.purgatory import DelayedOperation
from logwright.errors import NO_ERROR, Errors
from logwright.identity import TopicPartition
from logwright.protocol import (
    DeleteRecordsPartitionResult,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
    ProducePartitionResult,
    ProduceResponse,
)


class ReplicaView(Protocol):
    """What a delayed operation reads of the replica manager (no import of it)."""

    @property
    def partitions(self) -> Mapping[TopicPartition, Partition]:
        """The partitions hosted here."""
        ...

    def read_partitions(self, request: FetchRequest, denied: Mapping[TopicPartition, Errors]
                        ) -> tuple[list[FetchPartitionData], int, bool]:
        """Read every partition of ``request``: (data, bytes read, whether any erred)."""
        ...


@dataclass
class ProduceStatus:
    """Where one partition of an acks=all produce stands."""

    required_offset: int  # the HW that acknowledges the append (last offset + 1)
    leader_epoch: int
    result: ProducePartitionResult
    min_insync_replicas: int = 1
    pending: bool = True


def _still_leading(partitions: Mapping[TopicPartition, Partition], tp: TopicPartition,
                   leader_epoch: int) -> Partition | Errors:
    """The partition a delayed operation waits on, if this broker still leads it at the
    operation's leader epoch with its dir online; else the error that ends the wait
    (NOT_LEADER_OR_FOLLOWER, or KAFKA_STORAGE_ERROR)."""
    partition = partitions.get(tp)
    # (The role and the log's state read directly: is_leader, offline.)
    if partition is None or partition.role is not LEADER or partition.leader_epoch != leader_epoch:
        return Errors.NOT_LEADER_OR_FOLLOWER
    if partition.log.offline:
        return Errors.KAFKA_STORAGE_ERROR
    return partition


class DelayedProduce(DelayedOperation):
    """acks=all: waits until the HW passes each partition's last appended offset."""

    def __init__(self, rm: ReplicaView, correlation_id: int,
                 results: list[ProducePartitionResult], statuses: dict[TopicPartition,
                                                                      ProduceStatus],
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
            partition = _still_leading(self.rm.partitions, tp, status.leader_epoch)
            if isinstance(partition, Errors):
                status.result = ProducePartitionResult(tp, partition)
                status.pending = False
            elif partition.log.high_watermark >= status.required_offset:
                status.pending = False
                if len(partition.isr) < status.min_insync_replicas:
                    # Replicated, but the ISR shrank below min.insync.replicas meanwhile
                    # (Kafka's answer too): the producer may retry, as after a timeout.
                    status.result = ProducePartitionResult(
                        tp, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                        error_message=f"ISR {list(partition.isr)} is smaller than "
                        f"min.insync.replicas {status.min_insync_replicas}")
        for s in self.statuses.values():  # any(s.pending ...), without a generator
            if s.pending:
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

    def __init__(self, rm: ReplicaView, request: FetchRequest,
                 denied: Mapping[TopicPartition, Errors],
                 respond: Callable[[FetchResponse], None],
                 read: tuple[list[FetchPartitionData], int, bool] | None = None) -> None:
        """``read``: what ``rm.read_partitions(request, denied)`` returned just now, nothing
        having run since (the fetch that parks this operation read it): the first
        ``try_complete`` uses it instead of reading the same bytes again."""
        super().__init__()
        self.rm = rm
        self.request = request
        self.denied = denied
        self.respond = respond
        self._datas: list[FetchPartitionData] | None = None
        self._first_read = read

    def try_complete(self) -> bool:
        if self._first_read is not None:
            (datas, size, has_error), self._first_read = self._first_read, None
        else:
            datas, size, has_error = self.rm.read_partitions(self.request, self.denied)
        if size >= self.request.min_bytes or has_error or self._start_offset_news(datas):
            self._datas = datas
            return self.force_complete()
        return False

    def _start_offset_news(self, datas: list[FetchPartitionData]) -> bool:
        """A follower's fetch: whether the leader's start offset is above the one the follower
        reported (a DeleteRecords raised it), so the follower learns it now, not after
        ``max_wait_ms`` (a DeleteRecords waits for it). A caught-up follower's HW is the
        leader's, so its start offset reaches the leader's within one fetch: no busy loop."""
        if self.request.replica_id < 0:
            return False
        for fp, data in zip(self.request.partitions, datas, strict=True):  # any(), no generator
            if 0 <= fp.log_start_offset < data.log_start_offset:
                return True
        return False

    def on_complete(self) -> None:
        datas = self._datas
        if datas is None:  # expired: read what there is now
            datas, _, _ = self.rm.read_partitions(self.request, self.denied)
        self.respond(FetchResponse(self.request.correlation_id, NO_ERROR, tuple(datas)))


class LowWatermarkView(Protocol):
    """What a delayed DeleteRecords reads of the replica manager (no import of it)."""

    @property
    def partitions(self) -> Mapping[TopicPartition, Partition]:
        """The partitions hosted here."""
        ...

    def low_watermark(self, partition: Partition) -> int:
        """The smallest durable log start offset over the replicas of ``partition`` a
        deletion must reach before it is acknowledged."""
        ...


@dataclass
class DeleteRecordsStatus:
    """Where one partition of a DeleteRecords stands: the offset its low watermark must
    reach, under the leader epoch that raised the leader's start offset."""

    required_offset: int
    leader_epoch: int
    low_watermark: int = -1
    error: Errors = Errors.NONE
    pending: bool = True


class DelayedDeleteRecords(DelayedOperation):
    """DeleteRecords: waits until the low watermark of each partition reaches its offset
    (KIP-107). Leadership lost meanwhile: NOT_LEADER_OR_FOLLOWER; the dir offline:
    KAFKA_STORAGE_ERROR; not reached in time: REQUEST_TIMED_OUT. Partitions that failed at
    once carry their error in ``results`` and no status."""

    def __init__(self, rm: LowWatermarkView, correlation_id: int,
                 results: list[tuple[TopicPartition, DeleteRecordsPartitionResult]],
                 statuses: dict[TopicPartition, DeleteRecordsStatus],
                 respond: Callable[[DeleteRecordsResponse], None]) -> None:
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
            partition = _still_leading(self.rm.partitions, tp, status.leader_epoch)
            if isinstance(partition, Errors):
                status.error = partition
                status.pending = False
            else:
                low = self.rm.low_watermark(partition)
                if low >= status.required_offset:
                    # Acknowledged only once durable on the leader (and, by what the followers
                    # report, on every replica counted): hazard 12.
                    log = partition.log
                    assert (log.start_offset_checkpoint is None
                            or log.durable_log_start_offset >= status.required_offset), (
                        f"{tp}: a deletion acknowledged before the leader's start offset is "
                        "durable")
                    partition.raise_isr_floor(low)
                    status.low_watermark = low
                    status.pending = False
        if any(s.pending for s in self.statuses.values()):
            return False
        return self.force_complete()

    def on_complete(self) -> None:
        by_topic: dict[str, list[DeleteRecordsPartitionResult]] = {}
        for tp, result in self.results:
            status = self.statuses.get(tp)
            if status is not None:
                if status.pending:
                    result = DeleteRecordsPartitionResult(tp.partition, -1,
                                                          Errors.REQUEST_TIMED_OUT)
                elif status.error is not Errors.NONE:
                    result = DeleteRecordsPartitionResult(tp.partition, -1, status.error)
                else:
                    result = DeleteRecordsPartitionResult(tp.partition, status.low_watermark)
            by_topic.setdefault(tp.topic, []).append(result)
        self.respond(DeleteRecordsResponse(self.correlation_id, tuple(
            DeleteRecordsTopicResult(name, tuple(parts)) for name, parts in by_topic.items())))


__all__ = ["DelayedDeleteRecords", "DelayedFetch", "DelayedProduce", "DeleteRecordsStatus",
           "LowWatermarkView", "ProduceStatus", "ReplicaView"]
