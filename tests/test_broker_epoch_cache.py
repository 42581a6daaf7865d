"""The leader epoch cache: answers for OffsetForLeaderEpoch, truncation from both ends, durable
writes, and reconciliation with its log at load (rebuilt from the batches when the file is
missing; a corrupt file takes the dir offline, HAZARDS 11)."""

from __future__ import annotations

import pytest

from logwright.broker.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochCache
from logwright.errors import CheckpointError, Errors, KafkaStorageError
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.storage.metadata_files import LeaderEpochCheckpointFile
from logwright.storage.naming import TopicPartition
from logwright.world import Fault, SimFileSystem, VirtualClock
from tests.test_broker_harness import T0, World, state

TP = TopicPartition("e", 0)
UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def new_log() -> tuple[SimFileSystem, PartitionLog]:
    clock = VirtualClock(1_000)
    fs = SimFileSystem(clock)
    fs.makedirs("/d")
    return fs, PartitionLog.create(fs, "/d/e-0", TP, LogConfig(), clock)


def entries(cache: LeaderEpochCache) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in cache.entries]


def test_end_offsets_for_requested_epochs() -> None:
    fs, log = new_log()
    cache = LeaderEpochCache.load(fs, log)
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
    fs, log = new_log()
    cache = LeaderEpochCache.load(fs, log)
    assert cache.assign(1, 0)
    assert not cache.assign(1, 5), "a later batch of the latest epoch changes nothing"
    assert cache.assign(3, 5)
    assert not cache.assign(2, 7), "an older epoch after a newer one is ignored"
    assert cache.assign(4, 3), "a conflicting entry replaces what it contradicts"
    assert entries(cache) == [(1, 0), (4, 3)]
    assert cache.assign(5, 3)
    assert entries(cache) == [(1, 0), (5, 3)], "same start offset: the newer epoch wins"


def test_truncation_from_either_end() -> None:
    fs, log = new_log()
    cache = LeaderEpochCache.load(fs, log)
    for epoch, start in ((1, 0), (2, 10), (3, 20)):
        cache.assign(epoch, start)
    assert cache.truncate_from_end(20) and entries(cache) == [(1, 0), (2, 10)]
    assert not cache.truncate_from_end(25)
    assert cache.truncate_from_start(15) and entries(cache) == [(2, 15)]
    cache.assign(3, 20)
    assert cache.truncate_from_start(20) and entries(cache) == [(3, 20)]
    cache.clear()
    assert cache.latest_epoch is None


def test_every_change_is_durable_and_reloads() -> None:
    fs, log = new_log()
    cache = LeaderEpochCache.load(fs, log)
    log.append_as_leader(build_simple_batch([b"a"], 0), 1)
    cache.assign(1, 0)
    log.append_as_leader(build_simple_batch([b"b", b"c"], 0), 2)
    cache.assign(2, 1)
    log.flush()
    fs.crash()
    assert LeaderEpochCheckpointFile(fs, "/d/e-0").read() == [(1, 0), (2, 1)]


def test_load_reconciles_with_the_log_and_rebuilds_a_missing_file() -> None:
    fs, log = new_log()
    log.append_as_leader(build_simple_batch([b"a", b"b"], 0), 3)
    log.append_as_leader(build_simple_batch([b"c"], 0), 5)
    log.append_as_leader(build_simple_batch([b"d"], 0), 5)
    log.update_high_watermark(4)
    # No file: rebuilt from the batches' partition leader epochs.
    cache = LeaderEpochCache.load(fs, log)
    assert entries(cache) == [(3, 0), (5, 2)]
    assert LeaderEpochCheckpointFile(fs, "/d/e-0").read() == [(3, 0), (5, 2)]
    # A file that says more than the log has (a tail lost in a crash) is cut to the log.
    LeaderEpochCheckpointFile(fs, "/d/e-0").write([(3, 0), (5, 2), (6, 9)])
    assert entries(LeaderEpochCache.load(fs, log)) == [(3, 0), (5, 2)]
    log.increment_log_start_offset(3)
    assert entries(LeaderEpochCache.load(fs, log)) == [(5, 3)]


def test_write_errors_report_and_raise_storage_errors() -> None:
    fs, log = new_log()
    seen: list[OSError] = []
    cache = LeaderEpochCache.load(fs, log, on_io_error=seen.append)
    fs.inject_fault("/d", Fault.ENOSPC)
    with pytest.raises(KafkaStorageError):
        cache.assign(1, 0)
    assert len(seen) == 1


def test_corrupt_file_raises_and_takes_only_its_dir_offline() -> None:
    fs, log = new_log()
    fs.open("/d/e-0/leader-epoch-checkpoint", create=True).append(b"0\n2\n1 0\n")
    with pytest.raises(CheckpointError):
        LeaderEpochCache.load(fs, log)
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
