"""The Kafka magic v2 RecordBatch codec: layer 1 of logwright (see docs/records.md).

Invariant upheld by the package as a whole: bytes become batches only after their structure and
CRC-32C are checked, and the only in-place change the broker makes to a stored batch (baseOffset,
partitionLeaderEpoch) lies outside the CRC, so it never invalidates one.
"""

from logwright.records.build import build_batch, build_simple_batch
from logwright.records.compression import UnsupportedCodecError
from logwright.records.header import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    BatchHeader,
    ByteBuffer,
    CompressionCodec,
)
from logwright.records.record import Record, decode_batches, decode_records
from logwright.records.scan import (
    ScanResult,
    ScanStop,
    ValidationSummary,
    assign_offsets,
    assign_one_batch,
    iter_batches,
    scan_valid_prefix,
    validate_batches,
)

__all__ = [
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "MIN_BATCH_LENGTH",
    "BatchHeader",
    "ByteBuffer",
    "CompressionCodec",
    "Record",
    "ScanResult",
    "ScanStop",
    "UnsupportedCodecError",
    "ValidationSummary",
    "assign_offsets",
    "assign_one_batch",
    "build_batch",
    "build_simple_batch",
    "decode_batches",
    "decode_records",
    "iter_batches",
    "scan_valid_prefix",
    "validate_batches",
]
