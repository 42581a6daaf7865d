"""The offset index file holds exactly its entries, whatever batches of them reach the disk.

Entries are written in runs (each flush or close writes the ones not yet on disk); reloading
the file gives the same entries, never IndexCorrupt (which would cost a rebuild from the log at
every start-up), on the simulated disk and the real one. Relative offsets from 0 to 2^31 - 1 are
valid entries. A read of a segment returns whole batches, at most ``max_bytes`` of them unless
the first alone is larger, ending at an indexed batch when it can.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from logwright.storage.config import LogConfig
from logwright.storage.index import OffsetIndex
from logwright.storage.log import PartitionLog
from logwright.world import FileSystem, RealFileSystem, SimFileSystem, VirtualClock
from tests.storage_helpers import SMALL, TP, batch, fill, new_log, world

LOG_SIZE = 1 << 30


@pytest.fixture(params=["sim", "real"])
def disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[FileSystem, str]]:
    if request.param == "sim":
        fs: FileSystem = SimFileSystem(VirtualClock(1_000_000))
        fs.makedirs("/d1")
        yield fs, "/d1"
    else:
        yield RealFileSystem(), str(tmp_path)


def entries(index: OffsetIndex, base: int, upto: int) -> list[tuple[int, int]]:
    """Every distinct answer of ``lookup`` over [base, upto)."""
    return sorted({index.lookup(o) for o in range(base, upto)})


@pytest.mark.parametrize("runs", [[1], [3], [1, 1, 1], [2, 5], [4, 1, 3]])
def test_entries_written_in_runs_read_back_the_same(disk: tuple[FileSystem, str],
                                                   runs: list[int]) -> None:
    fs, d = disk
    base = 100
    path = f"{d}/00000000000000000100.index"
    index = OffsetIndex(fs, path, base)
    offset, position, written = base, 0, []
    for i, run in enumerate(runs):
        for _ in range(run):
            offset += 3
            position += 70
            index.append(offset, position)
            written.append((offset, position))
        if i % 2:
            index.close()
        else:
            index.flush()
    index.close()
    assert fs.file_size(path) == 8 * len(written)
    again = OffsetIndex(fs, path, base)
    again.load(LOG_SIZE)  # raises IndexCorrupt if the file holds anything else
    assert again.last_entry == written[-1]
    assert entries(again, base, offset + 5) == [(base, 0), *written]


@pytest.mark.parametrize("relative", [0, 1, 0x7FFFFFFE, 0x7FFFFFFF])
def test_any_32_bit_relative_offset_is_an_entry(disk: tuple[FileSystem, str],
                                                relative: int) -> None:
    fs, d = disk
    base = 5_000_000_000
    path = f"{d}/x.index"
    index = OffsetIndex(fs, path, base)
    index.append(base + relative, 0 if relative == 0 else 4096)
    index.close()
    again = OffsetIndex(fs, path, base)
    again.load(LOG_SIZE)
    assert again.last_entry == (base + relative, 0 if relative == 0 else 4096)


@pytest.mark.parametrize("seed", range(4))
def test_a_segment_read_returns_whole_batches_within_max_bytes(seed: int) -> None:
    rng = random.Random(seed)
    fs = SimFileSystem(VirtualClock(1_000_000))
    fs.makedirs("/d1")
    log = PartitionLog.create(fs, "/d1/t-0", TP, SMALL, VirtualClock(1_000_000))
    fill(log, 6, per_batch=rng.randint(1, 3))
    seg = log.segments[0]
    batches = [(loc.base_offset, loc.size_bytes) for loc, _ in seg._walk(0, seg.size_bytes)]
    biggest = max(size for _, size in batches)
    for first in range(len(batches)):
        start = batches[first][0]
        for max_bytes in range(1, seg.size_bytes + 20, 7):
            base, data = seg.read(start, max_bytes, seg.next_offset)
            assert base == start
            sizes = [size for _, size in batches[first:]]
            taken = 0
            for size in sizes:  # the bytes are a run of whole batches from the first
                if taken == len(data):
                    break
                taken += size
            assert taken == len(data)
            assert len(data) <= max(max_bytes, sizes[0]), (start, max_bytes, len(data))
            rest = sum(sizes)
            # Ends at an indexed batch: at most an index interval and a batch short.
            assert len(data) >= min(rest, max_bytes) - SMALL.index_interval_bytes - 2 * biggest


@pytest.mark.parametrize("index_bytes", [24, 25, 36, 37])
@pytest.mark.parametrize("rising", [True, False])
def test_a_segment_rolls_exactly_when_either_index_is_full(index_bytes: int,
                                                           rising: bool) -> None:
    """segment.index.bytes bounds each index: the next batch starts a new segment exactly when
    the active one's offset index holds index_bytes // 8 entries or its time index
    index_bytes // 12, whichever comes first (rising timestamps fill the time index; one
    timestamp leaves it at one entry, so the offset index decides)."""
    fs, clock = world()
    log = new_log(fs, clock, LogConfig(segment_bytes=1 << 20, segment_index_bytes=index_bytes,
                                       index_interval_bytes=1))
    rolls = 0
    for i in range(30):
        active = log.segments[-1]
        full = (active.index.entries >= index_bytes // 8
                or active.time_index.entries >= index_bytes // 12)
        log.append_as_leader(batch(b"v%d" % i, ts=1_000 + (i if rising else 0)))
        rolled = log.segments[-1] is not active
        assert rolled == (full and active.size_bytes > 0), (i, active.index.entries,
                                                            active.time_index.entries)
        rolls += rolled
    assert rolls >= 3
