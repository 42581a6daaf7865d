"""The partition log: segments in offset order, with log start offset, high watermark and LEO.

A partition log owns every file of its directory, as Kafka's UnifiedLog does: the segments, the
leader epoch cache (``leader-epoch-checkpoint``), the topic id (``partition.metadata``) and the
durability of its start offset. Nobody above it writes one of them; loading is
``storage/loader.py``.

Invariants upheld here (architecture.md "The safety invariants"):
- 0 <= log_start_offset <= high_watermark <= log_end_offset, asserted after every change
  (NeverServeBelowLogStart, hazard 8).
- The log start offset never moves backwards, and a raise is made durable (through the dir's
  ``LogStartOffsetCheckpoint``, handed down by the log manager) before it is acknowledged or
  before any file below it is deleted (hazard 12).
- The leader epoch cache describes only offsets the log holds: every truncation, full
  truncation, start offset raise (DeleteRecords, a follower learning the leader's, retention)
  trims it here, in the same call, after the new start offset is durable.
- No read starts below the log start offset (OFFSET_OUT_OF_RANGE).
- Retention deletes only whole segments lying wholly below the high watermark (NoNewDataDeleted,
  hazard 1), start-offset breach first whatever the cleanup policy (hazard 9), then size, then
  time.
- An empty replica starts at the base offset of the first batch it receives (hazard 7).
- The topic id, once on disk, never changes: another one is refused with ``TopicIdMismatch``.
"""

from __future__ import annotations

import os
import posixpath
import struct
from bisect import bisect_right
from collections.abc import Callable, Iterator
from typing import NamedTuple

import crc32c

from logwright.errors import (
    CorruptRecordError,
    KafkaStorageError,
    LogwrightError,
    MessageTooLarge,
    OffsetOutOfRange,
    RecordBatchTooLarge,
    UnexpectedAppendOffset,
)
from logwright.records import (
    LOG_OVERHEAD,
    BatchHeader,
    Record,
    assign_offsets,
    assign_one_batch,
    decode_records,
    iter_batches,
    scan_valid_prefix,
    validate_batches,
)
from logwright.records.header import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    INT32_MAX,
    MAGIC_V2,
)
from logwright.records.scan import (
    COPY_FOR_CRC_MAX,
    MAX_CODEC_VALUE,
    OFFSET_LENGTH_EPOCH,
    ONE_BATCH_FIELDS,
)
from logwright.storage.config import LogConfig
from logwright.storage.dir_status import LogDirStatus
from logwright.storage.epoch_cache import UNDEFINED_EPOCH, LeaderEpochCache
from logwright.storage.index import MAX_RELATIVE_OFFSET, OffsetIndex, TimeIndex
from logwright.storage.loader import LoadReport, load_partition_dir, restart_segments
from logwright.storage.metadata_files import PartitionMetadataFile
from logwright.storage.naming import TopicPartition, Uuid
from logwright.storage.segment import LogSegment
from logwright.storage.start_offset_checkpoint import LogStartOffsetCheckpoint
from logwright.world.clock import Clock
from logwright.world.fs import FileSystem
from logwright.world.realfs import RealFileHandle

_BASE_LENGTH_EPOCH = struct.Struct(">qii")
"""A batch header's base offset, batch length and partition leader epoch."""
_new_tuple = tuple.__new__
"""Builds an ``AppendInfo`` without the Python frame of a named tuple's ``__new__``."""
# For the leader's append path (``append_as_leader``): module globals, each one lookup.
_unpack_checked_fields = ONE_BATCH_FIELDS.unpack_from
_pack_offset_length_epoch = OFFSET_LENGTH_EPOCH.pack_into
_pack_offset = struct.Struct(">q").pack_into
_CRC_PART = slice(ATTRIBUTES_OFFSET, None)  # what a batch's CRC covers
_INT32_MAX = INT32_MAX
# And these, written there as numbers (a constant each, not a global's lookup).
assert (LOG_OVERHEAD, MAGIC_V2, COMPRESSION_CODEC_MASK, MAX_CODEC_VALUE,
        COPY_FOR_CRC_MAX) == (12, 2, 7, 4, 8192)
_EMPTY_BYTEARRAY = bytearray()  # never changed: only the left operand of a copy's ``+``
_crc32c = crc32c.crc32c
_pwrite = os.pwrite

__all__ = ["AppendInfo", "FetchData", "LoadReport", "PartitionLog", "TopicIdMismatch"]


class TopicIdMismatch(LogwrightError):
    """The log belongs to another incarnation of the topic (a different topic id)."""


class AppendInfo(NamedTuple):
    """What an append wrote: offsets ``first_offset..last_offset``.

    A named tuple, not a frozen dataclass: as immutable, and built in a third of the time on
    the append path, once per produce request."""

    first_offset: int
    last_offset: int
    max_timestamp_ms: int
    batches: int
    size_bytes: int


class FetchData(NamedTuple):
    """The answer to a read: whole batches, and the log's offsets at the time of the read.

    A named tuple for the same reason as ``AppendInfo``: one per fetch."""

    records: bytes
    first_batch_offset: int
    log_start_offset: int
    high_watermark: int
    log_end_offset: int


RaiseObserver = Callable[[list[int], int, int], None]
"""Told, just before retention makes a raised start offset durable: the base offsets of the
segments it is about to delete, the base offset of the first segment it keeps, and the new
start offset (the log manager records an ``Intent`` with it when tracing)."""


class PartitionLog:
    """One partition's log in one directory, and every file in it. Single-threaded: the caller
    serialises calls.

    Two collaborators of its dir are handed down by the owner (the log manager); the log calls
    them and never calls up. ``start_offset_checkpoint`` is the dir's
    ``LogStartOffsetCheckpoint`` (None: a raise is written only by the owner's periodic
    checkpoint, Kafka's behaviour). ``dir_status`` is the dir's ``LogDirStatus``: an I/O error
    takes the whole dir offline there (None: only this log goes offline).
    """

    def __init__(
        self,
        fs: FileSystem,
        dir_path: str,
        tp: TopicPartition,
        config: LogConfig,
        clock: Clock,
        segments: list[LogSegment],
        log_start_offset: int,
        high_watermark: int,
        recovery_point: int,
        topic_id: Uuid | None = None,
        *,
        epoch_cache: LeaderEpochCache | None = None,
        start_offset_checkpoint: LogStartOffsetCheckpoint | None = None,
        dir_status: LogDirStatus | None = None,
    ) -> None:
        assert segments, "a log always has an active segment"
        self.fs = fs
        self.dir_path = dir_path
        self.tp = tp
        self._set_config(config)
        self.clock = clock
        self._topic_id = topic_id
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._log_start_offset = log_start_offset
        # The start offset a crash can no longer take back: what the loader found, or the
        # last value the dir's log-start-offset-checkpoint holds (DeleteRecords acknowledges
        # on this, docs/delete-records.md).
        self._durable_log_start_offset = log_start_offset
        self._high_watermark = high_watermark
        self._flush_at = 0  # set with the recovery point: see ``recovery_point``
        self.recovery_point = recovery_point
        #: The leader epoch cache: read it freely; only this log changes it.
        self.leader_epoch_cache = (epoch_cache if epoch_cache is not None
                                   else LeaderEpochCache(fs, dir_path))
        self.start_offset_checkpoint = start_offset_checkpoint
        self.loaded_start_offset_checkpoint: int | None = None
        """What the dir's start offset checkpoint held for this log when :meth:`load` opened it
        (None: no entry, or a log created, not loaded)."""
        self.dir_status = dir_status
        #: The log generation in ``partition.metadata`` (a JBOD move's step G, docs/jbod.md):
        #: a future log is one above its source; start-up keeps the live dir of the highest.
        self.generation = 0
        self.offline = False
        self._dir_dirty = False  # a segment file was created since the directory was last synced
        self._check_offsets()

    # ---- creation and loading ------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        fs: FileSystem,
        dir_path: str,
        tp: TopicPartition,
        config: LogConfig,
        clock: Clock,
        topic_id: Uuid | None = None,
        start_offset: int = 0,
        *,
        start_offset_checkpoint: LogStartOffsetCheckpoint | None = None,
        dir_status: LogDirStatus | None = None,
        generation: int = 0,
    ) -> PartitionLog:
        """Create the partition's directory (durably, with its topic id and, above 0, its log
        ``generation``) and an empty log."""
        assert start_offset >= 0, "offsets are never negative"
        assert generation == 0 or topic_id is not None, "a generation is kept beside a topic id"
        fs.mkdir(dir_path)
        if topic_id is not None:
            PartitionMetadataFile(fs, dir_path).write(topic_id, generation)
        segment = LogSegment(fs, dir_path, start_offset, config.index_interval_bytes, create=True)
        segment.flush()
        fs.fsync_dir(dir_path)
        fs.fsync_dir(posixpath.dirname(dir_path))
        log = cls(fs, dir_path, tp, config, clock, [segment], start_offset, start_offset,
                  start_offset, topic_id, start_offset_checkpoint=start_offset_checkpoint,
                  dir_status=dir_status)
        log.generation = generation
        return log

    @classmethod
    def load(
        cls,
        fs: FileSystem,
        dir_path: str,
        tp: TopicPartition,
        config: LogConfig,
        clock: Clock,
        *,
        log_start_offset_checkpoint: int | None,
        recovery_point: int | None,
        high_watermark_checkpoint: int | None,
        clean_shutdown: bool,
        start_offset_checkpoint: LogStartOffsetCheckpoint | None = None,
        dir_status: LogDirStatus | None = None,
    ) -> tuple[PartitionLog, LoadReport]:
        """Open an existing partition directory: its segments (trusted after a clean shutdown
        if they line up, else recovered), its topic id and its leader epoch cache, all made to
        agree (``storage/loader.py`` says how).

        Raises ``OSError`` on an I/O error and ``CheckpointError`` on a malformed
        ``partition.metadata`` or ``leader-epoch-checkpoint``: the caller takes the dir offline.
        """
        loaded = load_partition_dir(
            fs, dir_path, config, log_start_offset_checkpoint=log_start_offset_checkpoint,
            recovery_point=recovery_point, high_watermark_checkpoint=high_watermark_checkpoint,
            clean_shutdown=clean_shutdown)
        log = cls(fs, dir_path, tp, config, clock, loaded.segments, loaded.log_start_offset,
                  loaded.high_watermark, loaded.recovery_point, loaded.topic_id,
                  epoch_cache=loaded.epoch_cache, start_offset_checkpoint=start_offset_checkpoint,
                  dir_status=dir_status)
        log.generation = loaded.generation
        log.loaded_start_offset_checkpoint = log_start_offset_checkpoint
        return log, loaded.report

    @property
    def config(self) -> LogConfig:
        """How this log rolls, indexes, validates and retains (``update_config`` replaces it)."""
        return self._config

    def update_config(self, config: LogConfig) -> None:
        """Replace this log's config (a topic config change); the next roll, retention run and
        append check use it. Existing segments and their index entries stay as they are."""
        assert isinstance(config, LogConfig)
        self._set_config(config)
        self._flush_at = self._recovery_point + config.flush_messages - 1

    def _set_config(self, config: LogConfig) -> None:
        self._config = config
        # What the leader's append path compares with on every append, worked out once per
        # config: how many entries segment.index.bytes holds in each index.
        self._max_batch_bytes = min(config.max_message_bytes, config.segment_bytes)
        self._max_index_entries = config.segment_index_bytes // OffsetIndex.ENTRY_BYTES
        self._max_time_index_entries = config.segment_index_bytes // TimeIndex.ENTRY_BYTES

    @property
    def recovery_point(self) -> int:
        """Offsets below this are durable (flushed)."""
        return self._recovery_point

    @recovery_point.setter
    def recovery_point(self, offset: int) -> None:
        self._recovery_point = offset
        # flush.messages, as the leader's append path tests it: the last offset appended at
        # which as many records are unflushed (last + 1 - recovery point >= flush.messages).
        self._flush_at = offset + self._config.flush_messages - 1

    # ---- offsets -------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        """The first offset a reader may ask for."""
        return self._log_start_offset

    @property
    def durable_log_start_offset(self) -> int:
        """The log start offset a crash cannot take back (written to the dir's
        ``log-start-offset-checkpoint``, or loaded); at most ``log_start_offset``. Equal to it
        whenever the log writes each raise at once (the log manager's default)."""
        return self._durable_log_start_offset

    @property
    def counted_start_offset(self) -> int:
        """The start offset a low watermark counts for this log: the durable one, or, when the
        log writes its start offset only at the periodic checkpoint (no
        ``start_offset_checkpoint``: Kafka's behaviour), the one in memory, as Kafka counts it."""
        return (self._durable_log_start_offset if self.start_offset_checkpoint is not None
                else self._log_start_offset)

    def start_offset_written(self, offset: int) -> None:
        """The dir's checkpoint now holds ``offset`` for this log (durably): the durable start
        offset becomes it (never backwards)."""
        assert offset <= self._log_start_offset, "only a value the log held can be written"
        self._durable_log_start_offset = max(self._durable_log_start_offset, offset)

    @property
    def high_watermark(self) -> int:
        """Offsets below this are committed."""
        return self._high_watermark

    @property
    def log_end_offset(self) -> int:
        """One past the last offset in the log."""
        return self._segments[-1].next_offset

    @property
    def active_segment(self) -> LogSegment:
        """The segment appends go to."""
        return self._segments[-1]

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        """The segments, oldest first."""
        return tuple(self._segments)

    @property
    def size_bytes(self) -> int:
        """Bytes in every segment's log file."""
        return sum(s.size_bytes for s in self._segments)

    def _check_offsets(self) -> None:
        lso, hw, leo = self._log_start_offset, self._high_watermark, self._segments[-1].next_offset
        assert 0 <= lso <= hw <= leo, f"{self.tp}: offsets broken: start {lso} hw {hw} leo {leo}"
        assert self._segments[0].base_offset <= lso or self._segments[0].size_bytes == 0, (
            f"{self.tp}: start offset {lso} below the first segment "
            f"{self._segments[0].base_offset}")

    def _guard(self) -> None:
        if self.offline:
            raise KafkaStorageError(f"{self.tp}: the log dir {posixpath.dirname(self.dir_path)} "
                                    "is offline")

    def _io_failed(self, exc: OSError) -> KafkaStorageError:
        self.offline = True
        if self.dir_status is not None:
            self.dir_status.take_offline(f"I/O error on {self.tp}: {exc}")
        return KafkaStorageError(f"{self.tp}: I/O error in {self.dir_path}: {exc}")

    # ---- topic id ------------------------------------------------------------------------------

    @property
    def topic_id(self) -> Uuid | None:
        """The topic id in ``partition.metadata``, or None when the dir has none (hazard 2)."""
        return self._topic_id

    def assign_topic_id(self, topic_id: Uuid) -> bool:
        """Adopt ``topic_id`` if the log has none yet, writing ``partition.metadata`` atomically
        and durably first; True if it was written. The same id again changes nothing; another
        one raises ``TopicIdMismatch`` (the log belongs to another incarnation of the topic)."""
        if self._topic_id is not None:
            if self._topic_id != topic_id:
                raise TopicIdMismatch(f"{self.tp}: the log holds topic id {self._topic_id}, "
                                      f"not {topic_id}")
            return False
        self._guard()
        try:
            PartitionMetadataFile(self.fs, self.dir_path).write(topic_id, self.generation)
        except OSError as exc:
            raise self._io_failed(exc) from exc
        self._topic_id = topic_id
        return True

    def restamp_generation(self, generation: int) -> None:
        """Raise the log generation to ``generation`` (start-up's step R6, docs/jbod.md),
        ``partition.metadata`` rewritten atomically and durably first. A log without a topic id
        has no generation to raise (it can never have been moved). KafkaStorageError on an I/O
        error (the dir goes offline)."""
        if generation <= self.generation:
            raise ValueError(f"{self.tp}: generation {generation} is not above {self.generation}")
        if self._topic_id is None:
            raise LogwrightError(f"{self.tp}: a log without a topic id has no generation")
        self._guard()
        try:
            PartitionMetadataFile(self.fs, self.dir_path).write(self._topic_id, generation)
        except OSError as exc:
            raise self._io_failed(exc) from exc
        self.generation = generation

    # ---- leader epochs -------------------------------------------------------------------------

    @property
    def latest_epoch(self) -> int | None:
        """The newest leader epoch in the cache, or None when it has none."""
        return self.leader_epoch_cache.latest_epoch

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int] | None:
        """OffsetForLeaderEpoch on this log: (largest epoch <= ``epoch``, the offset where the
        next one began, or the log end offset), or None when the answer is unknown."""
        found, end = self.leader_epoch_cache.end_offset_for(epoch, self.log_end_offset)
        return None if found == UNDEFINED_EPOCH else (found, end)

    def assign_epoch_start_offset(self, epoch: int, start_offset: int) -> bool:
        """Record, durably, that leader ``epoch`` begins at ``start_offset`` (a new leader at its
        log end offset, before anything is appended under the epoch); True if the cache changed."""
        self._guard()
        try:
            return self.leader_epoch_cache.assign(epoch, start_offset)
        except OSError as exc:
            raise self._io_failed(exc) from exc

    def _epochs_changed(self, change: Callable[[LeaderEpochCache], object]) -> None:
        """Apply ``change`` to the leader epoch cache (a write); an I/O error fails the log."""
        try:
            change(self.leader_epoch_cache)
        except OSError as exc:
            raise self._io_failed(exc) from exc

    # ---- append --------------------------------------------------------------------------------

    def append_as_leader(self, records: bytes | bytearray, leader_epoch: int = -1) -> AppendInfo:
        """Validate batches from a producer, assign the next offsets, and append them.

        A batch larger than max.message.bytes is refused with MESSAGE_TOO_LARGE, one larger
        than segment.bytes with RECORD_BATCH_TOO_LARGE (as Kafka does); nothing is appended.
        """
        if self.offline:
            self._guard()
        # The common case in one frame: one valid batch (a producer sends one per partition
        # per request), no new leader epoch, and an active segment that already holds a batch,
        # with its indexes and largest timestamp at hand. It is ``_append_one_batch`` with its
        # calls inlined (``assign_one_batch``, ``LogSegment.append``, ``RealFileHandle.append``
        # for a file of the real file system, ``_flush_by_count``): the same checks, the same
        # clock read, the same file operations and changes, in the same order. Anything else
        # goes to ``_append_one_batch`` before anything is changed or the clock read.
        active = self._segments[-1]
        first = active.next_offset
        try:
            length, magic, crc, attributes, last_delta, max_ts, count = (
                _unpack_checked_fields(records))
        except struct.error:  # shorter than a header
            return self._append_one_batch(records, leader_epoch)
        size = len(records)
        last = first + last_delta
        config = self._config
        index, time_index = active._index, active._time_index
        rolling_ts = active.first_batch_timestamp_ms
        current_max = active._max_timestamp_ms
        held = active.size_bytes
        # A last offset past the segment's largest (``max_last_offset``, at most int64's
        # largest) is refused there or rolls the segment: both are ``_append_one_batch``'s.
        # The numbers: LOG_OVERHEAD (12; the length tested by a difference, a cached small int
        # where a sum would be a new object), MAGIC_V2 (2), the codec's mask (7) and largest
        # value (4).
        if (size - length != 12 or magic != 2 or last_delta < 0
                or count != last_delta + 1 or attributes & 7 > 4
                or last > active.max_last_offset or size > self._max_batch_bytes
                or index is None or time_index is None
                or rolling_ts is None or current_max is None or not held
                or (leader_epoch >= 0 and (leader_epoch != self.leader_epoch_cache.latest_epoch
                                           or leader_epoch > _INT32_MAX))):
            return self._append_one_batch(records, leader_epoch)
        # The CRC over the copy's bytes (those of ``records``): a slice of a bytearray is
        # allocated a byte larger than its data, one of bytes 33 larger, which for a batch of
        # about 1 KiB takes it out of the allocator's fast bins.
        data = _EMPTY_BYTEARRAY + records  # a copy: ``bytearray(records)`` without its arguments
        if _crc32c(data[_CRC_PART] if size <= 8192  # COPY_FOR_CRC_MAX
                   else memoryview(data)[_CRC_PART]) != crc:
            return self._append_one_batch(records, leader_epoch)
        if leader_epoch >= 0:
            _pack_offset_length_epoch(data, 0, first, length, leader_epoch)
        else:
            _pack_offset(data, 0, first)
        try:
            # LogSegment.append's roll decision (its offset test made above), the clock read
            # first as there.
            if (self.clock.now_ms() - rolling_ts >= config.segment_ms
                    or held + size > config.segment_bytes
                    or index.entries >= self._max_index_entries
                    or time_index.entries >= self._max_time_index_entries):
                self.roll().append(first, last, max_ts, data, config, self.clock)
            else:
                # The rest of LogSegment.append.
                assert first >= active.next_offset, (
                    f"offsets must increase: appending {first} at next offset "
                    f"{active.next_offset}")
                assert last <= active.max_last_offset, "relative offsets must fit in int32"
                handle = active._log
                if type(handle) is RealFileHandle:  # RealFileHandle.append
                    position = handle._size
                    written = _pwrite(handle._fd, data, position)
                    if written < size:
                        handle.write_rest(data, position, written)
                    handle._size = end = position + size
                else:
                    position = handle.append(data)
                    end = position + size
                active.epoch_runs = None
                if max_ts > current_max:
                    active._offset_of_max_timestamp = last
                    active._max_timestamp_ms = current_max = max_ts
                if active._bytes_since_index_entry > active.index_interval_bytes:
                    index.append(first, position)
                    offset_of_max = active._offset_of_max_timestamp
                    time_index.maybe_append(
                        current_max, offset_of_max if offset_of_max >= 0 else first)
                    active._bytes_since_index_entry = size
                else:
                    active._bytes_since_index_entry += size
                active.size_bytes = end
                active.next_offset = last + 1
                # One whole batch, its base offset ``first`` (packed in just now).
                active._last_append = (position, first, last, size)
        except OSError as exc:
            raise self._io_failed(exc) from exc
        if last >= self._flush_at:  # as _flush_by_count
            self.flush()
        return _new_tuple(AppendInfo, (first, last, max_ts, 1, size))

    def _append_one_batch(self, records: bytes | bytearray, leader_epoch: int) -> AppendInfo:
        """``append_as_leader`` when its inlined path steps aside: one valid batch through
        ``assign_one_batch`` and ``LogSegment.append``, else the general path."""
        active = self._segments[-1]
        first = active.next_offset
        one = assign_one_batch(records, first, leader_epoch)
        if one is not None:
            data, last, max_ts = one
            size = len(data)
            config = self._config
            if size <= config.max_message_bytes and size <= config.segment_bytes:
                if leader_epoch >= 0 and leader_epoch != self.leader_epoch_cache.latest_epoch:
                    self.assign_epoch_start_offset(leader_epoch, first)
                # _append, then _flush_by_count, without the calls.
                try:
                    if active.append(first, last, max_ts, data, config, self.clock) < 0:
                        self.roll().append(first, last, max_ts, data, config, self.clock)
                except OSError as exc:
                    raise self._io_failed(exc) from exc
                if last + 1 - self.recovery_point >= config.flush_messages:
                    self.flush()
                return _new_tuple(AppendInfo, (first, last, max_ts, 1, size))
        return self._append_as_leader(records, leader_epoch)

    def _append_as_leader(self, records: bytes | bytearray, leader_epoch: int) -> AppendInfo:
        """``append_as_leader`` for any input: several batches, or one the shortcut left."""
        buf = bytearray(records)
        summary = validate_batches(buf)
        config = self._config
        if len(buf) > min(config.max_message_bytes, config.segment_bytes):
            self._check_batch_sizes(buf, config)
        first = self.log_end_offset
        # Offsets and epoch stamped first: one out of range raises before anything changes (an
        # epoch beyond 32 bits once entered the epoch cache, though nothing was appended).
        next_offset = assign_offsets(buf, first, leader_epoch if leader_epoch >= 0 else None)
        if leader_epoch >= 0 and leader_epoch != self.leader_epoch_cache.latest_epoch:
            self.assign_epoch_start_offset(leader_epoch, first)  # before a record carries it
        info = self._append(buf, first, next_offset - 1, summary.max_timestamp,
                            summary.count_batches)
        self._flush_by_count()
        return info

    def _flush_by_count(self) -> None:
        """flush.messages: flush once that many records are unflushed (1: every append is
        durable before the leader can count it toward the high watermark, or a follower
        report it in its next fetch)."""
        if self.log_end_offset - self.recovery_point >= self._config.flush_messages:
            self.flush()

    def _check_batch_sizes(self, buf: bytearray, config: LogConfig) -> None:
        for _, header in iter_batches(buf, verify_crc=False):
            size = header.size_bytes
            if size > config.max_message_bytes:
                raise MessageTooLarge(
                    f"{self.tp}: a record batch of {size} bytes is larger than "
                    f"max.message.bytes {config.max_message_bytes}")
            if size > config.segment_bytes:
                raise RecordBatchTooLarge(
                    f"{self.tp}: a record batch of {size} bytes is larger than segment.bytes "
                    f"{config.segment_bytes}")

    def append_as_follower(self, records: bytes | bytearray) -> AppendInfo:
        """Append batches fetched from the leader, keeping their offsets; each batch's partition
        leader epoch goes into the leader epoch cache at the batch's base offset."""
        self._guard()
        scan = scan_valid_prefix(records, 0, verify_crc=True)
        if scan.error is not None:
            raise CorruptRecordError(f"{self.tp}: fetched records rejected: {scan.error}")
        if scan.batches == 0 or scan.last_offset is None:
            leo = self.log_end_offset
            return AppendInfo(leo, leo - 1, -1, 0, 0)
        # The scan found every byte whole, valid batches: their base offsets, lengths and
        # epochs are read off the headers directly (no header objects to build).
        first, last = _BASE_LENGTH_EPOCH.unpack_from(records, 0)[0], scan.last_offset
        leo = self.log_end_offset
        if first < leo:
            if self.size_bytes == 0 and last >= self._log_start_offset:
                # An empty replica whose start offset points into the middle of a batch starts
                # at that batch's base offset, keeping its start offset (hazard 7).
                self._replace_empty_active_segment(first)
            else:
                raise UnexpectedAppendOffset(
                    f"{self.tp}: follower append at offset {first} overlaps the log end "
                    f"offset {leo}")
        info = self._append(records, first, last, scan.max_timestamp, scan.batches)
        position, end = 0, len(records)
        while position < end:
            base_offset, batch_length, epoch = _BASE_LENGTH_EPOCH.unpack_from(records, position)
            if epoch >= 0:
                self.assign_epoch_start_offset(epoch, base_offset)
            position += LOG_OVERHEAD + batch_length
        self._flush_by_count()
        return info

    def _append(self, data: bytes | bytearray, first: int, last: int, max_ts: int,
                batches: int) -> AppendInfo:
        # Roll if the active segment must (it says so, appending nothing), then append. The
        # leader's one-batch shortcut makes the same steps itself.
        size = len(data)
        try:
            if self._segments[-1].append(first, last, max_ts, data, self._config, self.clock) < 0:
                self.roll().append(first, last, max_ts, data, self._config, self.clock)
        except OSError as exc:
            raise self._io_failed(exc) from exc
        return _new_tuple(AppendInfo, (first, last, max_ts, batches, size))

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (no-op if the active one is empty)."""
        active = self._segments[-1]
        if active.size_bytes == 0:
            return active
        new_base = self.log_end_offset
        if (active.max_timestamp_ms >= 0 and active.offset_of_max_timestamp
                - active.base_offset <= MAX_RELATIVE_OFFSET):
            # A final time index entry makes the segment's largest timestamp cheap to find
            # (not in a segment from elsewhere whose batches leap past a relative offset).
            active.time_index.maybe_append(active.max_timestamp_ms,
                                           active.offset_of_max_timestamp)
        segment = LogSegment(self.fs, self.dir_path, new_base, self._config.index_interval_bytes,
                             create=True)
        self._segments.append(segment)
        self._bases.append(new_base)
        self._dir_dirty = True
        return segment

    def _replace_empty_active_segment(self, base_offset: int) -> None:
        """Replace the empty active segment by an empty one at ``base_offset``. The segment list
        changes only once the files did: an I/O error takes the log offline with its list whole
        (a log always has an active segment; with none, even its log end offset is unknown)."""
        old = self._segments[-1]
        assert old.size_bytes == 0
        try:
            segment = restart_segments(self.fs, self.dir_path, [old], base_offset,
                                       self._config.index_interval_bytes)
        except OSError as exc:
            raise self._io_failed(exc) from exc
        self._segments[-1] = segment
        self._bases[-1] = base_offset

    # ---- read ----------------------------------------------------------------------------------

    def read(self, start_offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> FetchData:
        """Whole batches from the one holding ``start_offset``, below ``max_offset``.

        ``max_offset`` is exclusive: the high watermark for consumers, None (the log end offset)
        for followers. Raises OFFSET_OUT_OF_RANGE below the log start offset or above the log
        end offset: nothing below the log start offset is ever served.
        """
        if self.offline:
            self._guard()
        leo = self._segments[-1].next_offset  # log_end_offset
        if start_offset < self._log_start_offset or start_offset > leo:
            raise OffsetOutOfRange(
                f"{self.tp}: offset {start_offset} is outside [{self._log_start_offset}, {leo}]")
        if start_offset == leo:  # a caught-up reader: nothing to look up (the loop would not run)
            return FetchData(b"", start_offset, self._log_start_offset, self._high_watermark, leo)
        limit = leo if max_offset is None else min(max_offset, leo)
        records, first = b"", start_offset
        try:
            i = max(0, bisect_right(self._bases, start_offset) - 1)
            while i < len(self._segments) and start_offset < limit:
                first, records = self._segments[i].read(start_offset, max_bytes, limit,
                                                        min_one_batch)
                if records:
                    break
                i += 1
        except OSError as exc:
            raise self._io_failed(exc) from exc
        return FetchData(records, first, self._log_start_offset, self._high_watermark, leo)

    def read_batches(self, start_offset: int | None = None, max_offset: int | None = None
                     ) -> Iterator[tuple[BatchHeader, list[tuple[int, Record]]]]:
        """Every batch from the one holding ``start_offset`` (default: the log start offset)
        below ``max_offset`` (default: the log end offset), decoded. For tools and tests."""
        offset = self._log_start_offset if start_offset is None else start_offset
        limit = self.log_end_offset if max_offset is None else max_offset
        while offset < limit:
            data = self.read(offset, 1 << 20, limit)
            if not data.records:
                return
            for position, header in iter_batches(data.records):
                yield header, decode_records(data.records, position)
                offset = header.last_offset + 1

    def read_records(self, start_offset: int | None = None, max_offset: int | None = None
                     ) -> Iterator[tuple[int, Record]]:
        """Every record at or after ``start_offset`` (default: the log start offset) below
        ``max_offset``, as (offset, record). For tools and tests."""
        first = self._log_start_offset if start_offset is None else start_offset
        for _, records in self.read_batches(first, max_offset):
            for offset, record in records:
                if offset >= first:
                    yield offset, record

    def offset_for_timestamp(self, timestamp_ms: int) -> int | None:
        """The first offset whose batch has a timestamp >= ``timestamp_ms`` (ListOffsets).

        An I/O error takes the log offline and raises ``KafkaStorageError``, as a read does."""
        self._guard()
        try:
            for segment in self._segments:
                if segment.size_bytes == 0 or segment.max_timestamp_ms < timestamp_ms:
                    continue
                start = max(segment.time_index.lookup(timestamp_ms), self._log_start_offset)
                loc = segment.locate(start)
                while loc is not None:
                    data = segment.read(loc.base_offset, loc.size_bytes, self.log_end_offset)[1]
                    for _, header in iter_batches(data, verify_crc=False):
                        if header.max_timestamp >= timestamp_ms:
                            return max(header.base_offset, self._log_start_offset)
                    loc = segment.locate(loc.last_offset + 1)
        except OSError as exc:
            raise self._io_failed(exc) from exc
        return None

    # ---- high watermark and log start offset ---------------------------------------------------

    def update_high_watermark(self, high_watermark: int) -> None:
        """Set the high watermark; it must lie in [log start offset, log end offset]."""
        if not self._log_start_offset <= high_watermark <= self._segments[-1].next_offset:
            raise OffsetOutOfRange(
                f"{self.tp}: high watermark {high_watermark} outside "
                f"[{self._log_start_offset}, {self.log_end_offset}]")
        self._high_watermark = high_watermark
        self._check_offsets()

    def increment_log_start_offset(self, new_start_offset: int) -> bool:
        """Raise the log start offset (DeleteRecords, or a follower learning the leader's).

        Never backwards: a lower value is ignored (returns False). Above the high watermark is
        refused with OFFSET_OUT_OF_RANGE. Returns only after the new value is durable.
        """
        self._guard()
        if new_start_offset < 0:
            raise OffsetOutOfRange(f"{self.tp}: log start offset {new_start_offset} is negative")
        if new_start_offset <= self._log_start_offset:
            return False
        if new_start_offset > self._high_watermark:
            raise OffsetOutOfRange(
                f"{self.tp}: cannot raise the log start offset to {new_start_offset}, above the "
                f"high watermark {self._high_watermark}")
        self._set_log_start_offset(new_start_offset)
        return True

    def _set_log_start_offset(self, value: int) -> None:
        """Raise the start offset: durable first (the dir's checkpoint), then the leader epoch
        cache forgets what lies below it. Every raise (DeleteRecords, a follower, retention, a
        full truncation) comes through here."""
        previous = self._log_start_offset
        assert value >= previous, "the log start offset never moves backwards"
        if value == previous:
            return
        self._log_start_offset = value
        self._persist_start_offset(previous)
        self._epochs_changed(lambda cache: cache.truncate_from_start(value))

    def _persist_start_offset(self, previous: int) -> None:
        """Make the start offset just set durable (the dir's checkpoint); if that fails it goes
        back to ``previous`` and the dir is failed."""
        if self.start_offset_checkpoint is not None:
            try:
                self.start_offset_checkpoint.persist(self.tp)
            except OSError as exc:
                self._log_start_offset = previous
                raise self._io_failed(exc) from exc

    # ---- truncation ----------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every record at or above ``offset`` (a follower diverging from its leader).

        A batch holding ``offset`` goes whole. The start offset never moves back: if nothing at
        or above it would remain, the log restarts empty at its start offset. Returns the bytes
        removed.
        """
        self._guard()
        if offset < 0:
            raise OffsetOutOfRange(f"{self.tp}: cannot truncate to negative offset {offset}")
        if offset >= self.log_end_offset:
            # Nothing to remove, but an epoch the cache says began at the log end holds no
            # record: this replica led it and appended nothing before another leader took
            # over. Forgotten now (as Kafka does), or a later divergence check would take that
            # epoch as covering the older epoch's records fetched after it, and cut them,
            # committed or not (traces/regressions/0042).
            self._epochs_changed(lambda cache: cache.truncate_from_end(self.log_end_offset))
            return 0
        removed = 0
        try:
            while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
                seg = self._segments.pop()
                self._bases.pop()
                removed += seg.size_bytes
                seg.delete_files()
            removed += self._segments[-1].truncate_to(offset)
            # Durable at once: divergent records a follower dropped must not come back in a crash.
            self._segments[-1].flush()
            self.fs.fsync_dir(self.dir_path)
        except OSError as exc:
            raise self._io_failed(exc) from exc
        leo = self.log_end_offset
        self.recovery_point = min(self.recovery_point, leo)
        if leo < self._log_start_offset:
            self._restart_at(self._log_start_offset)
        else:
            self._high_watermark = min(self._high_watermark, leo)
        self._epochs_changed(lambda cache: cache.truncate_from_end(self.log_end_offset))
        self._check_offsets()
        return removed

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and restart empty at ``offset`` (a follower below the leader's
        log start offset). Start offset, high watermark and log end offset all become
        ``offset``; the start offset is made durable first. The leader epoch cache is cleared:
        the epochs come again with the records fetched from ``offset`` on."""
        self._guard()
        if offset < self._log_start_offset:
            raise OffsetOutOfRange(
                f"{self.tp}: cannot restart at {offset}, below the log start offset "
                f"{self._log_start_offset}")
        # Cleared first, so that raising the start offset has nothing left to trim (one write).
        self._epochs_changed(lambda cache: cache.clear())
        self._restart_at(offset)

    def restart_below_start(self, offset: int) -> None:
        """Restart the log, which holds no record, empty at ``offset`` below its start offset:
        the one way a start offset moves back.

        A follower needs it when its leader's log ends below this replica's start offset: the
        records this replica had deleted up to were lost by every replica that held them, and a
        recovery (or unclean) election chose a leader without them, so those offsets will be
        written again. The start offset is made durable first, as every change of it is."""
        self._guard()
        previous = self._log_start_offset
        if self.log_end_offset != previous or not 0 <= offset < previous:
            raise OffsetOutOfRange(
                f"{self.tp}: cannot restart at {offset} below the start offset {previous}: "
                f"the log must be empty (it ends at {self.log_end_offset})")
        self._epochs_changed(lambda cache: cache.clear())
        self._log_start_offset = offset
        self._persist_start_offset(previous)
        self._restart_at(offset)

    def _restart_at(self, offset: int) -> None:
        if offset > self._log_start_offset:
            self._set_log_start_offset(offset)
        try:
            segment = restart_segments(self.fs, self.dir_path, self._segments, offset,
                                       self._config.index_interval_bytes)
        except OSError as exc:
            raise self._io_failed(exc) from exc
        self._segments = [segment]
        self._bases = [offset]
        self._high_watermark = offset
        self.recovery_point = offset
        self._check_offsets()

    # ---- retention -----------------------------------------------------------------------------

    def delete_old_segments(self, before_raise: RaiseObserver | None = None) -> int:
        """Apply retention; returns the number of segments deleted.

        Order: start-offset breach (whatever the cleanup policy), then size, then time, as
        Kafka does. Only whole segments wholly below the high watermark ever go.
        ``before_raise``, if given, is told each raise of the start offset just before it is
        made durable (:data:`RaiseObserver`).
        """
        self._guard()
        deleted = self._delete_segments(self._breached_start_offset, before_raise)
        if self._config.deletes:
            deleted += self._delete_segments(self._size_breach(), before_raise)
            deleted += self._delete_segments(self._time_breach(), before_raise)
        return deleted

    def delete_segments_below_start_offset(self) -> int:
        """Delete every segment lying wholly below the log start offset (a DeleteRecords or a
        follower's raise), whatever the cleanup policy (hazard 9), never one holding offsets
        at or above the high watermark (hazard 1); returns how many went."""
        self._guard()
        return self._delete_segments(self._breached_start_offset)

    def _breached_start_offset(self, seg: LogSegment, nxt: LogSegment | None) -> bool:
        return nxt is not None and nxt.base_offset <= self._log_start_offset

    def _size_breach(self) -> Callable[[LogSegment, LogSegment | None], bool]:
        limit = self._config.retention_bytes
        excess = [self.size_bytes - limit if limit >= 0 else -1]

        def breached(seg: LogSegment, nxt: LogSegment | None) -> bool:
            if limit < 0 or excess[0] - seg.size_bytes < 0:
                return False
            excess[0] -= seg.size_bytes
            return True
        return breached

    def _time_breach(self) -> Callable[[LogSegment, LogSegment | None], bool]:
        retention_ms = self._config.retention_ms
        cutoff = self.clock.now_ms() - retention_ms

        def breached(seg: LogSegment, nxt: LogSegment | None) -> bool:
            return retention_ms >= 0 and 0 <= seg.max_timestamp_ms < cutoff
        return breached

    def _delete_segments(
        self, should_delete: Callable[[LogSegment, LogSegment | None], bool],
        before_raise: RaiseObserver | None = None,
    ) -> int:
        doomed: list[LogSegment] = []
        try:
            for i, seg in enumerate(self._segments):
                nxt = self._segments[i + 1] if i + 1 < len(self._segments) else None
                if seg.size_bytes == 0 and nxt is None:
                    break
                # NoNewDataDeleted: a segment goes only if every offset in it is below the HW.
                # (Time retention reads a segment's time index on first use: I/O can fail.)
                if seg.next_offset > self._high_watermark or not should_delete(seg, nxt):
                    break
                doomed.append(seg)
        except OSError as exc:
            raise self._io_failed(exc) from exc
        if not doomed:
            return 0
        try:
            if len(doomed) == len(self._segments):
                self.roll()  # the active segment is wholly below the HW: roll so it can go
            new_start = max(self._log_start_offset, self._segments[len(doomed)].base_offset)
            assert new_start <= self._high_watermark, "retention may not pass the high watermark"
            if before_raise is not None and new_start > self._log_start_offset:
                before_raise([seg.base_offset for seg in doomed],
                             self._segments[len(doomed)].base_offset, new_start)
            # The start offset is durable before any file below it is deleted (hazard 12).
            self._set_log_start_offset(new_start)
            for seg in doomed:
                seg.delete_files()
        except OSError as exc:
            raise self._io_failed(exc) from exc
        del self._segments[: len(doomed)]
        del self._bases[: len(doomed)]
        self._check_offsets()
        return len(doomed)

    # ---- durability and lifetime ---------------------------------------------------------------

    def flush(self) -> None:
        """Make every record durable; the recovery point becomes the log end offset."""
        self._guard()
        try:
            for seg in self._segments:
                if seg.next_offset > self.recovery_point or seg is self._segments[-1]:
                    seg.flush()
            if self._dir_dirty:
                self.fs.fsync_dir(self.dir_path)
                self._dir_dirty = False
        except OSError as exc:
            raise self._io_failed(exc) from exc
        self.recovery_point = self.log_end_offset

    def close(self) -> None:
        """Release every file handle (no flush: call ``flush`` first for a clean shutdown)."""
        for seg in self._segments:
            seg.close()

    def delete_files(self) -> None:
        """Remove the whole directory (used by the log manager's delayed deletion)."""
        self.close()
        self.fs.rmtree(self.dir_path)

