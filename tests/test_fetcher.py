"""KIP-461 on real brokers: a failure stays with its partition (hazard 5), a stale fence is
not a failure and a newer leader epoch un-fails (hazard 6), corrupt records are retried, an idle
fetcher shuts down; and the fetcher machinery over a local source (the dir-move copier's shape)."""

from __future__ import annotations

import dataclasses
import posixpath
import random
from collections.abc import Sequence

from logwright.broker.fetcher import (
    EpochCallback,
    FetchCallback,
    FetcherManager,
    InitialFetchState,
    java_string_hash,
    kafka_fetcher_id,
)
from logwright.broker.metrics import (
    DEAD_THREADS,
    FAILED_PARTITIONS,
    LOG_DIR_OFFLINE,
    MAX_LAG,
    OFFLINE_LOG_DIRS,
    OFFLINE_REPLICAS,
    UNDER_REPLICATED,
)
from logwright.errors import Errors, OffsetOutOfRange
from logwright.identity import Uuid
from logwright.protocol import (
    FetchPartition,
    FetchPartitionData,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochResult,
)
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.storage.naming import TopicPartition
from logwright.world import Fault, SimFileSystem, SimScheduler, VirtualClock
from tests.test_broker_harness import T0, T1, TOPIC_ID, World, fast_config, state


def test_fetcher_ids_follow_kafkas_hash() -> None:
    assert java_string_hash("hello") == 99162322  # Java's "hello".hashCode()
    assert java_string_hash("polygenelubricants") == -(2**31)  # hashes to Integer.MIN_VALUE
    assert kafka_fetcher_id(TopicPartition("hello", 0), 3) == 0
    assert kafka_fetcher_id(TopicPartition("hello", 1), 3) == 2
    assert {kafka_fetcher_id(TopicPartition("t", n), 1) for n in range(20)} == {0}
    assert {kafka_fetcher_id(TopicPartition("t", n), 4) for n in range(20)} == {0, 1, 2, 3}


def place(w: World, tp: TopicPartition, leader: int, epoch: int, isr: list[int],
          dirs: dict[int, str]) -> None:
    """Assign ``tp`` with each broker's replica in the dir given for it."""
    for broker_id in isr:
        r = w.lair(broker_id, [state(tp, leader, epoch, isr, log_dir=dirs.get(broker_id, "any"))])
        assert [e.error for e in r.partition_errors] == [Errors.NONE]


def test_one_partitions_dir_failing_does_not_stop_the_shared_fetcher() -> None:
    """hazard 5: t-0 and t-1 share broker 2's one fetcher; t-0's dir fails. t-1 keeps
    replicating, t-0 alone is failed, nothing dies."""
    w = World(broker_ids=(1, 2))
    place(w, T0, 1, 1, [1, 2], {2: "/b2/d1"})
    place(w, T1, 1, 1, [1, 2], {2: "/b2/d2"})
    fm = w.brokers[2].replica_manager.replica_fetcher_manager
    assert fm.fetcher_of(T0) is fm.fetcher_of(T1) is not None
    w.fs.inject_fault("/b2/d1", Fault.EIO)
    for i in range(5):
        w.produce(1, T0, [b"x%d" % i], acks=1)
        w.produce(1, T1, [b"y%d" % i], acks=1)
        w.run(200)
    assert w.run_until(lambda: w.partition(2, T1).log_end_offset == 5, 5_000)
    assert set(fm.failed_partitions) == {T0}
    assert fm.failed_partitions[T0].reason.startswith("storage error")
    assert fm.failed_partitions[T0].action == "StorageError"
    fetcher = fm.fetcher_of(T1)
    assert fetcher is not None and fetcher.running and not fetcher.dead
    assert T0 not in fetcher.partitions and fm.fetch_state(T0) is None  # gone from lag stats
    snap = w.brokers[2].snapshot()
    assert snap[FAILED_PARTITIONS] == 1 and snap[DEAD_THREADS] == 0
    assert snap[OFFLINE_LOG_DIRS] == 1 and snap[OFFLINE_REPLICAS] == 1
    assert snap[LOG_DIR_OFFLINE.format("/b2/d1")] == 1
    assert snap[LOG_DIR_OFFLINE.format("/b2/d2")] == 0
    # The leader drops the failed follower from t-0's ISR only; t-1 stays fully replicated.
    assert w.run_until(lambda: w.partition(1, T0).isr == (1,), 60_000)
    assert sorted(w.partition(1, T1).isr) == [1, 2]
    assert w.brokers[1].snapshot()[UNDER_REPLICATED] == 1
    assert w.produce(1, T0, [b"z"]).partitions[0].error is Errors.NONE
    assert w.produce(1, T1, [b"z"]).partitions[0].error is Errors.NONE
    assert w.values(2, T1) == w.values(1, T1)
    # The broker tells the controller which dir it lost.
    assert w.controller.heartbeats[-1].offline_log_dirs == ("/b2/d1",)


def test_a_dir_going_offline_fails_every_partition_fetched_into_it_even_an_idle_one() -> None:
    """Broker 2 follows t-0 (led by 1) and t-1 (led by 3) into the same dir, in two fetchers.
    Only t-0 receives records: its append fails the dir, and t-1, which fetches nothing and so
    never touches the disk, is failed with it, for the dir, at once."""
    w = World(broker_ids=(1, 2, 3))
    place(w, T0, 1, 1, [1, 2], {2: "/b2/d1"})
    place(w, T1, 3, 1, [3, 2], {2: "/b2/d1"})
    fm = w.brokers[2].replica_manager.replica_fetcher_manager
    assert fm.fetcher_of(T0) is not fm.fetcher_of(T1)
    w.fs.inject_fault("/b2/d1", Fault.EIO)
    w.produce(1, T0, [b"a"], acks=1)
    assert w.run_until(lambda: T0 in fm.failed_partitions, 5_000)
    w.run(500)
    assert set(fm.failed_partitions) == {T0, T1}
    assert "/b2/d1 went offline" in fm.failed_partitions[T1].reason
    assert {f.action for f in fm.failed_partitions.values()} == {"StorageError"}
    assert fm.fetch_state(T1) is None and fm.fetcher_of(T1) is None


def test_a_fetcher_left_with_only_failed_partitions_shuts_down() -> None:
    w = World(broker_ids=(1, 2), config=fast_config(num_replica_fetchers=4))
    tps = [TopicPartition("t", n) for n in range(8)]
    lone = next(tp for tp in tps if sum(
        kafka_fetcher_id(o, 4) == kafka_fetcher_id(tp, 4) for o in tps[:4]) == 1
        and tp in tps[:4])
    for tp in tps[:4]:
        place(w, tp, 1, 1, [1, 2], {2: "/b2/d1" if tp == lone else "/b2/d2"})
    fm = w.brokers[2].replica_manager.replica_fetcher_manager
    key = (1, kafka_fetcher_id(lone, 4))
    assert fm.fetchers[key].partitions.keys() == {lone}
    w.fs.inject_fault("/b2/d1", Fault.EIO)
    w.produce(1, lone, [b"a"], acks=1)
    assert w.run_until(lambda: lone in fm.failed_partitions, 5_000)
    assert key not in fm.fetchers, "the idle fetcher is shut down"
    assert len(fm.fetchers) == len({kafka_fetcher_id(tp, 4) for tp in tps[:4]}) - 1


def test_a_fence_at_the_current_epoch_fails_and_a_newer_epoch_unfails() -> None:
    """hazard 6, first half: fenced at the epoch it holds, the partition fails; the
    LeaderAndIsr with the newer epoch brings it back, and it catches up."""
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a"])
    fm = w.brokers[2].replica_manager.replica_fetcher_manager
    w.lair(1, [state(T0, 1, 2, [1, 2])])  # the follower is not told (yet)
    assert w.run_until(lambda: T0 in fm.failed_partitions, 5_000)
    assert fm.failed_partitions[T0].leader_epoch == 1
    assert fm.failed_partitions[T0].action == "FetchFenced"
    w.produce(1, T0, [b"b"], acks=1)
    w.run(3_000)
    assert w.partition(2, T0).log_end_offset == 1, "a failed partition is not fetched"
    w.lair(2, [state(T0, 1, 2, [1, 2])])
    assert fm.failed_partitions_count == 0
    assert w.run_until(lambda: w.partition(2, T0).log_end_offset == 2, 5_000)
    assert w.values(2, T0) == w.values(1, T0)


def test_a_fence_answering_an_older_epoch_is_not_a_failure() -> None:
    """hazard 6, second half: the follower's fetch at epoch 1 is fenced by the leader, but the
    answer arrives after the follower learned epoch 2. Nothing fails at any step."""
    w = World(broker_ids=(1, 2), delay_ms=(5, 5))
    w.assign(T0, 1, 1, [1, 2])
    w.produce(1, T0, [b"a"])
    w.run(100)  # the follower's next fetch is parked on the leader (long poll)
    fm = w.brokers[2].replica_manager.replica_fetcher_manager
    assert w.brokers[1].replica_manager.fetch_purgatory.watched(T0) == 1
    failed_seen: list[int] = []
    # Both learn epoch 2 at the same instant; the leader's fence of the parked epoch-1 fetch
    # reaches the follower one network hop later, when it already holds epoch 2.
    w.controller.leader_and_isr(1, [state(T0, 1, 2, [1, 2])])
    w.controller.leader_and_isr(2, [state(T0, 1, 2, [1, 2])])
    w.run_until(lambda: False, 2_000, observe=lambda: failed_seen.append(
        fm.failed_partitions_count))
    assert fm.stale_fences >= 1, "the stale fence did arrive"
    assert max(failed_seen) == 0
    w.produce(1, T0, [b"b"])
    assert w.values(2, T0) == [(0, b"a"), (1, b"b")]



def test_a_fence_answering_a_request_from_before_the_topic_was_re_created_is_stale() -> None:
    """The follower's fetch at epoch 1 is parked on the leader; the leader then learns epoch 2
    of the topic while the follower learns that the topic was re-created: its old log goes
    aside as a stray and the new topic id's replica joins the fetcher at epoch 1 again (a new
    topic starts again at a low epoch). The fence answers the request made for the old topic
    id: the replica as it is now holds the same epoch number but must not fail for it, which
    would leave it failed until the next leader change (found by logwright fuzz:
    traces/regressions/0016)."""
    w = World(broker_ids=(1, 2), delay_ms=(5, 5))
    w.assign(T0, 1, 1, [1, 2])
    w.assign(T1, 1, 1, [1, 2])  # keeps the fetcher busy, so it is the same fetcher throughout
    w.produce(1, T0, [b"a"])
    w.run(100)  # the follower's next fetch is parked on the leader (long poll)
    fm = w.brokers[2].replica_manager.replica_fetcher_manager
    assert w.brokers[1].replica_manager.fetch_purgatory.watched(T0) == 1
    fetcher = fm.fetcher_of(T0)
    w.controller.leader_and_isr(1, [state(T0, 1, 2, [1, 2])])
    new_id = Uuid.from_random(random.Random(5))
    assert new_id != TOPIC_ID
    w.controller.leader_and_isr(2, [dataclasses.replace(state(T0, 1, 1, [1, 2]),
                                                       topic_id=new_id)])
    failed_seen: list[int] = []
    w.run_until(lambda: False, 2_000, observe=lambda: failed_seen.append(
        fm.failed_partitions_count))
    assert fm.stale_fences >= 1, "the fence of the earlier request did arrive"
    assert max(failed_seen) == 0
    assert fm.fetcher_of(T0) is fetcher, "still fetching, at its epoch, in the same fetcher"


def test_records_answering_a_request_made_for_a_deleted_topic_never_reach_its_new_replica() -> None:
    """The follower's fetch of an empty t-0 at offset 0, epoch 1, is parked on the leader. The
    follower then learns that t-0 was re-created (a new topic id, epoch 1 again): its new,
    empty replica fetches from offset 0 at epoch 1, exactly what the parked request asked. A
    record produced to the leader's old t-0 completes the parked fetch; its answer must not be
    appended to the new topic's replica."""
    w = World(broker_ids=(1, 2), delay_ms=(5, 5))
    w.assign(T0, 1, 1, [1, 2])
    w.assign(T1, 1, 1, [1, 2])  # keeps the fetcher busy, so it is the same fetcher throughout
    w.run(100)
    assert w.brokers[1].replica_manager.fetch_purgatory.watched(T0) == 1
    new_id = Uuid.from_random(random.Random(5))
    w.controller.leader_and_isr(2, [dataclasses.replace(state(T0, 1, 1, [1, 2]),
                                                       topic_id=new_id)])
    w.run(20)
    assert w.brokers[2].replica_manager.partitions[T0].topic_id == new_id
    w.produce(1, T0, [b"of the deleted topic"], acks=1)
    w.run(2_000)
    assert w.values(2, T0) == [], "a record of the old topic id reached the new replica"

def corrupt_first_record(w: World, broker_id: int, tp: TopicPartition) -> tuple[str, int, bytes]:
    """Flip a byte inside the first batch's records on disk (after the CRC was computed)."""
    log = w.partition(broker_id, tp).log
    path = posixpath.join(log.dir_path, "00000000000000000000.log")
    handle = w.fs.open(path)
    position = 70  # past the 61-byte batch header, inside the first record
    original = handle.read(position, 1)
    handle.write_at(position, bytes([original[0] ^ 0xFF]))
    handle.close()
    return path, position, original


def test_corrupt_records_are_retried_after_the_backoff_not_failed() -> None:
    w = World(broker_ids=(1, 2))
    w.lair(1, [state(T0, 1, 1, [1], [1, 2])])  # broker 2 is told later: it fetches old data
    w.produce(1, T0, [b"hello", b"world"])
    path, position, original = corrupt_first_record(w, 1, T0)
    w.assign(T0, 1, 2, [1], [1, 2])
    fm = w.brokers[2].replica_manager.replica_fetcher_manager
    w.run(3_500)
    assert fm.failed_partitions_count == 0 and fm.fetch_state(T0) is not None
    assert 2 <= fm.backoffs <= 5, "retried once per replica.fetch.backoff.ms"
    assert "invalid records" in fm.last_backoff_reason[T0]
    assert w.partition(2, T0).log_end_offset == 0
    handle = w.fs.open(path)
    handle.write_at(position, original)
    handle.close()
    assert w.run_until(lambda: w.partition(2, T0).log_end_offset == 2, 3_000)
    assert w.values(2, T0) == [(0, b"hello"), (1, b"world")]


def test_an_unexpected_error_fails_only_its_partition() -> None:
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    w.assign(T1, 1, 1, [1, 2])
    w.produce(1, T0, [b"a"])
    # Something appends to the follower's log behind the fetcher's back: the next fetched data
    # no longer lines up with the log end offset (IllegalStateException in Kafka).
    w.partition(2, T0).log.append_as_leader(build_simple_batch([b"rogue"], 0), 1)
    w.produce(1, T0, [b"b"], acks=1)
    w.produce(1, T1, [b"c"], acks=1)
    fm = w.brokers[2].replica_manager.replica_fetcher_manager
    assert w.run_until(lambda: T0 in fm.failed_partitions, 5_000)
    assert "unexpected UnexpectedAppendOffset" in fm.failed_partitions[T0].reason
    assert w.run_until(lambda: w.partition(2, T1).log_end_offset == 1, 5_000)
    assert fm.dead_thread_count == 0 and fm.fetcher_of(T1) is not None


def test_max_lag_tracks_the_fetching_partitions() -> None:
    w = World(broker_ids=(1, 2), config=fast_config(replica_fetch_max_bytes=100))
    w.lair(1, [state(T0, 1, 1, [1], [1, 2])])
    for i in range(30):
        w.produce(1, T0, [b"v%02d" % i], acks=1)
    w.assign(T0, 1, 2, [1], [1, 2])
    lags: list[float] = []
    w.run_until(lambda: w.partition(2, T0).log_end_offset == 30, 10_000,
                observe=lambda: lags.append(w.brokers[2].snapshot()[MAX_LAG]))
    assert max(lags) > 10 and lags[-1] == 0


# ---- the same machinery over a local source (the dir-move copier's shape) ------------------------


class LocalLogSource:
    """Reads a local "current" log, as the dir-move copier will."""

    source_id = 0

    def __init__(self, logs: dict[TopicPartition, PartitionLog]) -> None:
        self.logs = logs

    def fetch(self, partitions: Sequence[FetchPartition], callback: FetchCallback) -> None:
        out = {}
        for fp in partitions:
            log = self.logs[fp.tp]
            try:
                data = log.read(fp.fetch_offset, fp.partition_max_bytes)
                out[fp.tp] = FetchPartitionData(fp.tp, Errors.NONE, log.high_watermark,
                                                log.log_start_offset, data.records)
            except OffsetOutOfRange:
                out[fp.tp] = FetchPartitionData(fp.tp, Errors.OFFSET_OUT_OF_RANGE,
                                                log.high_watermark, log.log_start_offset)
        callback(out)

    def end_offsets_for_epochs(self, partitions: Sequence[OffsetForLeaderEpochPartition],
                               callback: EpochCallback) -> None:
        out = {}
        for p in partitions:
            epoch, end = self.logs[p.tp].end_offset_for_epoch(p.leader_epoch) or (-1, -1)
            out[p.tp] = OffsetForLeaderEpochResult(p.tp, Errors.NONE, epoch, end)
        callback(out)

    def close(self) -> None:
        pass


class FutureLogTarget:
    """Fills local "future" logs (each keeps its own epoch cache)."""

    def __init__(self, logs: dict[TopicPartition, PartitionLog]) -> None:
        self.logs = logs

    def log_end_offset(self, tp: TopicPartition) -> int:
        return self.logs[tp].log_end_offset

    def log_start_offset(self, tp: TopicPartition) -> int:
        return self.logs[tp].log_start_offset

    def high_watermark(self, tp: TopicPartition) -> int:
        return self.logs[tp].high_watermark

    def latest_epoch(self, tp: TopicPartition) -> int | None:
        return self.logs[tp].latest_epoch

    def end_offset_for_epoch(self, tp: TopicPartition, epoch: int) -> tuple[int, int] | None:
        return self.logs[tp].end_offset_for_epoch(epoch)

    def truncate(self, tp: TopicPartition, offset: int) -> None:
        self.logs[tp].truncate_to(offset)

    def truncate_fully_and_start_at(self, tp: TopicPartition, offset: int) -> None:
        self.logs[tp].truncate_fully_and_start_at(offset)

    def restart_below_start(self, tp: TopicPartition, offset: int) -> None:
        self.logs[tp].restart_below_start(offset)

    def process_partition_data(self, tp: TopicPartition, fetch_offset: int,
                               data: FetchPartitionData) -> int:
        log = self.logs[tp]
        log.append_as_follower(data.records)
        log.update_high_watermark(max(log.log_start_offset,
                                      min(data.high_watermark, log.log_end_offset)))
        return log.log_end_offset


def test_the_fetcher_machinery_copies_between_local_logs_and_contains_failures() -> None:
    clock = VirtualClock(1_000_000)
    scheduler = SimScheduler(clock, seed=3)
    fs = SimFileSystem(clock)
    for d in ("/cur", "/fut1", "/fut2"):
        fs.makedirs(d)
    tps = [TopicPartition("m", 0), TopicPartition("m", 1)]
    current = {tp: PartitionLog.create(fs, f"/cur/{tp}", tp, LogConfig(), clock) for tp in tps}
    future = {tp: PartitionLog.create(fs, f"/fut{n + 1}/{tp}", tp, LogConfig(), clock)
              for n, tp in enumerate(tps)}
    for tp, log in current.items():
        for i in range(3):
            log.append_as_leader(build_simple_batch([b"%s-%d" % (str(tp).encode(), i)], 0), 4)
        log.update_high_watermark(3)
    manager = FetcherManager(
        "ReplicaAlterLogDirsManager", "ReplicaAlterLogDirs", 1,
        lambda _source, _fid: LocalLogSource(current),
        FutureLogTarget(future), clock, scheduler, 1_000, 1 << 20,
        idle_backoff_ms=10)
    manager.add_fetcher_for_partitions({tp: InitialFetchState(0, 4, 0) for tp in tps})
    fs.inject_fault("/fut2", Fault.EIO)
    scheduler.advance(100)
    assert future[tps[0]].log_end_offset == 3
    assert future[tps[0]].read(0, 1 << 20).records == current[tps[0]].read(0, 1 << 20).records
    assert future[tps[0]].leader_epoch_cache.entries == \
        current[tps[0]].leader_epoch_cache.entries, "the copy carries its epochs with it"
    assert set(manager.failed_partitions) == {tps[1]}
    # A new epoch (the move restarted) un-fails it; with the dir back it completes.
    fs.clear_fault("/fut2")
    future[tps[1]].offline = False
    manager.add_fetcher_for_partitions({tps[1]: InitialFetchState(0, 5, 0)})
    assert manager.failed_partitions_count == 0
    scheduler.advance(100)
    assert future[tps[1]].log_end_offset == 3
    manager.remove_fetcher_for_partitions(tps)
    (fetcher,) = manager.fetchers.values()
    manager.shutdown_idle_fetchers()  # as a LeaderAndIsr or StopReplica ends
    assert not manager.fetchers and not fetcher.running


def _one_local_copy() -> tuple[TopicPartition, dict[TopicPartition, PartitionLog],
                               dict[TopicPartition, PartitionLog], SimScheduler]:
    """One partition's "current" and "future" logs on a simulated disk, and a scheduler."""
    clock = VirtualClock(1_000_000)
    scheduler = SimScheduler(clock, seed=3)
    fs = SimFileSystem(clock)
    for d in ("/cur", "/fut"):
        fs.makedirs(d)
    tp = TopicPartition("m", 0)
    current = {tp: PartitionLog.create(fs, f"/cur/{tp}", tp, LogConfig(), clock)}
    future = {tp: PartitionLog.create(fs, f"/fut/{tp}", tp, LogConfig(), clock)}
    return tp, current, future, scheduler


def _local_copier(current: dict[TopicPartition, PartitionLog],
                  future: dict[TopicPartition, PartitionLog],
                  scheduler: SimScheduler) -> FetcherManager:
    """A dir-move-shaped fetcher manager copying ``current`` into ``future``."""
    return FetcherManager(
        "ReplicaAlterLogDirsManager", "ReplicaAlterLogDirs", 1,
        lambda _source, _fid: LocalLogSource(current),
        FutureLogTarget(future), scheduler.clock, scheduler, 1_000, 1 << 20,
        idle_backoff_ms=10)


def test_a_replica_ahead_of_its_sources_end_truncates_by_epoch_after_the_backoff() -> None:
    """The source lost its last records and went on at a new epoch: a fetch above its end is
    OFFSET_OUT_OF_RANGE; the replica waits the back-off, then finds the common point by the
    epoch protocol, truncates there and copies the source's new records."""
    tp, current, future, scheduler = _one_local_copy()
    source = current[tp]
    for i in range(5):
        source.append_as_leader(build_simple_batch([b"old-%d" % i], 0), 4)
    source.update_high_watermark(3)
    manager = _local_copier(current, future, scheduler)
    manager.add_fetcher_for_partitions({tp: InitialFetchState(0, 4, 0)})
    scheduler.advance(100)
    assert future[tp].log_end_offset == 5
    source.truncate_to(3)
    source.append_as_leader(build_simple_batch([b"new-3"], 0), 5)
    scheduler.advance(500)
    assert future[tp].log_end_offset == 5, "not before the back-off"
    assert manager.failed_partitions_count == 0
    scheduler.advance(1_000)
    assert future[tp].log_end_offset == 4
    assert future[tp].read(0, 1 << 20).records == source.read(0, 1 << 20).records
    assert manager.failed_partitions_count == 0
    manager.remove_fetcher_for_partitions([tp])


def test_an_empty_replica_whose_start_lies_beyond_its_sources_end_restarts_below_it() -> None:
    """The source led after every replica holding some records lost them (a recovery
    election): its log ends below the start offset the replica had raised. A fetch there is
    OFFSET_OUT_OF_RANGE with nothing to truncate; the replica restarts empty at the source's
    high watermark and copies what the source writes from there, instead of asking again
    forever."""
    tp, current, future, scheduler = _one_local_copy()
    source, replica = current[tp], future[tp]
    for i in range(3):
        source.append_as_leader(build_simple_batch([b"kept-%d" % i], 0), 4)
    source.update_high_watermark(2)
    for i in range(5):
        replica.append_as_leader(build_simple_batch([b"lost-%d" % i], 0), 3)
    replica.update_high_watermark(5)
    replica.increment_log_start_offset(5)
    assert replica.log_end_offset == replica.log_start_offset == 5
    manager = _local_copier(current, future, scheduler)
    manager.add_fetcher_for_partitions({tp: InitialFetchState(0, 4, 5)})
    scheduler.advance(100)
    assert replica.log_start_offset == 2 and replica.log_end_offset == 3
    assert replica.read(2, 1 << 20).records == source.read(2, 1 << 20).records
    source.append_as_leader(build_simple_batch([b"new-3"], 0), 4)
    scheduler.advance(100)
    assert replica.log_end_offset == 4 and manager.failed_partitions_count == 0
    manager.remove_fetcher_for_partitions([tp])
