"""Building v2 record batches, as a producer (or a test) would.

Invariant upheld: every batch built here is one that ``validate_batches`` accepts and
``decode_records`` returns unchanged: header fields within their wire ranges, offset deltas
0..n-1, lastOffsetDelta = n-1, baseTimestamp = the first record's timestamp, maxTimestamp = the
largest, and a CRC-32C over attributes..end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypeAlias, cast

import crc32c

from logwright.records.compression import compress
from logwright.records.header import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER_SIZE,
    HEADER_STRUCT,
    INT16_MAX,
    INT16_MIN,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_ID,
)
from logwright.records.record import Record
from logwright.records.varint import encode_varint, encode_varlong

_SMALL: Final = 1 << 12
"""Zigzag values below this have their varint bytes precomputed (at most two bytes each)."""
_UNSIGNED: Final[tuple[bytes, ...]] = tuple(
    bytes((u,)) if u < 0x80 else bytes(((u & 0x7F) | 0x80, u >> 7)) for u in range(_SMALL)
)
"""``_UNSIGNED[u]``: the varint bytes of the unsigned (already zigzagged) value ``u``."""
_NULL: Final = b"\x01"  # the varint -1 that stands for a null key, value or header value
_ZERO: Final = b"\x00"
_NULL_THEN_NO_HEADERS: Final = b"\x01\x00"
_HEADS: Final[tuple[bytes, ...]] = tuple(
    b"\x00\x00" + _UNSIGNED[i << 1] for i in range(_SMALL >> 1)
)
"""``_HEADS[i]``: a record's attributes (0), timestamp delta 0 and offset delta ``i``."""


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ValueError(f"{name} {value} is outside [{low}, {high}]")


def _length(n: int) -> bytes:
    """``n`` (a length or count, >= 0) as a zigzag varint: ``encode_varint(n)``, from the
    table when small. Past the int32 range it raises encode_varint's ValueError."""
    return _UNSIGNED[n << 1] if n < _SMALL >> 1 else encode_varint(n)


def _append_field(parts: list[bytes], data: bytes | None) -> int:
    """Append a length-prefixed nullable byte string to ``parts``; return its encoded size."""
    if data is None:
        parts.append(_NULL)
        return 1
    prefix = _length(len(data))
    parts.append(prefix)
    parts.append(data)
    return len(prefix) + len(data)


def _records_section(records: Sequence[Record], base_timestamp: int) -> tuple[bytes, int]:
    """The plain records section of ``records`` and their largest timestamp.

    Byte-for-byte the v2 record encoding, one length-prefixed record after another (each
    record's offset delta is its index; its timestamp delta is relative to
    ``base_timestamp``), with the same ValueErrors for the same record: the varints come from
    a table for small values, and each record is a handful of byte strings joined once for the
    whole section, not a bytearray grown one byte at a time.
    """
    parts: list[bytes] = []
    append = parts.append
    unsigned = _UNSIGNED
    small = _SMALL
    half = _SMALL >> 1
    max_timestamp = base_timestamp
    for index, record in enumerate(records):
        timestamp_ms = record.timestamp_ms
        timestamp_delta = timestamp_ms - base_timestamp
        # Producers send real times or -1 (no timestamp).
        if not -1 <= timestamp_ms <= INT64_MAX:
            _check_range(f"record {index}: timestamp_ms", timestamp_ms, -1, INT64_MAX)
        if not INT64_MIN <= timestamp_delta <= INT64_MAX:
            _check_range(f"record {index}: timestamp delta", timestamp_delta, INT64_MIN,
                         INT64_MAX)
        if timestamp_ms > max_timestamp:
            max_timestamp = timestamp_ms
        # Zigzag: 0, -1, 1, -2 -> 0, 1, 2, 3 (no mask needed: the delta is an int64 here).
        zigzag = (timestamp_delta << 1) ^ (timestamp_delta >> 63)
        timestamp_bytes = unsigned[zigzag] if zigzag < small else encode_varlong(timestamp_delta)
        offset_bytes = unsigned[index << 1] if index < half else encode_varint(index)
        # The record's length prefix comes first but counts what follows: leave it a slot.
        slot = len(parts)
        append(_ZERO)  # the length, filled in below
        append(_ZERO)  # record attributes: unused by Kafka, always 0
        append(timestamp_bytes)
        append(offset_bytes)
        size = 1 + len(timestamp_bytes) + len(offset_bytes)
        key = record.key
        if key is None:
            append(_NULL)
            size += 1
        else:
            size += _append_field(parts, key)
        value = record.value
        if value is None:
            append(_NULL)
            size += 1
        else:
            n = len(value)
            prefix = unsigned[n << 1] if n < half else encode_varint(n)
            append(prefix)
            append(value)
            size += len(prefix) + n
        headers = record.headers
        if headers:
            count = _length(len(headers))
            append(count)
            size += len(count)
            for header_key, header_value in headers:
                size += _append_field(parts, header_key.encode("utf-8"))
                size += _append_field(parts, header_value)
        else:
            append(_ZERO)
            size += 1
        parts[slot] = unsigned[size << 1] if size < half else encode_varint(size)
    return b"".join(parts), max_timestamp


def _check_fields(
    record_count: int,
    base_offset: int,
    partition_leader_epoch: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    attributes: int,
) -> None:
    if not record_count:
        raise ValueError("a batch needs at least one record")
    _check_range("base_offset", base_offset, 0, INT64_MAX - (record_count - 1))
    _check_range("partition_leader_epoch", partition_leader_epoch, INT32_MIN, INT32_MAX)
    _check_range("producer_id", producer_id, INT64_MIN, INT64_MAX)
    _check_range("producer_epoch", producer_epoch, INT16_MIN, INT16_MAX)
    _check_range("base_sequence", base_sequence, INT32_MIN, INT32_MAX)
    _check_range("attributes", attributes, INT16_MIN, INT16_MAX)
    _check_range("record count", record_count, 1, INT32_MAX)


def _finish(
    section: bytes,
    record_count: int,
    base_timestamp: int,
    max_timestamp: int,
    base_offset: int,
    partition_leader_epoch: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    attributes: int,
) -> bytes:
    """The batch: header, then ``section`` compressed as ``attributes`` say, CRC filled in."""
    payload = compress(attributes & 0x07, section)
    batch_length = MIN_BATCH_LENGTH + len(payload)
    _check_range("batch length", batch_length, MIN_BATCH_LENGTH, INT32_MAX)
    header = bytearray(HEADER_SIZE)
    HEADER_STRUCT.pack_into(
        header,
        0,
        base_offset,
        batch_length,
        partition_leader_epoch,
        MAGIC_V2,
        0,  # the CRC, filled in once the bytes it covers are known
        attributes,
        record_count - 1,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    )
    # The CRC covers attributes..end: the header's tail, then the payload.
    crc = crc32c.crc32c(payload, crc32c.crc32c(memoryview(header)[ATTRIBUTES_OFFSET:]))
    header[CRC_OFFSET : CRC_OFFSET + 4] = int(crc).to_bytes(4, "big")
    return bytes(header) + payload


def build_batch(
    records: Sequence[Record],
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    attributes: int = 0,
) -> bytes:
    """One v2 batch holding ``records`` at offsets ``base_offset``, ``base_offset + 1``, ...

    ``attributes`` is stored as given; its codec bits choose the compression (none or gzip).
    Raises ``ValueError`` for an empty batch, a timestamp below -1 (no timestamp), or a field
    outside its wire range.
    """
    _check_fields(len(records), base_offset, partition_leader_epoch, producer_id, producer_epoch,
                  base_sequence, attributes)
    base_timestamp = records[0].timestamp_ms
    section, max_timestamp = _records_section(records, base_timestamp)
    return _finish(section, len(records), base_timestamp, max_timestamp, base_offset,
                   partition_leader_epoch, producer_id, producer_epoch, base_sequence, attributes)


_KEYLESS_HEADS: Final[tuple[bytes, ...]] = tuple(head + _NULL for head in _HEADS)
"""``_KEYLESS_HEADS[i]``: ``_HEADS[i]`` and then a null key."""
_KEYLESS_HEAD_LENGTHS: Final[tuple[int, ...]] = tuple(map(len, _KEYLESS_HEADS))
_PREFIX_LENGTHS: Final[tuple[int, ...]] = tuple(len(_UNSIGNED[n << 1]) for n in range(_SMALL >> 1))
"""``_PREFIX_LENGTHS[n]``: how many bytes the varint length of an ``n``-byte value takes."""
_KEYLESS_LIMIT: Final = (_SMALL >> 1) - 16
"""Values shorter than this have a record size below ``_SMALL >> 1`` (its varint precomputed)."""
_LENGTH_PREFIXES: Final[tuple[bytes, ...]] = _UNSIGNED[0::2]
"""``_LENGTH_PREFIXES[n]``: the varint of the length ``n`` (``_UNSIGNED[n << 1]``)."""
_VALUE_PART_LENGTHS: Final[tuple[int, ...]] = tuple(
    _PREFIX_LENGTHS[n] + n + 1 for n in range(_KEYLESS_LIMIT))
"""``_VALUE_PART_LENGTHS[n]``: the bytes an ``n``-byte value adds to its record's size: its
length prefix, itself and the header count 0 after it."""
_ZERO_THEN_SIZE: Final[tuple[bytes, ...]] = tuple(_ZERO + _UNSIGNED[size << 1]
                                                  for size in range(_SMALL >> 1))
"""``_ZERO_THEN_SIZE[size]``: the header count 0 ending the record before, then the varint of
the record ``size``."""


def _keyless_section(values: Sequence[BytesLike | None]) -> bytes | None:
    """``_uniform_section(None, values)`` for a batch of fewer than ``_SMALL >> 1`` keyless
    records whose values are all ``bytes`` shorter than ``_KEYLESS_LIMIT``, built a whole
    column at a time (lengths, sizes, then each column of fields); None for any other batch.

    Each record is its size, its head (attributes, timestamp delta 0, offset delta, null key),
    its value's length, the value and the header count 0. The header count of one record is
    joined to the size of the next, so the section is one join over four columns."""
    count = len(values)
    if count >= _SMALL >> 1 or set(map(type, values)) != _JUST_BYTES:
        return None
    present = cast("Sequence[bytes]", values)  # all bytes: checked just now
    lengths = list(map(len, present))
    if max(lengths) >= _KEYLESS_LIMIT:
        return None
    # Each record's size is its head's length plus what its value adds (one table lookup per
    # value length); each column is one comprehension or slice, filled in place.
    sized, head_lengths, value_parts, prefixes = (_ZERO_THEN_SIZE, _KEYLESS_HEAD_LENGTHS,
                                                  _VALUE_PART_LENGTHS, _LENGTH_PREFIXES)
    parts: list[bytes] = [_ZERO] * (4 * count)
    parts[0::4] = [sized[h + value_parts[n]]
                   for h, n in zip(head_lengths, lengths, strict=False)]  # heads: the longer
    parts[0] = parts[0][1:]  # no record before the first one: no header count to end
    parts[1::4] = _KEYLESS_HEADS[:count]
    parts[2::4] = [prefixes[n] for n in lengths]
    parts[3::4] = present
    parts.append(_ZERO)  # the last record's header count
    return b"".join(parts)


_JUST_BYTES: Final = {bytes}

BytesLike: TypeAlias = bytes | bytearray | memoryview
"""What ``build_simple_batch`` takes as a key or a value besides None: the bytes-like objects
it joins as they are (the annotation said ``bytes``, which compiled code then enforced)."""


def _uniform_section(keys: Sequence[BytesLike | None] | None,
                     values: Sequence[BytesLike | None]) -> bytes:
    """The plain records section of header-less records that share one timestamp (so every
    timestamp delta is 0): what ``_records_section`` makes of them, with fewer steps."""
    if keys is None and values:
        section = _keyless_section(values)
        if section is not None:
            return section
    parts: list[BytesLike] = []  # the values as given (bytearray and memoryview too)
    extend = parts.extend
    unsigned = _UNSIGNED
    heads = _HEADS
    half = _SMALL >> 1
    for index, value in enumerate(values):
        # attributes 0, timestamp delta 0, the offset delta, then the key
        head = heads[index] if index < half else _ZERO + _ZERO + encode_varint(index)
        key = None if keys is None else keys[index]
        if key is None:
            head += _NULL
        else:
            n = len(key)
            head += (unsigned[n << 1] if n < half else encode_varint(n)) + key
        if value is None:
            size = len(head) + 2  # the null value and the header count
            extend((unsigned[size << 1] if size < half else encode_varint(size), head,
                    _NULL_THEN_NO_HEADERS))
        else:
            n = len(value)
            prefix = unsigned[n << 1] if n < half else encode_varint(n)
            size = len(head) + len(prefix) + n + 1  # + the header count
            extend((unsigned[size << 1] if size < half else encode_varint(size), head, prefix,
                    value, _ZERO))  # _ZERO: no headers
    return b"".join(parts)


def build_simple_batch(
    values: Sequence[BytesLike | None],
    timestamp_ms: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    attributes: int = 0,
    keys: Sequence[BytesLike | None] | None = None,
) -> bytes:
    """A batch of header-less records with the given values, all at ``timestamp_ms``: keyless,
    or with ``keys`` (as many as ``values``) when given.

    The bytes (and the ValueErrors) of ``build_batch([Record(key, value, timestamp_ms) ...])``,
    built without making the ``Record`` objects.
    """
    if keys is not None and len(keys) != len(values):
        raise ValueError(f"{len(keys)} keys for {len(values)} values")
    _check_fields(len(values), base_offset, partition_leader_epoch, producer_id, producer_epoch,
                  base_sequence, attributes)
    # As build_batch checks each record's timestamp; they are all the first one's.
    _check_range("record 0: timestamp_ms", timestamp_ms, -1, INT64_MAX)
    return _finish(_uniform_section(keys, values), len(values), timestamp_ms, timestamp_ms,
                   base_offset, partition_leader_epoch, producer_id, producer_epoch,
                   base_sequence, attributes)
