"""Records inside a v2 batch: the ``Record`` value, its varint encoding, and batch decoding.

Invariant upheld: ``decode_records`` returns records only from a batch whose header is valid,
whose CRC matches (unless the caller opts out) and whose records section parses exactly: the
declared record count, every record's length, every key/value/header length, and no trailing
bytes. Any mismatch is a ``CorruptRecordError`` naming the batch, the record and the field.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.errors import CorruptRecordError
from logwright.records.compression import decompress
from logwright.records.header import (
    HEADER_SIZE,
    BatchHeader,
    ByteBuffer,
    as_byte_view,
    compute_crc,
)
from logwright.records.varint import (
    VarintError,
    decode_varint,
    decode_varlong,
)

Header = tuple[str, bytes | None]
"""A record header: a UTF-8 key and a value that may be null."""


@dataclass(frozen=True, slots=True)
class Record:
    """One record as a producer sends it and a consumer sees it.

    Its offset and timestamp deltas are not part of it: they are derived from its position in the
    batch and the batch's base timestamp when the batch is built.
    """

    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[Header, ...] = ()


def decode_records(
    buf: ByteBuffer, position: int = 0, verify_crc: bool = True
) -> list[tuple[int, Record]]:
    """Decode the batch at ``position`` into ``(absolute offset, record)`` pairs.

    Raises ``CorruptRecordError`` for a malformed or incomplete batch (naming the record and the
    field), and ``UnsupportedCodecError`` for snappy, lz4 and zstd batches.
    """
    view = as_byte_view(buf)
    header = BatchHeader.parse(view, position)
    end = position + header.size_bytes
    if end > len(view):
        raise CorruptRecordError(
            f"batch at byte {position}: incomplete: batchLength {header.batch_length} needs "
            f"{header.size_bytes} bytes, {len(view) - position} remain"
        )
    if verify_crc:
        computed = compute_crc(view, position, end)
        if computed != header.crc:
            raise CorruptRecordError(
                f"batch at byte {position}: crc: stored {header.crc:#010x}, "
                f"computed {computed:#010x}"
            )
    payload = view[position + HEADER_SIZE : end].tobytes()
    codec = header.compression_codec
    records = decompress(codec, payload, position)
    # Positions in messages are absolute for plain batches; in a compressed batch they can only
    # be positions in the decompressed records section.
    origin = position + HEADER_SIZE if codec == 0 else 0
    where = "" if codec == 0 else " of the decompressed records"
    return _decode_section(records, header, position, origin, where)


def _decode_section(
    data: bytes, header: BatchHeader, batch_position: int, origin: int, where: str
) -> list[tuple[int, Record]]:
    out: list[tuple[int, Record]] = []
    pos = 0
    field = "length"
    index = 0  # read by the error handlers below
    previous_delta = -1
    end = len(data)
    log_append_time = header.is_log_append_time
    try:
        for index in range(header.record_count):  # noqa: B007 (the handlers report it)
            field = "length"
            length, pos = decode_varint(data, pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise _FieldError(f"length {length} does not fit in the {end - pos} bytes left")
            # Parse within the record's own bytes so that a wrong length cannot borrow from the
            # next record.
            field = "attributes"
            if pos >= record_end:
                raise _FieldError("record ends before its attributes")
            pos += 1
            field = "timestampDelta"
            timestamp_delta, pos = decode_varlong(data, pos, record_end)
            field = "offsetDelta"
            offset_delta, pos = decode_varint(data, pos, record_end)
            if offset_delta <= previous_delta:
                raise _FieldError(
                    f"{offset_delta} does not increase (previous record: {previous_delta})"
                )
            if offset_delta > header.last_offset_delta:
                raise _FieldError(
                    f"{offset_delta} is above lastOffsetDelta {header.last_offset_delta}"
                )
            previous_delta = offset_delta
            field = "key"
            key, pos = _read_bytes(data, pos, record_end)
            field = "value"
            value, pos = _read_bytes(data, pos, record_end)
            field = "headers count"
            header_count, pos = decode_varint(data, pos, record_end)
            if header_count < 0:
                raise _FieldError(f"{header_count} is negative")
            headers: list[Header] = []
            for header_index in range(header_count):
                field = f"header {header_index} key"
                raw_key, pos = _read_bytes(data, pos, record_end)
                if raw_key is None:
                    raise _FieldError("header key is null")
                try:
                    header_key = raw_key.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise _FieldError(f"not UTF-8: {exc.reason}") from exc
                field = f"header {header_index} value"
                header_value, pos = _read_bytes(data, pos, record_end)
                headers.append((header_key, header_value))
            field = "length"
            if pos != record_end:
                used = pos - (record_end - length)
                raise _FieldError(f"record declares {length} bytes but its fields take {used}")
            timestamp = (
                header.max_timestamp if log_append_time else header.base_timestamp + timestamp_delta
            )
            out.append(
                (header.base_offset + offset_delta, Record(key, value, timestamp, tuple(headers)))
            )
    except VarintError as exc:
        raise CorruptRecordError(
            f"batch at byte {batch_position}: record {index}: {field}: {exc.reason} "
            f"at byte {origin + exc.position}{where}"
        ) from exc
    except _FieldError as exc:
        raise CorruptRecordError(
            f"batch at byte {batch_position}: record {index}: {field}: {exc} "
            f"(record ends near byte {origin + pos}{where})"
        ) from exc
    if pos != end:
        raise CorruptRecordError(
            f"batch at byte {batch_position}: recordCount {header.record_count} records end at "
            f"byte {origin + pos}{where} but {end - pos} more bytes follow"
        )
    return out


class _FieldError(ValueError):
    """A record field with an impossible value; wrapped with its record and batch position."""


def _read_bytes(data: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    length, pos = decode_varint(data, pos, end)
    if length == -1:
        return None, pos
    if length < -1 or pos + length > end:
        raise _FieldError(f"length {length} does not fit in the {end - pos} bytes left")
    return data[pos : pos + length], pos + length


def decode_batches(buf: bytes, verify_crc: bool = True) -> list[tuple[int, Record]]:
    """Every record of every complete batch in ``buf``, as (absolute offset, record).

    For consumers, tools and tests (a fetch answer holds several batches); an incomplete last
    batch, as a size-limited fetch may end with, is left out.
    """
    from logwright.records.scan import iter_batches

    out: list[tuple[int, Record]] = []
    for position, _ in iter_batches(buf, verify_crc=verify_crc):
        out.extend(decode_records(buf, position, verify_crc=verify_crc))
    return out
