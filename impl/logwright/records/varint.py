"""Zigzag varints, as the v2 record format uses them for every per-record field.

Invariant upheld: a decoder never reads past the end of its buffer, never accepts an encoding
longer than the type allows (5 bytes for an int32 varint, 10 for an int64 varlong), and never
returns a value outside the type's range. Every such case is a ``VarintError`` that names the byte
where the malformed varint starts, so the record decoder can report it precisely.
"""

from __future__ import annotations

from typing import Final

MAX_VARINT_BYTES: Final = 5
MAX_VARLONG_BYTES: Final = 10

_INT32_MIN: Final = -(1 << 31)
_INT32_MAX: Final = (1 << 31) - 1
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1


class VarintError(ValueError):
    """A malformed varint; ``position`` is the index of its first byte in the decoded buffer."""

    def __init__(self, reason: str, position: int) -> None:
        self.reason = reason
        self.position = position
        super().__init__(f"{reason} (varint at byte {position})")


def _append_unsigned(out: bytearray, unsigned: int) -> None:
    while unsigned >= 0x80:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)


def append_varint(out: bytearray, value: int) -> None:
    """Append ``value`` (an int32) to ``out`` as a zigzag varint."""
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"varint value {value} is outside the int32 range")
    # Zigzag maps small magnitudes of either sign to small unsigned numbers: 0,-1,1,-2 -> 0,1,2,3.
    _append_unsigned(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def append_varlong(out: bytearray, value: int) -> None:
    """Append ``value`` (an int64) to ``out`` as a zigzag varlong."""
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"varlong value {value} is outside the int64 range")
    _append_unsigned(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def encode_varint(value: int) -> bytes:
    """``value`` (an int32) as a zigzag varint."""
    out = bytearray()
    append_varint(out, value)
    return bytes(out)


def encode_varlong(value: int) -> bytes:
    """``value`` (an int64) as a zigzag varlong."""
    out = bytearray()
    append_varlong(out, value)
    return bytes(out)


def size_of_varint(value: int) -> int:
    """How many bytes ``append_varint``/``append_varlong`` write for ``value``."""
    unsigned = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    size = 1
    while unsigned >= 0x80:
        unsigned >>= 7
        size += 1
    return size


def _read_unsigned(buf: bytes, position: int, end: int, max_bytes: int) -> tuple[int, int]:
    unsigned = 0
    shift = 0
    pos = position
    for _ in range(max_bytes):
        if pos >= end:
            raise VarintError(f"buffer ends inside a varint after {pos - position} bytes", position)
        byte = buf[pos]
        pos += 1
        unsigned |= (byte & 0x7F) << shift
        if byte < 0x80:
            return unsigned, pos
        shift += 7
    raise VarintError(f"varint longer than {max_bytes} bytes", position)


def decode_varint(buf: bytes, position: int, end: int | None = None) -> tuple[int, int]:
    """Decode a zigzag int32 varint at ``position``; return ``(value, position after it)``.

    Bytes at or after ``end`` (default: the end of ``buf``) are never read.
    """
    limit = len(buf) if end is None else end
    first = buf[position] if position < limit else 0x80
    if first < 0x80:
        # One-byte fast path: most lengths, deltas and counts in real batches are below 64.
        return (first >> 1) ^ -(first & 1), position + 1
    unsigned, after = _read_unsigned(buf, position, limit, MAX_VARINT_BYTES)
    if unsigned > 0xFFFFFFFF:
        raise VarintError(f"varint value {unsigned:#x} does not fit in 32 bits", position)
    return (unsigned >> 1) ^ -(unsigned & 1), after


def decode_varlong(buf: bytes, position: int, end: int | None = None) -> tuple[int, int]:
    """Decode a zigzag int64 varlong at ``position``; return ``(value, position after it)``.

    Bytes at or after ``end`` (default: the end of ``buf``) are never read.
    """
    limit = len(buf) if end is None else end
    first = buf[position] if position < limit else 0x80
    if first < 0x80:
        return (first >> 1) ^ -(first & 1), position + 1
    unsigned, after = _read_unsigned(buf, position, limit, MAX_VARLONG_BYTES)
    if unsigned > 0xFFFFFFFFFFFFFFFF:
        raise VarintError(f"varlong value {unsigned:#x} does not fit in 64 bits", position)
    return (unsigned >> 1) ^ -(unsigned & 1), after
