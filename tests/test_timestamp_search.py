"""The search by timestamp and each segment's largest timestamp hold for any order of timestamps.

Producers set record timestamps, so they need not grow with offsets. ``offset_for_timestamp``
(ListOffsets by timestamp) must answer the first offset at or above the log start offset whose
record has a timestamp >= the target (one record a batch here), and a segment's
``max_timestamp_ms`` (what time retention compares) must be the largest timestamp it holds:
live, after a clean restart (read back from the time index and the tail), after an unclean one
(indexes rebuilt), after a truncation and after the log start offset moved. Compared with a
brute-force answer over random logs whose sparse indexes skip batches.

Regression: the time index used to record each indexed batch's own timestamp, not the largest
so far, so a larger timestamp in a batch the index skipped was lost: the search started after
it (answering a later offset), and after a restart a segment's largest timestamp came out too
small (time retention could delete records younger than retention.ms).
"""

from __future__ import annotations

import random

import pytest

from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.world import SimFileSystem, VirtualClock
from tests.storage_helpers import TP

PATH = "/d1/t-0"


class Case:
    """A log of one-record batches with random timestamps, and the timestamp of each offset."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock = VirtualClock(1_000_000)
        self.fs = SimFileSystem(self.clock)
        self.fs.makedirs("/d1")
        self.config = LogConfig(segment_bytes=self.rng.choice([400, 1000, 100_000]),
                                index_interval_bytes=self.rng.choice([1, 60, 150]))
        self.log = PartitionLog.create(self.fs, PATH, TP, self.config, self.clock)
        self.ts: dict[int, int] = {}
        self.append(self.rng.randint(5, 40))

    def append(self, batches: int) -> None:
        for _ in range(batches):
            offset = self.log.log_end_offset
            ts = self.rng.randint(0, 60)
            self.log.append_as_leader(build_simple_batch([b"v%d" % offset], ts))
            self.ts[offset] = ts
        self.log.update_high_watermark(self.log.log_end_offset)

    def restart(self, clean: bool) -> None:
        leo, start = self.log.log_end_offset, self.log.log_start_offset
        self.log.flush()
        self.log.close()
        self.log, _ = PartitionLog.load(
            self.fs, PATH, TP, self.config, self.clock, log_start_offset_checkpoint=start,
            recovery_point=leo if clean else start, high_watermark_checkpoint=leo,
            clean_shutdown=clean)

    def expected(self, target: int) -> int | None:
        start, end = self.log.log_start_offset, self.log.log_end_offset
        held = [o for o in sorted(self.ts) if self.ts[o] >= target and start <= o < end]
        return held[0] if held else None

    def check(self) -> None:
        for target in range(0, 63):
            assert self.log.offset_for_timestamp(target) == self.expected(target), target
        for seg in self.log.segments:
            held = [ts for o, ts in self.ts.items() if seg.base_offset <= o < seg.next_offset]
            assert seg.max_timestamp_ms == max(held, default=-1), seg.base_offset


@pytest.mark.parametrize("seed", range(12))
def test_the_search_by_timestamp_and_max_timestamps_live_and_after_restarts(seed: int) -> None:
    case = Case(seed)
    case.check()
    case.restart(clean=True)
    case.check()
    case.append(5)
    case.check()
    case.restart(clean=False)
    case.check()


@pytest.mark.parametrize("seed", range(12, 20))
def test_the_search_by_timestamp_after_truncation_and_a_raised_start_offset(seed: int) -> None:
    case = Case(seed)
    case.restart(clean=True)  # the tails are read back from the indexes
    cut = case.rng.randint(1, case.log.log_end_offset)
    case.log.truncate_to(cut)
    case.ts = {o: t for o, t in case.ts.items() if o < case.log.log_end_offset}
    case.log.update_high_watermark(case.log.log_end_offset)
    case.check()
    case.append(6)
    case.check()
    case.log.increment_log_start_offset(case.rng.randint(0, case.log.high_watermark))
    case.check()


def test_time_retention_after_a_restart_keeps_a_segment_with_a_young_record() -> None:
    """The active segment's young record is in its first batch, which the index never holds,
    older ones follow; after a clean restart the segment is rolled and retention runs."""
    clock = VirtualClock(10_000_000)
    fs = SimFileSystem(clock)
    fs.makedirs("/d1")
    config = LogConfig(segment_bytes=100_000, index_interval_bytes=1, retention_ms=60_000)
    log = PartitionLog.create(fs, PATH, TP, config, clock)
    now = clock.now_ms()
    for ts in [now - 1_000, now - 500_000, now - 400_000, now - 300_000]:
        log.append_as_leader(build_simple_batch([b"v"], ts))
    log.update_high_watermark(log.log_end_offset)
    leo = log.log_end_offset
    log.flush()
    log.close()
    log, _ = PartitionLog.load(fs, PATH, TP, config, clock, log_start_offset_checkpoint=0,
                               recovery_point=leo, high_watermark_checkpoint=leo,
                               clean_shutdown=True)
    assert log.segments[-1].max_timestamp_ms == now - 1_000
    log.roll()
    log.append_as_leader(build_simple_batch([b"w"], now))
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() == 0, "offset 0 is a second old: retention is a minute"
    clock.advance(60_000)
    assert log.delete_old_segments() == 1


def test_each_time_index_entry_is_kafkas_relative_offset_and_a_rising_timestamp() -> None:
    """The .timeindex file, entry by entry (8-byte timestamp, 4-byte offset relative to the
    segment's base, big-endian, as Kafka writes it): timestamps strictly rising (a batch that
    does not raise the largest timestamp adds no entry), each offset inside its segment and the
    one where its timestamp was first reached (as Kafka's entries: Kafka's search starts its
    scan at that offset); in every segment, not only the first."""
    import struct

    clock = VirtualClock(1_000_000)
    fs = SimFileSystem(clock)
    fs.makedirs("/d1")
    log = PartitionLog.create(fs, PATH, TP, LogConfig(segment_bytes=400, index_interval_bytes=1),
                              clock)
    stamps = [1_000 + i // 2 for i in range(40)]  # each timestamp twice
    for ts in stamps:
        log.append_as_leader(build_simple_batch([b"x"], ts))
    log.flush()
    assert len(log.segments) >= 3
    for seg in log.segments:
        seg.time_index.flush()
        data = fs.open(seg.time_index_path).read(0, 1 << 20)
        entries = [struct.unpack_from(">qi", data, i) for i in range(0, len(data), 12)
                   if data[i:i + 12] != bytes(12)]
        assert entries, seg.base_offset
        last = -1
        for ts, rel in entries:
            offset = seg.base_offset + rel
            assert seg.base_offset <= offset < seg.next_offset, (seg.base_offset, rel)
            assert ts > last and stamps[offset] == ts == max(stamps[:offset + 1])
            # Kafka's entry: the offset where the timestamp was first reached, so that its
            # search (the last entry at or below the target, then a scan from its offset)
            # finds the first batch at or above the target, reading these files too.
            assert offset == 0 or max(stamps[:offset]) < ts, (ts, offset)
            last = ts
