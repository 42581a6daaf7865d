"""Start-up after a clean shutdown does not trust segment files that overlap or leave a gap.

Every scenario runs on the simulated disk and on the real one (a tmp dir): a planted segment
(a copy, one overlapping two segments, one beyond the end, garbage), a half-deleted segment (its
.log gone, its .index left), a middle segment gone. After loading, the log is one unbroken chain
of offsets: nothing that was there before is lost unless it lay after a hole, and no offset is
served twice.
"""

from __future__ import annotations

import itertools
import posixpath
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from logwright.logmanager import LogManager, LogManagerConfig
from logwright.storage.checkpoint import RECOVERY_POINT_CHECKPOINT, OffsetCheckpointFile
from logwright.storage.log import LoadReport, PartitionLog
from logwright.storage.naming import segment_file_name
from logwright.world import FileSystem, RealFileSystem, SimFileSystem, SimScheduler, VirtualClock
from tests.storage_helpers import SMALL, TP, batch, fill, read_all


@pytest.fixture(params=["sim", "real"])
def disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[FileSystem, str]]:
    if request.param == "sim":
        fs: FileSystem = SimFileSystem(VirtualClock(1_000_000))
        fs.makedirs("/d1")
        yield fs, "/d1/t-0"
    else:
        yield RealFileSystem(), str(tmp_path / "t-0")


CLOCK = VirtualClock(1_000_000)


def build(fs: FileSystem, path: str, batches: int = 40) -> PartitionLog:
    log = PartitionLog.create(fs, path, TP, SMALL, CLOCK)
    fill(log, batches)
    log.update_high_watermark(log.log_end_offset)
    assert len(log.segments) >= 3, "the scenarios need a middle segment"
    return log


def shut(log: PartitionLog) -> None:
    log.flush()
    log.close()


def load(fs: FileSystem, path: str, before: PartitionLog | None = None, clean: bool = True,
         recovery_point: int | None = None) -> tuple[PartitionLog, LoadReport]:
    leo = before.log_end_offset if before is not None else None
    return PartitionLog.load(fs, path, TP, SMALL, CLOCK, log_start_offset_checkpoint=0,
                             recovery_point=recovery_point if recovery_point is not None else leo,
                             high_watermark_checkpoint=leo, clean_shutdown=clean)


def write(fs: FileSystem, path: str, data: bytes) -> None:
    handle = fs.open(path, create=True)
    handle.truncate(0)
    handle.append(data)
    handle.fsync()
    handle.close()


def segment_bytes(fs: FileSystem, log: PartitionLog, i: int, from_offset: int | None = None,
                  batches: int | None = None) -> tuple[int, bytes]:
    """(base offset, bytes) of segment ``i`` from the batch holding ``from_offset``, at most
    ``batches`` batches."""
    seg = log.segments[i]
    loc = seg.locate(seg.base_offset if from_offset is None else from_offset)
    assert loc is not None
    data = fs.read_file(seg.log_path)[loc.position:]
    if batches is not None:
        end, at = 0, loc.base_offset
        for _ in range(batches):
            nxt = seg.locate(at)
            assert nxt is not None
            end += nxt.size_bytes
            at = nxt.last_offset + 1
        data = data[:end]
    return loc.base_offset, data


def assert_chain(log: PartitionLog, expected: list[tuple[int, bytes | None]]) -> None:
    """The log holds exactly ``expected``, offsets one after another, segments lined up."""
    got = read_all(log)
    assert got == expected
    assert [o for o, _ in got] == list(range(log.log_start_offset, log.log_end_offset))
    segs = log.segments
    for a, b in itertools.pairwise(segs):
        assert a.next_offset == b.base_offset, "segments line up"


def test_an_untouched_log_is_trusted_whatever_happened_to_it(disk: tuple[FileSystem, str]
                                                             ) -> None:
    fs, path = disk
    for seed in range(12):
        rng = random.Random(seed)
        log = PartitionLog.create(fs, f"{path}-{seed}", TP, SMALL, CLOCK)
        for _ in range(rng.randint(5, 60)):
            op = rng.random()
            if op < 0.7:
                log.append_as_leader(batch(*[b"x" * rng.randint(1, 90)] * rng.randint(1, 3)))
            elif op < 0.8:
                log.roll()
            elif op < 0.9 and log.log_end_offset:
                log.truncate_to(rng.randint(log.log_start_offset, log.log_end_offset))
            else:
                log.update_high_watermark(log.log_end_offset)
                log.increment_log_start_offset(rng.randint(log.log_start_offset,
                                                           log.log_end_offset))
                log.delete_old_segments()
        log.update_high_watermark(log.log_end_offset)
        expected, leo, lso = read_all(log), log.log_end_offset, log.log_start_offset
        shut(log)
        again, report = PartitionLog.load(
            fs, f"{path}-{seed}", TP, SMALL, CLOCK, log_start_offset_checkpoint=lso,
            recovery_point=leo, high_watermark_checkpoint=leo, clean_shutdown=True)
        assert report.distrusted is None and report.recovered_segments == 0, seed
        assert read_all(again) == expected and again.log_end_offset == leo
        again.close()


def test_a_planted_copy_of_offsets_already_there_is_deleted(disk: tuple[FileSystem, str]
                                                            ) -> None:
    fs, path = disk
    log = build(fs, path)
    expected = read_all(log)
    mid = (log.segments[0].base_offset + log.segments[1].base_offset) // 2
    base, data = segment_bytes(fs, log, 0, from_offset=mid)
    planted = segment_file_name(base, ".log")
    shut(log)
    write(fs, posixpath.join(path, planted), data)
    again, report = load(fs, path, log)
    assert report.distrusted is not None and "overlaps" in report.distrusted
    assert planted in report.deleted_files and not fs.exists(posixpath.join(path, planted))
    assert_chain(again, expected)


def test_a_planted_segment_overlapping_two_others_is_spliced_in(disk: tuple[FileSystem, str]
                                                                ) -> None:
    fs, path = disk
    log = build(fs, path)
    expected = read_all(log)
    mid = (log.segments[0].base_offset + log.segments[1].base_offset) // 2
    base, head = segment_bytes(fs, log, 0, from_offset=mid)
    _, tail = segment_bytes(fs, log, 1, batches=2)  # reaches into the next segment
    shut(log)
    write(fs, posixpath.join(path, segment_file_name(base, ".log")), head + tail)
    again, report = load(fs, path, log)
    assert report.distrusted is not None
    assert_chain(again, expected)
    assert again.log_end_offset == log.log_end_offset


@pytest.mark.parametrize("how", ["log only", "whole segment"])
def test_a_half_deleted_or_missing_middle_segment_ends_the_log_at_the_hole(
        disk: tuple[FileSystem, str], how: str) -> None:
    fs, path = disk
    log = build(fs, path)
    hole = log.segments[1]
    expected = [(o, v) for o, v in read_all(log) if o < hole.base_offset]
    shut(log)
    fs.remove(hole.log_path)
    if how == "whole segment":
        fs.remove(hole.index_path)
        fs.remove(hole.time_index_path)
    again, report = load(fs, path, log)
    assert report.distrusted is not None and "gap" in report.distrusted
    assert again.log_end_offset == hole.base_offset, "the replica fetches the rest again"
    assert_chain(again, expected)
    assert fs.listdir(path) == [segment_file_name(0, s) for s in (".index", ".log", ".timeindex")]


def test_a_lost_index_alone_is_no_reason_to_distrust(disk: tuple[FileSystem, str]) -> None:
    fs, path = disk
    log = build(fs, path)
    expected = read_all(log)
    shut(log)
    fs.remove(log.segments[1].index_path)
    fs.remove(log.segments[0].time_index_path)
    again, report = load(fs, path, log)
    assert report.distrusted is None and report.recovered_segments == 0
    assert_chain(again, expected)


@pytest.mark.parametrize("index", [b"\x00\x00\x00\x05\x7f\xff\xff\xff", b"\x01\x02\x03",
                                   b"\x00\x00\x00\x01\x00\x00\x00\x07"])
def test_a_garbage_index_never_costs_a_record(disk: tuple[FileSystem, str], index: bytes
                                             ) -> None:
    fs, path = disk
    log = build(fs, path)
    expected, leo = read_all(log), log.log_end_offset
    shut(log)
    for seg in log.segments[:2]:
        write(fs, seg.index_path, index)
    again, _ = load(fs, path, log)
    assert again.log_end_offset == leo
    assert_chain(again, expected)


@pytest.mark.parametrize("kind", ["valid batches", "garbage"])
def test_a_planted_segment_beyond_the_end_or_of_garbage_is_dropped(
        disk: tuple[FileSystem, str], kind: str) -> None:
    fs, path = disk
    log = build(fs, path)
    expected, leo = read_all(log), log.log_end_offset
    if kind == "valid batches":
        _, data = segment_bytes(fs, log, 0)
        base = leo + 10
    else:
        data = random.Random(3).randbytes(700)
        base = log.segments[1].base_offset + 1
    shut(log)
    write(fs, posixpath.join(path, segment_file_name(base, ".log")), data)
    again, report = load(fs, path, log)
    assert report.distrusted is not None
    assert again.log_end_offset == leo
    assert_chain(again, expected)
    assert not fs.exists(posixpath.join(path, segment_file_name(base, ".log")))


def test_after_a_crash_a_segment_shortened_at_a_batch_boundary_leaves_no_hole(
        disk: tuple[FileSystem, str]) -> None:
    # Regression: recovery dropped later segments only after a cut inside a batch; a segment
    # that lost whole batches (a crash keeping a prefix that ends on a batch boundary) left a
    # hole before the next segment, which was then served as if nothing were missing.
    fs, path = disk
    log = build(fs, path)
    first = log.segments[0]
    loc = first.locate((first.base_offset + log.segments[1].base_offset) // 2)
    assert loc is not None
    expected = [(o, v) for o, v in read_all(log) if o < loc.base_offset]
    shut(log)
    handle = fs.open(first.log_path)
    handle.truncate(loc.position)
    handle.close()
    again, report = load(fs, path, log, clean=False, recovery_point=0)
    assert report.distrusted is None, "an unclean start-up recovers anyway"
    assert again.log_end_offset == loc.base_offset
    assert_chain(again, expected)


def test_the_log_manager_recovers_a_distrusted_log_and_trusts_it_again() -> None:
    clock = VirtualClock(1_000_000)
    fs = SimFileSystem(clock)
    config = LogManagerConfig(log=SMALL)

    def start() -> tuple[LogManager, list[str]]:
        lm = LogManager(fs, ["/data/d1"], clock, SimScheduler(clock, seed=1), config,
                        random.Random(0))
        return lm, list(lm.startup().distrusted)

    lm, distrusted = start()
    log = lm.create_log(TP)
    fill(log, 40)
    log.update_high_watermark(log.log_end_offset)
    hole = log.segments[1]
    lm.shutdown()
    fs.remove(hole.log_path)
    lm, distrusted = start()
    assert distrusted == ["/data/d1/t-0"]
    again = lm.get_log(TP)
    assert again is not None and again.log_end_offset == hole.base_offset
    points = OffsetCheckpointFile(fs, f"/data/d1/{RECOVERY_POINT_CHECKPOINT}").read()
    assert points[TP] == hole.base_offset, "the checkpoints no longer point past the hole"
    lm.shutdown()
    lm, distrusted = start()
    assert distrusted == [] and lm.get_log(TP) is not None
