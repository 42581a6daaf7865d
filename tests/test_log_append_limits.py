"""A produced batch may be exactly as large as max.message.bytes and segment.bytes allow.

Kafka refuses a batch *larger* than max.message.bytes (MESSAGE_TOO_LARGE) or than segment.bytes
(RECORD_BATCH_TOO_LARGE); one of exactly that size is appended, alone or among others in one
request, and one byte more refuses the whole request (nothing appended). A follower's restart
from the leader's log start offset may be at exactly its own start offset; below is refused.
"""

from __future__ import annotations

import pytest

from logwright.errors import MessageTooLarge, OffsetOutOfRange, RecordBatchTooLarge
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from tests.storage_helpers import TP, world

OVERHEAD = len(build_simple_batch([b""], 1))  # a one-record batch's size less its value


def sized(size: int) -> bytes:
    """A one-record batch of exactly ``size`` bytes (the record's varint lengths grow with it)."""
    for value in range(size - OVERHEAD, size - OVERHEAD - 8, -1):
        data = build_simple_batch([b"x" * value], 1_000_000)
        if len(data) == size:
            return data
    raise AssertionError(f"no one-record batch of {size} bytes")


def new(config: LogConfig) -> PartitionLog:
    fs, clock = world()
    return PartitionLog.create(fs, "/d1/t-0", TP, config, clock)


@pytest.mark.parametrize("limit", [100, 300, 1000])
@pytest.mark.parametrize("others", [0, 1, 3])
def test_a_batch_of_exactly_max_message_bytes_is_appended(limit: int, others: int) -> None:
    log = new(LogConfig(max_message_bytes=limit, segment_bytes=100_000))
    request = b"".join([sized(limit)] + [sized(80)] * others)
    info = log.append_as_leader(request)
    assert log.log_end_offset == 1 + others and info is not None
    with pytest.raises(MessageTooLarge):
        log.append_as_leader(b"".join([sized(80)] * others + [sized(limit + 1)]))
    assert log.log_end_offset == 1 + others, "nothing of a refused request is appended"


@pytest.mark.parametrize("limit", [200, 500])
@pytest.mark.parametrize("others", [0, 2])
def test_a_batch_of_exactly_segment_bytes_is_appended(limit: int, others: int) -> None:
    log = new(LogConfig(max_message_bytes=100_000, segment_bytes=limit))
    log.append_as_leader(b"".join([sized(80)] * others + [sized(limit)]))
    assert log.log_end_offset == 1 + others
    with pytest.raises(RecordBatchTooLarge):
        log.append_as_leader(b"".join([sized(limit + 1)] + [sized(80)] * others))
    assert log.log_end_offset == 1 + others


@pytest.mark.parametrize("start", [0, 3, 7])
def test_a_restart_at_exactly_the_log_start_offset_is_allowed(start: int) -> None:
    log = new(LogConfig())
    for _ in range(8):
        log.append_as_leader(sized(80))
    log.update_high_watermark(8)
    log.increment_log_start_offset(start)
    log.truncate_fully_and_start_at(start)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (start,) * 3
    if start:
        with pytest.raises(OffsetOutOfRange):
            log.truncate_fully_and_start_at(start - 1)
    log.truncate_fully_and_start_at(start + 5)
    assert (log.log_start_offset, log.log_end_offset) == (start + 5, start + 5)
