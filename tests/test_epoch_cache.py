"""The leader epoch cache and the log that owns it: answers for OffsetForLeaderEpoch, truncation
from both ends, durable writes, reconciliation with the log at load (rebuilt from the batches
when the file is missing; a corrupt file takes the dir offline, hazard 11), and every change of
the log's offsets (truncation, full truncation, DeleteRecords, a follower's raise, retention)
keeping the cache in step inside the log."""

from __future__ import annotations

import random

import pytest

from logwright.errors import CheckpointError, Errors, KafkaStorageError
from logwright.logmanager import LogManager, LogManagerConfig
from logwright.protocol import OffsetForLeaderEpochPartition, OffsetForLeaderEpochRequest
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.dir_status import LogDirStatus
from logwright.storage.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochCache
from logwright.storage.log import PartitionLog
from logwright.storage.metadata_files import LeaderEpochCheckpointFile
from logwright.storage.naming import TopicPartition
from logwright.world import Fault, SimFileSystem, SimScheduler, SimulatedCrash, VirtualClock
from tests.test_broker_harness import T0, World, fast_config, state

TP = TopicPartition("e", 0)
DIR = "/d/e-0"
UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
SMALL = LogConfig(segment_bytes=300, index_interval_bytes=100)


def new_log(config: LogConfig = SMALL) -> tuple[SimFileSystem, PartitionLog]:
    clock = VirtualClock(1_000)
    fs = SimFileSystem(clock)
    fs.makedirs("/d")
    return fs, PartitionLog.create(fs, DIR, TP, config, clock)


def reload(fs: SimFileSystem, log: PartitionLog, clean: bool = True) -> PartitionLog:
    log.close()
    again, _ = PartitionLog.load(fs, DIR, TP, log.config, log.clock,
                                 log_start_offset_checkpoint=log.log_start_offset,
                                 recovery_point=log.recovery_point,
                                 high_watermark_checkpoint=log.high_watermark,
                                 clean_shutdown=clean)
    return again


def entries(cache: LeaderEpochCache) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in cache.entries]


def on_disk(fs: SimFileSystem) -> list[tuple[int, int]]:
    return LeaderEpochCheckpointFile(fs, DIR).read()


def append(log: PartitionLog, epoch: int, *values: bytes) -> None:
    log.append_as_leader(build_simple_batch(list(values), 0), epoch)


# ---- the cache alone -----------------------------------------------------------------------------


def test_end_offsets_for_requested_epochs() -> None:
    fs, _ = new_log()
    cache = LeaderEpochCache(fs, DIR)
    assert cache.end_offset_for(0, 0) == UNDEFINED, "an empty cache knows nothing"
    cache.assign(2, 0)
    cache.assign(4, 10)
    cache.assign(7, 25)
    assert cache.end_offset_for(7, 30) == (7, 30), "the latest epoch ends at the log end"
    assert cache.end_offset_for(4, 30) == (4, 25)
    assert cache.end_offset_for(5, 30) == (4, 25), "largest epoch below the one asked"
    assert cache.end_offset_for(6, 30) == (4, 25)
    assert cache.end_offset_for(1, 30) == (1, 0), "below every epoch: nothing in common"
    assert cache.end_offset_for(8, 30) == UNDEFINED, "above the latest: unknown"
    assert cache.end_offset_for(UNDEFINED_EPOCH, 30) == UNDEFINED


def test_assign_keeps_order_and_replaces_conflicts() -> None:
    fs, _ = new_log()
    cache = LeaderEpochCache(fs, DIR)
    assert cache.assign(1, 0)
    assert not cache.assign(1, 5), "a later batch of the latest epoch changes nothing"
    assert cache.assign(3, 5)
    assert not cache.assign(2, 7), "an older epoch after a newer one is ignored"
    assert cache.assign(4, 3), "a conflicting entry replaces what it contradicts"
    assert entries(cache) == [(1, 0), (4, 3)]
    assert cache.assign(5, 3)
    assert entries(cache) == [(1, 0), (5, 3)], "same start offset: the newer epoch wins"
    assert on_disk(fs) == [(1, 0), (5, 3)]


def test_truncation_from_either_end() -> None:
    fs, _ = new_log()
    cache = LeaderEpochCache(fs, DIR)
    for epoch, start in ((1, 0), (2, 10), (3, 20)):
        cache.assign(epoch, start)
    assert cache.truncate_from_end(20) and entries(cache) == [(1, 0), (2, 10)]
    assert not cache.truncate_from_end(25)
    assert cache.truncate_from_start(15) and entries(cache) == [(2, 15)]
    cache.assign(3, 20)
    assert cache.truncate_from_start(20) and entries(cache) == [(3, 20)]
    cache.clear()
    assert cache.latest_epoch is None and on_disk(fs) == []


# ---- owned by the log ----------------------------------------------------------------------------


def test_appends_record_their_epochs_durably() -> None:
    fs, log = new_log()
    append(log, 1, b"a")
    append(log, 1, b"b")
    append(log, 2, b"c", b"d")
    append(log, -1, b"e")  # no epoch: nothing to record
    assert entries(log.leader_epoch_cache) == [(1, 0), (2, 2)]
    # A follower takes the epochs of the batches it appends, at their base offsets.
    _, follower = new_log()
    for base in (0, 1, 2, 4):
        follower.append_as_follower(log.read(base, 1).records)
    assert entries(follower.leader_epoch_cache) == [(1, 0), (2, 2)]
    assert follower.latest_epoch == 2
    assert follower.end_offset_for_epoch(1) == (1, 2)
    assert follower.end_offset_for_epoch(2) == (2, 5)
    assert follower.end_offset_for_epoch(3) is None
    log.flush()
    fs.crash()
    assert on_disk(fs) == [(1, 0), (2, 2)]


def test_truncations_keep_the_cache_in_step() -> None:
    fs, log = new_log()
    for epoch, values in ((1, [b"a", b"b"]), (2, [b"c"]), (3, [b"d", b"e"]), (4, [b"f"])):
        append(log, epoch, *values)
    log.update_high_watermark(2)
    log.truncate_to(3)  # the follower diverged from offset 3 on
    assert entries(log.leader_epoch_cache) == [(1, 0), (2, 2)] == on_disk(fs)
    log.truncate_fully_and_start_at(10)  # below the leader's start offset: restart empty
    assert entries(log.leader_epoch_cache) == [] == on_disk(fs)
    assert log.log_start_offset == log.log_end_offset == 10


@pytest.mark.parametrize("raise_to", [1, 2, 3, 5])
def test_every_start_offset_raise_trims_the_cache_durably(raise_to: int) -> None:
    """DeleteRecords and a follower's raise both go through increment_log_start_offset."""
    fs, log = new_log()
    for epoch, values in ((1, [b"a", b"b"]), (3, [b"c"]), (4, [b"d", b"e", b"f"])):
        append(log, epoch, *values)
    log.update_high_watermark(6)
    assert log.increment_log_start_offset(raise_to)
    first = log.leader_epoch_cache.entries[0]
    assert first.start_offset == raise_to, "the epoch covering the new start begins there"
    assert all(e.start_offset >= raise_to for e in log.leader_epoch_cache.entries)
    assert on_disk(fs) == entries(log.leader_epoch_cache)
    assert entries(reload(fs, log).leader_epoch_cache) == on_disk(fs)


def test_retention_trims_the_cache_with_the_start_offset() -> None:
    """Regression: leader retention raised the start offset without trimming the epoch cache,
    which then described offsets the log no longer held."""
    fs, log = new_log(LogConfig(segment_bytes=300, index_interval_bytes=100, retention_bytes=400))
    for i in range(12):
        append(log, 1 + i // 4, b"value-%02d" % i)
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() > 0
    lso = log.log_start_offset
    assert lso > 4, "retention must have passed the first epoch for this test to mean much"
    cached = log.leader_epoch_cache.entries
    assert cached[0].start_offset == lso and all(e.start_offset >= lso for e in cached)
    assert on_disk(fs) == entries(log.leader_epoch_cache)
    assert log.end_offset_for_epoch(1) == (1, lso), "nothing of epoch 1 is left"


def test_load_reconciles_with_the_log_and_rebuilds_a_missing_file() -> None:
    fs, log = new_log()
    append(log, 3, b"a", b"b")
    append(log, 5, b"c")
    append(log, 5, b"d")
    log.update_high_watermark(4)
    log.flush()
    # No file after a clean shutdown: trusted as an empty cache (Kafka's), no record read.
    fs.remove(f"{DIR}/leader-epoch-checkpoint")
    log = reload(fs, log)
    assert entries(log.leader_epoch_cache) == []
    # No file after an unclean one: rebuilt from the batches' partition leader epochs.
    log = reload(fs, log, clean=False)
    assert entries(log.leader_epoch_cache) == [(3, 0), (5, 2)] == on_disk(fs)
    # A file that says more than the log has (a tail lost in a crash) is cut to the log.
    LeaderEpochCheckpointFile(fs, DIR).write([(3, 0), (5, 2), (6, 9)])
    log = reload(fs, log)
    assert entries(log.leader_epoch_cache) == [(3, 0), (5, 2)]
    # A start offset durable in the checkpoint but not yet in the cache file: cut at load.
    LeaderEpochCheckpointFile(fs, DIR).write([(3, 0), (5, 2)])
    log.close()
    again, _ = PartitionLog.load(fs, DIR, TP, SMALL, log.clock, log_start_offset_checkpoint=3,
                                 recovery_point=4, high_watermark_checkpoint=4,
                                 clean_shutdown=True)
    assert entries(again.leader_epoch_cache) == [(5, 3)] == on_disk(fs)


@pytest.mark.parametrize("seed", range(12))
def test_a_rebuilt_cache_is_the_one_the_batches_give(seed: int) -> None:
    """Recovery walks each segment once and remembers its runs of epochs; the cache rebuilt
    from them is the one reading the batches again gives, whatever the recovery point (some
    segments not walked), the start offset (inside a run, a batch, a segment) and the
    epochs (repeated, rising, a run spanning segments)."""
    rng = random.Random(seed)
    fs, log = new_log(LogConfig(segment_bytes=rng.choice([150, 300, 600]),
                                index_interval_bytes=100))
    epoch = rng.randint(0, 2)
    expected: list[tuple[int, int]] = []
    for _ in range(rng.randint(4, 25)):
        epoch += rng.choice([0, 0, 1, 3])
        if not expected or expected[-1][0] != epoch:
            expected.append((epoch, log.log_end_offset))
        append(log, epoch, *[b"v%d" % i for i in range(rng.randint(1, 3))])
    end = log.log_end_offset
    log.update_high_watermark(end)
    start = rng.randint(0, end - 1)
    log.increment_log_start_offset(start)
    log.flush()
    recovery_point = rng.choice([None, 0, rng.randint(0, end)])
    log.close()
    fs.remove(f"{DIR}/leader-epoch-checkpoint")
    again, report = PartitionLog.load(fs, DIR, TP, log.config, log.clock,
                                      log_start_offset_checkpoint=start,
                                      recovery_point=recovery_point,
                                      high_watermark_checkpoint=end, clean_shutdown=False)
    assert report.recovered_segments >= 1
    # The epochs appended, each from where it began, cut to the start offset.
    lso = again.log_start_offset
    want = [(e, max(o, lso)) for i, (e, o) in enumerate(expected)
            if i + 1 == len(expected) or expected[i + 1][1] > lso]
    assert entries(again.leader_epoch_cache) == want == on_disk(fs)


def test_write_errors_take_the_log_s_dir_offline() -> None:
    fs, log = new_log()
    status = log.dir_status = LogDirStatus("/d", {TP: log})
    fs.inject_fault("/d", Fault.ENOSPC)
    with pytest.raises(KafkaStorageError):
        log.assign_epoch_start_offset(1, 0)
    assert log.offline and not status.online and "No space left" in (status.offline_reason or "")
    with pytest.raises(KafkaStorageError):
        log.read(0, 100)


def test_corrupt_file_takes_only_its_dir_offline_and_is_not_recreated_elsewhere() -> None:
    fs, log = new_log()
    log.close()
    fs.open(f"{DIR}/leader-epoch-checkpoint", create=True).append(b"0\n2\n1 0\n")
    with pytest.raises(CheckpointError):
        PartitionLog.load(fs, DIR, TP, SMALL, log.clock, log_start_offset_checkpoint=0,
                          recovery_point=0, high_watermark_checkpoint=0, clean_shutdown=True)
    # On a broker: the LeaderAndIsr answer is KAFKA_STORAGE_ERROR for that partition only.
    w = World(broker_ids=(1,))
    r = w.lair(1, [state(T0, 1, 1, [1], log_dir="/b1/d1"),
                   state(T0._replace(partition=1), 1, 1, [1], log_dir="/b1/d2")])
    assert [e.error for e in r.partition_errors] == [Errors.NONE, Errors.NONE]
    w.crash_broker(1)
    handle = w.fs.open("/b1/d1/t-0/leader-epoch-checkpoint")
    handle.write_at(0, b"9")  # unsupported version
    handle.close()
    w.start_broker(1)
    r = w.lair(1, [state(T0, 1, 2, [1]), state(T0._replace(partition=1), 1, 2, [1])])
    assert [e.error for e in r.partition_errors] == [Errors.KAFKA_STORAGE_ERROR, Errors.NONE]
    assert w.brokers[1].log_manager.offline_dirs == ["/b1/d1"]
    assert not w.fs.exists("/b1/d2/t-0"), "its data is in the offline dir: no empty copy"


def test_a_leader_s_retention_keeps_offset_for_leader_epoch_above_its_start() -> None:
    """Regression, on a broker: after retention passed a whole leader epoch, the leader answered
    OffsetForLeaderEpoch for it with an end offset below its own log start offset."""
    log_config = LogConfig(segment_bytes=300, index_interval_bytes=100, retention_bytes=400)
    w = World(broker_ids=(1,), config=fast_config(log=LogManagerConfig(log=log_config)))
    for epoch in (1, 2, 3):
        w.assign(T0, 1, epoch, [1])
        for i in range(4):
            w.produce(1, T0, [b"epoch-%d-%d" % (epoch, i)])
    p = w.partition(1, T0)
    assert w.brokers[1].log_manager.run_retention() > 0
    lso = p.log_start_offset
    assert lso > 4 and p.epoch_cache.entries[0].start_offset == lso
    answer = w.brokers[1].replica_manager.offsets_for_leader_epoch(
        OffsetForLeaderEpochRequest(1, -1, (OffsetForLeaderEpochPartition(T0, 3, 1),)), {})
    result = answer.results[0]
    assert result.error is Errors.NONE and result.end_offset >= lso, result
    w.check_offsets()


# ---- across crashes ------------------------------------------------------------------------------


def _cache_describes_log(log: PartitionLog) -> None:
    """Every entry lies in [log start offset, log end offset], and each batch the log holds
    carries the epoch the cache gives for its first offset (the cache describes this log)."""
    cached = log.leader_epoch_cache.entries
    assert all(log.log_start_offset <= e.start_offset <= log.log_end_offset for e in cached), \
        (cached, log.log_start_offset, log.log_end_offset)
    for header, _ in log.read_batches():
        first = max(header.base_offset, log.log_start_offset)
        covering = [e for e in cached if e.start_offset <= first]
        assert covering and covering[-1].epoch == header.partition_leader_epoch, \
            (header.base_offset, header.partition_leader_epoch, cached)


def _manager_with_epochs(fs: SimFileSystem, clock: VirtualClock) -> PartitionLog:
    manager = LogManager(fs, ["/data"], clock, SimScheduler(clock, seed=1),
                         LogManagerConfig(log=LogConfig(segment_bytes=300, index_interval_bytes=100,
                                                        retention_bytes=400)),
                         random.Random(1))
    manager.startup()
    log = manager.create_log(TP)
    for i in range(12):
        append(log, 1 + i // 3, b"value-%02d" % i)
    log.update_high_watermark(10)
    log.flush()
    manager.checkpoint_all()
    manager.checkpoint_high_watermarks()
    return log


def _reloaded(fs: SimFileSystem, clock: VirtualClock) -> PartitionLog:
    manager = LogManager(fs, ["/data"], clock, SimScheduler(clock, seed=1),
                         LogManagerConfig(log=LogConfig(segment_bytes=300,
                                                        index_interval_bytes=100)),
                         random.Random(1))
    manager.startup()
    log = manager.get_log(TP)
    assert log is not None and not log.offline
    return log


@pytest.mark.parametrize("operation", ["retention", "delete_records", "truncate", "restart"])
def test_a_crash_at_any_step_leaves_a_cache_that_describes_the_log(operation: str) -> None:
    """Power loss after every file system operation of each change of a log's offsets: the
    start offset is never lost once acknowledged, and the reloaded cache describes the log."""
    ops = {
        "retention": lambda log: log.delete_old_segments(),
        "delete_records": lambda log: log.increment_log_start_offset(7),
        "truncate": lambda log: log.truncate_to(5),
        "restart": lambda log: log.truncate_fully_and_start_at(20),
    }
    k = 1
    while True:
        clock = VirtualClock(1_000_000)
        fs = SimFileSystem(clock)
        log = _manager_with_epochs(fs, clock)
        fs.crash_after(k)
        try:
            ops[operation](log)
            acknowledged = log.log_start_offset
            crashed = False
            _cache_describes_log(log)
        except SimulatedCrash:
            acknowledged, crashed = 0, True
        fs.crash_after(None)
        fs.crash(random.Random(k))
        again = _reloaded(fs, clock)
        assert again.log_start_offset >= acknowledged, (operation, k)
        _cache_describes_log(again)
        if not crashed:
            assert k > 1, "the operation must write something for this test to mean much"
            break
        k += 1


@pytest.mark.parametrize(("batches", "expected"), [
    ([(0, 0), (0, 3), (2, 7)], [(0, 0), (2, 7)]),
    ([(-1, 0), (0, 4), (1, 6), (1, 8)], [(0, 4), (1, 6)]),
    ([(0, 5)], [(0, 5)]),
    ([(3, 0), (1, 2), (4, 9)], [(3, 0), (4, 9)]),
])
def test_a_lost_cache_is_rebuilt_from_the_batches_epoch_0_included(
        batches: list[tuple[int, int]], expected: list[tuple[int, int]]) -> None:
    fs, _ = new_log()
    cache = LeaderEpochCache(fs, DIR)
    assert cache.rebuild(batches) is True
    assert entries(cache) == expected and on_disk(fs) == expected


@pytest.mark.parametrize("batches", [[], [(-1, 0)], [(-1, 0), (-1, 5)]])
def test_a_rebuild_from_batches_without_an_epoch_changes_nothing(
        batches: list[tuple[int, int]]) -> None:
    fs, _ = new_log()
    cache = LeaderEpochCache(fs, DIR)
    assert cache.rebuild(batches) is False
    assert entries(cache) == []
