"""Sparse segment indexes: offset -> file position, and timestamp -> offset.

Files use Kafka's entry layouts (big-endian): ``.index`` entries are (relative offset int32,
position int32); ``.timeindex`` entries are (timestamp int64, relative offset int32). Entries are
kept in memory as arrays and written to the file at flush, close or truncation (an append costs
no system call, as Kafka's memory-mapped index costs none). Indexes are derived data: a missing,
short or inconsistent index is rebuilt from the log, never trusted, so they are never the reason
a record is lost.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right

from logwright.world.fs import FileHandle, FileSystem

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class IndexCorrupt(Exception):
    """An index file does not agree with its segment; the caller rebuilds it."""


class _IndexFile:
    """The file under an index: opened on demand, entries ``[0, written)`` already in it."""

    def __init__(self, fs: FileSystem, path: str, base_offset: int, entry_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fs = fs
        self._entry_bytes = entry_bytes
        self._handle: FileHandle | None = None
        self._written = 0

    def _file(self) -> FileHandle:
        if self._handle is None:
            self._handle = self._fs.open(self.path, create=True)
        return self._handle

    def _read_all(self) -> bytes:
        handle = self._file()
        return handle.read(0, handle.size())

    def _pending(self) -> bytes:
        """The encoded entries not yet in the file (subclasses)."""
        raise NotImplementedError

    def _write_pending(self, count: int) -> None:
        if self._written < count:
            self._file().write_at(self._written * self._entry_bytes, self._pending())
            self._written = count

    def _truncate_file(self, keep: int) -> None:
        if keep < self._written:
            self._file().truncate(keep * self._entry_bytes)
            self._written = keep

    def _count(self) -> int:
        raise NotImplementedError

    def flush(self) -> None:
        """Write the pending entries and make every entry durable."""
        self._write_pending(self._count())
        if self._handle is not None:
            self._handle.fsync()

    def close(self) -> None:
        """Write the pending entries (not durably) and release the file."""
        try:
            self._write_pending(self._count())
        finally:
            if self._handle is not None:
                self._handle.close()
                self._handle = None


class OffsetIndex(_IndexFile):
    """Relative offset -> byte position of the batch starting there, sparse and ascending."""

    ENTRY_BYTES = _OFFSET_ENTRY.size

    def __init__(self, fs: FileSystem, path: str, base_offset: int) -> None:
        super().__init__(fs, path, base_offset, self.ENTRY_BYTES)
        self._offsets = array("q")
        self._positions = array("q")

    def _count(self) -> int:
        return len(self._offsets)

    def _pending(self) -> bytes:
        base, pack, start = self.base_offset, _OFFSET_ENTRY.pack, self._written
        pending = zip(self._offsets[start:], self._positions[start:], strict=True)
        return b"".join(pack(o - base, p) for o, p in pending)

    def load(self, log_size: int, max_offset: int | None = None) -> None:
        """Read entries from the file; raise ``IndexCorrupt`` if they cannot be trusted."""
        data = self._read_all()
        usable = len(data) - len(data) % self.ENTRY_BYTES
        offsets, positions = array("q"), array("q")
        last_rel, last_pos = -1, -1
        for rel, pos in _OFFSET_ENTRY.iter_unpack(data[:usable]):
            if rel <= last_rel or pos <= last_pos or pos >= log_size or rel < 0:
                raise IndexCorrupt(f"{self.path}: entry ({rel}, {pos}) out of order or past end")
            if max_offset is not None and self.base_offset + rel > max_offset:
                raise IndexCorrupt(f"{self.path}: offset {self.base_offset + rel} past the log")
            offsets.append(self.base_offset + rel)
            positions.append(pos)
            last_rel, last_pos = rel, pos
        if usable != len(data):
            raise IndexCorrupt(f"{self.path}: size {len(data)} is not a multiple of 8")
        self._offsets, self._positions = offsets, positions
        self._written = len(offsets)
        # Reopened by the next write: a broker with tens of thousands of segments must not
        # hold two more descriptors per segment for having read its indexes at start-up.
        self.close()

    def append(self, offset: int, position: int) -> None:
        """Add an entry for the batch starting at ``offset`` at ``position``."""
        assert not self._offsets or (offset > self._offsets[-1] and position > self._positions[-1])
        rel = offset - self.base_offset
        assert 0 <= rel <= 0x7FFFFFFF, "relative offset must fit in 32 bits"
        self._offsets.append(offset)
        self._positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The last entry at or before ``offset`` as (offset, position); (base, 0) if none."""
        i = bisect_right(self._offsets, offset)
        if i == 0:
            return self.base_offset, 0
        return self._offsets[i - 1], self._positions[i - 1]

    def batch_start_at_or_before(self, position: int) -> int:
        """The largest indexed batch position <= ``position`` (0 if none): a batch boundary."""
        i = bisect_right(self._positions, position)
        return self._positions[i - 1] if i else 0

    def truncate_to_position(self, position: int) -> None:
        """Drop entries at or after byte ``position`` of the log."""
        i = bisect_right(self._positions, position - 1)
        if i < len(self._offsets):
            del self._offsets[i:]
            del self._positions[i:]
            self._truncate_file(i)

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._offsets, self._positions = array("q"), array("q")
        self._file().truncate(0)
        self._written = 0

    @property
    def entries(self) -> int:
        """Number of entries."""
        return len(self._offsets)

    @property
    def last_entry(self) -> tuple[int, int]:
        """The last (offset, position), or (base, 0) if empty."""
        if not self._offsets:
            return self.base_offset, 0
        return self._offsets[-1], self._positions[-1]



class TimeIndex(_IndexFile):
    """Timestamp -> relative offset, sparse, with strictly increasing timestamps."""

    ENTRY_BYTES = _TIME_ENTRY.size

    def __init__(self, fs: FileSystem, path: str, base_offset: int) -> None:
        super().__init__(fs, path, base_offset, self.ENTRY_BYTES)
        self._timestamps = array("q")
        self._offsets = array("q")

    def _count(self) -> int:
        return len(self._offsets)

    def _pending(self) -> bytes:
        base, pack, start = self.base_offset, _TIME_ENTRY.pack, self._written
        pending = zip(self._timestamps[start:], self._offsets[start:], strict=True)
        return b"".join(pack(t, o - base) for t, o in pending)

    def load(self, max_offset: int | None = None) -> None:
        """Read entries from the file; raise ``IndexCorrupt`` if they cannot be trusted."""
        data = self._read_all()
        usable = len(data) - len(data) % self.ENTRY_BYTES
        timestamps, offsets = array("q"), array("q")
        last_ts, last_rel = -(1 << 63), -1
        for ts, rel in _TIME_ENTRY.iter_unpack(data[:usable]):
            if ts <= last_ts or rel < last_rel or rel < 0:
                raise IndexCorrupt(f"{self.path}: entry ({ts}, {rel}) out of order")
            if max_offset is not None and self.base_offset + rel > max_offset:
                raise IndexCorrupt(f"{self.path}: offset {self.base_offset + rel} past the log")
            timestamps.append(ts)
            offsets.append(self.base_offset + rel)
            last_ts, last_rel = ts, rel
        if usable != len(data):
            raise IndexCorrupt(f"{self.path}: size {len(data)} is not a multiple of 12")
        self._timestamps, self._offsets = timestamps, offsets
        self._written = len(offsets)
        self.close()  # reopened by the next write, as for the offset index

    def maybe_append(self, timestamp_ms: int, offset: int) -> None:
        """Add an entry if ``timestamp_ms`` is larger than the last one."""
        if self._timestamps and timestamp_ms <= self._timestamps[-1]:
            return
        rel = offset - self.base_offset
        assert 0 <= rel <= 0x7FFFFFFF, "relative offset must fit in 32 bits"
        self._timestamps.append(timestamp_ms)
        self._offsets.append(offset)

    def lookup(self, timestamp_ms: int) -> int:
        """The offset of the last entry with timestamp < ``timestamp_ms`` (base offset if none).

        A scan from there finds the first batch whose max timestamp is >= ``timestamp_ms``.
        """
        i = bisect_right(self._timestamps, timestamp_ms - 1)
        return self.base_offset if i == 0 else self._offsets[i - 1]

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for offsets at or after ``offset``."""
        keep = bisect_left(self._offsets, offset)
        if keep < len(self._offsets):
            del self._timestamps[keep:]
            del self._offsets[keep:]
            self._truncate_file(keep)

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._timestamps, self._offsets = array("q"), array("q")
        self._file().truncate(0)
        self._written = 0

    @property
    def entries(self) -> int:
        """Number of entries."""
        return len(self._offsets)

    @property
    def last_timestamp(self) -> int | None:
        """The largest indexed timestamp, or None if empty."""
        return self._timestamps[-1] if self._timestamps else None

    @property
    def last_offset(self) -> int | None:
        """The offset of the last entry (where its timestamp was first reached), or None."""
        return self._offsets[-1] if self._offsets else None

