"""Building v2 record batches, as a producer (or a test) would.

Invariant upheld: every batch built here is one that ``validate_batches`` accepts and
``decode_records`` returns unchanged: header fields within their wire ranges, offset deltas
0..n-1, lastOffsetDelta = n-1, baseTimestamp = the first record's timestamp, maxTimestamp = the
largest, and a CRC-32C over attributes..end.
"""

from __future__ import annotations

from collections.abc import Sequence

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
from logwright.records.record import Record, append_record


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ValueError(f"{name} {value} is outside [{low}, {high}]")


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
    if not records:
        raise ValueError("a batch needs at least one record")
    _check_range("base_offset", base_offset, 0, INT64_MAX - (len(records) - 1))
    _check_range("partition_leader_epoch", partition_leader_epoch, INT32_MIN, INT32_MAX)
    _check_range("producer_id", producer_id, INT64_MIN, INT64_MAX)
    _check_range("producer_epoch", producer_epoch, INT16_MIN, INT16_MAX)
    _check_range("base_sequence", base_sequence, INT32_MIN, INT32_MAX)
    _check_range("attributes", attributes, INT16_MIN, INT16_MAX)
    _check_range("record count", len(records), 1, INT32_MAX)
    base_timestamp = records[0].timestamp_ms
    max_timestamp = base_timestamp
    section = bytearray()
    for index, record in enumerate(records):
        offset_delta = index
        timestamp_delta = record.timestamp_ms - base_timestamp
        # Producers send real times or -1 (no timestamp).
        _check_range(f"record {index}: timestamp_ms", record.timestamp_ms, -1, INT64_MAX)
        _check_range(f"record {index}: timestamp delta", timestamp_delta, INT64_MIN, INT64_MAX)
        max_timestamp = max(max_timestamp, record.timestamp_ms)
        append_record(section, record, offset_delta, timestamp_delta)
    payload = compress(attributes & 0x07, bytes(section))
    batch_length = MIN_BATCH_LENGTH + len(payload)
    _check_range("batch length", batch_length, MIN_BATCH_LENGTH, INT32_MAX)
    out = bytearray(HEADER_SIZE)
    HEADER_STRUCT.pack_into(
        out,
        0,
        base_offset,
        batch_length,
        partition_leader_epoch,
        MAGIC_V2,
        0,  # the CRC, filled in once the bytes it covers are final
        attributes,
        len(records) - 1,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    out += payload
    crc = crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:])
    out[CRC_OFFSET : CRC_OFFSET + 4] = int(crc).to_bytes(4, "big")
    return bytes(out)


def build_simple_batch(
    values: Sequence[bytes | None],
    timestamp_ms: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    attributes: int = 0,
) -> bytes:
    """A batch of keyless, header-less records with the given values, all at ``timestamp_ms``."""
    return build_batch(
        [Record(None, value, timestamp_ms) for value in values],
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        attributes=attributes,
    )
