"""A segment holding batches more than 2**31 - 1 offsets past its base.

logwright never writes one (a segment rolls before an offset would not fit the 32-bit relative
offset of its indexes), but a segment from elsewhere can hold one: older Kafka versions wrote
such segments, and a damaged file can hold a valid batch with a leap in its offsets. Such a
batch is still a valid batch: it is kept, served and followed by appends; it only has no
index entry (the index is sparse, and a lookup scans forward from the last entry below it).
Recovery after a crash used to fail an assertion on it and stop the broker's start-up.
"""

from __future__ import annotations

import pytest

from logwright.records.build import build_simple_batch
from logwright.storage.index import MAX_RELATIVE_OFFSET
from logwright.storage.log import PartitionLog
from logwright.world import FileSystem, RealFileSystem, SimFileSystem, VirtualClock
from tests.storage_helpers import SMALL, TP, read_all

CLOCK = VirtualClock(1_000_000)
LEAP = 1 << 31


def _write_segment(fs: FileSystem, path: str) -> list[tuple[int, bytes]]:
    """Segment 0 of ``path``: three batches from offset 0, then five from 2**31 + 5 on, each
    of 300 bytes (several index intervals); returns every (offset, value)."""
    fs.makedirs(path)
    expected: list[tuple[int, bytes]] = []
    data = b""
    for i, base in enumerate([0, 1, 2, *(LEAP + 5 + 2 * k for k in range(5))]):
        value = bytes([65 + i]) * 300
        data += build_simple_batch([value], 1_000_000 + i, base_offset=base)
        expected.append((base, value))
    handle = fs.open(f"{path}/00000000000000000000.log", create=True)
    handle.append(data)
    handle.fsync()
    handle.close()
    return expected


def _load(fs: FileSystem, path: str, clean: bool) -> PartitionLog:
    log, report = PartitionLog.load(fs, path, TP, SMALL, CLOCK, log_start_offset_checkpoint=0,
                                    recovery_point=0, high_watermark_checkpoint=0,
                                    clean_shutdown=clean)
    assert report.truncated_bytes == 0 and report.deleted_files == [], report
    return log


@pytest.mark.parametrize("clean", [True, False], ids=["clean", "after-a-crash"])
@pytest.mark.parametrize("disk", ["sim", "real"])
def test_batches_past_a_relative_offset_are_kept_served_and_followed(
        clean: bool, disk: str, tmp_path: object) -> None:
    fs: FileSystem = SimFileSystem(CLOCK) if disk == "sim" else RealFileSystem()
    path = "/d/t-0" if disk == "sim" else f"{tmp_path}/t-0"
    expected = _write_segment(fs, path)
    log = _load(fs, path, clean)
    assert log.log_end_offset == expected[-1][0] + 1
    assert read_all(log) == expected
    for offset, value in expected:  # each found from the index entry below it
        assert read_all(log, offset)[0] == (offset, value)
    (segment,) = log.segments
    last, _ = segment.index.last_entry
    assert last <= MAX_RELATIVE_OFFSET, "no entry past the leap"
    assert clean or last > 0, "recovery indexed the batches below it"
    assert (segment.time_index.last_offset or 0) <= MAX_RELATIVE_OFFSET
    # The next append cannot be indexed in this segment either: it rolls first.
    log.append_as_leader(build_simple_batch([b"next"], 1_000_100))
    assert [s.base_offset for s in log.segments] == [0, expected[-1][0] + 1]
    assert read_all(log)[-1] == (expected[-1][0] + 1, b"next")
    log.close()
