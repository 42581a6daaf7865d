"""The dir-move fetcher: moves replicas between one broker's log dirs (KIP-113; Kafka's
ReplicaAlterLogDirsManager and its thread). docs/jbod.md.

Per partition being moved, the log manager holds a future log in the destination dir; this
component fills it from the partition's current log (leader or follower alike) and, once it has
caught up, swaps it in. The steps follow the ReplicaMove model (spec/README.md "ReplicaMove"):

- C, the copy: records are read from the current log at the FUTURE log's own end offset, never
  from the current log's high watermark (hazard 10, KAFKA-9087), and only below the current
  log's recovery point, i.e. records already fsynced there; when the future log has all of
  those, the current log is fsynced so the copy can go on. The future log's high watermark and
  start offset follow the current log's (a DeleteRecords during the copy raises it), and a
  truncation of the current log (a follower diverging from its leader) truncates the future
  log too, by the leader epoch protocol against the current log.
- S1 ``BeginSwap``: once the future log holds every fsynced record, the swap takes the
  partition's append lock, fsyncs the current log and copies the rest; S2 to S5 are the log
  manager's (``LogManager.swap_future_log``); S6 ``EndSwap``: the partition's log becomes the
  moved one (``on_swapped``) and the lock is released. The swap is one step of the broker's
  single-threaded driver, so an append that arrives meanwhile is handled after S6: appends
  wait, none is refused.

Several moves run one partition at a time, in order of (topic, partition): the first unfinished
one gets all the bandwidth. The rate is throttled by
``replica.alter.log.dirs.io.max.bytes.per.second`` in virtual time (a token bucket).

Invariant upheld (KIP-461, FailureContained): an error while copying one partition fails that
partition alone (counted in the ReplicaAlterLogDirs ``FailedPartitionsCount``); the others go
on. A storage error also drops the future log (its dir is offline; its files stay on disk). A
failed partition is resumed only by a LeaderAndIsr with a higher leader epoch than the one it
failed under.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from logwright.broker.fetcher import FailedPartition
from logwright.errors import CorruptRecordError, KafkaStorageError, LogwrightError
from logwright.identity import TopicPartition
from logwright.logmanager import LogManager
from logwright.storage.log import PartitionLog
from logwright.world.clock import Clock
from logwright.world.scheduler import Scheduler, Task

_logger = logging.getLogger(__name__)

UNTHROTTLED = 2**63 - 1
"""``replica.alter.log.dirs.io.max.bytes.per.second``'s default (Kafka's Long.MAX_VALUE)."""


@dataclass
class MoveStats:
    """What the dir-move fetcher has done (for tests, benchmarks and metrics)."""

    bytes_copied: int = 0
    swaps: int = 0
    steps: int = 0


class DirMoveFetcher:
    """The broker's dir-move copier: every running move of this broker, driven by the injected
    scheduler.

    ``leader_epoch(tp)`` is the partition's current leader epoch (failures are recorded under
    it); ``on_swapped(tp, log)`` makes ``log`` the partition's log (S6); ``on_start_offset(tp)``
    is told when a future log's start offset rose (DeleteRecords waiting on the low watermark);
    ``on_storage_error()`` when a dir failed during a copy.
    """

    def __init__(self, broker_id: int, log_manager: LogManager, clock: Clock,
                 scheduler: Scheduler, *, rate_bytes_per_s: int, max_bytes: int,
                 backoff_ms: int, leader_epoch: Callable[[TopicPartition], int],
                 on_swapped: Callable[[TopicPartition, PartitionLog], None],
                 on_start_offset: Callable[[TopicPartition], None],
                 on_storage_error: Callable[[], object]) -> None:
        assert rate_bytes_per_s > 0 and max_bytes > 0 and backoff_ms > 0
        self.name = f"broker-{broker_id} ReplicaAlterLogDirs"
        self.log_manager = log_manager
        self.clock = clock
        self.scheduler = scheduler
        self.rate_bytes_per_s = rate_bytes_per_s
        self.max_bytes = max_bytes
        self.backoff_ms = backoff_ms
        self.leader_epoch = leader_epoch
        self.on_swapped = on_swapped
        self.on_start_offset = on_start_offset
        self.on_storage_error = on_storage_error
        #: The partitions being moved (each has a future log in the log manager).
        self.moves: set[TopicPartition] = set()
        #: KIP-461: partitions whose copy failed, with the leader epoch they failed under.
        self.failed_partitions: dict[TopicPartition, FailedPartition] = {}
        #: Partitions inside S1..S6 (their append lock is held).
        self.swapping: set[TopicPartition] = set()
        self.stats = MoveStats()
        self.running = True
        self._task: Task | None = None
        self._tokens = 0.0
        self._refilled_ms = clock.now_ms()

    # ---- membership -------------------------------------------------------------------------

    def add(self, tp: TopicPartition) -> None:
        """Move ``tp`` (its future log exists): un-failed, copied from its future log's own end."""
        self.failed_partitions.pop(tp, None)
        self.moves.add(tp)
        trace = self.log_manager.move_trace
        src, fut = self.log_manager.get_log(tp), self.log_manager.get_future_log(tp)
        if trace.enabled and tp not in trace.moves and src is not None and fut is not None:
            trace.start(tp, src, fut, "resumed")  # after a restart (R3) or a failure
        self._wake(0)

    def remove(self, tp: TopicPartition) -> None:
        """Stop moving ``tp`` and forget any failure of it (cancelled, deleted or done)."""
        self.log_manager.move_trace.stop(tp, "no longer moved (cancelled or deleted)")
        self.moves.discard(tp)
        self.failed_partitions.pop(tp, None)

    def leader_and_isr(self, tp: TopicPartition, leader_epoch: int) -> None:
        """A LeaderAndIsr for ``tp`` was applied: a failed move is resumed only when
        ``leader_epoch`` is higher than the one it failed under (and its future log is still
        there); a future log found at start-up (R3) joins the moves."""
        failure = self.failed_partitions.get(tp)
        if failure is not None:
            if leader_epoch <= failure.leader_epoch:
                return
            del self.failed_partitions[tp]
        if self.log_manager.get_future_log(tp) is not None:
            self.add(tp)

    def fail(self, tp: TopicPartition, reason: str, drop_future: bool) -> None:
        """Fail ``tp``'s move (KIP-461): it leaves the moves, its future log dropped when
        ``drop_future`` (a storage error: the dir is offline)."""
        self.moves.discard(tp)
        self.failed_partitions[tp] = FailedPartition(self.leader_epoch(tp), reason)
        self.log_manager.move_trace.stop(tp, reason)
        if drop_future:
            self.log_manager.drop_future_log(tp)
        _logger.warning("%s: move of %s failed: %s", self.name, tp, reason)

    def shutdown(self) -> None:
        """Stop for good (the broker halts or shuts down): nothing runs after this."""
        self.running = False
        if self._task is not None:
            self._task.cancel()
            self._task = None

    @property
    def failed_partitions_count(self) -> int:
        """KIP-461's FailedPartitionsCount of ReplicaAlterLogDirs."""
        return len(self.failed_partitions)

    # ---- the work loop ----------------------------------------------------------------------

    def _wake(self, delay_ms: int) -> None:
        if not self.running or self._task is not None:
            return
        self._task = self.scheduler.schedule(self.name, self._run, max(0, delay_ms))

    def _refill(self) -> None:
        now = self.clock.now_ms()
        if self.rate_bytes_per_s >= UNTHROTTLED:
            self._tokens = float(self.max_bytes)
        else:
            burst = max(self.rate_bytes_per_s / 10, 1.0)
            self._tokens = min(burst, self._tokens
                               + self.rate_bytes_per_s * (now - self._refilled_ms) / 1000)
        self._refilled_ms = now

    def _run(self) -> None:
        self._task = None
        if not self.running:
            return
        self.stats.steps += 1
        self._refill()
        pending = sorted(self.moves, key=lambda tp: (tp.topic, tp.partition))
        if not pending:
            return
        if self._tokens <= 0:
            self._wake(self._wait_ms())
            return
        # ONE PARTITION AT A TIME, in order: the first unfinished one gets the bandwidth.
        progressed = self._step(pending[0])
        if not self.moves:
            return
        self._wake(self._wait_ms() if self._tokens <= 0 else (0 if progressed
                                                             else self.backoff_ms))

    def _wait_ms(self) -> int:
        deficit = 1.0 - self._tokens
        return max(1, int(-(-deficit * 1000 // self.rate_bytes_per_s)))

    def _step(self, tp: TopicPartition) -> bool:
        """One step of ``tp``'s move; whether it progressed (copied, truncated or swapped)."""
        lm = self.log_manager
        src, fut = lm.get_log(tp), lm.get_future_log(tp)
        if src is None or fut is None:
            self.remove(tp)
            return True
        if src.offline or fut.offline:
            self.fail(tp, "storage error: a log dir of the move is offline", drop_future=True)
            self.on_storage_error()
            return True
        try:
            progressed = self._follow(src, fut)
            budget = min(self.max_bytes, max(1, int(self._tokens)))
            copied = self.copy(src, fut, budget, src.recovery_point)
            if copied == 0 and fut.log_end_offset >= src.recovery_point \
                    and src.log_end_offset > src.recovery_point:
                src.flush()  # more of the source may be copied once it is fsynced (C)
                self.log_manager.trace_flushed(src)
                self.log_manager.move_trace.step(tp, "Flush", {"l": "src"})
                copied = self.copy(src, fut, budget, src.recovery_point)
            self._tokens -= copied
            progressed = self._follow(src, fut) or progressed or copied > 0
            if fut.log_end_offset >= src.recovery_point:
                # The copy made durable before the append lock is taken: under the lock S2
                # then fsyncs only what the swap itself copied, not the whole partition
                # (fsyncing a log is always allowed: the model's Flush(fut) at any time).
                fut.flush()
                self.log_manager.move_trace.step(tp, "Flush", {"l": "fut"})
                self.swap(tp, src, fut)
                return True
        except KafkaStorageError as exc:
            self.fail(tp, f"storage error: {exc.message}", drop_future=True)
            self.on_storage_error()
            return True
        except (CorruptRecordError, LogwrightError) as exc:
            self.fail(tp, f"{type(exc).__name__}: {exc}", drop_future=False)
            return True
        return progressed

    def copy(self, src: PartitionLog, fut: PartitionLog, max_bytes: int, limit: int) -> int:
        """C: append to ``fut``, at its own end offset, ``src``'s records below ``limit``
        (at most ``max_bytes``, at least one batch); returns the bytes copied."""
        start = fut.log_end_offset
        if start >= limit:
            return 0
        data = src.read(start, max_bytes, limit)
        if not data.records:
            return 0
        fut.append_as_follower(data.records)
        self.stats.bytes_copied += len(data.records)
        trace = self.log_manager.move_trace
        if trace.enabled:
            trace.step(fut.tp, "Copy", {"offset": start, "records": fut.log_end_offset - start},
                       locked=fut.tp in self.swapping)
        return len(data.records)

    def _follow(self, src: PartitionLog, fut: PartitionLog) -> bool:
        """Make ``fut`` follow ``src``'s truncation, start offset and high watermark; whether
        anything changed."""
        changed = False
        trace, locked = self.log_manager.move_trace, fut.tp in self.swapping
        if fut.log_end_offset > src.log_end_offset:
            fut.truncate_to(src.log_end_offset)
            trace.step(fut.tp, "TruncateSource", locked=locked)
            changed = True
        epoch = fut.latest_epoch
        if epoch is not None and fut.log_end_offset > fut.log_start_offset:
            # The leader epoch protocol against the current log: a follower that diverged from
            # its leader truncated and refetched; the future log drops what it no longer has.
            answer = src.end_offset_for_epoch(epoch)
            if answer is None:
                end = fut.log_start_offset
            else:
                found, end = answer
                if found < epoch:
                    own = fut.end_offset_for_epoch(found)
                    end = min(end, own[1] if own is not None else fut.log_start_offset)
            if end < fut.log_end_offset:
                fut.truncate_to(end)
                trace.step(fut.tp, "TruncateSource", locked=locked)
                changed = True
        if src.log_start_offset > fut.log_end_offset:
            fut.truncate_fully_and_start_at(src.log_start_offset)
            trace.step(fut.tp, "FollowStart", locked=locked)
            self.on_start_offset(fut.tp)
            changed = True
        hw = min(src.high_watermark, fut.log_end_offset)
        if hw > fut.high_watermark:
            fut.update_high_watermark(hw)
        start = min(src.log_start_offset, fut.high_watermark)
        if start > fut.log_start_offset:
            fut.increment_log_start_offset(start)
            fut.delete_segments_below_start_offset()
            trace.step(fut.tp, "FollowStart", locked=locked)
            self.on_start_offset(fut.tp)
            changed = True
        return changed

    def swap(self, tp: TopicPartition, src: PartitionLog, fut: PartitionLog) -> None:
        """S1 to S6: with the append lock held, fsync the source, copy the rest, then the log
        manager's S2..S5, then the partition's log becomes the moved one (S6)."""
        self.swapping.add(tp)  # S1 BeginSwap: the append lock
        trace = self.log_manager.move_trace
        trace.step(tp, "BeginSwap", locked=True)
        try:
            src.flush()
            self.log_manager.trace_flushed(src)
            trace.step(tp, "Flush", {"l": "src"}, locked=True)
            while fut.log_end_offset < src.log_end_offset:
                if not self.copy(src, fut, self.max_bytes, src.log_end_offset):
                    raise LogwrightError(f"{tp}: nothing to copy at {fut.log_end_offset}, below "
                                         f"the source's end {src.log_end_offset}")
            self._follow(src, fut)
            if fut.log_start_offset < src.log_start_offset:
                # The source's start offset lies above its high watermark's copy: not yet.
                trace.step(tp, "AbandonSwap", locked=False)
                return
            new = self.log_manager.swap_future_log(tp)  # S2..S5
            self.moves.discard(tp)
            self.stats.swaps += 1
            self.on_swapped(tp, new)  # S6 EndSwap: appends go to the moved log
            trace.step(tp, "EndSwap", current="fut", locked=False)
            trace.end(tp)
        finally:
            self.swapping.discard(tp)
