"""Compression of the records section of a batch (attribute bits 0-2).

Invariant upheld: the codec never guesses. Records are decoded only for codecs it implements
(none, and gzip through the standard library's zlib); any other codec is an
``UnsupportedCodecError`` naming it, while header operations (offsets, CRC, scanning) keep working
because they never look inside the records section. Decompression is bounded so that a small
malicious batch cannot expand without limit.
"""

from __future__ import annotations

import gzip
import zlib
from typing import Final

from logwright.errors import CorruptRecordError, Errors, KafkaError
from logwright.records.header import CompressionCodec

MAX_DECOMPRESSED_BYTES: Final = 256 * 1024 * 1024
"""Upper bound on one batch's decompressed records (Kafka's own message.max.bytes is ~1 MiB)."""

_GZIP_WBITS: Final = 16 + zlib.MAX_WBITS


class UnsupportedCodecError(KafkaError):
    """The batch is well formed but compressed with a codec this codec cannot decode."""

    def __init__(self, codec: int, position: int) -> None:
        self.codec = codec
        self.position = position
        name = CompressionCodec(codec).name.lower()
        super().__init__(
            Errors.UNSUPPORTED_COMPRESSION_TYPE,
            f"batch at byte {position}: compression codec {codec} ({name}) is not supported; "
            "only none (0) and gzip (1) records can be decoded"
        )


_NO_CODEC: Final = CompressionCodec.NONE  # read per batch: a global, not an enum lookup


def compress(codec: int, records: bytes) -> bytes:
    """The records section for ``codec``; gzip output is deterministic (mtime 0)."""
    if codec == _NO_CODEC:
        return records
    if codec == CompressionCodec.GZIP:
        return gzip.compress(records, mtime=0)
    raise ValueError(f"cannot build batches with compression codec {codec}: only none and gzip")


def decompress(codec: int, payload: bytes, position: int) -> bytes:
    """The plain records section of the batch at ``position`` whose records are ``payload``."""
    if codec == CompressionCodec.NONE:
        return payload
    if codec == CompressionCodec.GZIP:
        return _gunzip(payload, position)
    if codec in (CompressionCodec.SNAPPY, CompressionCodec.LZ4, CompressionCodec.ZSTD):
        raise UnsupportedCodecError(codec, position)
    raise CorruptRecordError(
        f"batch at byte {position}: attributes: compression codec {codec} is not defined (0-4)"
    )


def _gunzip(payload: bytes, position: int) -> bytes:
    # A gzip stream may hold several members one after the other; each needs its own decompressor.
    out = bytearray()
    data = payload
    try:
        while data:
            decompressor = zlib.decompressobj(_GZIP_WBITS)
            out += decompressor.decompress(data, MAX_DECOMPRESSED_BYTES - len(out) + 1)
            if len(out) > MAX_DECOMPRESSED_BYTES:
                raise CorruptRecordError(
                    f"batch at byte {position}: gzip records expand beyond "
                    f"{MAX_DECOMPRESSED_BYTES} bytes"
                )
            if not decompressor.eof:
                raise CorruptRecordError(f"batch at byte {position}: gzip records are truncated")
            data = decompressor.unused_data
    except zlib.error as exc:
        raise CorruptRecordError(f"batch at byte {position}: gzip records: {exc}") from exc
    return bytes(out)
