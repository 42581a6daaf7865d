"""The 61-byte header of a magic v2 record batch: layout, parsing and the CRC it carries.

Invariant upheld: a ``BatchHeader`` only exists for bytes whose magic is 2 and whose lengths,
offset delta and record count are self-consistent; anything else is a ``CorruptRecordError`` that
names the field and its absolute byte position. The CRC-32C covers the bytes from ``attributes`` to
the end of the batch, so ``baseOffset``, ``batchLength`` and ``partitionLeaderEpoch`` lie outside
it: the broker can assign offsets and leader epochs in place without recomputing it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

import crc32c

from logwright.errors import CorruptRecordError

ByteBuffer = bytes | bytearray | memoryview
"""Anything the codec reads batches from without copying."""

# Field layout, big-endian: baseOffset q, batchLength i, partitionLeaderEpoch i, magic b, crc I,
# attributes h, lastOffsetDelta i, baseTimestamp q, maxTimestamp q, producerId q,
# producerEpoch h, baseSequence i, recordCount i.
HEADER_STRUCT: Final = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE: Final = 61
assert HEADER_STRUCT.size == HEADER_SIZE

BASE_OFFSET_OFFSET: Final = 0
BATCH_LENGTH_OFFSET: Final = 8
PARTITION_LEADER_EPOCH_OFFSET: Final = 12
MAGIC_OFFSET: Final = 16
CRC_OFFSET: Final = 17
ATTRIBUTES_OFFSET: Final = 21
LAST_OFFSET_DELTA_OFFSET: Final = 23
BASE_TIMESTAMP_OFFSET: Final = 27
MAX_TIMESTAMP_OFFSET: Final = 35
PRODUCER_ID_OFFSET: Final = 43
PRODUCER_EPOCH_OFFSET: Final = 51
BASE_SEQUENCE_OFFSET: Final = 53
RECORD_COUNT_OFFSET: Final = 57

LOG_OVERHEAD: Final = 12
"""Bytes before the part that ``batchLength`` counts: baseOffset (8) and batchLength (4)."""
MIN_BATCH_LENGTH: Final = HEADER_SIZE - LOG_OVERHEAD
"""49: a batch with no records is all header."""
MAGIC_V2: Final = 2

COMPRESSION_CODEC_MASK: Final = 0x07
TIMESTAMP_TYPE_MASK: Final = 0x08
TRANSACTIONAL_MASK: Final = 0x10
CONTROL_MASK: Final = 0x20

NO_TIMESTAMP: Final = -1
NO_PRODUCER_ID: Final = -1
NO_PARTITION_LEADER_EPOCH: Final = -1

INT16_MIN: Final = -(1 << 15)
INT16_MAX: Final = (1 << 15) - 1
INT32_MIN: Final = -(1 << 31)
INT32_MAX: Final = (1 << 31) - 1
INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1


class CompressionCodec(IntEnum):
    """Attribute bits 0-2. Only NONE and GZIP records can be decoded here."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def as_byte_view(buf: ByteBuffer) -> memoryview:
    """A flat unsigned-byte view of ``buf``; slicing it copies nothing."""
    view = memoryview(buf)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def compute_crc(view: memoryview, position: int, end: int) -> int:
    """CRC-32C of the batch at ``position`` ending at ``end``: from attributes to the end."""
    return int(crc32c.crc32c(view[position + ATTRIBUTES_OFFSET : end]))


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The header fields of one v2 record batch, exactly as stored."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def last_offset(self) -> int:
        """Offset of the last record the batch was written with (compaction may drop records)."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """The offset right after this batch: where the next batch in the log must start."""
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size_bytes(self) -> int:
        """Bytes the whole batch occupies in a log segment, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def compression_codec(self) -> int:
        """Attribute bits 0-2 (see ``CompressionCodec``; 5-7 are not defined by Kafka)."""
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def is_log_append_time(self) -> bool:
        """True if the broker stamped the batch: every record's timestamp is ``max_timestamp``."""
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        """True if the batch belongs to a transaction."""
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        """True for a control batch (transaction markers), written by the broker itself."""
        return bool(self.attributes & CONTROL_MASK)

    @classmethod
    def parse(cls, buf: ByteBuffer, position: int = 0) -> BatchHeader:
        """Read and check the header at ``position``.

        Only the 61 header bytes are needed; the records after them are not looked at, and the
        CRC is not verified (that needs the whole batch: see ``verify_crc``).
        Raises ``CorruptRecordError`` naming the field and its byte position.
        """
        if position < 0:
            raise ValueError(f"position {position} is negative")
        available = len(buf) - position
        if available < HEADER_SIZE:
            raise CorruptRecordError(
                f"short batch header at byte {position}: {max(available, 0)} bytes available, "
                f"{HEADER_SIZE} needed"
            )
        header = cls(*HEADER_STRUCT.unpack_from(buf, position))
        problem = header.problem()
        if problem is not None:
            field, detail = problem
            raise CorruptRecordError(
                f"batch at byte {position}: {field} at byte {position + _FIELD_OFFSETS[field]}: "
                f"{detail}"
            )
        return header

    def problem(self) -> tuple[str, str] | None:
        """The first field whose value no valid v2 batch can hold, as (Kafka field name, why)."""
        if self.magic != MAGIC_V2:
            return "magic", f"expected {MAGIC_V2}, found {self.magic}"
        if self.batch_length < MIN_BATCH_LENGTH:
            return "batchLength", f"{self.batch_length} is below the minimum {MIN_BATCH_LENGTH}"
        if self.last_offset_delta < 0:
            return "lastOffsetDelta", f"{self.last_offset_delta} is negative"
        if self.record_count < 0:
            return "recordCount", f"{self.record_count} is negative"
        if self.record_count > self.last_offset_delta + 1:
            return (
                "recordCount",
                f"{self.record_count} records cannot fit in the "
                f"{self.last_offset_delta + 1} offsets of lastOffsetDelta {self.last_offset_delta}",
            )
        return None


_FIELD_OFFSETS: Final = {
    "baseOffset": BASE_OFFSET_OFFSET,
    "batchLength": BATCH_LENGTH_OFFSET,
    "partitionLeaderEpoch": PARTITION_LEADER_EPOCH_OFFSET,
    "magic": MAGIC_OFFSET,
    "crc": CRC_OFFSET,
    "attributes": ATTRIBUTES_OFFSET,
    "lastOffsetDelta": LAST_OFFSET_DELTA_OFFSET,
    "baseTimestamp": BASE_TIMESTAMP_OFFSET,
    "maxTimestamp": MAX_TIMESTAMP_OFFSET,
    "producerId": PRODUCER_ID_OFFSET,
    "producerEpoch": PRODUCER_EPOCH_OFFSET,
    "baseSequence": BASE_SEQUENCE_OFFSET,
    "recordCount": RECORD_COUNT_OFFSET,
}


def field_position(field: str, batch_position: int) -> int:
    """Absolute byte position of the Kafka-named header ``field`` of the batch at a position."""
    return batch_position + _FIELD_OFFSETS[field]
