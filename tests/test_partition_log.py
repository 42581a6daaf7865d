"""The partition log: offsets, reads, truncation, retention and recovery (layer 2)."""

from __future__ import annotations

import random

import pytest

from logwright.errors import (
    CorruptRecordError,
    KafkaStorageError,
    OffsetOutOfRange,
    UnexpectedAppendOffset,
)
from logwright.records import build_simple_batch
from logwright.storage.checkpoint import OffsetCheckpointFile
from logwright.storage.config import LogConfig
from logwright.storage.dir_status import LogDirStatus
from logwright.storage.log import PartitionLog, TopicIdMismatch
from logwright.storage.naming import TopicPartition, Uuid, segment_file_name
from logwright.storage.start_offset_checkpoint import LogStartOffsetCheckpoint
from logwright.world import Fault
from tests.storage_helpers import SMALL, TP, batch, fill, new_log, read_all, world


def load(fs, clock, clean=False, lso=None, rp=None, hw=None, config=SMALL, path="/d1/t-0"):  # type: ignore[no-untyped-def]
    return PartitionLog.load(fs, path, TP, config, clock, log_start_offset_checkpoint=lso,
                             recovery_point=rp, high_watermark_checkpoint=hw,
                             clean_shutdown=clean)


def test_leader_append_assigns_consecutive_offsets_and_reads_back() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 30)
    assert log.log_end_offset == 60
    assert len(log.segments) > 1, "segment.bytes=1000 must have rolled"
    values = read_all(log)
    assert [o for o, _ in values] == list(range(60))
    assert values[7] == (7, b"v3.1")


def test_read_at_every_offset_starts_at_the_batch_holding_it() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 40, per_batch=3)
    for offset in range(0, 120):
        data = log.read(offset, 1)
        assert data.first_batch_offset == offset - offset % 3


def test_read_outside_the_log_is_out_of_range() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 5)
    log.update_high_watermark(10)
    log.increment_log_start_offset(4)
    for bad in (-1, 3, 11):
        with pytest.raises(OffsetOutOfRange) as e:
            log.read(bad, 100)
        assert e.value.code == 1 and "outside [4, 10]" in str(e.value)
    assert log.read(10, 100).records == b""


def test_consumer_read_stops_at_high_watermark() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 5)
    log.update_high_watermark(6)
    assert [o for o, _ in read_all(log, max_offset=6)] == list(range(6))


def test_a_batch_larger_than_max_bytes_is_returned_whole() -> None:
    fs, clock = world()
    log = new_log(fs, clock, LogConfig())
    log.append_as_leader(batch(b"x" * 5000))
    data = log.read(0, 10)
    assert len(data.records) > 5000
    assert log.read(0, 10, min_one_batch=False).records == b""


def test_roll_by_age() -> None:
    fs, clock = world()
    log = new_log(fs, clock, LogConfig(segment_ms=1000))
    log.append_as_leader(batch(b"a", ts=clock.now_ms()))
    clock.advance(1000)
    log.append_as_leader(batch(b"b", ts=clock.now_ms()))
    assert [s.base_offset for s in log.segments] == [0, 1]


def test_offset_for_timestamp() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    for i in range(20):
        log.append_as_leader(batch(b"x", ts=1000 + 10 * i))
    assert log.offset_for_timestamp(1000) == 0
    assert log.offset_for_timestamp(1055) == 6
    assert log.offset_for_timestamp(1190) == 19
    assert log.offset_for_timestamp(5000) is None


def test_corrupt_produce_input_is_rejected_and_nothing_appended() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    good = bytearray(batch(b"a", b"b"))
    good[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="crc"):
        log.append_as_leader(bytes(good))
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(b"\x00" * 10)
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_follower_append_keeps_offsets_and_refuses_overlap() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    log.append_as_follower(build_simple_batch([b"a", b"b"], 1, base_offset=0))
    log.append_as_follower(build_simple_batch([b"c"], 1, base_offset=2))
    assert log.log_end_offset == 3
    with pytest.raises(UnexpectedAppendOffset, match="overlaps"):
        log.append_as_follower(build_simple_batch([b"d"], 1, base_offset=1))


def test_empty_replica_starts_at_the_base_of_the_first_batch_it_receives() -> None:
    """hazard 7: the start offset points into the middle of the leader's batch."""
    fs, clock = world()
    log = new_log(fs, clock)
    log.truncate_fully_and_start_at(5)  # the leader's log start offset, mid-batch
    log.append_as_follower(build_simple_batch([b"a", b"b", b"c", b"d"], 1, base_offset=3))
    assert (log.log_start_offset, log.log_end_offset) == (5, 7)
    assert read_all(log) == [(5, b"c"), (6, b"d")]
    with pytest.raises(OffsetOutOfRange):
        log.read(4, 100)


def test_log_start_offset_only_moves_forward_and_never_past_hw() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    log.start_offset_checkpoint = LogStartOffsetCheckpoint(fs, "/d1", {TP: log})
    checkpoint = OffsetCheckpointFile(fs, "/d1/log-start-offset-checkpoint")
    fill(log, 5)
    log.update_high_watermark(6)
    assert log.increment_log_start_offset(3)
    assert checkpoint.read() == {TP: 3}, "durable before the raise returns"
    assert not log.increment_log_start_offset(2)
    with pytest.raises(OffsetOutOfRange, match="above the high watermark"):
        log.increment_log_start_offset(7)
    assert log.log_start_offset == 3 and checkpoint.read() == {TP: 3}
    fs.crash()
    assert checkpoint.read() == {TP: 3}, "a power loss keeps an acknowledged raise"


def test_a_raise_that_cannot_be_made_durable_is_not_taken() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    other = new_log(fs, clock, path="/d1/t-1")
    logs = {TP: log, TopicPartition("t", 1): other}
    log.start_offset_checkpoint = LogStartOffsetCheckpoint(fs, "/d1", logs)
    status = log.dir_status = other.dir_status = LogDirStatus("/d1", logs)
    fill(log, 5)
    log.update_high_watermark(6)
    fs.inject_fault("/d1", Fault.ENOSPC)
    with pytest.raises(KafkaStorageError):
        log.increment_log_start_offset(4)
    assert log.log_start_offset == 0 and log.offline
    assert not status.online and other.offline, "the whole dir goes offline, in the same call"
    fs.clear_fault("/d1")
    assert not fs.exists("/d1/log-start-offset-checkpoint")


def test_truncate_removes_whole_batches_and_clamps_hw() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 30)
    log.update_high_watermark(50)
    log.truncate_to(41)  # mid-batch: the batch 40..41 goes whole
    assert (log.log_end_offset, log.high_watermark) == (40, 40)
    assert [o for o, _ in read_all(log)] == list(range(40))
    fill(log, 1)
    assert read_all(log)[-1] == (41, b"v0.1")


@pytest.mark.parametrize("beyond", [0, 1, 7])
def test_truncate_at_or_past_the_end_forgets_an_epoch_begun_there_without_records(
        beyond: int) -> None:
    """traces/regressions/0042: a replica led epoch 2 from its log end, 4, and appended nothing
    of it (a power loss took what it had) before another leader took over. As a follower its
    divergence check truncates to its log end or beyond: nothing to remove, but the entry
    (2, 4) must go, or the epoch 1 records it fetches next are read as epoch 2's and a later
    check cuts them. Entries that begin below the end stay; the cache is as durable as before."""
    fs, clock = world()
    log = new_log(fs, clock)
    log.append_as_leader(batch(b"a", b"b"), leader_epoch=0)
    log.append_as_leader(batch(b"c", b"d"), leader_epoch=1)
    log.assign_epoch_start_offset(2, 4)  # it leads epoch 2 from its end, nothing appended
    assert log.leader_epoch_cache.pairs == ((0, 0), (1, 2), (2, 4))
    assert log.truncate_to(4 + beyond) == 0
    assert log.leader_epoch_cache.pairs == ((0, 0), (1, 2))
    assert log.end_offset_for_epoch(1) == (1, 4) and log.log_end_offset == 4
    reloaded = load(fs, clock, clean=True, rp=4, hw=0)[0]  # the cut cache is on disk
    assert reloaded.leader_epoch_cache.pairs == ((0, 0), (1, 2))


def test_truncate_below_log_start_restarts_at_log_start() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 10)
    log.update_high_watermark(10)
    log.increment_log_start_offset(9)
    log.truncate_to(3)
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (9, 9, 9)


def test_truncate_fully_and_start_at_raises_hw_with_start_offset() -> None:
    """hazard 8: HW >= log start offset on every replica."""
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 3)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (100, 100, 100)
    with pytest.raises(OffsetOutOfRange, match="below the log start offset"):
        log.truncate_fully_and_start_at(50)


def test_restart_below_start_moves_the_start_back_only_for_an_empty_log() -> None:
    """The one way back: an empty log restarts below its start offset (its leader lost the
    records below it), durable at once; a log holding records refuses."""
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 3)  # six records
    log.update_high_watermark(6)
    log.increment_log_start_offset(6)
    assert log.log_end_offset == log.log_start_offset == 6
    with pytest.raises(OffsetOutOfRange, match="below the start offset"):
        log.restart_below_start(6)
    log.restart_below_start(3)
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (3, 3, 3)
    assert log.leader_epoch_cache.entries == ()
    fill(log, 2)
    with pytest.raises(OffsetOutOfRange, match="must be empty"):
        log.restart_below_start(1)


def test_retention_by_start_offset_breach_runs_on_compacted_topics_too() -> None:
    """hazard 9."""
    fs, clock = world()
    log = new_log(fs, clock, SMALL.with_(cleanup_policy="compact"))
    fill(log, 40)
    log.update_high_watermark(80)
    log.increment_log_start_offset(45)
    deleted = log.delete_old_segments()
    assert deleted > 0
    assert log.segments[0].base_offset <= 45 < log.segments[0].next_offset
    assert read_all(log)[0][0] == 45


def test_retention_never_deletes_at_or_above_the_high_watermark() -> None:
    """hazard 1: every segment is expired by time and by size, but the HW is low."""
    fs, clock = world()
    log = new_log(fs, clock, SMALL.with_(retention_ms=10, retention_bytes=0))
    fill(log, 40, ts=1)
    log.update_high_watermark(25)
    log.delete_old_segments()
    assert 0 < log.log_start_offset <= 25, "old segments went, but only below the HW"
    assert [o for o, _ in read_all(log)] == list(range(log.log_start_offset, 80))
    assert log.segments[0].next_offset > 25, "the segment holding the HW stays"


def test_time_retention_rolls_and_deletes_the_active_segment_when_all_below_hw() -> None:
    fs, clock = world()
    log = new_log(fs, clock, LogConfig(retention_ms=1000))
    fill(log, 3, ts=clock.now_ms())
    log.update_high_watermark(6)
    clock.advance(2000)
    assert log.delete_old_segments() == 1
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (6, 6, 6)


def test_size_retention_keeps_the_newest_bytes() -> None:
    fs, clock = world()
    log = new_log(fs, clock, SMALL.with_(retention_bytes=2000))
    fill(log, 60)
    log.update_high_watermark(120)
    log.delete_old_segments()
    assert log.size_bytes <= 2000 + SMALL.segment_bytes
    assert read_all(log)[-1][0] == 119


def test_recovery_cuts_a_torn_tail() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 5)
    log.flush()
    path = log.active_segment.log_path
    handle = fs.open(path)
    size = handle.size()
    handle.truncate(size - 7)
    handle.fsync()
    log2, report = load(fs, clock, rp=0)
    assert report.truncated_bytes > 0
    assert log2.log_end_offset == 8
    assert [o for o, _ in read_all(log2)] == list(range(8))


def test_recovery_cuts_at_a_corrupt_batch_and_drops_later_segments() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 30)
    log.flush()
    first = log.segments[0]
    handle = fs.open(first.log_path)
    handle.write_at(200, b"\xff\xff")
    handle.fsync()
    log2, report = load(fs, clock, rp=0)
    assert report.truncated_bytes > 0
    assert len(log2.segments) == 1
    assert 0 < log2.log_end_offset < first.next_offset
    assert [o for o, _ in read_all(log2)] == list(range(log2.log_end_offset))


def test_missing_or_garbage_indexes_are_rebuilt() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 30)
    log.flush()
    expected = read_all(log)
    seg0 = log.segments[0]
    fs.remove(seg0.index_path)
    garbage = fs.open(log.segments[1].index_path)
    garbage.write_at(0, b"\x7f" * 13)
    garbage.fsync()
    log2, _ = load(fs, clock, clean=True)
    assert read_all(log2) == expected


def test_leftover_files_are_cleaned_on_load() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 3)
    log.flush()
    for name in (segment_file_name(500, ".index"), segment_file_name(0, ".log") + ".deleted"):
        fs.open(f"/d1/t-0/{name}", create=True).close()
    _, report = load(fs, clock, clean=True)
    assert sorted(report.deleted_files) == sorted(
        [segment_file_name(500, ".index"), segment_file_name(0, ".log") + ".deleted"])


def test_load_uses_the_larger_of_checkpoint_and_first_segment() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 10)
    log.flush()
    log2, _ = load(fs, clock, clean=True, lso=7, hw=3)
    assert (log2.log_start_offset, log2.high_watermark) == (7, 7), "HW is raised to the LSO"
    log3, _ = load(fs, clock, clean=True, lso=None, hw=15)
    assert (log3.log_start_offset, log3.high_watermark, log3.log_end_offset) == (0, 15, 20)


def test_crash_losing_everything_above_log_start_restarts_at_log_start() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 10)  # never flushed
    log.update_high_watermark(20)
    log.increment_log_start_offset(12)
    fs.crash()
    log2, report = load(fs, clock, lso=12, rp=0)
    assert report.restarted_at == 12
    assert (log2.log_start_offset, log2.high_watermark, log2.log_end_offset) == (12, 12, 12)


def test_negative_offsets_get_precise_errors() -> None:
    fs, clock = world()
    log = new_log(fs, clock)
    fill(log, 2)
    with pytest.raises(OffsetOutOfRange):
        log.read(-5, 10)
    with pytest.raises(OffsetOutOfRange):
        log.update_high_watermark(-1)
    with pytest.raises(OffsetOutOfRange):
        log.truncate_to(-1)
    with pytest.raises(OffsetOutOfRange):
        log.increment_log_start_offset(-3)


def test_recovery_of_a_torn_tail_shorter_than_a_header() -> None:
    """Regression (traces/storage/0001): a segment holding only 8 to 11 torn bytes broke
    recovery; any short torn tail, alone or after whole batches, is cut."""
    for before in (0, 2):
        for tail in (1, 8, 9, 11, 12, 60):
            fs, clock = world()
            log = new_log(fs, clock)
            fill(log, before)
            log.flush()
            handle = fs.open(log.active_segment.log_path)
            keep = handle.size()
            handle.append(batch(b"torn")[:tail])
            handle.fsync()
            log2, report = load(fs, clock, rp=0)
            assert log2.log_end_offset == 2 * before, (before, tail)
            assert report.truncated_bytes == tail
            assert fs.file_size(log2.active_segment.log_path) == keep


def test_the_log_owns_its_topic_id() -> None:
    """partition.metadata is written by the log, atomically, once: a log created without a
    topic id (hazard 2) adopts the first one it is given; another one is refused."""
    fs, clock = world()
    first, second = Uuid.from_random(random.Random(1)), Uuid.from_random(random.Random(2))
    log = new_log(fs, clock)
    assert log.topic_id is None
    assert log.assign_topic_id(first)
    assert not log.assign_topic_id(first), "the same id again writes nothing"
    with pytest.raises(TopicIdMismatch):
        log.assign_topic_id(second)
    assert log.topic_id == first
    log.close()
    fs.crash()
    again = load(fs, clock, lso=0, rp=0, hw=0)[0]
    assert again.topic_id == first
    with pytest.raises(TopicIdMismatch):
        again.assign_topic_id(second)
    # An offline log writes nothing.
    _, clock2 = world()
    fs2, _ = world()
    broken = new_log(fs2, clock2)
    fs2.inject_fault("/d1", Fault.EIO)
    with pytest.raises(KafkaStorageError):
        broken.assign_topic_id(first)
    assert broken.offline and broken.topic_id is None


@pytest.mark.parametrize("power_loss", [False, True])
def test_a_leader_epoch_begun_at_the_log_end_survives_a_restart_one_past_it_does_not(
        power_loss: bool) -> None:
    """A leader records its epoch at its log's end before writing; start-up keeps an epoch that
    begins at the log's end (the recovery election ranks logs by it), and drops one whose start
    the log lost."""
    fs, clock = world()
    log = new_log(fs, clock)
    log.append_as_leader(batch(b"a", b"b"), leader_epoch=1)
    log.assign_epoch_start_offset(3, log.log_end_offset)  # led epoch 3, wrote nothing
    log.flush()
    if power_loss:
        fs.crash()
    else:
        log.close()
    again, _ = load(fs, clock, clean=not power_loss)
    assert again.log_end_offset == 2
    assert again.leader_epoch_cache.latest_epoch == 3
    # Records of epoch 4 from offset 2, not flushed, and epoch 5 begun at 4: a power loss cuts
    # the log back to 2. Epoch 5 began past the end and goes; epoch 4 began at the end and
    # stays (the log held epoch 4's leader's log up to 2, every record committed before it).
    again.append_as_leader(batch(b"c", b"d"), leader_epoch=4)
    again.assign_epoch_start_offset(5, again.log_end_offset)
    fs.crash()
    third, _ = load(fs, clock)
    assert third.log_end_offset == 2 and third.leader_epoch_cache.latest_epoch == 4


@pytest.mark.parametrize("batches", [1, 2])
def test_a_leader_epoch_beyond_32_bits_changes_nothing(batches: int) -> None:
    """A batch's partition leader epoch is 32 bits: an append under a larger epoch is refused
    before anything changes. It used to enter the epoch cache (durably) with nothing appended,
    so the cache named an epoch no record carried, and the leader's next epoch looked older."""
    fs, clock = world()
    log = new_log(fs, clock)
    log.append_as_leader(batch(b"a"), leader_epoch=1)
    def files() -> dict[str, bytes]:
        out = {}
        for name in fs.listdir(log.dir_path):
            handle = fs.open(f"{log.dir_path}/{name}")
            out[name] = handle.read(0, handle.size())
            handle.close()
        return out

    entries, before = log.leader_epoch_cache.entries, files()
    records = b"".join(batch(b"b%d" % i) for i in range(batches))
    with pytest.raises(ValueError, match="2147483648"):
        log.append_as_leader(records, leader_epoch=2**31)
    assert log.leader_epoch_cache.entries == entries and log.log_end_offset == 1
    assert files() == before, "nothing written"
    log.append_as_leader(batch(b"c"), leader_epoch=2)
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [(1, 0), (2, 1)]
