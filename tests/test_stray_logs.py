"""The log manager's strays: a live log set aside (``-stray``), found again at start-up, and
revived from its own data with the start offset it had."""

from __future__ import annotations

import random

import pytest

from logwright.errors import Errors, KafkaStorageError, LogwrightError
from logwright.logmanager import LogManager, LogManagerConfig
from logwright.logmanager.strays import StrayLog
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.naming import DirKind, TopicPartition, Uuid, parse_dir_name
from logwright.world import Fault, SimFileSystem, SimScheduler, VirtualClock

TP = TopicPartition("t", 0)
TID = Uuid.from_random(random.Random(7))
OTHER = Uuid.from_random(random.Random(8))


def _manager(fs: SimFileSystem, clock: VirtualClock, dirs: tuple[str, ...] = ("/d1",)
             ) -> LogManager:
    manager = LogManager(fs, list(dirs), clock, SimScheduler(clock, seed=1),
                         LogManagerConfig(log=LogConfig(segment_bytes=200)), random.Random(3))
    manager.startup()
    return manager


def _log_with_records(manager: LogManager, n: int, start: int) -> None:
    log = manager.create_log(TP, TID)
    for i in range(n):
        log.append_as_leader(build_simple_batch([b"v%03d" % i], 0), 1)
    log.update_high_watermark(n)
    log.increment_log_start_offset(start)


@pytest.mark.parametrize("start", [0, 3, 7])
def test_a_stray_revived_keeps_its_records_and_start_offset(start: int) -> None:
    fs, clock = SimFileSystem(), VirtualClock(1_000)
    manager = _manager(fs, clock)
    _log_with_records(manager, 10, start)
    stray = manager.mark_stray(TP, "not in the controller's FULL request")
    assert stray is not None and manager.get_log(TP) is None
    assert parse_dir_name(stray.name).kind is DirKind.STRAY
    assert stray.topic_id == TID and stray.since_ms == 1_000
    assert manager.find_stray(TP, OTHER) is None
    assert manager.find_stray(TP, TID) is stray
    log = manager.revive_stray(stray)
    assert manager.get_log(TP) is log and manager.stray_logs() == []
    assert (log.log_start_offset, log.log_end_offset, log.topic_id) == (start, 10, TID)


@pytest.mark.parametrize("start", [0, 4])
def test_a_stray_survives_a_restart_and_is_revived_then(start: int) -> None:
    fs, clock = SimFileSystem(), VirtualClock(1_000)
    manager = _manager(fs, clock)
    _log_with_records(manager, 8, start)
    manager.mark_stray(TP, "another topic id")
    manager.halt()
    clock.advance(5_000)
    again = _manager(fs, clock)
    assert again.get_log(TP) is None, "a stray is never loaded as a live log"
    (stray,) = again.stray_logs()
    assert (stray.tp, stray.topic_id, stray.since_ms) == (TP, TID, 6_000)
    log = again.revive_stray(stray)
    assert (log.log_start_offset, log.log_end_offset) == (start, 8)
    again.halt()
    third = _manager(fs, clock)
    revived = third.get_log(TP)
    assert revived is not None and revived.log_start_offset == start, \
        "the revived log's start offset is in the dir's checkpoint"


def test_revive_refuses_when_the_partition_is_live_again() -> None:
    fs, clock = SimFileSystem(), VirtualClock(0)
    manager = _manager(fs, clock)
    _log_with_records(manager, 3, 0)
    stray = manager.mark_stray(TP, "test")
    assert stray is not None
    manager.create_log(TP, OTHER)
    with pytest.raises(LogwrightError):
        manager.revive_stray(stray)
    assert manager.find_stray(TP, TID) is stray


def test_mark_stray_on_an_io_error_takes_the_dir_offline() -> None:
    fs, clock = SimFileSystem(), VirtualClock(0)
    manager = _manager(fs, clock, ("/d1", "/d2"))
    _log_with_records(manager, 3, 0)
    path = manager.dir_of(TP)
    assert path is not None
    fs.inject_fault(path.path, Fault.EIO)
    with pytest.raises(KafkaStorageError):
        manager.mark_stray(TP, "test")
    assert path.path in manager.offline_dirs
    assert manager.stray_logs() == []


def test_a_stray_without_its_start_offset_file_is_revived_from_its_segments() -> None:
    """A ``-stray`` dir made by hand (or by an older version) has no start offset file: the
    revived log starts at its first segment, and the dir stays online."""
    fs, clock = SimFileSystem(), VirtualClock(0)
    manager = _manager(fs, clock)
    _log_with_records(manager, 5, 0)
    stray = manager.mark_stray(TP, "test")
    assert stray is not None
    fs.remove(f"{stray.path}/stray-log-start-offset")
    log = manager.revive_stray(stray)
    assert (log.log_start_offset, log.log_end_offset) == (0, 5)
    assert manager.offline_dirs == []


def _stray(manager: LogManager, n: int = 5, start: int = 0) -> StrayLog:
    _log_with_records(manager, n, start)
    stray = manager.mark_stray(TP, "test")
    assert stray is not None
    return stray


def test_each_refused_revival_says_why() -> None:
    fs, clock = SimFileSystem(), VirtualClock(0)
    manager = _manager(fs, clock, ("/d1", "/d2"))
    stray = _stray(manager)
    other = _manager(SimFileSystem(), clock)
    with pytest.raises(LogwrightError, match=f"^{stray.path} is not a stray of this broker$"):
        other.revive_stray(stray)
    manager.create_log(TP, OTHER)
    with pytest.raises(LogwrightError, match=r"^t-0 already has a live log$"):
        manager.revive_stray(stray)


def test_a_stray_on_an_offline_dir_is_not_revived_and_says_so() -> None:
    fs, clock = SimFileSystem(), VirtualClock(0)
    manager = _manager(fs, clock, ("/d1", "/d2"))
    stray = _stray(manager)
    manager.fail_dir(stray.log_dir, "test")
    with pytest.raises(KafkaStorageError, match=f": t-0: log dir {stray.log_dir} is offline$"):
        manager.revive_stray(stray)


def test_a_revival_failing_on_the_disk_takes_its_dir_offline_and_says_why() -> None:
    fs, clock = SimFileSystem(), VirtualClock(0)
    manager = _manager(fs, clock, ("/d1", "/d2"))
    stray = _stray(manager)
    fs.inject_fault(stray.log_dir, Fault.EIO)
    with pytest.raises(KafkaStorageError, match=": t-0: could not revive its stray: ") as e:
        manager.revive_stray(stray)
    assert e.value.code == Errors.KAFKA_STORAGE_ERROR
    assert manager.offline_dirs == [stray.log_dir] and manager.get_log(TP) is None
    # Still listed, with its offline dir: it is still on that disk, as a live log that failed
    # to be set aside stays listed as live (traces/regressions/0056: dropping it made a young
    # stray vanish from the broker's account). Nothing acts on an offline dir's strays.
    assert manager.stray_logs() == [stray]
    assert manager.find_stray(TP, TID) is None
    assert manager.run_orphan_removal() == 0 and manager.stray_logs() == [stray]
    state = manager.dirs[stray.log_dir]
    assert state.status.offline_reason is not None
    assert state.status.offline_reason.startswith(f"reviving stray {stray.path}: ")


def test_a_revived_stray_is_recovered_as_after_a_crash() -> None:
    """Bytes past the last whole batch of the stray's active segment (a write cut short
    before it was set aside) are dropped at revival, as a crash's recovery drops them."""
    fs, clock = SimFileSystem(), VirtualClock(0)
    manager = _manager(fs, clock)
    stray = _stray(manager, 5)
    segment = max(f for f in fs.listdir(stray.path) if f.endswith(".log"))
    f = fs.open(f"{stray.path}/{segment}")
    f.append(b"\x00\x00\x00\x00\x00\x00\x00\x09torn")
    f.fsync()
    f.close()
    log = manager.revive_stray(stray)
    assert log.log_end_offset == 5
    log.append_as_leader(build_simple_batch([b"after"], 0), 1)
    assert log.log_end_offset == 6


def test_a_revived_stray_takes_its_topics_config_and_its_dirs_durable_start_offset() -> None:
    fs, clock = SimFileSystem(), VirtualClock(0)
    manager = _manager(fs, clock, ("/d1", "/d2"))
    manager.set_topic_overrides("t", {"segment.bytes": 1000})
    stray = _stray(manager, 6)
    log = manager.revive_stray(stray)
    assert log.config.segment_bytes == 1000
    log.update_high_watermark(6)
    assert log.increment_log_start_offset(4)
    manager.halt()  # no clean shutdown, no periodic checkpoint: only the raise wrote it
    again = _manager(fs, clock, ("/d1", "/d2"))
    revived = again.get_log(TP)
    assert revived is not None and revived.log_start_offset == 4


def test_an_io_error_on_a_revived_log_takes_its_whole_dir_offline() -> None:
    fs, clock = SimFileSystem(), VirtualClock(0)
    manager = _manager(fs, clock, ("/d1", "/d2"))
    stray = _stray(manager, 3)
    log = manager.revive_stray(stray)
    fs.inject_fault(stray.log_dir, Fault.EIO)
    with pytest.raises(KafkaStorageError,
                       match=f": t-0: I/O error in {log.dir_path}: .*Input/output error"):
        log.append_as_leader(build_simple_batch([b"x"], 0), 1)
    assert manager.offline_dirs == [stray.log_dir]


def test_a_revived_stray_is_checked_in_full_not_trusted_as_after_a_clean_shutdown() -> None:
    """A batch damaged in an older segment of the stray (its first batch and its tail intact)
    ends the revived log there, as recovery after a crash would end it."""
    fs, clock = SimFileSystem(), VirtualClock(0)
    manager = _manager(fs, clock)
    stray = _stray(manager, 9)
    segments = sorted(f for f in fs.listdir(stray.path) if f.endswith(".log"))
    assert len(segments) >= 3
    first = f"{stray.path}/{segments[0]}"
    data = fs.read_file(first)
    second_batch = 12 + int.from_bytes(data[8:12], "big")
    assert second_batch < len(data)
    f = fs.open(first)
    f.write_at(second_batch + 40, bytes([data[second_batch + 40] ^ 0xFF]))
    f.fsync()
    f.close()
    log = manager.revive_stray(stray)
    assert log.log_end_offset == 1, "cut at the damaged batch, the segments after it gone"


def test_a_stray_found_with_unreadable_metadata_has_no_topic_id_and_matches_none() -> None:
    fs, clock = SimFileSystem(), VirtualClock(0)
    manager = _manager(fs, clock)
    stray = _stray(manager, 2)
    manager.halt()
    f = fs.open(f"{stray.path}/partition.metadata")
    f.truncate(0)
    f.append(b"version: 0\ntopic_id: garbage\n")
    f.fsync()
    f.close()
    again = _manager(fs, clock)
    (found,) = again.stray_logs()
    assert found.topic_id is None
    assert again.find_stray(TP, TID) is None and again.find_stray(TP, OTHER) is None
