"""Fetchers: the machinery that keeps a local replica following a source (KIP-461).

Invariant upheld: FailureContained (spec/FetcherFailure.tla, hazards 5 and 6). A failure while
working on one partition stays with that partition:
- a storage error or an unexpected error while truncating or appending one partition marks only
  that partition failed: it leaves its fetcher's partition states and lag stats and joins the
  manager's failed set; the fetcher goes on with the others; a fetcher with nothing left shuts
  down;
- corrupt or invalid records are not a failure: the partition is retried after
  ``replica.fetch.backoff.ms``;
- FENCED_LEADER_EPOCH fails the partition only when the request carried the epoch the fetcher
  still holds for it, for the membership it still has (an answer to a request sent before the
  partition was removed and added again, say for the previous id of a re-created topic, which
  starts again at epoch 0, is stale too); when a newer epoch is already known the fence is
  stale and ignored;
- a partition re-added with a new leader epoch (LeaderAndIsr) is un-failed, and one removed
  (StopReplica, or becoming leader) leaves the failed set.

Truncation follows the leader epoch protocol (KIP-101, KIP-279), never the high watermark alone: a
partition starts TRUNCATING; the fetcher asks the source for the end offset of the partition's
latest local epoch, truncates to the smaller of that and its own end of the epoch the source
answered, and asks again when the source answered an epoch the replica does not have.

A fetcher is driven by the injected scheduler (one task; at most one request in flight, like one
Kafka fetcher thread with its one connection). Where it reads from is a ``FetchSource`` and what it
fills is a ``FetchTarget``, so the same machinery serves the replica fetchers (source: the leader,
over the network) and, later, the dir-move copier (source: the local current log).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Final, Protocol

from logwright.errors import NO_ERROR, CorruptRecordError, Errors, KafkaStorageError
from logwright.identity import TopicPartition
from logwright.protocol import (
    NO_EPOCH,
    FetchPartition,
    FetchPartitionData,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochResult,
)
from logwright.world.clock import Clock
from logwright.world.scheduler import Scheduler, Task
from logwright.world.trace import FETCHER_FAILURE, NO_TRACE, TraceRecorder, topic_id_text

UNDEFINED_EPOCH_OFFSET = -1

FetchCallback = Callable[[Mapping[TopicPartition, FetchPartitionData] | None], None]
EpochCallback = Callable[[Mapping[TopicPartition, OffsetForLeaderEpochResult] | None], None]


class FetchSource(Protocol):
    """Where a fetcher reads from. A callback gets None when no answer came (timeout, error)."""

    source_id: int

    def fetch(self, partitions: Sequence[FetchPartition], callback: FetchCallback) -> None:
        """Read from each partition's fetch offset; answer through ``callback``."""
        ...

    def end_offsets_for_epochs(self, partitions: Sequence[OffsetForLeaderEpochPartition],
                               callback: EpochCallback) -> None:
        """OffsetForLeaderEpoch for each partition; answer through ``callback``."""
        ...

    def close(self) -> None:
        """Stop: no callback runs after this."""
        ...


class FetchTarget(Protocol):
    """The local replica a fetcher fills. Every method may raise: KafkaStorageError (the
    partition fails), CorruptRecordError (retried after the backoff), anything else (fails)."""

    def log_end_offset(self, tp: TopicPartition) -> int:
        """The replica's log end offset."""
        ...

    def log_start_offset(self, tp: TopicPartition) -> int:
        """The replica's log start offset (sent to the source, Fetch v5+)."""
        ...

    def high_watermark(self, tp: TopicPartition) -> int:
        """The replica's high watermark."""
        ...

    def latest_epoch(self, tp: TopicPartition) -> int | None:
        """The newest epoch in the replica's leader epoch cache, or None if it has none."""
        ...

    def end_offset_for_epoch(self, tp: TopicPartition, epoch: int) -> tuple[int, int] | None:
        """The replica's own (largest epoch <= ``epoch``, end offset of it), or None."""
        ...

    def truncate(self, tp: TopicPartition, offset: int) -> None:
        """Remove everything at or above ``offset`` (log and epoch cache)."""
        ...

    def truncate_fully_and_start_at(self, tp: TopicPartition, offset: int) -> None:
        """Restart the replica empty at ``offset`` (below the source's log start offset)."""
        ...

    def restart_below_start(self, tp: TopicPartition, offset: int) -> None:
        """Restart the replica, whose log is empty, at ``offset`` below its own start offset
        (the source's log ends below it: records lost by every replica that held them)."""
        ...

    def process_partition_data(self, tp: TopicPartition, fetch_offset: int,
                               data: FetchPartitionData) -> int:
        """Append fetched records and apply the source's offsets; returns the next fetch offset."""
        ...


class FetchState(enum.Enum):
    """Where a partition is in its fetcher's cycle."""

    TRUNCATING = "truncating"
    FETCHING = "fetching"


# Read per message: globals, not enum lookups (``logwright.errors.NO_ERROR`` says why).
_TRUNCATING: Final = FetchState.TRUNCATING
_FETCHING: Final = FetchState.FETCHING
_FENCED: Final = Errors.FENCED_LEADER_EPOCH


@dataclass
class PartitionFetchState:
    """One partition's state in a fetcher."""

    fetch_offset: int
    current_leader_epoch: int
    state: FetchState
    delayed_until_ms: int = 0
    lag: int | None = None
    topic_id: object | None = None
    """The topic id of the replica this membership fetches for, as the trace names it (set
    only with the trace on): an answer to a request sent for it is about that generation."""


@dataclass(frozen=True)
class InitialFetchState:
    """How a partition joins a fetcher: its source, the leader epoch, the offset to start at."""

    source_id: int
    current_leader_epoch: int
    init_offset: int


@dataclass(frozen=True)
class FailedPartition:
    """Why and at which leader epoch a partition left its fetcher."""

    leader_epoch: int
    reason: str
    action: str = "StorageError"
    """The FetcherFailure action that failed it: ``FetchFenced`` or ``StorageError``."""


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, in 32-bit two's complement."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return _int32(h)


def kafka_fetcher_id(tp: TopicPartition, num_fetchers: int) -> int:
    """The fetcher a partition belongs to: Kafka's ``abs(31 * topic.hashCode + partition) %
    num.replica.fetchers`` with Java's String hash, so the spread matches Kafka's and does not
    depend on Python's per-process string hash seed."""
    assert num_fetchers > 0
    value = (31 * java_string_hash(tp.topic) + tp.partition) & 0xFFFFFFFF
    signed = _int32(value)
    return (0 if signed == -(1 << 31) else abs(signed)) % num_fetchers


def _int32(value: int) -> int:
    return value - (1 << 32) if value >= (1 << 31) else value


class Fetcher:
    """One fetcher: a set of partitions read from one source, one request at a time."""

    def __init__(self, manager: FetcherManager, fetcher_id: int, source: FetchSource) -> None:
        self.manager = manager
        self.fetcher_id = fetcher_id
        self.source = source
        self.name = f"{manager.name} fetcher-{fetcher_id} source-{source.source_id}"
        self.partitions: dict[TopicPartition, PartitionFetchState] = {}
        self.in_flight = False
        self.running = True
        self.dead = False
        self.death_cause: BaseException | None = None
        self._task: Task | None = None
        self._task_due_ms = 0
        self.requests_sent = 0

    # ---- membership ----------------------------------------------------------------------------

    def add_partitions(self, initial: Mapping[TopicPartition, InitialFetchState]) -> None:
        """Start fetching these partitions (TRUNCATING first); a partition already here at the
        same leader epoch keeps its position."""
        for tp, init in initial.items():
            current = self.partitions.get(tp)
            if current is not None and current.current_leader_epoch == init.current_leader_epoch:
                continue
            self.partitions[tp] = PartitionFetchState(
                init.init_offset, init.current_leader_epoch, FetchState.TRUNCATING,
                topic_id=(self.manager.trace_topic_id(tp) if self.manager.trace.enabled
                          else None))
        self._wake(0)

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """Stop fetching these partitions (an answer in flight for them will be ignored)."""
        for tp in tps:
            self.partitions.pop(tp, None)

    def shutdown(self) -> None:
        """Stop for good: no request, no callback work after this."""
        self.running = False
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self.source.close()

    # ---- the work loop -------------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        return self.manager.clock

    def _wake(self, delay_ms: int) -> None:
        if not self.running:
            return
        manager = self.manager
        delay_ms = max(0, delay_ms)
        due = manager.clock.now_ms() + delay_ms
        task = self._task
        if task is not None and not task.cancelled:
            if self._task_due_ms <= due:
                return
            task.cancel()
        self._task_due_ms = due
        self._task = manager.scheduler.schedule(self.name, self._run, delay_ms)

    def _run(self) -> None:
        self._task = None
        if not self.running:
            return
        try:
            self._do_work()
        except AssertionError:
            raise  # a broken invariant is a bug: fail the run loudly
        except Exception as exc:  # a fetcher-wide error kills only this fetcher
            self._die(exc)

    def _die(self, exc: BaseException) -> None:
        # Kafka's DeadThreadCount: the fetcher stops, its partitions are no longer fetched.
        self.dead = True
        self.death_cause = exc
        self.shutdown()

    def _do_work(self) -> None:
        if self.in_flight:
            return
        now = self.manager.clock.now_ms()
        truncating: list[OffsetForLeaderEpochPartition] = []
        for tp, st in list(self.partitions.items()):
            if (tp not in self.partitions or st.state is not _TRUNCATING
                    or st.delayed_until_ms > now):
                continue  # failed meanwhile (its dir went offline), or not ready
            ok, latest = self._partition_op(tp, partial(self.manager.target.latest_epoch, tp))
            if not ok:
                continue
            if latest is None:
                self._truncate_without_epochs(tp, st)
                continue
            assert isinstance(latest, int)
            truncating.append(OffsetForLeaderEpochPartition(tp, st.current_leader_epoch, latest))
        if truncating:
            self._send_epoch_request(truncating)
            return
        fetching: list[FetchPartition] = []
        for tp, st in list(self.partitions.items()):
            if (tp not in self.partitions or st.state is not _FETCHING
                    or st.delayed_until_ms > now):
                continue
            # Its start offset, then its latest epoch, under one containment: a failure of
            # either is handled as _partition_op handles it, and the second is not asked after
            # a failure of the first.
            ok, position = self._partition_op(tp, partial(self._fetch_position, tp))
            if not ok:
                continue
            assert isinstance(position, tuple)
            log_start, latest = position
            assert isinstance(log_start, int)
            assert latest is None or isinstance(latest, int)
            # The latest epoch of its cache: the leader takes it into the ISR only once it has
            # recorded the leader's epoch (Partition.replicas_to_add_to_isr).
            fetching.append(FetchPartition(tp, st.current_leader_epoch, st.fetch_offset, log_start,
                                           self.manager.partition_max_bytes,
                                           NO_EPOCH if latest is None else latest))
        if fetching:
            self._send_fetch(fetching)
            return
        if self.partitions:
            # Truncations done locally make new work at once; otherwise wait out the backoff.
            ready = [st for st in self.partitions.values() if st.delayed_until_ms <= now]
            if ready:
                self._wake(0)
            else:
                self._wake(min(st.delayed_until_ms for st in self.partitions.values()) - now)
        else:
            self.manager.shutdown_idle_fetchers()

    def _fetch_position(self, tp: TopicPartition) -> tuple[int, int | None]:
        """What a fetch of ``tp`` reports besides its offset: the replica's log start offset and
        its latest epoch (asked in that order)."""
        target = self.manager.target
        return target.log_start_offset(tp), target.latest_epoch(tp)

    # ---- per-partition containment -------------------------------------------------------------

    def _partition_op(self, tp: TopicPartition, op: Callable[[], object]) -> tuple[bool, object]:
        """Run ``op`` for ``tp``, containing its failure to ``tp``. Returns (True, op's result),
        or (False, None) if it raised (the partition is then failed or backed off)."""
        try:
            return True, op()
        except AssertionError:
            raise
        except CorruptRecordError as exc:
            self._back_off(tp, f"invalid records: {exc}")
        except KafkaStorageError as exc:
            self._mark_failed(tp, f"storage error: {exc}", "StorageError")
        except Exception as exc:  # KIP-461: fails one partition
            self._mark_failed(tp, f"unexpected {type(exc).__name__}: {exc}", "StorageError")
        return False, None

    def _back_off(self, tp: TopicPartition, reason: str) -> None:
        st = self.partitions.get(tp)
        if st is not None:
            st.delayed_until_ms = self.clock.now_ms() + self.manager.backoff_ms
            self.manager.backoffs += 1
            self.manager.last_backoff_reason[tp] = reason

    def _mark_failed(self, tp: TopicPartition, reason: str, action: str = "") -> None:
        st = self.partitions.pop(tp, None)
        if st is None:
            return
        if action and self.manager.trace.enabled:
            self.manager.trace_fetcher(tp, action, {"epoch": st.current_leader_epoch},
                                       {"failedEpoch": st.current_leader_epoch, "fetching": False})
        self.manager.partition_failed(
            tp, FailedPartition(st.current_leader_epoch, reason, action or "StorageError"))

    def _on_fenced(self, tp: TopicPartition, request_epoch: int,
                   sent: PartitionFetchState | None) -> None:
        """A FENCED_LEADER_EPOCH answer: fails the partition only if the request was sent for
        its membership of this fetcher as it still is (the same state, not a partition removed
        and added again meanwhile: a re-created topic starts again at leader epoch 0, so the
        epoch alone cannot tell an answer about the previous topic id from one about this
        one) and at the epoch it still holds."""
        st = self.partitions.get(tp)
        if st is not None and st is sent and st.current_leader_epoch == request_epoch:
            self._mark_failed(tp, f"fenced at leader epoch {request_epoch}", "FetchFenced")
        else:
            # A newer epoch is already known here: the fence answered an old request (hazard 6).
            self.manager.stale_fences += 1
            if self.manager.trace.enabled:
                # Named by the generation the request was sent for: a topic deleted and
                # re-created has the partition back in this fetcher under another topic id.
                self.manager.trace_fetcher(tp, "FetchFenced", {"epoch": request_epoch}, {},
                                           sent.topic_id if sent is not None else None)

    # ---- truncation ----------------------------------------------------------------------------

    def _truncate_without_epochs(self, tp: TopicPartition, st: PartitionFetchState) -> None:
        target = self.manager.target

        def op() -> None:
            if target.log_end_offset(tp) > target.log_start_offset(tp):
                # Records without any leader epoch (never written by logwright, whose batches
                # all carry one, and whose cache is rebuilt from them): Kafka's fallback for
                # logs from before KIP-101 is the high watermark.
                target.truncate(tp, target.high_watermark(tp))
            st.state = FetchState.FETCHING
            st.fetch_offset = target.log_end_offset(tp)
        self._partition_op(tp, op)

    def _send_epoch_request(self, partitions: list[OffsetForLeaderEpochPartition]) -> None:
        requested = {p.tp: (p.current_leader_epoch, self.partitions.get(p.tp))
                     for p in partitions}
        self.in_flight = True
        self.requests_sent += 1
        self.source.end_offsets_for_epochs(
            partitions, lambda results: self._on_epoch_response(requested, results))

    def _on_epoch_response(self, requested: dict[TopicPartition,
                                                 tuple[int, PartitionFetchState | None]],
                           results: Mapping[TopicPartition, OffsetForLeaderEpochResult] | None
                           ) -> None:
        self.in_flight = False
        if not self.running:
            return
        for tp, (request_epoch, sent) in requested.items():
            st = self.partitions.get(tp)
            if st is None:
                continue
            result = results.get(tp) if results is not None else None
            if result is not None and result.error is Errors.FENCED_LEADER_EPOCH:
                self._on_fenced(tp, request_epoch, sent)
                continue
            if (st is not sent or st.state is not FetchState.TRUNCATING
                    or st.current_leader_epoch != request_epoch):
                continue  # the partition moved on (or left and came back) meanwhile
            if (result is None or result.error is not Errors.NONE
                    or result.end_offset == UNDEFINED_EPOCH_OFFSET):
                # No answer, the source is not (yet) the leader, or it knows no such epoch:
                # never guess from the high watermark; ask again after the backoff.
                self._back_off(tp, f"offsets for leader epoch: "
                               f"{result.error.name if result else 'no answer'}")
                continue
            self._partition_op(tp, partial(self._truncate_to_epoch, tp, st, result.leader_epoch,
                                           result.end_offset))
        self._wake(0)

    def _truncate_to_epoch(self, tp: TopicPartition, st: PartitionFetchState, leader_epoch: int,
                           leader_end_offset: int) -> None:
        target = self.manager.target
        log_end = target.log_end_offset(tp)
        own = target.end_offset_for_epoch(tp, leader_epoch)
        if own is None:
            offset, done = min(leader_end_offset, log_end), True
        elif own[0] != leader_epoch:
            # The source answered an epoch this replica never saw: cut back to the end of the
            # replica's own epoch below it and ask again about that one.
            offset, done = min(own[1], log_end), False
        else:
            offset, done = min(leader_end_offset, own[1], log_end), True
        target.truncate(tp, offset)
        st.delayed_until_ms = 0
        if done:
            st.state = FetchState.FETCHING
            st.fetch_offset = target.log_end_offset(tp)

    # ---- fetching ------------------------------------------------------------------------------

    def _send_fetch(self, partitions: list[FetchPartition]) -> None:
        requested = {p.tp: (p.fetch_offset, p.current_leader_epoch, self.partitions.get(p.tp))
                     for p in partitions}
        self.in_flight = True
        self.requests_sent += 1
        self.source.fetch(partitions, partial(self._on_fetch_response, requested))

    def _on_fetch_response(self, requested: dict[TopicPartition,
                                                 tuple[int, int, PartitionFetchState | None]],
                           results: Mapping[TopicPartition, FetchPartitionData] | None) -> None:
        self.in_flight = False
        if not self.running:
            return
        for tp, (fetch_offset, request_epoch, sent) in requested.items():
            st = self.partitions.get(tp)
            if st is None:
                continue
            data = results.get(tp) if results is not None else None
            if data is not None and data.error is _FENCED:
                self._on_fenced(tp, request_epoch, sent)
                continue
            if (st is not sent or st.state is not _FETCHING
                    or st.current_leader_epoch != request_epoch
                    or st.fetch_offset != fetch_offset):
                continue  # the partition moved on (or left and came back) meanwhile
            if data is None:
                self._back_off(tp, "no answer")
            elif data.error is NO_ERROR and data.diverging_epoch >= 0:
                st.state = FetchState.TRUNCATING
            elif data.error is NO_ERROR:
                self._process(tp, st, fetch_offset, data)
                if self.manager.trace.enabled and tp in self.partitions:
                    self.manager.trace_fetcher(tp, "FetchOk", {"epoch": request_epoch}, {})
            elif data.error is Errors.OFFSET_OUT_OF_RANGE:
                self._partition_op(tp, partial(self._out_of_range, tp, st, data))
            else:
                self._back_off(tp, f"fetch: {data.error.name}")
        got_data = False  # any(d.records for d in results.values()), without a generator
        if results is not None:
            for d in results.values():
                if d.records:
                    got_data = True
                    break
        self._wake(0 if got_data else self.manager.idle_backoff_ms)

    def _process(self, tp: TopicPartition, st: PartitionFetchState, fetch_offset: int,
                 data: FetchPartitionData) -> None:
        ok, next_offset = self._partition_op(
            tp, partial(self.manager.target.process_partition_data, tp, fetch_offset, data))
        if ok:
            assert isinstance(next_offset, int)
            assert next_offset >= fetch_offset or not data.records, "a fetch never moves back"
            st.fetch_offset = next_offset
            st.delayed_until_ms = 0
            st.lag = max(0, data.high_watermark - next_offset) if data.high_watermark >= 0 else None

    def _out_of_range(self, tp: TopicPartition, st: PartitionFetchState,
                      data: FetchPartitionData) -> None:
        target = self.manager.target
        leader_start = data.log_start_offset
        if 0 <= target.log_end_offset(tp) < leader_start:
            # The source deleted what this replica still needs: restart empty at its start
            # offset, with high watermark and start offset equal (hazard 8).
            target.truncate_fully_and_start_at(tp, leader_start)
            st.fetch_offset = target.log_end_offset(tp)
        elif (target.log_end_offset(tp) == target.log_start_offset(tp)
              and 0 <= data.high_watermark < target.log_start_offset(tp)):
            # Empty, and its start offset lies beyond the source's end: the records below it
            # were lost by every replica that held them (the source led after a recovery or an
            # unclean election). Nothing is left to truncate, so the epoch protocol cannot
            # help: restart empty at the source's high watermark, below the start offset.
            target.restart_below_start(tp, data.high_watermark)
            st.fetch_offset = target.log_end_offset(tp)
        else:
            # Ahead of the source's end: find the common point by the epoch protocol again.
            st.state = FetchState.TRUNCATING
            st.delayed_until_ms = self.clock.now_ms() + self.manager.backoff_ms

    # ---- stats ---------------------------------------------------------------------------------

    @property
    def max_lag(self) -> int:
        """The largest lag (source high watermark minus fetch offset) among its partitions."""
        return max((st.lag for st in self.partitions.values() if st.lag is not None), default=0)


class FetcherManager:
    """All fetchers of one kind on a broker, keyed by (source, fetcher id), and the failed set.

    ``client_id`` is Kafka's metric tag: "Replica" for replica fetchers, "ReplicaAlterLogDirs" for
    the dir-move copier.
    """

    def __init__(self, name: str, client_id: str, num_fetchers: int,
                 source_factory: Callable[[int, int], FetchSource], target: FetchTarget,
                 clock: Clock, scheduler: Scheduler, backoff_ms: int,
                 partition_max_bytes: int, idle_backoff_ms: int = 0) -> None:
        assert num_fetchers > 0 and backoff_ms > 0 and partition_max_bytes > 0
        assert idle_backoff_ms >= 0
        self.name = name
        self.client_id = client_id
        self.num_fetchers = num_fetchers
        self.source_factory = source_factory
        self.target = target
        self.clock = clock
        self.scheduler = scheduler
        self.backoff_ms = backoff_ms
        self.partition_max_bytes = partition_max_bytes
        # How long to wait after a fetch that brought nothing. A leader parks a follower's fetch
        # (replica.fetch.wait.max.ms), so replica fetchers need no wait of their own; a source
        # that answers at once (a local log) needs one, or the fetcher would spin.
        self.idle_backoff_ms = idle_backoff_ms
        self.fetchers: dict[tuple[int, int], Fetcher] = {}
        self.dead_fetchers: list[Fetcher] = []
        self.failed_partitions: dict[TopicPartition, FailedPartition] = {}
        self.backoffs = 0
        self.stale_fences = 0
        self.last_backoff_reason: dict[TopicPartition, str] = {}
        self.running = True
        #: The trace recorder (``world/trace.py``) and the broker it reports for.
        self.trace: TraceRecorder = NO_TRACE
        self.trace_broker = -1
        #: The topic id of this broker's replica of a partition, for the trace's events.
        self.trace_topic_id: Callable[[TopicPartition], object | None] = lambda tp: None
        self._trace_alive = False

    def fetcher_id(self, tp: TopicPartition) -> int:
        """Which of the ``num.replica.fetchers`` fetchers per source ``tp`` belongs to."""
        return kafka_fetcher_id(tp, self.num_fetchers)

    def add_fetcher_for_partitions(self, initial: Mapping[TopicPartition, InitialFetchState]
                                   ) -> None:
        """Fetch these partitions from their sources; each is un-failed (KIP-461: a new leader
        epoch ends a failure)."""
        assert self.running
        groups: dict[tuple[int, int], dict[TopicPartition, InitialFetchState]] = {}
        for tp, init in initial.items():
            self.failed_partitions.pop(tp, None)
            key = (init.source_id, self.fetcher_id(tp))
            for other_key, other in self.fetchers.items():
                if other_key != key and tp in other.partitions:
                    other.remove_partitions([tp])
            groups.setdefault(key, {})[tp] = init
        for key, states in groups.items():
            fetcher = self.fetchers.get(key)
            if fetcher is not None and fetcher.dead:
                # A dead fetcher is replaced; it still counts in DeadThreadCount, and the
                # partitions it stranded restart in the new one.
                self.dead_fetchers.append(fetcher)
                stranded = {tp: InitialFetchState(key[0], st.current_leader_epoch,
                                                  st.fetch_offset)
                            for tp, st in fetcher.partitions.items() if tp not in states}
                states = {**stranded, **states}
                fetcher = None
            if fetcher is None:
                fetcher = Fetcher(self, key[1], self.source_factory(key[0], key[1]))
                self.fetchers[key] = fetcher
            fetcher.add_partitions(states)
        self.shutdown_idle_fetchers()

    def remove_fetcher_for_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """Stop fetching these partitions, and forget any failure of theirs (StopReplica, or the
        replica became leader). A fetcher left empty lives on until ``shutdown_idle_fetchers``
        (the caller may be about to re-add the partition, as a new leader epoch does)."""
        tps = list(tps)
        for fetcher in self.fetchers.values():
            fetcher.remove_partitions(tps)
        for tp in tps:
            self.failed_partitions.pop(tp, None)

    def mark_partitions_failed(self, tps: Iterable[TopicPartition], reason: str) -> None:
        """Fail these partitions wherever they are fetched (their log dir went offline)."""
        for tp in tps:
            for fetcher in list(self.fetchers.values()):
                if tp in fetcher.partitions:
                    fetcher._mark_failed(tp, reason, "StorageError")
        self.shutdown_idle_fetchers()

    def partition_failed(self, tp: TopicPartition, failure: FailedPartition) -> None:
        """Called by a fetcher that dropped ``tp``."""
        self.failed_partitions[tp] = failure
        self.shutdown_idle_fetchers()

    def shutdown_idle_fetchers(self) -> None:
        """Shut down and forget every fetcher with no partition left."""
        for key, fetcher in list(self.fetchers.items()):
            if not fetcher.partitions and not fetcher.dead:
                fetcher.shutdown()
                del self.fetchers[key]
        if self.trace.enabled:
            alive = any(f.partitions for f in self.fetchers.values() if not f.dead)
            if alive:
                self._trace_alive = True
            elif self._trace_alive:
                self._trace_alive = False
                self.trace.emit(f"broker-{self.trace_broker}", FETCHER_FAILURE,
                                f"broker-{self.trace_broker}", "ShutdownIdle", {"f": 1},
                                {"alive": False})

    def trace_fetcher(self, tp: TopicPartition, action: str, args: Mapping[str, object],
                      changed: Mapping[str, object], topic_id: object | None = None) -> None:
        """Record a FetcherFailure event of ``tp`` (trace on only), of the replica's present
        topic id unless ``topic_id`` names the one the event is about."""
        tid = topic_id if topic_id is not None else self.trace_topic_id(tp)
        a: dict[str, object] = {"tp": f"{tp.topic}-{tp.partition}",
                                "topicId": topic_id_text(tid)}
        a.update(args)
        self.trace.emit(f"broker-{self.trace_broker}", FETCHER_FAILURE,
                        f"broker-{self.trace_broker}", action, a, changed)

    def shutdown(self) -> None:
        """Stop every fetcher."""
        self.running = False
        for fetcher in self.fetchers.values():
            fetcher.shutdown()
        self.fetchers.clear()

    # ---- inspection and metrics ----------------------------------------------------------------

    def fetch_state(self, tp: TopicPartition) -> PartitionFetchState | None:
        """``tp``'s state in whichever fetcher holds it."""
        for fetcher in self.fetchers.values():
            st = fetcher.partitions.get(tp)
            if st is not None:
                return st
        return None

    def fetcher_of(self, tp: TopicPartition) -> Fetcher | None:
        """The fetcher holding ``tp``, if any."""
        for fetcher in self.fetchers.values():
            if tp in fetcher.partitions:
                return fetcher
        return None

    @property
    def failed_partitions_count(self) -> int:
        """KIP-461's FailedPartitionsCount."""
        return len(self.failed_partitions)

    @property
    def dead_thread_count(self) -> int:
        """Kafka's DeadThreadCount: fetchers stopped by an error outside any one partition."""
        return len(self.dead_fetchers) + sum(1 for f in self.fetchers.values() if f.dead)

    @property
    def max_lag(self) -> int:
        """Kafka's MaxLag: the largest lag of any partition of any live fetcher."""
        return max((f.max_lag for f in self.fetchers.values() if not f.dead), default=0)
