"""Sparse segment indexes: offset -> file position, and timestamp -> offset.

Files use Kafka's entry layouts (big-endian): ``.index`` entries are (relative offset int32,
position int32); ``.timeindex`` entries are (timestamp int64, relative offset int32). Indexes
are derived data: a missing, short or inconsistent index is rebuilt from the log, never
trusted, so they are never the reason a record is lost.

Memory is bounded, not proportional to the log. Entries form chunks of :data:`CHUNK`; the heap
holds the first entry of every chunk and the whole last chunk, and a lookup that lands in an
earlier chunk reads that chunk (512 or 768 bytes) back from the file. Kafka memory-maps its
index files, so their pages are page cache the kernel may evict; entries kept on the heap could
not be evicted, and a broker at full speed would grow by 32 bytes per indexed batch until its
segments rolled. A chunk is written to the file when it is complete, so an append costs one
write per :data:`CHUNK` entries (about one per 256 KiB of log at the default index interval);
the last chunk is written at flush, close and truncation.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right
from collections.abc import Iterable
from functools import lru_cache
from typing import ClassVar

from logwright.world.fs import FileHandle, FileSystem

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")

MAX_RELATIVE_OFFSET = 0x7FFFFFFF
"""The largest offset past its segment's base an index entry can hold (a 32-bit signed
relative offset). A segment never grows past it (it rolls first); a batch beyond it in a
segment logwright did not write has no index entry, and is found by a scan, as the sparse
index finds any batch after its last entry."""

CHUNK = 64
"""Entries per chunk: the heap holds one entry in ``CHUNK`` of a full index."""


@lru_cache(maxsize=4 * CHUNK)
def _entries_struct(entry: str, count: int) -> struct.Struct:
    """The big-endian layout of ``count`` entries of layout ``entry`` in a row."""
    return struct.Struct(">" + entry * count)


_NO_ENTRIES: array[int] = array("q")
"""The four arrays of every empty index, shared and never written to (an index's first entry
replaces them by its own): start-up loads an offset index per partition, most of them empty,
and four arrays each would be 40,000 more objects for the collector to walk at 10,000."""


class IndexCorrupt(Exception):
    """An index file does not agree with its segment; the caller rebuilds it."""


class _ChunkedIndex:
    """The entries of one index, each a pair of ascending keys ``(a, b)``, and the file under it.

    Invariants: ``_tail`` holds entries ``[_tail_start, count)``, between 1 and ``CHUNK`` of
    them when the index is not empty; ``_tail_start`` is ``CHUNK * (len(_first_a) - 1)``;
    ``_first_a``/``_first_b`` hold entry ``CHUNK * c`` for every chunk c; entries
    ``[0, _written)`` are in the file and ``_written >= _tail_start``.
    """

    ENTRY_BYTES: ClassVar[int] = 0

    def __init__(self, fs: FileSystem, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fs = fs
        self._handle: FileHandle | None = None
        self._clear()

    def _clear(self) -> None:
        self._first_a = self._first_b = self._tail_a = self._tail_b = _NO_ENTRIES
        self._tail_start = 0
        self._written = 0
        #: Number of entries (``_tail_start + len(_tail_a)``, kept as a plain attribute: every
        #: append asks whether its segment's index is full).
        self.entries = 0

    # ---- the entry layout (subclasses) ---------------------------------------------------------

    def _encode(self, a: array[int], b: array[int]) -> bytes:
        """The file bytes of the entries ``zip(a, b)`` (as many as a chunk at most)."""
        raise NotImplementedError

    def _decode(self, data: bytes) -> Iterable[tuple[int, int]]:
        raise NotImplementedError

    # ---- the file --------------------------------------------------------------------------------

    def _file(self) -> FileHandle:
        if self._handle is None:
            self._handle = self._fs.open(self.path, create=True)
        return self._handle

    def _read_all(self) -> bytes:
        """The whole file (created empty if missing); read without keeping a descriptor."""
        if self._handle is not None:
            return self._handle.read(0, self._handle.size())
        return self._fs.read_or_create(self.path)

    def _write_pending(self) -> None:
        count = self.entries
        if self._written < count:
            assert self._written >= self._tail_start
            skip = self._written - self._tail_start
            data = self._encode(self._tail_a[skip:], self._tail_b[skip:])
            self._file().write_at(self._written * self.ENTRY_BYTES, data)
            self._written = count

    def flush(self) -> None:
        """Write the pending entries and make every entry durable."""
        self._write_pending()
        if self._handle is not None:
            self._handle.fsync()

    def close(self) -> None:
        """Write the pending entries (not durably) and release the file."""
        try:
            self._write_pending()
        finally:
            if self._handle is not None:
                self._handle.close()
                self._handle = None

    # ---- entries ---------------------------------------------------------------------------------

    def _last(self) -> tuple[int, int] | None:
        return (self._tail_a[-1], self._tail_b[-1]) if self._tail_a else None

    def _new_chunk(self, a: int, b: int) -> array[int]:
        """Begin a chunk whose first entry is ``(a, b)`` (not added to the tail yet): fresh tail
        arrays, and for an empty index fresh first-entry arrays (its own, not the shared empty
        ones). Returns the new ``_tail_a``."""
        assert not _NO_ENTRIES, "the shared empty arrays were written to"
        if not self._first_a:
            self._first_a, self._first_b = array("q"), array("q")
        self._first_a.append(a)
        self._first_b.append(b)
        tail_a = array("q")
        self._tail_a, self._tail_b = tail_a, array("q")
        return tail_a

    def _append(self, a: int, b: int) -> None:
        tail_a = self._tail_a
        if len(tail_a) == CHUNK:  # the last chunk is complete: to the file, off the heap
            self._write_pending()
            self._tail_start += CHUNK
            tail_a = self._new_chunk(a, b)
        elif not tail_a:
            tail_a = self._new_chunk(a, b)
        tail_a.append(a)
        self._tail_b.append(b)
        self.entries += 1

    def _extend(self, a: array[int], b: array[int]) -> None:
        """Append the entries ``zip(a, b)``, writing each chunk that completes as ``_append``
        would (the same writes, in the same order), in slices rather than one by one."""
        i, n = 0, len(a)
        while i < n:
            if len(self._tail_a) == CHUNK:
                self._write_pending()
                self._tail_start += CHUNK
                self._new_chunk(a[i], b[i])
            elif not self._tail_a:
                self._new_chunk(a[i], b[i])
            take = min(CHUNK - len(self._tail_a), n - i)
            self._tail_a.extend(a[i:i + take])
            self._tail_b.extend(b[i:i + take])
            self.entries += take
            i += take

    def _chunk(self, c: int) -> tuple[array[int], array[int]]:
        """The entries of chunk ``c``: the heap's last chunk, or an earlier one from the file."""
        if c * CHUNK == self._tail_start:
            return self._tail_a, self._tail_b
        keep_open = self._handle is not None
        try:
            data = self._file().read(c * CHUNK * self.ENTRY_BYTES, CHUNK * self.ENTRY_BYTES)
        finally:
            if not keep_open and self._handle is not None:
                # As after load: a segment only read from holds no descriptor for its index.
                self._handle.close()
                self._handle = None
        a, b = array("q"), array("q")
        for x, y in self._decode(data):
            a.append(x)
            b.append(y)
        if len(a) != CHUNK:
            raise OSError(f"{self.path}: chunk {c} is short ({len(a)} of {CHUNK} entries)")
        return a, b

    def _locate(self, by_b: bool, value: int) -> tuple[int, tuple[int, int] | None]:
        """How many entries have key ``a`` (``b`` if ``by_b``) at most ``value``, and the last
        of them (None if none)."""
        chunks = bisect_right(self._first_b if by_b else self._first_a, value)
        if chunks == 0:
            return 0, None
        c = chunks - 1
        a, b = self._chunk(c)
        i = bisect_right(b if by_b else a, value)
        return c * CHUNK + i, (a[i - 1], b[i - 1])

    def _truncate(self, keep: int) -> None:
        """Keep the first ``keep`` entries."""
        if keep >= self.entries:
            return
        if keep == 0:
            self._first_a = self._first_b = self._tail_a = self._tail_b = _NO_ENTRIES
            self._tail_start = 0
        else:
            chunks = (keep + CHUNK - 1) // CHUNK
            start = (chunks - 1) * CHUNK
            a, b = self._chunk(chunks - 1)
            self._tail_a, self._tail_b = a[:keep - start], b[:keep - start]
            self._tail_start = start
            del self._first_a[chunks:]
            del self._first_b[chunks:]
        self.entries = keep
        assert self.entries == self._tail_start + len(self._tail_a)
        if keep < self._written:
            self._file().truncate(keep * self.ENTRY_BYTES)
            self._written = keep

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._clear()
        self._file().truncate(0)

    def _load_entries(self, entries: Iterable[tuple[int, int]]) -> None:
        """Take ``entries``, all of them already in the file, as the index."""
        self._clear()
        listed = list(entries)
        self._written = len(listed)  # so that completing a chunk writes nothing back
        for a, b in listed:
            self._append(a, b)


class OffsetIndex(_ChunkedIndex):
    """Relative offset -> byte position of the batch starting there, sparse and ascending."""

    ENTRY_BYTES: ClassVar[int] = _OFFSET_ENTRY.size

    def _encode(self, a: array[int], b: array[int]) -> bytes:
        base = self.base_offset
        flat = [0] * (2 * len(a))
        flat[0::2] = [offset - base for offset in a]
        flat[1::2] = b
        return _entries_struct("ii", len(a)).pack(*flat)

    def _decode(self, data: bytes) -> Iterable[tuple[int, int]]:
        base = self.base_offset
        return ((base + rel, pos) for rel, pos in _OFFSET_ENTRY.iter_unpack(data))

    def load(self, log_size: int, max_offset: int | None = None) -> None:
        """Read entries from the file; raise ``IndexCorrupt`` if they cannot be trusted."""
        data = self._read_all()
        if not data and not self.entries:
            # An empty file: nothing to check (what follows would do nothing else than close
            # the file, and with no entries nothing is pending that closing would write).
            if self._handle is not None:
                self.close()
            return
        usable = len(data) - len(data) % self.ENTRY_BYTES
        checked: list[tuple[int, int]] = []
        last_rel, last_pos = -1, -1
        for rel, pos in _OFFSET_ENTRY.iter_unpack(data[:usable]):
            if rel <= last_rel or pos <= last_pos or pos >= log_size or rel < 0:
                raise IndexCorrupt(f"{self.path}: entry ({rel}, {pos}) out of order or past end")
            if max_offset is not None and self.base_offset + rel > max_offset:
                raise IndexCorrupt(f"{self.path}: offset {self.base_offset + rel} past the log")
            checked.append((self.base_offset + rel, pos))
            last_rel, last_pos = rel, pos
        if usable != len(data):
            raise IndexCorrupt(f"{self.path}: size {len(data)} is not a multiple of 8")
        if checked or self.entries:
            self._load_entries(checked)
        # Reopened by the next write: a broker with tens of thousands of segments must not
        # hold two more descriptors per segment for having read its indexes at start-up.
        self.close()

    def append(self, offset: int, position: int) -> None:
        """Add an entry for the batch starting at ``offset`` at ``position``."""
        tail_a = self._tail_a
        assert not tail_a or (offset > tail_a[-1] and position > self._tail_b[-1])
        assert 0 <= offset - self.base_offset <= 0x7FFFFFFF, "relative offset must fit in 32 bits"
        if 0 < len(tail_a) < CHUNK:  # _append's common case: the last chunk has room
            tail_a.append(offset)
            self._tail_b.append(position)
            self.entries += 1
        else:
            self._append(offset, position)

    def extend(self, offsets: array[int], positions: array[int]) -> None:
        """Add the entries ``zip(offsets, positions)``, both strictly ascending and above the
        last entry: what an ``append`` for each would do (the same chunk writes), in bulk."""
        if not offsets:
            return
        last = self._last()
        assert last is None or (offsets[0] > last[0] and positions[0] > last[1])
        assert self.base_offset <= offsets[0] and offsets[-1] - self.base_offset <= 0x7FFFFFFF, (
            "relative offset must fit in 32 bits")
        self._extend(offsets, positions)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The last entry at or before ``offset`` as (offset, position); (base, 0) if none."""
        _, entry = self._locate(False, offset)
        return entry if entry is not None else (self.base_offset, 0)

    def batch_start_at_or_before(self, position: int) -> int:
        """The largest indexed batch position <= ``position`` (0 if none): a batch boundary."""
        _, entry = self._locate(True, position)
        return entry[1] if entry is not None else 0

    def truncate_to_position(self, position: int) -> None:
        """Drop entries at or after byte ``position`` of the log."""
        self._truncate(self._locate(True, position - 1)[0])

    @property
    def last_entry(self) -> tuple[int, int]:
        """The last (offset, position), or (base, 0) if empty."""
        last = self._last()
        return last if last is not None else (self.base_offset, 0)


class TimeIndex(_ChunkedIndex):
    """Timestamp -> relative offset, sparse, with strictly increasing timestamps."""

    ENTRY_BYTES: ClassVar[int] = _TIME_ENTRY.size

    def _encode(self, a: array[int], b: array[int]) -> bytes:
        base = self.base_offset
        flat = [0] * (2 * len(a))
        flat[0::2] = a
        flat[1::2] = [offset - base for offset in b]
        return _entries_struct("qi", len(a)).pack(*flat)

    def _decode(self, data: bytes) -> Iterable[tuple[int, int]]:
        base = self.base_offset
        return ((ts, base + rel) for ts, rel in _TIME_ENTRY.iter_unpack(data))

    def load(self, max_offset: int | None = None) -> None:
        """Read entries from the file; raise ``IndexCorrupt`` if they cannot be trusted."""
        data = self._read_all()
        usable = len(data) - len(data) % self.ENTRY_BYTES
        checked: list[tuple[int, int]] = []
        last_ts, last_rel = -(1 << 63), -1
        for ts, rel in _TIME_ENTRY.iter_unpack(data[:usable]):
            if ts <= last_ts or rel < last_rel or rel < 0:
                raise IndexCorrupt(f"{self.path}: entry ({ts}, {rel}) out of order")
            if max_offset is not None and self.base_offset + rel > max_offset:
                raise IndexCorrupt(f"{self.path}: offset {self.base_offset + rel} past the log")
            checked.append((ts, self.base_offset + rel))
            last_ts, last_rel = ts, rel
        if usable != len(data):
            raise IndexCorrupt(f"{self.path}: size {len(data)} is not a multiple of 12")
        if checked or self.entries:
            self._load_entries(checked)
        self.close()  # reopened by the next write, as for the offset index

    def maybe_append(self, timestamp_ms: int, offset: int) -> None:
        """Add an entry if ``timestamp_ms`` is larger than the last one."""
        tail_a = self._tail_a  # the last entry's timestamp is its last item (none: empty)
        if tail_a and timestamp_ms <= tail_a[-1]:
            return
        assert 0 <= offset - self.base_offset <= 0x7FFFFFFF, "relative offset must fit in 32 bits"
        if 0 < len(tail_a) < CHUNK:  # _append's common case: the last chunk has room
            tail_a.append(timestamp_ms)
            self._tail_b.append(offset)
            self.entries += 1
        else:
            self._append(timestamp_ms, offset)

    def extend(self, timestamps: array[int], offsets: array[int]) -> None:
        """Add the entries ``zip(timestamps, offsets)``, timestamps strictly ascending and
        above the last entry's, offsets ascending: what a ``maybe_append`` for each would do
        (each one taken, the same chunk writes), in bulk."""
        if not timestamps:
            return
        last = self._last()
        assert last is None or timestamps[0] > last[0]
        assert self.base_offset <= offsets[0] and offsets[-1] - self.base_offset <= 0x7FFFFFFF, (
            "relative offset must fit in 32 bits")
        self._extend(timestamps, offsets)

    def lookup(self, timestamp_ms: int) -> int:
        """The offset of the last entry with timestamp < ``timestamp_ms`` (base offset if none).

        A scan from there finds the first batch whose max timestamp is >= ``timestamp_ms``.
        """
        _, entry = self._locate(False, timestamp_ms - 1)
        return entry[1] if entry is not None else self.base_offset

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for offsets at or after ``offset``."""
        self._truncate(self._locate(True, offset - 1)[0])

    @property
    def last_timestamp(self) -> int | None:
        """The largest indexed timestamp, or None if empty."""
        last = self._last()
        return last[0] if last is not None else None

    @property
    def last_offset(self) -> int | None:
        """The offset of the last entry (where its timestamp was first reached), or None."""
        last = self._last()
        return last[1] if last is not None else None
