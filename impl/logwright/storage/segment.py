"""One log segment: a ``.log`` file of record batches with its ``.index`` and ``.timeindex``.

A segment owns one contiguous offset range starting at its base offset. Batches are never split:
truncation and deletion work on whole batches. The indexes are sparse and derived: ``recover``
rebuilds them from the log, and a torn or corrupt tail is cut at the last valid batch.
"""

from __future__ import annotations

import mmap
import struct
from array import array
from dataclasses import dataclass
from typing import NamedTuple

import crc32c

from logwright.records.header import (
    ATTRIBUTES_OFFSET,
    INT64_MAX,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    NO_TIMESTAMP,
)
from logwright.storage.config import LogConfig
from logwright.storage.index import (
    CHUNK,
    MAX_RELATIVE_OFFSET,
    IndexCorrupt,
    OffsetIndex,
    TimeIndex,
)
from logwright.storage.naming import segment_file_stem
from logwright.world.clock import Clock
from logwright.world.fs import FileHandle, FileSystem, child_path

# The fields of a v2 batch header a segment needs to walk its file without decoding records:
# baseOffset (0), batchLength (8), lastOffsetDelta (23), maxTimestamp (35).
_HEAD = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")
_MAX_TS = struct.Struct(">q")
_EPOCH = struct.Struct(">i")  # the partition leader epoch, 12 bytes into a batch
_WALKED = struct.Struct(">qi11xi8xq")  # baseOffset, batchLength, lastOffsetDelta, maxTimestamp
_MAGIC_AT = 16  # the magic byte
_MAGIC_V2 = 2
HEADER_BYTES = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength precede the length-counted part
RECOVERY_CHUNK_BYTES = 8 << 20
_OFFSET_ENTRY_BYTES = OffsetIndex.ENTRY_BYTES
_TIME_ENTRY_BYTES = TimeIndex.ENTRY_BYTES
RECOVERY_BUFFER_BYTES = 1 << 20
"""The buffer recovery reads a segment into, reused for the whole segment (a larger one only
for a batch that does not fit)."""
_READ_ALIGN = 4096
"""Recovery reads from file positions that are a multiple of this into a page-aligned buffer:
the kernel copies page-cache bytes about twice as fast when source and destination are
aligned alike (a bytearray's bytes start 16 bytes into a page, so it is not used)."""
# What recovery checks of a v2 batch header: baseOffset, batchLength, partitionLeaderEpoch,
# magic, crc, lastOffsetDelta, maxTimestamp, recordCount (attributes, baseTimestamp and the
# producer fields skipped).
_RECOVERY_HEADER = struct.Struct(">qiibI2xi8xq14xi")
assert _RECOVERY_HEADER.size == HEADER_BYTES


class RecoveryBuffer:
    """The page-aligned memory recovery reads segments through (see ``_READ_ALIGN``), kept
    from one segment to the next: fresh anonymous memory costs a page fault, and a page of
    zeros, for every page on its first use, as much as the read itself."""

    def __init__(self) -> None:
        self._view: memoryview | None = None

    def at_least(self, size: int) -> memoryview:
        """A writable view of the buffer, ``size`` bytes or more (grown if it was smaller)."""
        if self._view is None or len(self._view) < size:
            self._view = memoryview(mmap.mmap(-1, size))
        return self._view


@dataclass(frozen=True, slots=True)
class BatchLocation:
    """Where a batch lies in a segment file and which offsets it holds."""

    position: int
    base_offset: int
    last_offset: int
    size_bytes: int


class LogSegment:
    """A segment file and its two indexes, named by its base offset."""

    def __init__(
        self,
        fs: FileSystem,
        dir_path: str,
        base_offset: int,
        index_interval_bytes: int,
        create: bool = False,
        *,
        stem: str | None = None,
    ) -> None:
        """Open the segment at ``base_offset`` in ``dir_path`` (its log file created empty with
        ``create``). ``stem``: ``segment_file_stem(base_offset)``, when the caller has it from
        a file name (start-up lists thousands)."""
        assert base_offset >= 0, "offsets are never negative"
        self.fs = fs
        self.dir_path = dir_path
        self.base_offset = base_offset
        #: The largest offset the segment can hold (relative offsets are int32, offsets int64).
        self.max_last_offset = min(base_offset + 0x7FFFFFFF, INT64_MAX)
        self.index_interval_bytes = index_interval_bytes
        stem = child_path(dir_path, stem if stem is not None else segment_file_stem(base_offset))
        self.log_path = stem + ".log"
        self.index_path = stem + ".index"
        self.time_index_path = stem + ".timeindex"
        self._log: FileHandle = fs.open(self.log_path, create=create)
        self.size_bytes = self._log.size()
        self.next_offset = base_offset  # one past the last offset held; set by load or append
        # Unknown (None) until needed for a segment loaded from disk: start-up stays cheap.
        self._max_timestamp_ms: int | None = -1 if create else None
        # The last offset of the batch where the largest timestamp was first reached (-1: no
        # batch yet): a time index entry holds it, as Kafka's does.
        self._offset_of_max_timestamp = -1
        self.first_batch_timestamp_ms: int | None = None
        self._bytes_since_index_entry = 0
        self._index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        #: After an index rebuild (recovery), the runs of batches with one partition leader
        #: epoch, as (epoch, first offset, last offset), in offset order; None once the segment
        #: changes. Loading rebuilds a lost leader epoch cache from it without reading again.
        self.epoch_runs: list[tuple[int, int, int]] | None = None
        #: The last batch appended, as (position, base offset, last offset, size), while it
        #: is the segment's last batch (the last append was one whole batch and nothing cut the
        #: file since; None otherwise): where ``locate`` finds it without the index and a header
        #: read (a follower fetching what was just appended). What a header read there gives.
        self._last_append: tuple[int, int, int, int] | None = None

    @property
    def max_timestamp_ms(self) -> int:
        """The largest batch timestamp in the segment, -1 if it holds no batch."""
        if self._max_timestamp_ms is None:
            self._recompute_tail_stats()
        assert self._max_timestamp_ms is not None
        return self._max_timestamp_ms

    @property
    def offset_of_max_timestamp(self) -> int:
        """The last offset of the batch where :attr:`max_timestamp_ms` was first reached (-1:
        no batch): what a time index entry points at, as in Kafka."""
        if self._max_timestamp_ms is None:
            self._recompute_tail_stats()
        return self._offset_of_max_timestamp

    # ---- indexes, loaded lazily so start-up touches only what it needs -------------------------

    # Each index is read on its own first use (as Kafka's LazyIndex): start-up reads only the
    # active segment's offset index (its last entry says where the tail walk begins), and the
    # time index waits for time retention, ListOffsets by timestamp or the segment's first
    # change. Either one found corrupt, whenever that is, makes both be rebuilt from the log,
    # as when both were read together; every change of the segment (append, truncation) loads
    # both first, so such a rebuild always sees the segment as start-up left it.

    @property
    def index(self) -> OffsetIndex:
        """The offset index, read from disk (or rebuilt) on first use."""
        if self._index is None:
            self._load_offset_index()
        assert self._index is not None
        return self._index

    @property
    def time_index(self) -> TimeIndex:
        """The time index, read from disk (or rebuilt) on first use."""
        if self._time_index is None:
            self._load_time_index()
        assert self._time_index is not None
        return self._time_index

    def _load_offset_index(self) -> None:
        index = OffsetIndex(self.fs, self.index_path, self.base_offset)
        try:
            index.load(self.size_bytes)
        except IndexCorrupt:
            self.rebuild_indexes()
            return
        self._index = index

    def _load_time_index(self) -> None:
        time_index = TimeIndex(self.fs, self.time_index_path, self.base_offset)
        try:
            time_index.load()
        except IndexCorrupt:
            self.rebuild_indexes()
            return
        self._time_index = time_index

    def _load_indexes(self) -> None:
        """Both indexes, the offset index first (before any change of the segment)."""
        if self._index is None:
            self._load_offset_index()
        if self._time_index is None:
            self._load_time_index()

    def _emptied_indexes(self) -> tuple[OffsetIndex, TimeIndex]:
        """Both indexes, made if not loaded yet, emptied (files truncated) for a rebuild."""
        if self._index is None:
            self._index = OffsetIndex(self.fs, self.index_path, self.base_offset)
        if self._time_index is None:
            self._time_index = TimeIndex(self.fs, self.time_index_path, self.base_offset)
        self._index.reset()
        self._time_index.reset()
        return self._index, self._time_index

    def rebuild_indexes(self, collect_epochs: bool = False) -> None:
        """Recreate both indexes by walking the log file (no CRC checks: the log is trusted);
        with ``collect_epochs``, keep the runs of batches of one leader epoch (``epoch_runs``)."""
        self._emptied_indexes()
        self._bytes_since_index_entry = 0
        epochs: list[int] | None = [] if collect_epochs else None
        walked = self._walk(0, self.size_bytes, epochs)
        max_ts_so_far, offset_of_max = -1, -1
        for loc, batch_max_ts in walked:
            if batch_max_ts > max_ts_so_far:
                max_ts_so_far, offset_of_max = batch_max_ts, loc.last_offset
            self._index_batch(loc.base_offset, loc.position, loc.size_bytes, max_ts_so_far,
                              offset_of_max)
        if epochs is None:
            self.epoch_runs = None
            return
        runs: list[tuple[int, int, int]] = []
        for (loc, _), epoch in zip(walked, epochs, strict=True):
            if runs and runs[-1][0] == epoch:
                runs[-1] = (epoch, runs[-1][1], loc.last_offset)
            else:
                runs.append((epoch, loc.base_offset, loc.last_offset))
        self.epoch_runs = runs

    def _index_batch(self, base_offset: int, position: int, size: int,
                     max_ts_so_far: int, offset_of_max: int) -> None:
        # The time index entry holds the segment's largest timestamp up to and including this
        # batch (as Kafka's does), not the batch's own: a batch before it that was not indexed
        # may hold a larger one, and both the timestamp search (which skips every batch before
        # an entry below its target) and the tail's max timestamp read back after a restart
        # rely on no batch before an entry having a larger timestamp than the entry's.
        if self._bytes_since_index_entry > self.index_interval_bytes and _indexable(
                self.base_offset, base_offset, offset_of_max):
            self._add_index_entries(base_offset, position, max_ts_so_far, offset_of_max)
        self._bytes_since_index_entry += size

    def _add_index_entries(self, base_offset: int, position: int, max_ts_so_far: int,
                           offset_of_max: int) -> None:
        """An offset index entry for the batch at ``position``, and a time index entry for it
        when the largest timestamp grew (index.interval.bytes have passed since the last)."""
        assert self._index is not None and self._time_index is not None
        self._index.append(base_offset, position)
        # Kafka's entry: the largest timestamp so far and the offset where it was first
        # reached, so that a scan from that offset finds the first batch at or above it.
        self._time_index.maybe_append(max_ts_so_far,
                                      offset_of_max if offset_of_max >= 0 else base_offset)
        self._bytes_since_index_entry = 0

    # ---- walking batch headers -----------------------------------------------------------------

    def _walk(self, start: int, end: int, epochs: list[int] | None = None
              ) -> list[tuple[BatchLocation, int]]:
        """Batch locations (with max timestamps) between byte positions ``start`` and ``end``;
        each batch's partition leader epoch is appended to ``epochs`` when one is given."""
        out: list[tuple[BatchLocation, int]] = []
        pos = start
        while pos < end:
            chunk = self._log.read(pos, min(end - pos, RECOVERY_CHUNK_BYTES))
            view = memoryview(chunk)
            i = 0
            while i + HEADER_BYTES <= len(view):
                base, length = _HEAD.unpack_from(view, i)
                size = length + LOG_OVERHEAD
                if size < HEADER_BYTES:
                    break  # not a batch header (a foreign file): never walk backwards
                last = base + _LAST_DELTA.unpack_from(view, i + 23)[0]
                out.append((BatchLocation(pos + i, base, last, size),
                            _MAX_TS.unpack_from(view, i + 35)[0]))
                if epochs is not None:
                    epochs.append(_EPOCH.unpack_from(view, i + 12)[0])
                i += size
            if i == 0:
                break
            pos += i
        return out

    def _header_at(self, position: int) -> BatchLocation | None:
        head = self._log.read(position, HEADER_BYTES)
        if len(head) < HEADER_BYTES:
            return None
        base, length = _HEAD.unpack_from(head, 0)
        last = base + _LAST_DELTA.unpack_from(head, 23)[0]
        return BatchLocation(position, base, last, length + LOG_OVERHEAD)

    def scan_end_offset(self) -> int:
        """One past the last offset held, found without loading the indexes: the walk starts at
        the offset index's last entry on disk (read alone; from the start if it is unusable).
        Sets ``next_offset``. For start-up's check of segments that are not the active one."""
        start = 0
        if self._index is not None:
            start = self._index.last_entry[1]
        elif self.fs.exists(self.index_path):
            handle = self.fs.open(self.index_path)
            try:
                size = handle.size()
                tail = handle.read(size - 8, 8) if size >= 8 and size % 8 == 0 else b""
            finally:
                handle.close()
            if tail:
                position = struct.unpack(">ii", tail)[1]
                start = position if 0 <= position < self.size_bytes else 0
        self.next_offset = self.base_offset
        for loc, _ in self._walk(start, self.size_bytes):
            self.next_offset = loc.last_offset + 1
        if start and self.next_offset == self.base_offset:
            # The entry pointed at no batch: walk the whole file rather than trust it.
            for loc, _ in self._walk(0, self.size_bytes):
                self.next_offset = loc.last_offset + 1
        return self.next_offset

    def first_batch_offset(self) -> int | None:
        """The base offset of the segment's first batch, None if it holds none."""
        loc = self._header_at(0) if self.size_bytes >= HEADER_BYTES else None
        return None if loc is None else loc.base_offset

    def locate(self, offset: int) -> BatchLocation | None:
        """The first batch whose last offset is >= ``offset`` (the one holding it, or the next)."""
        last = self._last_append
        if last is not None and last[1] <= offset <= last[2]:
            # Every batch before the last one ends below ``offset``: the walk below would stop
            # at this one.
            return BatchLocation(*last)
        _, position = self.index.lookup(offset)
        while position < self.size_bytes:
            loc = self._header_at(position)
            if loc is None:
                return None
            if loc.last_offset >= offset:
                return loc
            position += loc.size_bytes
        return None

    # ---- append, read, truncate ----------------------------------------------------------------

    def append(self, first_offset: int, last_offset: int, max_timestamp_ms: int,
               data: bytes | bytearray, config: LogConfig, clock: Clock) -> int:
        """Append batches holding ``first_offset..last_offset``; returns their file position.

        First decide, as Kafka's ``LogSegment.shouldRoll``, whether this segment, as the active
        one, must roll before taking ``data`` (by the log's ``config`` and ``clock``); if so,
        append nothing and return -1. Once it holds a batch, it must roll when ``data`` would
        take it past segment.bytes, its first batch is segment.ms old, ``last_offset`` would
        not fit a relative offset, or either index holds as many entries as
        segment.index.bytes allows (8-byte offset index entries, 12-byte time index entries).
        The clock is read whenever the segment holds a batch; the indexes are read (loaded, on
        the first append after start-up) only when nothing before decided. (Decided here rather
        than by a method of its own: a call less on the leader's append path.)
        """
        size = len(data)
        base = self.base_offset
        rolling_ts = self.first_batch_timestamp_ms
        index, time_index = self._index, self._time_index
        held = self.size_bytes
        if held:
            too_old = rolling_ts is not None and clock.now_ms() - rolling_ts >= config.segment_ms
            if held + size > config.segment_bytes or too_old or last_offset - base > 0x7FFFFFFF:
                return -1
            if index is None:
                index = self.index
            if time_index is None:
                time_index = self.time_index
            max_index_bytes = config.segment_index_bytes
            if (index.entries >= max_index_bytes // _OFFSET_ENTRY_BYTES
                    or time_index.entries >= max_index_bytes // _TIME_ENTRY_BYTES):
                return -1
        assert first_offset >= self.next_offset, (
            f"offsets must increase: appending {first_offset} at next offset {self.next_offset}")
        assert last_offset - base <= 0x7FFFFFFF, "relative offsets must fit in int32"
        position = self._log.append(data)
        self.epoch_runs = None
        # One whole batch (its length field counts the rest of it): kept for locate(), as a
        # header read would find it.
        self._last_append = None
        if size >= HEADER_BYTES:
            batch_base, length = _HEAD.unpack_from(data, 0)
            if length + LOG_OVERHEAD == size:
                self._last_append = (position, batch_base,
                                     batch_base + _LAST_DELTA.unpack_from(data, 23)[0], size)
        if index is None or time_index is None:
            self._load_indexes()
            index, time_index = self._index, self._time_index
            assert index is not None and time_index is not None
        current_max = self._max_timestamp_ms
        if current_max is None:
            # Computed once for a segment loaded from disk, over the bytes before this append
            # (with the first batch's timestamp).
            current_max = self.max_timestamp_ms
            rolling_ts = self.first_batch_timestamp_ms
        if max_timestamp_ms > current_max:
            self._offset_of_max_timestamp = last_offset
            self._max_timestamp_ms = current_max = max_timestamp_ms
        # _index_batch, made here: an entry once per index.interval.bytes.
        if self._bytes_since_index_entry > self.index_interval_bytes:
            index.append(first_offset, position)
            offset_of_max = self._offset_of_max_timestamp
            time_index.maybe_append(current_max,
                                    offset_of_max if offset_of_max >= 0 else first_offset)
            self._bytes_since_index_entry = size
        else:
            self._bytes_since_index_entry += size
        self.size_bytes = position + size
        self.next_offset = last_offset + 1
        if rolling_ts is None:
            self.first_batch_timestamp_ms = max_timestamp_ms
        return position

    def read(self, start_offset: int, max_bytes: int, max_offset: int,
             min_one_batch: bool = True) -> tuple[int, bytes]:
        """Whole batches from the one holding ``start_offset``, below ``max_offset`` (exclusive).

        Returns (first batch base offset, bytes). At most ``max_bytes`` unless ``min_one_batch``
        and the first batch alone is larger, in which case that one batch is returned whole so a
        reader always makes progress.
        """
        loc = self.locate(start_offset)
        if loc is None or loc.base_offset >= max_offset:
            return start_offset, b""
        want = max(max_bytes, loc.size_bytes if min_one_batch else 0)
        end = min(loc.position + want, self.size_bytes)
        if end < self.size_bytes:
            # End the read where an indexed batch starts: the bytes are then whole batches and
            # need no second copy to cut a partial one off (the index is sparse, so up to
            # index.interval.bytes plus a batch may be left for the next read).
            boundary = self.index.batch_start_at_or_before(end)
            if boundary >= loc.position + loc.size_bytes:  # the first batch stays whole
                end = boundary
        data = self._log.read(loc.position, end - loc.position)
        view = memoryview(data)
        cut = 0
        while cut + HEADER_BYTES <= len(view):
            base, length = _HEAD.unpack_from(view, cut)
            size = length + LOG_OVERHEAD
            last = base + _LAST_DELTA.unpack_from(view, cut + 23)[0]
            if cut + size > len(view) or last >= max_offset:
                break
            cut += size
        return loc.base_offset, bytes(view[:cut]) if cut < len(data) else data

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset``; returns bytes removed.

        A batch holding ``offset`` goes whole (batches are atomic), so the next offset may end up
        below ``offset``.
        """
        self._load_indexes()  # both, before the file changes (see the indexes' comment)
        loc = self.locate(offset)
        if loc is None:
            return 0
        removed = self.size_bytes - loc.position
        self.epoch_runs = None
        self._last_append = None
        self._log.truncate(loc.position)
        self.size_bytes = loc.position
        self.index.truncate_to_position(loc.position)
        self.time_index.truncate_to_offset(loc.base_offset)
        self.next_offset = loc.base_offset
        self._recompute_tail_stats()
        return removed

    def _recompute_tail_stats(self) -> None:
        self._load_indexes()  # a corrupt one is rebuilt before its last entry is read
        max_ts = -1
        self.first_batch_timestamp_ms = None
        self._bytes_since_index_entry = 0
        last_indexed_pos = self.index.last_entry[1]
        last_ts = self.time_index.last_timestamp
        offset_of_max = -1
        if last_ts is not None:
            max_ts = last_ts
            last_offset = self.time_index.last_offset
            offset_of_max = last_offset if last_offset is not None else -1
        for loc, ts in self._walk(last_indexed_pos, self.size_bytes):
            if ts > max_ts:
                max_ts, offset_of_max = ts, loc.last_offset
            self._bytes_since_index_entry += loc.size_bytes
            self.next_offset = loc.last_offset + 1
        self._max_timestamp_ms = max_ts
        self._offset_of_max_timestamp = offset_of_max
        if self.size_bytes >= HEADER_BYTES:
            head = self._log.read(0, HEADER_BYTES)
            self.first_batch_timestamp_ms = _MAX_TS.unpack_from(head, 35)[0]

    def load_tail(self) -> int | None:
        """Set the next offset and the first batch's timestamp of a trusted (cleanly shut down)
        segment from its offset index alone, walking the batches after its last entry; returns
        the base offset of the first batch (None if the segment holds no whole header).

        The largest timestamp (and the bytes since the last index entry) stay unknown and the
        time index unread: the first use of :attr:`max_timestamp_ms` (time retention,
        ListOffsets by timestamp, a roll, the first append; a truncation recomputes them
        anyway) loads it and computes them as start-up did before (``_recompute_tail_stats``,
        the segment unchanged since).
        """
        # The walk of ``_walk`` (a header cut by the chunk's end still counts, a length below
        # a header's ends it), without building its list: start-up does this per partition.
        if self._index is None:
            self._load_offset_index()
        index = self._index
        assert index is not None
        pos = index.last_entry[1]
        end = self.size_bytes
        first: tuple[int, int] | None = None  # (base offset, max timestamp) at position 0
        while pos < end:
            chunk = self._log.read(pos, min(end - pos, RECOVERY_CHUNK_BYTES))
            i, n = 0, len(chunk)
            while i + HEADER_BYTES <= n:
                base, length, last_delta, max_ts = _WALKED.unpack_from(chunk, i)
                if length + LOG_OVERHEAD < HEADER_BYTES:
                    break  # not a batch header (a foreign file): never walk backwards
                if pos + i == 0:
                    first = (base, max_ts)
                self.next_offset = base + last_delta + 1
                i += length + LOG_OVERHEAD
            if i == 0:
                break
            pos += i
        # With the largest timestamp, before the first append needs it.
        self._bytes_since_index_entry = 0
        self._max_timestamp_ms = None
        self._offset_of_max_timestamp = -1
        self.first_batch_timestamp_ms = None
        if end < HEADER_BYTES:
            return None
        if first is not None:
            # The walk began at the file's start: its first header is the one wanted.
            self.first_batch_timestamp_ms = first[1]
            return first[0]
        head = self._log.read(0, HEADER_BYTES)
        self.first_batch_timestamp_ms = _MAX_TS.unpack_from(head, 35)[0]
        first_base: int = _HEAD.unpack_from(head, 0)[0]
        return first_base

    def recover(self, expected_first_offset: int | None = None,
                collect_epochs: bool = False, buffer: RecoveryBuffer | None = None) -> int:
        """Validate every batch (CRC, structure, ascending offsets, the first at or above
        ``expected_first_offset``), cut a torn or corrupt tail at the first batch that is not
        valid, and rebuild both indexes (``collect_epochs``: keeping ``epoch_runs``), in one
        pass over the file read through ``buffer`` (pass one to each segment of a log). Returns
        the number of bytes cut."""
        scanned = _scan_for_recovery(self._log, self.size_bytes, self.base_offset,
                                     expected_first_offset or 0, self.index_interval_bytes,
                                     collect_epochs,
                                     buffer if buffer is not None else RecoveryBuffer())
        valid = scanned.valid_bytes
        cut = self.size_bytes - valid
        self._last_append = None
        if cut:
            self._log.truncate(valid)
            self.size_bytes = valid
        _fill_indexes(*self._emptied_indexes(), scanned)
        self._bytes_since_index_entry = scanned.bytes_since_index_entry
        self.epoch_runs = scanned.epoch_runs
        self._recompute_tail_stats()
        if self.size_bytes == 0:
            self.next_offset = self.base_offset
        return cut

    # ---- durability and lifetime ---------------------------------------------------------------

    def flush(self) -> None:
        """Make the log file and its indexes durable."""
        self._log.fsync()
        if self._index is not None:
            self._index.flush()
        if self._time_index is not None:
            self._time_index.flush()

    def close(self) -> None:
        """Release the files."""
        self._log.close()
        if self._index is not None:
            self._index.close()
        if self._time_index is not None:
            self._time_index.close()

    def delete_files(self) -> None:
        """Remove the segment's files: the log first, so a crash never leaves an index without
        the log it describes being believed."""
        self.close()
        for path in (self.log_path, self.index_path, self.time_index_path):
            if self.fs.exists(path):
                self.fs.remove(path)

    def mtime_ms(self) -> int:
        """When the log file was last written."""
        return self.fs.mtime_ms(self.log_path)


def read_newest_timestamp_ms(fs: FileSystem, log_path: str) -> int | None:
    """The largest batch max timestamp in the segment file ``log_path``, read-only and without
    its indexes: a walk over the batch headers (each batch's body is skipped), -1 when the file
    holds no whole header. A header cut off by the end of the file (a torn tail) ends the walk;
    a batch whose body runs past the end still counts (its header is whole). None when the
    file is not a log of v2 batches (a header with another magic or an impossible length): its
    age cannot be told. OSError on an I/O error. For a ``-stray`` dir, which is never loaded."""
    handle = fs.open(log_path)
    try:
        size = handle.size()
        newest, pos = -1, 0
        while pos + HEADER_BYTES <= size:
            chunk = handle.read(pos, min(size - pos, RECOVERY_CHUNK_BYTES))
            view, i = memoryview(chunk), 0
            while i + HEADER_BYTES <= len(view):
                length = _HEAD.unpack_from(view, i)[1]
                if length + LOG_OVERHEAD < HEADER_BYTES or view[i + _MAGIC_AT] != _MAGIC_V2:
                    return None
                newest = max(newest, _MAX_TS.unpack_from(view, i + 35)[0])
                i += length + LOG_OVERHEAD
            if i == 0:
                break  # a header longer than what is left: a torn tail
            pos += i
        return newest
    finally:
        handle.close()


# ---- recovery: one pass that validates batches and collects index entries -------------------


class _Scanned(NamedTuple):
    """What recovery's pass over a segment found: how many bytes of valid batches lead it,
    and the index entries ``rebuild_indexes`` would make for them."""

    valid_bytes: int
    index_offsets: array[int]
    index_positions: array[int]
    time_stamps: array[int]
    time_offsets: array[int]
    time_at: array[int]
    """For each time index entry, the offset index entry made in the same step (its index)."""
    bytes_since_index_entry: int
    epoch_runs: list[tuple[int, int, int]] | None


def _indexable(segment_base: int, base_offset: int, offset_of_max: int) -> bool:
    """The batch at ``base_offset`` (the largest timestamp so far first reached at
    ``offset_of_max``, -1 for none) can have index entries in the segment at ``segment_base``:
    both offsets fit a relative offset (:data:`MAX_RELATIVE_OFFSET`)."""
    return (base_offset - segment_base <= MAX_RELATIVE_OFFSET
            and offset_of_max - segment_base <= MAX_RELATIVE_OFFSET)


def _scan_for_recovery(log: FileHandle, size: int, segment_base: int, first_min: int,
                       interval: int, collect_epochs: bool, buffer: RecoveryBuffer) -> _Scanned:
    """Walk the ``size`` bytes of ``log`` once, through ``buffer``, checking each batch
    as ``scan_valid_prefix`` does (magic 2, a length of at least a header, whole, CRC-32C,
    lastOffsetDelta and recordCount consistent, offsets in range and ascending: the first
    batch's base offset at least ``first_min``, each later one past the previous batch), and
    stop at the first that fails. For the valid ones, collect the index entries of
    ``rebuild_indexes`` (every ``interval`` bytes) and, with ``collect_epochs``, the runs of one
    partition leader epoch."""
    assert RECOVERY_BUFFER_BYTES >= 2 * _READ_ALIGN
    index_offsets, index_positions = array("q"), array("q")
    time_stamps, time_offsets, time_at = array("q"), array("q"), array("q")
    runs: list[tuple[int, int, int]] = []
    run_epoch: int | None = None
    run_first = run_last = -1
    # A small segment asks for no more than it needs (only what is read is ever touched).
    view = buffer.at_least(min(RECOVERY_BUFFER_BYTES, size + _READ_ALIGN))
    capacity = len(view)
    read_into = log.read_into
    unpack = _RECOVERY_HEADER.unpack_from
    crc32 = crc32c.crc32c
    next_min = first_min  # the smallest base offset the next batch may have
    bytes_since = 0
    max_so_far, offset_of_max = NO_TIMESTAMP, -1
    last_indexed_ts = NO_TIMESTAMP - 1  # below any maxTimestamp so far: the first entry goes in
    pos = 0  # the file position of the next batch to check
    stopped = False
    while pos < size:
        start = pos - pos % _READ_ALIGN
        filled = read_into(start, view if size - start >= capacity else view[:size - start])
        i = first = pos - start
        length = 0
        while i + HEADER_BYTES <= filled:
            base, length, epoch, magic, crc, last_delta, max_ts, count = unpack(view, i)
            if magic != MAGIC_V2 or length < MIN_BATCH_LENGTH:
                stopped = True
                break
            batch_end = i + LOG_OVERHEAD + length
            if batch_end > filled:
                break  # cut by the buffer's end (or the file's: see below)
            if (crc32(view[i + ATTRIBUTES_OFFSET:batch_end]) != crc or last_delta < 0
                    or count < 0 or count > last_delta + 1 or base < next_min
                    or base > INT64_MAX - last_delta):
                stopped = True
                break
            next_min = base + last_delta + 1
            if max_ts > max_so_far:
                max_so_far, offset_of_max = max_ts, next_min - 1
            if bytes_since > interval and _indexable(segment_base, base, offset_of_max):
                # as _index_batch
                index_offsets.append(base)
                index_positions.append(start + i)
                if max_so_far > last_indexed_ts:  # as TimeIndex.maybe_append
                    time_stamps.append(max_so_far)
                    time_offsets.append(offset_of_max if offset_of_max >= 0 else base)
                    time_at.append(len(index_offsets) - 1)
                    last_indexed_ts = max_so_far
                bytes_since = 0
            bytes_since += batch_end - i
            if collect_epochs:
                if epoch != run_epoch:
                    if run_epoch is not None:
                        runs.append((run_epoch, run_first, run_last))
                    run_epoch, run_first = epoch, base
                run_last = next_min - 1
            i = batch_end
        pos = start + i
        if stopped:
            break
        if i > first:
            continue  # read on from the first batch not checked yet
        # Not one batch checked: the one at ``pos`` is not whole in the buffer.
        need = i + HEADER_BYTES if i + HEADER_BYTES > filled else i + LOG_OVERHEAD + length
        if start + need > size or need <= capacity:
            # It runs past the end of the file (a torn tail); or the read came back short (no
            # more of it can be read).
            break
        # A batch larger than the buffer: one that holds two such (or the rest of the file).
        view = buffer.at_least(-(-min(2 * need, size - start) // _READ_ALIGN) * _READ_ALIGN)
        capacity = len(view)
    if run_epoch is not None:
        runs.append((run_epoch, run_first, run_last))
    return _Scanned(pos, index_offsets, index_positions, time_stamps, time_offsets, time_at,
                    bytes_since, runs if collect_epochs else None)


def _fill_indexes(index: OffsetIndex, time_index: TimeIndex, scanned: _Scanned) -> None:
    """Give the two (empty) indexes the entries of ``scanned``, with the file writes that one
    ``append``/``maybe_append`` per entry, in batch order, would make, in the same order: an
    index writes its complete last chunk when the entry after it comes, and time index entry
    ``j`` came with offset index entry ``time_at[j]``, after it."""
    offsets, positions = scanned.index_offsets, scanned.index_positions
    stamps, stamp_offsets, time_at = scanned.time_stamps, scanned.time_offsets, scanned.time_at
    done_o = done_t = 0  # entries given so far
    next_o = next_t = CHUNK  # the next entry of each whose arrival writes a chunk
    while next_o < len(offsets) or next_t < len(stamps):
        if next_t >= len(stamps) or (next_o < len(offsets) and next_o <= time_at[next_t]):
            index.extend(offsets[done_o:next_o + 1], positions[done_o:next_o + 1])
            done_o, next_o = next_o + 1, next_o + CHUNK
        else:
            time_index.extend(stamps[done_t:next_t + 1], stamp_offsets[done_t:next_t + 1])
            done_t, next_t = next_t + 1, next_t + CHUNK
    index.extend(offsets[done_o:], positions[done_o:])
    time_index.extend(stamps[done_t:], stamp_offsets[done_t:])
