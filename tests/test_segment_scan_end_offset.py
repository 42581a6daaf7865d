"""Start-up finds where a non-active segment ends without loading its indexes.

``LogSegment.scan_end_offset`` reads only the offset index's last entry from disk and walks the
batch headers from there to the end of the file; when the index is missing, unreadable (a size
that is no whole number of entries, a position outside the file) or points at no batch, it walks
the whole file. Every scenario runs on the simulated disk and on the real one (a tmp dir) and
compares with the true end offset. To see where the walk starts, some scenarios zero the bytes
before the last entry's position: a walk from there reads past them, a walk from the start stops
at the zeroed header at once.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from logwright.storage.log import PartitionLog
from logwright.storage.segment import LogSegment
from logwright.world import FileSystem, RealFileSystem, SimFileSystem, VirtualClock
from tests.storage_helpers import SMALL, TP, fill

CLOCK = VirtualClock(1_000_000)


@pytest.fixture(params=["sim", "real"])
def disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[FileSystem, str]]:
    if request.param == "sim":
        fs: FileSystem = SimFileSystem(VirtualClock(1_000_000))
        fs.makedirs("/d1")
        yield fs, "/d1/t-0"
    else:
        yield RealFileSystem(), str(tmp_path / "t-0")


def first_segment(fs: FileSystem, path: str) -> tuple[int, int, list[tuple[int, int]]]:
    """Writes a log of several segments and closes it; returns the first segment's base offset,
    its true end offset and its batches as (position, base offset)."""
    log = PartitionLog.create(fs, path, TP, SMALL, CLOCK)
    fill(log, 40)
    log.flush()
    seg = log.segments[0]
    end = seg.next_offset
    batches = [(loc.position, loc.base_offset) for loc, _ in seg._walk(0, seg.size_bytes)]
    log.close()
    assert len(batches) >= 4, "the scenarios need several batches in the segment"
    return seg.base_offset, end, batches


def reopen(fs: FileSystem, path: str, base: int) -> LogSegment:
    return LogSegment(fs, path, base, SMALL.index_interval_bytes)


def write_index(fs: FileSystem, seg: LogSegment, entries: list[tuple[int, int]]) -> None:
    """Replace the segment's offset index by ``entries`` (relative offset, position)."""
    if fs.exists(seg.index_path):
        fs.remove(seg.index_path)
    handle = fs.open(seg.index_path, create=True)
    handle.append(b"".join(struct.pack(">ii", rel, pos) for rel, pos in entries))
    handle.fsync()
    handle.close()


def zero_before(fs: FileSystem, seg: LogSegment, position: int) -> None:
    """Zero the segment file's bytes before ``position``: a walk from the start finds no batch."""
    handle = fs.open(seg.log_path)
    handle.write_at(0, bytes(position))
    handle.close()


def test_the_end_offset_of_an_intact_segment_is_found_from_its_index_on_disk(
        disk: tuple[FileSystem, str]) -> None:
    fs, path = disk
    base, end, _ = first_segment(fs, path)
    seg = reopen(fs, path, base)
    assert fs.file_size(seg.index_path) >= 16, "the scenario needs several index entries"
    assert seg.scan_end_offset() == end
    assert seg.next_offset == end


def test_the_end_offset_is_found_from_an_index_already_loaded(
        disk: tuple[FileSystem, str]) -> None:
    fs, path = disk
    base, end, _ = first_segment(fs, path)
    seg = reopen(fs, path, base)
    last_position = seg.index.last_entry[1]
    assert last_position > 0
    zero_before(fs, seg, last_position)
    assert seg.scan_end_offset() == end


def test_without_an_index_file_the_whole_segment_is_walked(disk: tuple[FileSystem, str]) -> None:
    fs, path = disk
    base, end, _ = first_segment(fs, path)
    seg = reopen(fs, path, base)
    fs.remove(seg.index_path)
    assert seg.scan_end_offset() == end


@pytest.mark.parametrize("entries", [1, 2, 3])
def test_the_walk_starts_at_the_index_files_last_entry(disk: tuple[FileSystem, str],
                                                       entries: int) -> None:
    """An index of 1, 2 or 3 entries (8, 16, 24 bytes), the last one at a batch past the first:
    the bytes before it are never read."""
    fs, path = disk
    base, end, batches = first_segment(fs, path)
    seg = reopen(fs, path, base)
    picked = batches[1:entries + 1]
    write_index(fs, seg, [(offset - base, position) for position, offset in picked])
    zero_before(fs, seg, picked[-1][0])
    assert seg.scan_end_offset() == end


@pytest.mark.parametrize("garbage", [
    pytest.param(b"\x00\x00\x00\x01", id="4 bytes"),
    pytest.param(b"\x00" * 12, id="12 bytes"),
    pytest.param(b"\x00\x00\x00\x01" + struct.pack(">i", 10**6), id="entry beyond the file"),
    pytest.param(b"\x00\x00\x00\x01" + struct.pack(">i", -40), id="negative position"),
])
def test_an_unusable_index_makes_the_scan_walk_the_whole_segment(
        disk: tuple[FileSystem, str], garbage: bytes) -> None:
    fs, path = disk
    base, end, _ = first_segment(fs, path)
    seg = reopen(fs, path, base)
    fs.remove(seg.index_path)
    handle = fs.open(seg.index_path, create=True)
    handle.append(garbage)
    handle.close()
    assert seg.scan_end_offset() == end


@pytest.mark.parametrize("back", [1, 5, 20])
def test_a_last_entry_pointing_at_no_batch_makes_the_scan_walk_the_whole_segment(
        disk: tuple[FileSystem, str], back: int) -> None:
    """The entry points inside the file but too near its end for a batch header."""
    fs, path = disk
    base, end, _ = first_segment(fs, path)
    seg = reopen(fs, path, base)
    write_index(fs, seg, [(1, seg.size_bytes - back)])
    assert seg.scan_end_offset() == end
