"""Recovery's single pass over a segment agrees with the straightforward walk.

``LogSegment.recover`` reads the log once, through one reused buffer, checking each batch and
collecting the index entries as it goes, then gives the indexes their entries in bulk. The
reference here is the plain way: the whole file in one buffer, ``scan_valid_prefix`` for the
valid prefix, the log cut there, and ``rebuild_indexes`` walking it again. Over random logs
(mixed batch sizes, compressed batches, zero-record batches, offset gaps, batches larger than the
buffer, several leader epochs) with random damage (a flipped byte, a torn tail, garbage after
the end, an impossible field under a good CRC, offsets going backwards), both must cut the same
bytes and leave the same segment: the same index and time index (in memory and on disk), next
offset, largest timestamp, epoch runs. On the simulated disk they must also make the same file
system operations in the same order (the same crash points), and the reused buffer is shrunk so
that batches straddle its end and some do not fit in it at all.
"""

from __future__ import annotations

import posixpath
import random
import struct
import tempfile
from typing import Any

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logwright.records import Record, build_batch, scan_valid_prefix
from logwright.records.header import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER_SIZE,
    HEADER_STRUCT,
    MAGIC_V2,
)
from logwright.storage import segment as segment_module
from logwright.storage.index import OffsetIndex, TimeIndex
from logwright.storage.naming import segment_file_stem
from logwright.storage.segment import LogSegment, RecoveryBuffer
from logwright.world import FileSystem, RealFileSystem, SimFileSystem, VirtualClock

_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
DIR = "/d/t-0"


# ---- random logs ---------------------------------------------------------------------------------


def _recrc(batch: bytearray) -> bytearray:
    """``batch`` with its CRC recomputed (after a field under the CRC was changed)."""
    crc = crc32c.crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:])
    batch[CRC_OFFSET:CRC_OFFSET + 4] = crc.to_bytes(4, "big")
    return batch


def _empty_batch(base_offset: int, last_delta: int, epoch: int, ts: int) -> bytearray:
    """A batch with no records (all header, 61 bytes), as compaction can leave one."""
    header = bytearray(HEADER_SIZE)
    HEADER_STRUCT.pack_into(header, 0, base_offset, HEADER_SIZE - 12, epoch, MAGIC_V2, 0, 0,
                            last_delta, ts, ts, -1, -1, -1, 0)
    return _recrc(header)


def random_log(rng: random.Random, base_offset: int, max_batches: int) -> bytes:
    """The bytes of a segment of valid batches from ``base_offset`` on: mixed sizes, some
    gzip-compressed, some with no records, some with offset gaps (a compacted log's, and now
    and then one of 2**31), now and then one too big for a shrunk buffer, a few leader epochs,
    timestamps up and down."""
    out = bytearray()
    offset = base_offset + rng.choice([0, 0, 0, 3])
    epoch = rng.randrange(3)
    # Timestamps rising all along (a time index entry at each index entry), from a few values
    # (many ties for the largest), or anywhere.
    clock = rng.choice(["rising", "ties", "any"])
    for n in range(rng.randrange(max_batches + 1)):
        if rng.random() < 0.1:
            epoch += 1
        if clock == "rising":
            ts = 1_000 + 10 * n
        elif clock == "ties":
            ts = rng.choice([-1, 1_000, 1_001, 1_002]) + (n // 50) * 10
        else:
            ts = rng.choice([-1, rng.randrange(1_000, 1_100), rng.randrange(1_000, 5_000)])
        if rng.random() < 0.05:
            batch = _empty_batch(offset, rng.randrange(3), epoch, ts)
        else:
            size = rng.choice([0, 10, 100, 400, 1_500]) if rng.random() > 0.03 else 20_000
            records = [Record(None, bytes([rng.randrange(256)]) * rng.randrange(size + 1),
                              max(-1, ts - j))
                       for j in range(rng.randrange(1, 6))]
            attributes = 1 if rng.random() < 0.15 else 0  # gzip
            batch = bytearray(build_batch(records, offset, epoch, attributes=attributes))
            if rng.random() < 0.1:  # offsets missing inside the batch (compaction)
                last_delta = _INT32.unpack_from(batch, 23)[0] + rng.randrange(1, 4)
                batch = _recrc(bytearray(batch[:23] + _INT32.pack(last_delta) + batch[27:]))
        last_delta = _INT32.unpack_from(batch, 23)[0]
        out += batch
        offset += last_delta + 1 + (rng.randrange(1, 5) if rng.random() < 0.1 else 0)
        if rng.random() < 0.02:  # a leap past what a relative offset holds: never indexed
            offset += 1 << 31
    return bytes(out)


def _batch_starts(data: bytes) -> list[int]:
    starts, pos = [], 0
    while pos + HEADER_SIZE <= len(data):
        starts.append(pos)
        pos += 12 + _INT32.unpack_from(data, pos + 8)[0]
    return starts


def damage(rng: random.Random, data: bytes) -> bytes:
    """``data`` with one kind of damage, or none."""
    out = bytearray(data)
    starts = _batch_starts(data)
    kind = rng.randrange(9)
    if kind == 0 or not out:
        return bytes(out)
    if kind == 1:  # a flipped byte anywhere (the epoch field is outside the CRC: still valid)
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    elif kind == 2:  # a torn tail
        del out[rng.randrange(len(out)):]
    elif kind == 3:  # garbage after the last batch
        out += rng.randbytes(rng.randrange(1, 200))
    elif kind == 4:  # zeros after the last batch (a preallocated tail)
        out += bytes(rng.randrange(1, 200))
    else:
        at = rng.choice(starts)
        if kind == 5:  # offsets going backwards (baseOffset is outside the CRC)
            _INT64.pack_into(out, at, max(0, _INT64.unpack_from(out, at)[0] - rng.randrange(1, 9)))
        elif kind == 6:  # recordCount above lastOffsetDelta + 1, under a good CRC
            end = at + 12 + _INT32.unpack_from(out, at + 8)[0]
            batch = bytearray(out[at:end])
            _INT32.pack_into(batch, 57, _INT32.unpack_from(batch, 23)[0] + 2)
            out[at:end] = _recrc(batch)
        elif kind == 7:  # a batch length running past the end of the file
            _INT32.pack_into(out, at + 8, len(out))
        else:  # a baseOffset at the top of the offset range
            _INT64.pack_into(out, at, (1 << 63) - 1)
    return bytes(out)


# ---- the reference -------------------------------------------------------------------------------


def reference_recover(seg: LogSegment, expected_first_offset: int | None,
                      collect_epochs: bool) -> int:
    """The straightforward recovery: validate the whole file in one buffer, cut, then rebuild
    both indexes by walking the log again (what ``recover`` did before its single pass)."""
    data = seg.fs.read_file(seg.log_path)
    result = scan_valid_prefix(data, 0, verify_crc=True)
    valid = result.valid_bytes
    if (expected_first_offset is not None and result.batches
            and _INT64.unpack_from(data, 0)[0] < expected_first_offset):
        valid = 0
    cut = seg.size_bytes - valid
    if cut:
        seg._log.truncate(valid)
        seg.size_bytes = valid
    seg.rebuild_indexes(collect_epochs)
    seg._recompute_tail_stats()
    if seg.size_bytes == 0:
        seg.next_offset = seg.base_offset
    return cut


# ---- running both --------------------------------------------------------------------------------


def _index_state(index: OffsetIndex | TimeIndex | None) -> dict[str, Any]:
    assert index is not None
    return {"first": (index._first_a.tolist(), index._first_b.tolist()),
            "tail": (index._tail_a.tolist(), index._tail_b.tolist()),
            "tail_start": index._tail_start, "written": index._written}


def recover_with(fs: FileSystem, root: str, data: bytes, base_offset: int, interval: int,
                 expected: bool, collect_epochs: bool, stale: bytes,
                 reference: bool, buffer: RecoveryBuffer | None = None) -> dict[str, Any]:
    """Write ``data`` as the segment at ``base_offset`` in ``root`` (with ``stale`` in its
    index files), recover it one way or the other, and return what it left."""
    dir_path = posixpath.join(root, "t-0")
    fs.makedirs(dir_path)
    stem = posixpath.join(dir_path, segment_file_stem(base_offset))
    for suffix, content in ((".log", data), (".index", stale), (".timeindex", stale)):
        handle = fs.open(stem + suffix, create=True)
        handle.append(content)
        handle.close()
    seg = LogSegment(fs, dir_path, base_offset, interval)
    trail: list[tuple[int, int, int]] = []
    if isinstance(fs, SimFileSystem):
        fs.after_op = lambda: trail.append((fs.file_size(seg.log_path),
                                            fs.file_size(seg.index_path),
                                            fs.file_size(seg.time_index_path)))
    expected_first = base_offset if expected else None
    # A valid batch more than 2**31 - 1 past the segment's base gets no index entry either way.
    if reference:
        cut = reference_recover(seg, expected_first, collect_epochs)
    else:
        cut = seg.recover(expected_first, collect_epochs, buffer)
    state = {
        "cut": cut, "size": seg.size_bytes, "next_offset": seg.next_offset,
        "max_ts": seg.max_timestamp_ms, "offset_of_max": seg.offset_of_max_timestamp,
        "first_ts": seg.first_batch_timestamp_ms,
        "bytes_since": seg._bytes_since_index_entry, "epoch_runs": seg.epoch_runs,
        "index": _index_state(seg._index), "time_index": _index_state(seg._time_index),
        "trail": trail,
    }
    seg.flush()
    seg.close()
    if isinstance(fs, SimFileSystem):
        fs.after_op = None
    for suffix in (".log", ".index", ".timeindex"):
        state[suffix] = fs.read_file(stem + suffix)
    return state


def check_case(rng: random.Random, max_batches: int, disk: str,
               buffer: RecoveryBuffer | None = None) -> None:
    """One random damaged log, recovered both ways (``buffer``: the one to read through, as
    another segment may have left it)."""
    base_offset = rng.choice([0, 0, 40, 1_000_000])
    clean = random_log(rng, base_offset, max_batches)
    data = damage(rng, clean)
    interval = rng.choice([0, 1, 100, 500, 4096])
    expected, collect_epochs = rng.random() < 0.8, rng.random() < 0.5
    stale = rng.randbytes(rng.choice([0, 8, 24, 100]))
    buffer_bytes = rng.choice([8192, 12288, segment_module.RECOVERY_BUFFER_BYTES])
    if buffer is not None:
        # The undamaged log first: the buffer then holds the very bytes a torn tail lacks, at
        # the places the damaged log's reads put them, and they must not be taken for it.
        recover_with(SimFileSystem(VirtualClock(1_000_000)), "/d", clean, base_offset,
                     interval, expected, collect_epochs, stale, False, buffer)
    states = []
    for reference in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(segment_module, "RECOVERY_BUFFER_BYTES", buffer_bytes)
            if disk == "sim":
                fs = SimFileSystem(VirtualClock(1_000_000))
                states.append(recover_with(fs, "/d", data, base_offset, interval, expected,
                                           collect_epochs, stale, reference, buffer))
            else:
                with tempfile.TemporaryDirectory() as root:
                    states.append(recover_with(RealFileSystem(), root, data, base_offset,
                                               interval, expected, collect_epochs, stale,
                                               reference, buffer))
    want, got = states
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == want[key], key


@settings(suppress_health_check=[HealthCheck.data_too_large, HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_recovery_agrees_with_the_straightforward_walk(rng: random.Random) -> None:
    check_case(rng, 40, "sim")


@pytest.mark.parametrize("disk", ["sim", "real"])
@pytest.mark.parametrize("seed", range(12))
def test_recovery_of_long_logs_agrees_with_the_straightforward_walk(disk: str, seed: int) -> None:
    """Logs long enough for the indexes to fill several chunks (each chunk written as it
    completes), on both disks (the real one reads with ``preadv`` into the buffer), and three
    of them through one buffer, as the segments of one log are: what an earlier one left in it
    (perhaps grown by a large batch) must not be taken for the next one's bytes."""
    rng, buffer = random.Random(seed), RecoveryBuffer()
    for _ in range(3):
        check_case(rng, 400, disk, buffer)


def test_a_batch_with_no_records_across_the_buffer_end_is_kept() -> None:
    """A 61-byte batch (no records, as compaction can leave) that the end of a read cuts is
    valid like any other. (Recovery in 8 MiB chunks took one cut by a chunk's end for corrupt
    and truncated the segment there.)"""
    first = build_batch([Record(None, b"x" * 8_100, 1_000)], 0)
    data = first + _empty_batch(1, 0, 0, 1_000) + build_batch([Record(None, b"y", 1_000)], 2)
    assert len(first) < 8_192 < len(first) + HEADER_SIZE
    fs = SimFileSystem(VirtualClock(1_000_000))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(segment_module, "RECOVERY_BUFFER_BYTES", 8_192)
        state = recover_with(fs, "/d", data, 0, 4_096, True, False, b"", reference=False)
    assert state["cut"] == 0 and state["next_offset"] == 3
