"""The leader's shortcut for a produce request of one batch decides exactly as the general path.

``assign_one_batch`` is ``validate_batches`` then ``assign_offsets`` for input that is one
batch: on random input (valid batches of any size, compressed, idempotent or transactional, and
the same with a flipped byte, a field rewritten and resealed, cut short, extended, or several
batches together), at random base offsets and leader epochs (some out of range), it either gives
what the two would (the same bytes, last offset and summary), or steps aside (None) for input
the general functions answer or refuse themselves; it never steps aside from a valid single
batch they accept.

``PartitionLog.append_as_leader`` with the shortcut and without it (``assign_one_batch``
patched to step aside every time) leave the same answers, the same errors, the same files byte
for byte and the same leader epoch cache after the same random requests, on small segments and
indexes so that index entries, time index entries and rolls (by size, by segment.ms, by a full
index) all happen.
"""

from __future__ import annotations

import struct
from unittest import mock

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logwright.errors import CorruptRecordError, LogwrightError
from logwright.records import (
    CompressionCodec,
    Record,
    ValidationSummary,
    assign_offsets,
    assign_one_batch,
    build_batch,
    validate_batches,
)
from logwright.storage import log as log_module
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.world import SimFileSystem, VirtualClock
from tests.storage_helpers import TP

# --- batches: built by the codec, then damaged with struct + crc32c only --------------------------

record_st = st.builds(
    Record,
    key=st.none() | st.binary(max_size=20),
    # Small values, and large ones (batches over the log tests' size limits).
    value=st.none() | st.binary(max_size=40) | st.integers(0, 1500).map(lambda n: b"v" * n),
    timestamp_ms=st.integers(-1, 2**45),
)


@st.composite
def batch_st(draw: st.DrawFn) -> bytes:
    """A valid batch: plain or gzip, with or without a producer id (idempotent,
    transactional), any leader epoch and base offset, and a log-append-time flag at random."""
    records = draw(st.lists(record_st, min_size=1, max_size=6))
    codec = draw(st.sampled_from([CompressionCodec.NONE, CompressionCodec.GZIP]))
    flags = draw(st.sampled_from([0, 0x08, 0x10, 0x18]))  # timestamp type, transactional
    idempotent = draw(st.booleans()) or bool(flags & 0x10)
    return build_batch(
        records,
        base_offset=draw(st.integers(0, 2**40)),
        partition_leader_epoch=draw(st.integers(-1, 2**31 - 1)),
        producer_id=draw(st.integers(0, 2**40)) if idempotent else -1,
        producer_epoch=draw(st.integers(0, 2**15 - 1)) if idempotent else -1,
        base_sequence=draw(st.integers(0, 2**31 - 1)) if idempotent else -1,
        attributes=int(codec) | flags,
    )


def reseal(buf: bytearray, at: int = 0) -> None:
    """Recompute the CRC of the batch at ``at`` over what it now holds."""
    length = struct.unpack_from(">i", buf, at + 8)[0]
    end = min(len(buf), at + 12 + max(length, 0))
    struct.pack_into(">I", buf, at + 17, crc32c.crc32c(bytes(buf[at + 21:end])))


# Header fields worth rewriting: (format, position, values of interest).
FIELDS = [
    (">i", 8, [-1, 0, 48, 49, 50]),  # batchLength: below the minimum, or wrong
    (">b", 16, [0, 1, 3, -1]),  # magic
    (">h", 21, [5, 6, 7, 0x15, 1, 2, 3, 4]),  # attributes: undefined codecs, and defined ones
    (">i", 23, [-1, -2, 0, 1, 100]),  # lastOffsetDelta
    (">i", 57, [-1, 0, 1, 2, 13]),  # recordCount
    (">q", 35, [-1, 0, 2**62]),  # maxTimestamp (any value is valid)
    (">q", 0, [0, 2**62]),  # baseOffset (not checked by validation)
]


@st.composite
def produce_input_st(draw: st.DrawFn) -> bytes:
    """Produce input: one batch or several, valid or damaged in one of many ways."""
    batches = draw(st.lists(batch_st(), min_size=1, max_size=3))
    buf = bytearray(b"".join(batches))
    damage = draw(st.sampled_from(
        ["none", "none", "flip", "field", "field", "field-unsealed", "cut", "extend",
         "garbage"]))
    if damage == "flip":
        i = draw(st.integers(0, len(buf) - 1))
        buf[i] ^= draw(st.integers(1, 255))
    elif damage in ("field", "field-unsealed"):
        fmt, at, values = draw(st.sampled_from(FIELDS))
        struct.pack_into(fmt, buf, at, draw(st.sampled_from(values)))
        if damage == "field":
            reseal(buf)
    elif damage == "cut":
        del buf[draw(st.integers(0, len(buf) - 1)):]
    elif damage == "extend":
        buf += draw(st.binary(min_size=1, max_size=70))
    elif damage == "garbage":
        buf = bytearray(draw(st.binary(max_size=200)))
    return bytes(buf)


def check_one_batch(buf: bytes | bytearray, base_offset: int = 0, epoch: int = -1) -> None:
    """``assign_one_batch`` against ``validate_batches`` and ``assign_offsets``."""
    original = bytes(buf)
    one = assign_one_batch(buf, base_offset, epoch)
    assert bytes(buf) == original, "the input was changed"
    try:
        summary = validate_batches(buf)
        copy = bytearray(buf)
        end = assign_offsets(copy, base_offset, epoch if epoch >= 0 else None)
    except (CorruptRecordError, ValueError):
        assert one is None, "the shortcut accepted input the general path refuses"
        return
    if one is None:
        assert summary.count_batches != 1, "the shortcut stepped aside from one valid batch"
        return
    data, last, max_timestamp = one
    assert data == copy and last == end - 1
    records = last - base_offset + 1
    assert summary == ValidationSummary(1, records, max_timestamp, records - 1, len(buf))


@settings(max_examples=max(300, settings().max_examples))
@given(data=produce_input_st(), as_bytearray=st.booleans(),
       base_offset=st.sampled_from([0, 1, 2**31, 2**63 - 6, 2**63 - 2, 2**63 - 1])
       | st.integers(0, 2**40),
       epoch=st.sampled_from([-1, -2, 0, 7, 2**31 - 1, 2**31]))
def test_assign_one_batch_agrees_with_validate_batches_and_assign_offsets(
    data: bytes, as_bytearray: bool, base_offset: int, epoch: int
) -> None:
    check_one_batch(bytearray(data) if as_bytearray else data, base_offset, epoch)


ONE = build_batch([Record(b"k", b"v" * 50, 7), Record(None, b"w", 9)], producer_id=3,
                  producer_epoch=1, base_sequence=10)


@pytest.mark.parametrize("sealed", [True, False])
@pytest.mark.parametrize(("fmt", "at", "value"),
                         [(fmt, at, v) for fmt, at, values in FIELDS for v in values])
def test_assign_one_batch_on_every_field_rewritten(fmt: str, at: int, value: int,
                                                     sealed: bool) -> None:
    buf = bytearray(ONE)
    struct.pack_into(fmt, buf, at, value)
    if sealed:
        reseal(buf)
    check_one_batch(bytes(buf))


@pytest.mark.parametrize("cut", range(len(ONE) + 1))
def test_assign_one_batch_on_every_cut(cut: int) -> None:
    check_one_batch(ONE[:cut])
    check_one_batch(ONE + ONE[:cut])


@pytest.mark.parametrize("size", [1000, 8192, 8193, 100_000])
def test_assign_one_batch_on_small_and_large_batches(size: int) -> None:
    # Either side of the size where the CRC is taken over a view rather than a copy.
    values = [b"x" * (size // 4)] * 4
    batch = bytearray(build_batch([Record(None, v, 5) for v in values]))
    check_one_batch(bytes(batch), 10, 3)
    one = assign_one_batch(bytes(batch), 10, 3)
    assert one is not None and one[1:] == (13, 5)
    batch[-1] ^= 1
    assert assign_one_batch(bytes(batch), 10, 3) is None


# --- the log: the same requests with and without the shortcut -------------------------------------

CONFIGS = [
    LogConfig(segment_bytes=1500, index_interval_bytes=100, segment_index_bytes=48,
              segment_ms=50, max_message_bytes=400, flush_messages=3),
    LogConfig(segment_bytes=4000, index_interval_bytes=300, max_message_bytes=3000),
    LogConfig(segment_bytes=300, index_interval_bytes=0, segment_index_bytes=24,
              max_message_bytes=10_000, flush_messages=1),
    # Room for 4 offset index entries and 3 time index entries: either may fill first.
    LogConfig(segment_bytes=100_000, index_interval_bytes=0, segment_index_bytes=36),
]


def request_st() -> st.SearchStrategy[tuple[bytes, int, int]]:
    """(produce input, leader epoch, milliseconds the clock moves before it)."""
    return st.tuples(produce_input_st(),
                     st.sampled_from([-1, -1, 0, 1, 1, 2, 5, 2**31 - 1, 2**31]),
                     st.sampled_from([0, 0, 1, 30, 60]))


def run(requests: list[tuple[bytes, int, int]], config: LogConfig, shortcut: bool
        ) -> tuple[list[object], dict[str, bytes], dict[str, bytes], object]:
    clock = VirtualClock(1_000_000)
    fs = SimFileSystem(clock)
    fs.makedirs("/d1")
    log = PartitionLog.create(fs, "/d1/t-0", TP, config, clock)
    answers: list[object] = []
    for records, epoch, tick in requests:
        clock.advance(tick)
        try:
            if shortcut:
                answers.append(log.append_as_leader(records, epoch))
            else:
                with mock.patch.object(log_module, "assign_one_batch", lambda *_: None):
                    answers.append(log.append_as_leader(records, epoch))
        except (LogwrightError, ValueError) as exc:
            answers.append((type(exc), str(exc)))
        answers.append((log.log_end_offset, log.recovery_point,
                        [s.base_offset for s in log.segments]))
    durable = {name: fs.durable_bytes(f"/d1/t-0/{name}") for name in fs.durable_listdir("/d1/t-0")}
    log.close()
    files = {name: fs.read_file(f"/d1/t-0/{name}") for name in fs.listdir("/d1/t-0")}
    return answers, files, durable, log.leader_epoch_cache.pairs


@settings(max_examples=max(100, settings().max_examples))
@given(requests=st.lists(request_st(), min_size=1, max_size=25),
       config=st.sampled_from(CONFIGS))
def test_append_as_leader_decides_as_the_general_path(
    requests: list[tuple[bytes, int, int]], config: LogConfig
) -> None:
    fast = run(requests, config, shortcut=True)
    general = run(requests, config, shortcut=False)
    assert fast == general


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("step_ms", [0, 1, 7])
@pytest.mark.parametrize("records", [1, 3])
def test_append_as_leader_decides_as_the_general_path_on_a_producer_stream(
    config: LogConfig, step_ms: int, records: int
) -> None:
    # A producer's stream: one batch per request, timestamps rising by step_ms (0: equal), the
    # leader epoch rising now and then; indexes fill and segments roll on the way.
    requests = []
    for i in range(60):
        timestamp = 1_000_000 + i * step_ms
        batch = build_batch([Record(None, b"v" * (i % 5 * 20), timestamp)] * records,
                            producer_id=7, producer_epoch=0, base_sequence=i * records)
        requests.append((batch, i // 20, 1 if i % 3 else 0))
    fast = run(requests, config, shortcut=True)
    assert fast == run(requests, config, shortcut=False)


def test_the_shortcut_leaves_an_offset_overflow_to_the_general_path() -> None:
    batch = build_batch([Record(None, b"v", 5)] * 3)
    assert assign_one_batch(batch, 2**63 - 3, -1) is not None
    assert assign_one_batch(batch, 2**63 - 2, -1) is None
    with pytest.raises(CorruptRecordError, match="overflows"):
        assign_offsets(bytearray(batch), 2**63 - 2)
