"""Walking a buffer of v2 batches: iterate, find the valid prefix, validate, assign offsets.

Invariants upheld:
- ``scan_valid_prefix`` reports as valid only whole batches with magic 2, a sane length, a
  matching CRC-32C and offsets that never go backwards; it stops at the first batch that is not,
  and says whether that batch was torn (the buffer ends inside it, as a crash mid-append leaves a
  segment) or corrupt. Log recovery truncates to exactly ``position + valid_bytes``.
- ``validate_batches`` accepts produce input only if every batch is complete, CRC-valid, magic 2,
  with recordCount = lastOffsetDelta + 1 and a codec Kafka defines.
- ``assign_offsets`` rewrites only baseOffset and partitionLeaderEpoch, which lie before the bytes
  the CRC covers, so a CRC-valid batch stays CRC-valid.

These run on the append and recovery hot paths: each loop body is a precompiled ``Struct`` unpack
on a memoryview and a CRC over a memoryview slice (no copies); messages are built only on failure.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from enum import StrEnum
from typing import Final, NamedTuple

import crc32c

from logwright.errors import CorruptRecordError
from logwright.records.header import (
    ATTRIBUTES_OFFSET,
    BATCH_LENGTH_OFFSET,
    COMPRESSION_CODEC_MASK,
    CRC_OFFSET,
    HEADER_SIZE,
    HEADER_STRUCT,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    NO_TIMESTAMP,
    BatchHeader,
    ByteBuffer,
    CompressionCodec,
    as_byte_view,
    field_position,
)

# batchLength (at 8) and lastOffsetDelta (at 23): all that offset assignment needs to walk.
_LENGTH_AND_LAST_DELTA: Final = struct.Struct(">8xi11xi")
_INT64: Final = struct.Struct(">q")
_INT32: Final = struct.Struct(">i")
_INT8: Final = struct.Struct(">b")
_MAX_CODEC: Final = max(CompressionCodec)
MAX_CODEC_VALUE: Final = int(_MAX_CODEC)  # a plain int compares faster than an IntEnum
# batchLength (8), magic (16), crc (17), attributes (21), lastOffsetDelta (23), maxTimestamp (35)
# and recordCount (57): what ``assign_one_batch`` checks, in one unpack (and the leader's append
# path, ``PartitionLog.append_as_leader``, which makes the same checks inline).
ONE_BATCH_FIELDS: Final = struct.Struct(">8xi4xbIhi8xq14xi")
OFFSET_LENGTH_EPOCH: Final = struct.Struct(">qii")
COPY_FOR_CRC_MAX: Final = 8192
"""Up to this size a batch's CRC is taken over a copy of its bytes (a bytes slice), above it
over a memoryview: making a view costs more than copying a few KiB."""


class ScanStop(StrEnum):
    """Why ``scan_valid_prefix`` stopped."""

    END = "end"
    """The buffer ends exactly after the last valid batch."""
    TORN_TAIL = "torn tail"
    """The buffer ends inside a batch whose bytes so far look valid: an interrupted append."""
    CORRUPT = "corrupt"
    """A batch has an impossible field or a CRC mismatch."""
    OFFSET_ORDER = "offset order"
    """A valid batch whose base offset goes backwards (or skips, with an expected offset)."""


# Read per message: globals, not enum lookups (``logwright.errors.NO_ERROR`` says why).
_END: Final = ScanStop.END


class ScanResult(NamedTuple):
    """The valid prefix of a buffer of batches, and why the scan stopped there.

    A named tuple rather than a frozen dataclass: as immutable, and several times cheaper to
    build, which counts on the follower append path (one scan per fetched chunk)."""

    valid_bytes: int
    """Bytes of whole valid batches from the scan's start position."""
    batches: int
    """How many batches the valid prefix holds."""
    last_offset: int | None
    """Last offset of the last valid batch; None if there is none."""
    max_timestamp: int
    """Largest maxTimestamp in the valid prefix; -1 (no timestamp) if there are no batches."""
    error: str | None
    """Why the scan stopped before the end of the buffer; None if it reached the end."""
    stop: ScanStop
    """The kind of stop: END, TORN_TAIL, CORRUPT or OFFSET_ORDER."""

    @property
    def torn_tail(self) -> bool:
        """True if the bytes after the valid prefix are an incomplete batch, not a corrupt one."""
        return self.stop is ScanStop.TORN_TAIL


class ValidationSummary(NamedTuple):
    """What the leader needs to know about produce input that passed ``validate_batches``.

    A named tuple for the same reason as ``ScanResult``: it is built once per produce request."""

    count_batches: int
    count_records: int
    """Records in all batches; also the number of offsets the input will take."""
    max_timestamp: int
    """Largest maxTimestamp of all batches; -1 (no timestamp) for empty input."""
    last_offset_delta_of_max_timestamp: int
    """Last offset of the batch holding ``max_timestamp``, relative to the first offset the input
    will be assigned (what the time index records); -1 for empty input."""
    total_bytes: int


def _short_header(view: memoryview, pos: int, remaining: int) -> tuple[ScanStop, str]:
    """Classify a tail shorter than a header: torn, unless the bytes present already prove it
    cannot be the start of a valid batch."""
    if remaining > MAGIC_OFFSET and view[pos + MAGIC_OFFSET] != MAGIC_V2:
        return ScanStop.CORRUPT, (
            f"corrupt batch at byte {pos}: magic at byte {pos + MAGIC_OFFSET}: expected "
            f"{MAGIC_V2}, found {_INT8.unpack_from(view, pos + MAGIC_OFFSET)[0]}"
        )
    if remaining >= LOG_OVERHEAD:
        (length,) = _INT32.unpack_from(view, pos + BATCH_LENGTH_OFFSET)
        if length < MIN_BATCH_LENGTH:
            return ScanStop.CORRUPT, (
                f"corrupt batch at byte {pos}: batchLength at byte {pos + BATCH_LENGTH_OFFSET}: "
                f"{length} is below the minimum {MIN_BATCH_LENGTH}"
            )
    return ScanStop.TORN_TAIL, (
        f"torn tail at byte {pos}: {remaining} bytes remain, a batch header needs {HEADER_SIZE}"
    )


def _header_problem(view: memoryview, pos: int) -> str:
    """Describe the invalid header field of the batch at ``pos`` (known to have one)."""
    header = BatchHeader(*HEADER_STRUCT.unpack_from(view, pos))
    problem = header.problem()
    assert problem is not None, f"batch at byte {pos} has no header problem"
    field, detail = problem
    return f"{field} at byte {field_position(field, pos)}: {detail}"


def scan_valid_prefix(
    buf: ByteBuffer,
    position: int = 0,
    verify_crc: bool = True,
    expected_next_offset: int | None = None,
    on_batch: Callable[[int, BatchHeader], None] | None = None,
) -> ScanResult:
    """Find the longest prefix of whole, valid, offset-ordered batches from ``position``.

    Without ``expected_next_offset`` each batch's base offset must be at or above the previous
    batch's next offset (gaps are allowed, as compaction leaves them). With it, the first batch must
    start exactly there and every batch exactly where the previous one ended. ``on_batch`` is
    called with ``(position, header)`` for each valid batch (to rebuild indexes in the same pass).
    Never raises for bad data: the result says where and why the valid prefix ends.
    """
    view = as_byte_view(buf)
    end = len(view)
    if not 0 <= position <= end:
        raise ValueError(f"position {position} is outside the buffer of {end} bytes")
    unpack = HEADER_STRUCT.unpack_from
    crc32 = crc32c.crc32c
    strict = expected_next_offset is not None
    next_offset = expected_next_offset
    pos = position
    batches = 0
    last_offset: int | None = None
    max_timestamp = NO_TIMESTAMP
    stop = _END  # ScanStop.END
    error: str | None = None
    while pos < end:
        if end - pos < HEADER_SIZE:
            stop, error = _short_header(view, pos, end - pos)
            break
        fields = unpack(view, pos)
        base_offset, batch_length, _, magic, crc, _, last_delta, _, batch_max_ts, _, _, _, count = (
            fields
        )
        if magic != MAGIC_V2 or batch_length < MIN_BATCH_LENGTH:
            stop = ScanStop.CORRUPT
            error = f"corrupt batch at byte {pos}: {_header_problem(view, pos)}"
            break
        batch_end = pos + LOG_OVERHEAD + batch_length
        if batch_end > end:
            stop = ScanStop.TORN_TAIL
            error = (
                f"torn tail at byte {pos}: batchLength {batch_length} needs "
                f"{batch_end - pos} bytes, {end - pos} remain"
            )
            break
        if verify_crc:
            computed = crc32(view[pos + ATTRIBUTES_OFFSET : batch_end])
            if computed != crc:
                stop = ScanStop.CORRUPT
                error = (
                    f"corrupt batch at byte {pos}: crc: stored {crc:#010x}, "
                    f"computed {computed:#010x}"
                )
                break
        if last_delta < 0 or count < 0 or count > last_delta + 1:
            stop = ScanStop.CORRUPT
            error = f"corrupt batch at byte {pos}: {_header_problem(view, pos)}"
            break
        if base_offset < 0 or base_offset > INT64_MAX - last_delta:
            stop = ScanStop.CORRUPT
            error = (
                f"corrupt batch at byte {pos}: baseOffset {base_offset} with lastOffsetDelta "
                f"{last_delta} is outside the offset range"
            )
            break
        if next_offset is not None and (
            base_offset < next_offset or (strict and base_offset != next_offset)
        ):
            stop = ScanStop.OFFSET_ORDER
            relation = "is below" if base_offset < next_offset else "skips past"
            error = (
                f"offset order at byte {pos}: baseOffset {base_offset} {relation} the expected "
                f"next offset {next_offset}"
            )
            break
        if on_batch is not None:
            on_batch(pos, BatchHeader(*fields))
        next_offset = base_offset + last_delta + 1
        last_offset = next_offset - 1
        if batch_max_ts > max_timestamp:
            max_timestamp = batch_max_ts
        batches += 1
        pos = batch_end
    return ScanResult(pos - position, batches, last_offset, max_timestamp, error, stop)


def iter_batches(
    buf: ByteBuffer, position: int = 0, verify_crc: bool = True
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each complete batch from ``position`` on.

    An incomplete last batch (a torn tail, or the partial batch a size-limited fetch response
    ends with) ends the iteration silently; a corrupt batch raises ``CorruptRecordError``. Offset
    order is not checked (see ``scan_valid_prefix``).
    """
    view = as_byte_view(buf)
    end = len(view)
    if not 0 <= position <= end:
        raise ValueError(f"position {position} is outside the buffer of {end} bytes")
    pos = position
    while pos < end:
        if end - pos < HEADER_SIZE:
            stop, error = _short_header(view, pos, end - pos)
            if stop is ScanStop.CORRUPT:
                raise CorruptRecordError(error)
            return
        header = BatchHeader.parse(view, pos)
        batch_end = pos + header.size_bytes
        if batch_end > end:
            return
        if verify_crc:
            computed = crc32c.crc32c(view[pos + ATTRIBUTES_OFFSET : batch_end])
            if computed != header.crc:
                raise CorruptRecordError(
                    f"batch at byte {pos}: crc: stored {header.crc:#010x}, "
                    f"computed {computed:#010x}"
                )
        yield pos, header
        pos = batch_end


def validate_batches(buf: ByteBuffer) -> ValidationSummary:
    """Check produce input: every batch complete, magic 2, CRC-valid, codec defined, and
    recordCount = lastOffsetDelta + 1 (a producer's batch has no offset gaps).

    Records themselves are not decoded (that would cost far more than the append); the CRC
    guarantees they are what the producer sent. Raises ``CorruptRecordError`` naming the batch
    index, its byte position, the field, and the expected and found values.
    """
    view = memoryview(buf)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    end = len(view)
    unpack = HEADER_STRUCT.unpack_from
    crc32 = crc32c.crc32c
    pos = 0
    index = 0
    count_records = 0
    max_timestamp = NO_TIMESTAMP
    delta_of_max = -1
    while pos < end:
        if end - pos < HEADER_SIZE:
            raise _invalid_batch(view, index, pos)
        _, batch_length, _, magic, crc, attributes, last_delta, _, batch_max_ts, _, _, _, count = (
            unpack(view, pos)
        )
        batch_end = pos + LOG_OVERHEAD + batch_length
        # Every check in one test on the good path; _invalid_batch finds which one failed.
        if (magic != MAGIC_V2 or batch_length < MIN_BATCH_LENGTH or batch_end > end
                or crc32(view[pos + ATTRIBUTES_OFFSET : batch_end]) != crc
                or last_delta < 0 or count != last_delta + 1
                or attributes & COMPRESSION_CODEC_MASK > _MAX_CODEC):
            raise _invalid_batch(view, index, pos)
        if batch_max_ts > max_timestamp or delta_of_max < 0:
            max_timestamp = batch_max_ts
            delta_of_max = count_records + last_delta
        count_records += count
        index += 1
        pos = batch_end
    return ValidationSummary(index, count_records, max_timestamp, delta_of_max, end)


def assign_one_batch(
    buf: bytes | bytearray, base_offset: int, partition_leader_epoch: int
) -> tuple[bytearray, int, int] | None:
    """``validate_batches`` then ``assign_offsets`` for the common case: ``buf`` is exactly one
    batch (a producer's request for one partition nearly always is). ``base_offset`` must not
    be negative; a negative ``partition_leader_epoch`` keeps the batch's own (None for
    ``assign_offsets``).

    Returns (the batch with its baseOffset, and partitionLeaderEpoch if given, rewritten, in a
    copy: ``buf`` is left as it is; its last offset; its maxTimestamp) when ``validate_batches``
    would accept ``buf`` as one batch and ``assign_offsets`` would assign it without error: the
    bytes are then those ``assign_offsets`` leaves in a copy of ``buf``, and
    ``validate_batches(buf)`` is ``ValidationSummary(1, last - base_offset + 1, maxTimestamp,
    last - base_offset, len(buf))``. None otherwise (several batches, invalid input, an offset
    or an epoch out of range: the general functions give the answer, or the error,
    themselves).

    The checks are those of ``validate_batches`` on its first batch, with ``batchLength`` saying
    the batch ends where ``buf`` does (which also makes it at least the minimum, 49).
    """
    try:
        length, magic, crc, attributes, last_delta, max_timestamp, count = (
            ONE_BATCH_FIELDS.unpack_from(buf, 0))
    except struct.error:  # shorter than a header
        return None
    end = len(buf)
    last = base_offset + last_delta
    if (length + LOG_OVERHEAD != end or magic != MAGIC_V2 or last_delta < 0
            or count != last_delta + 1 or attributes & COMPRESSION_CODEC_MASK > MAX_CODEC_VALUE
            or last > INT64_MAX or partition_leader_epoch > INT32_MAX):
        return None
    if crc32c.crc32c(buf[ATTRIBUTES_OFFSET:] if end <= COPY_FOR_CRC_MAX
                     else memoryview(buf)[ATTRIBUTES_OFFSET:]) != crc:
        return None
    out = bytearray(buf)
    if partition_leader_epoch >= 0:
        OFFSET_LENGTH_EPOCH.pack_into(out, 0, base_offset, length, partition_leader_epoch)
    else:
        _INT64.pack_into(out, 0, base_offset)
    return out, last, max_timestamp


def _invalid_batch(view: memoryview, index: int, pos: int) -> CorruptRecordError:
    """The error for batch ``index`` at ``pos``, known to fail a ``validate_batches`` check:
    the first failing check, in the order a reader of the batch meets the fields."""
    end = len(view)
    if end - pos < HEADER_SIZE:
        return CorruptRecordError(
            f"batch {index} at byte {pos}: incomplete: {end - pos} bytes remain, "
            f"a batch header needs {HEADER_SIZE}"
        )
    _, batch_length, _, magic, crc, attributes, last_delta, _, _, _, _, _, count = (
        HEADER_STRUCT.unpack_from(view, pos)
    )
    if magic != MAGIC_V2 or batch_length < MIN_BATCH_LENGTH:
        return CorruptRecordError(f"batch {index} at byte {pos}: {_header_problem(view, pos)}")
    batch_end = pos + LOG_OVERHEAD + batch_length
    if batch_end > end:
        return CorruptRecordError(
            f"batch {index} at byte {pos}: incomplete: batchLength {batch_length} needs "
            f"{batch_end - pos} bytes, {end - pos} remain"
        )
    computed = crc32c.crc32c(view[pos + ATTRIBUTES_OFFSET : batch_end])
    if computed != crc:
        return CorruptRecordError(
            f"batch {index} at byte {pos}: crc at byte {pos + CRC_OFFSET}: "
            f"stored {crc:#010x}, computed {computed:#010x}"
        )
    if last_delta < 0:
        return CorruptRecordError(
            f"batch {index} at byte {pos}: lastOffsetDelta at byte "
            f"{field_position('lastOffsetDelta', pos)}: {last_delta} is negative"
        )
    if count != last_delta + 1:
        return CorruptRecordError(
            f"batch {index} at byte {pos}: recordCount at byte "
            f"{field_position('recordCount', pos)}: expected {last_delta + 1} "
            f"(lastOffsetDelta {last_delta} + 1), found {count}"
        )
    assert attributes & COMPRESSION_CODEC_MASK > _MAX_CODEC, f"batch {index} at {pos} is valid"
    return CorruptRecordError(
        f"batch {index} at byte {pos}: attributes at byte {pos + ATTRIBUTES_OFFSET}: "
        f"compression codec {attributes & COMPRESSION_CODEC_MASK} is not defined "
        f"(expected 0-{_MAX_CODEC})"
    )


def assign_offsets(
    buf: bytearray | memoryview, base_offset: int, partition_leader_epoch: int | None = None
) -> int:
    """Give the batches in ``buf`` consecutive offsets from ``base_offset``, in place.

    Rewrites each batch's baseOffset (and partitionLeaderEpoch, if given); both lie before the
    CRC-covered bytes, so the CRC stays valid. ``buf`` should have passed ``validate_batches``;
    a batch that cannot even be walked raises ``CorruptRecordError`` (batches before it are
    already rewritten). Returns the offset after the last batch: the new log end offset.
    """
    if base_offset < 0:
        raise ValueError(f"base_offset {base_offset} is negative")
    if partition_leader_epoch is not None and not INT32_MIN <= partition_leader_epoch <= INT32_MAX:
        raise ValueError(f"partition_leader_epoch {partition_leader_epoch} is not an int32")
    # A bytearray (what the append path passes) is written through directly, without a view.
    view: bytearray | memoryview = buf if type(buf) is bytearray else as_byte_view(buf)
    if isinstance(view, memoryview) and view.readonly:
        raise TypeError("assign_offsets rewrites batches in place: pass a bytearray")
    end = len(view)
    unpack = _LENGTH_AND_LAST_DELTA.unpack_from
    pack_offset = _INT64.pack_into
    pos = 0
    offset = base_offset
    while pos < end:
        if end - pos < HEADER_SIZE:
            raise CorruptRecordError(
                f"batch at byte {pos}: incomplete: {end - pos} bytes remain, "
                f"a batch header needs {HEADER_SIZE}"
            )
        batch_length, last_delta = unpack(view, pos)
        batch_end = pos + LOG_OVERHEAD + batch_length
        if batch_length < MIN_BATCH_LENGTH or batch_end > end or last_delta < 0:
            raise CorruptRecordError(
                f"batch at byte {pos}: cannot assign offsets: batchLength {batch_length}, "
                f"lastOffsetDelta {last_delta}, {end - pos} bytes remain (validate first)"
            )
        if offset + last_delta > INT64_MAX:
            raise CorruptRecordError(f"batch at byte {pos}: offset {offset} overflows int64")
        pack_offset(view, pos, offset)
        if partition_leader_epoch is not None:
            _INT32.pack_into(view, pos + 12, partition_leader_epoch)
        offset += last_delta + 1
        pos = batch_end
    return offset
