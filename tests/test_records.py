"""The v2 RecordBatch codec reads what Kafka clients write, and never mistakes bad bytes for data.

Checked here: byte-exact agreement with kafka-python's batch builder, round trips, CRC and
structure checks against random corruption, torn tails told apart from corruption at every
truncation point, and offset assignment in place keeping the CRC valid.
"""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st

from logwright.errors import CorruptRecordError
from logwright.records import (
    HEADER_SIZE,
    BatchHeader,
    Record,
    ScanStop,
    UnsupportedCodecError,
    assign_offsets,
    build_batch,
    build_simple_batch,
    decode_records,
    iter_batches,
    scan_valid_prefix,
    validate_batches,
)
from logwright.records.varint import (
    VarintError,
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
    size_of_varint,
)

# --- helpers that build bytes without the code under test (struct + crc32c only) -------------

_HEADER = struct.Struct(">qiibIhiqqqhii")


def raw_batch(
    section: bytes,
    record_count: int,
    last_offset_delta: int,
    *,
    attributes: int = 0,
    base_offset: int = 0,
    base_timestamp: int = 1_000,
    max_timestamp: int = 1_000,
    magic: int = 2,
) -> bytes:
    """A batch with the given records section and a correct CRC over whatever it holds."""
    head = bytearray(
        _HEADER.pack(
            base_offset,
            HEADER_SIZE - 12 + len(section),
            -1,
            magic,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            -1,
            -1,
            -1,
            record_count,
        )
    )
    out = head + section
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def reseal(batch: bytes | bytearray) -> bytes:
    """The same batch with its CRC recomputed (to test checks that the CRC cannot catch)."""
    out = bytearray(batch)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def with_field(batch: bytes, fmt: str, at: int, value: int, seal: bool = True) -> bytes:
    out = bytearray(batch)
    struct.pack_into(fmt, out, at, value)
    return reseal(out) if seal else bytes(out)


def batch_ends(buf: bytes) -> list[int]:
    ends, pos = [], 0
    while pos < len(buf):
        pos += 12 + struct.unpack_from(">i", buf, pos + 8)[0]
        ends.append(pos)
    return ends


# --- known vectors from kafka-python 3.0.12 (DefaultRecordBatchBuilder, magic 2) -------------
# kafka-python writes partitionLeaderEpoch 0 and baseOffset 0; the records are listed beside
# each vector. Generated once in a scratch script; kafka-python is not a project dependency.

KP_PLAIN = bytes.fromhex(
    "00000000000000000000005d0000000002887d2bdb0000000000020000018bcfe568000000018bcfe56805ff"
    "ffffffffffffffffffffffffff000000031a000000046b300a68656c6c6f0028000a02010a776f726c640404"
    "683102780468320110001304046b320100"
)
KP_PLAIN_RECORDS = [
    Record(b"k0", b"hello", 1_700_000_000_000),
    Record(None, b"world", 1_700_000_000_005, (("h1", b"x"), ("h2", None))),
    Record(b"k2", None, 1_699_999_999_990),
]
KP_TRANSACTIONAL = bytes.fromhex(
    "00000000000000000000009000000000023a6ade170010000000000000011f71fb04cb0000011f71fb04cb00"
    "000000000004d200050000000700000001ba01000000066b65798c01"
    + "76" * 70
    + "021074726163652d696406000102"
)
KP_TRANSACTIONAL_RECORD = Record(b"key", b"v" * 70, 1_234_567_890_123, (("trace-id", b"\0\1\2"),))
KP_GZIP = bytes.fromhex(
    "00000000000000000000006400000000020662fa260001000000020000018bcfe568000000018bcfe56802ff"
    "ffffffffffffffffffffffffff000000031f8b0800cda0016b02ffeb63646060606c604c4c4a4e494d4bcf20"
    "9766e863646062a292412c2cd4300800bf3ed7bcdb000000"
)


def test_kafka_python_plain_vector_parses_and_decodes() -> None:
    header = BatchHeader.parse(KP_PLAIN)
    assert header.magic == 2
    assert (header.base_offset, header.last_offset_delta, header.record_count) == (0, 2, 3)
    assert header.base_timestamp == 1_700_000_000_000
    assert header.max_timestamp == 1_700_000_000_005
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (-1, -1, -1)
    assert header.size_bytes == len(KP_PLAIN)
    assert decode_records(KP_PLAIN) == list(enumerate(KP_PLAIN_RECORDS))


def test_builder_reproduces_kafka_python_bytes() -> None:
    assert build_batch(KP_PLAIN_RECORDS, partition_leader_epoch=0) == KP_PLAIN
    built = build_batch(
        [KP_TRANSACTIONAL_RECORD],
        partition_leader_epoch=0,
        producer_id=1234,
        producer_epoch=5,
        base_sequence=7,
        attributes=0x10,
    )
    assert built == KP_TRANSACTIONAL
    header = BatchHeader.parse(KP_TRANSACTIONAL)
    assert header.is_transactional and not header.is_control
    assert decode_records(KP_TRANSACTIONAL) == [(0, KP_TRANSACTIONAL_RECORD)]


def test_kafka_python_gzip_vector_decodes() -> None:
    summary = validate_batches(KP_GZIP)
    assert (summary.count_batches, summary.count_records) == (1, 3)
    assert decode_records(KP_GZIP) == [
        (i, Record(None, b"abcdefgh" * 8, 1_700_000_000_000 + i)) for i in range(3)
    ]


# --- round trips ----------------------------------------------------------------------------


def test_round_trip_with_offsets_and_header_fields() -> None:
    records = [Record(b"a", b"1", 50), Record(None, None, 40), Record(b"", b"", 70)]
    batch = build_batch(
        records,
        base_offset=100,
        partition_leader_epoch=3,
        producer_id=9,
        producer_epoch=2,
        base_sequence=11,
    )
    header = BatchHeader.parse(batch)
    assert header.base_offset == 100 and header.partition_leader_epoch == 3
    assert header.last_offset == 102 and header.next_offset == 103
    assert header.base_timestamp == 50 and header.max_timestamp == 70
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 2, 11)
    assert header.size_bytes == len(batch) == header.batch_length + 12
    assert decode_records(batch) == [(100 + i, r) for i, r in enumerate(records)]


def test_simple_batch_and_gzip_round_trip() -> None:
    values = [b"v%d" % i * 30 for i in range(20)]
    for attributes in (0, 1):
        batch = build_simple_batch(values, 1234, base_offset=7, attributes=attributes)
        assert BatchHeader.parse(batch).compression_codec == attributes
        assert decode_records(batch) == [
            (7 + i, Record(None, v, 1234)) for i, v in enumerate(values)
        ]
    assert len(build_simple_batch(values, 0, attributes=1)) < len(build_simple_batch(values, 0))


def test_log_append_time_batches_report_max_timestamp_for_every_record() -> None:
    batch = build_batch([Record(None, b"a", 5), Record(None, b"b", 9)], attributes=0x08)
    assert BatchHeader.parse(batch).is_log_append_time
    assert [r.timestamp_ms for _, r in decode_records(batch)] == [9, 9]


headers_st = st.lists(
    st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3
).map(tuple)
record_st = st.builds(
    Record,
    key=st.none() | st.binary(max_size=40),
    value=st.none() | st.binary(max_size=200),
    timestamp_ms=st.integers(-1, 2**62),
    headers=headers_st,
)
records_st = st.lists(record_st, min_size=1, max_size=8)


@given(records=records_st, base_offset=st.integers(0, 2**62), gzip=st.booleans())
def test_random_records_round_trip(records: list[Record], base_offset: int, gzip: bool) -> None:
    batch = build_batch(records, base_offset=base_offset, attributes=int(gzip))
    summary = validate_batches(batch)
    assert summary.count_records == len(records) and summary.total_bytes == len(batch)
    assert summary.max_timestamp == max(r.timestamp_ms for r in records)
    assert decode_records(batch) == [(base_offset + i, r) for i, r in enumerate(records)]


# --- corruption is detected -----------------------------------------------------------------

batches_st = st.lists(records_st, min_size=3, max_size=3)


def three_batches(record_lists: list[list[Record]]) -> tuple[bytes, list[int]]:
    out, offset = bytearray(), 0
    for records in record_lists:
        out += build_batch(records, base_offset=offset)
        offset += len(records)
    return bytes(out), batch_ends(bytes(out))


@given(record_lists=batches_st, data=st.data())
def test_any_single_byte_flip_is_detected(
    record_lists: list[list[Record]], data: st.DataObject
) -> None:
    buf, ends = three_batches(record_lists)
    index = data.draw(st.integers(0, len(buf) - 1), label="index")
    mask = data.draw(st.integers(1, 255), label="mask")
    flipped = bytearray(buf)
    flipped[index] ^= mask
    starts = [0, *ends[:-1]]
    batch_no = max(i for i, s in enumerate(starts) if s <= index)
    start, within = starts[batch_no], index - starts[batch_no]
    result = scan_valid_prefix(flipped, expected_next_offset=0)
    if 12 <= within < 16:
        # partitionLeaderEpoch is outside the CRC by design, so the broker can rewrite it in place.
        assert result.stop is ScanStop.END and result.valid_bytes == len(buf)
        return
    assert result.valid_bytes == start and result.batches == batch_no
    assert result.stop is not ScanStop.END and result.error is not None
    if within >= 8:
        # Everything but baseOffset is checked on produce input too (baseOffset is overwritten).
        with pytest.raises(CorruptRecordError):
            validate_batches(flipped)


@given(records=records_st, data=st.data())
def test_decoder_rejects_garbage_records_only_with_corrupt_record_error(
    records: list[Record], data: st.DataObject
) -> None:
    batch = bytearray(build_batch(records))
    for _ in range(data.draw(st.integers(1, 4), label="flips")):
        index = data.draw(st.integers(HEADER_SIZE, len(batch) - 1), label="index")
        batch[index] ^= data.draw(st.integers(1, 255), label="mask")
    try:
        decoded = decode_records(reseal(batch))
    except CorruptRecordError:
        return
    # A flip can still spell valid records (say, in a value); they must then be self-consistent.
    assert len(decoded) == BatchHeader.parse(batch).record_count


def test_truncation_at_every_byte_is_a_torn_tail_at_the_last_whole_batch() -> None:
    buf, ends = three_batches(
        [[Record(b"k", b"v" * 40, 1)], [Record(None, b"w", 2)] * 3, [Record(b"x", None, 3)]]
    )
    for cut in range(len(buf) + 1):
        view = memoryview(buf)[:cut]
        result = scan_valid_prefix(view, expected_next_offset=0)
        whole = [e for e in ends if e <= cut]
        assert result.valid_bytes == (whole[-1] if whole else 0), cut
        assert result.batches == len(whole)
        assert result.last_offset == ([None, 0, 3, 4][len(whole)])
        assert result.stop is (ScanStop.END if cut in (0, *ends) else ScanStop.TORN_TAIL), cut
        assert result.torn_tail == (result.stop is ScanStop.TORN_TAIL)
        assert [p for p, _ in iter_batches(view)] == [0, *ends][: len(whole)]


@given(record_lists=batches_st, data=st.data())
def test_truncated_random_batches_keep_exactly_the_whole_ones(
    record_lists: list[list[Record]], data: st.DataObject
) -> None:
    buf, ends = three_batches(record_lists)
    cut = data.draw(st.integers(0, len(buf)), label="cut")
    result = scan_valid_prefix(buf[:cut])
    assert result.valid_bytes == max([0, *(e for e in ends if e <= cut)])
    assert result.error is None or result.error.startswith("torn tail")


def test_tail_that_cannot_start_a_batch_is_corrupt_not_torn() -> None:
    batch = build_simple_batch([b"a"], 1)
    zeros = scan_valid_prefix(batch + bytes(30))
    assert zeros.stop is ScanStop.CORRUPT and zeros.valid_bytes == len(batch)
    assert "magic at byte" in (zeros.error or "")
    bad_magic = bytearray(build_simple_batch([b"b"], 1, base_offset=1))
    bad_magic[16] = 1
    partial = scan_valid_prefix(batch + bytes(bad_magic[:40]))
    assert partial.stop is ScanStop.CORRUPT and "magic" in (partial.error or "")
    with pytest.raises(CorruptRecordError, match="magic"):
        list(iter_batches(batch + bytes(bad_magic[:40])))


# --- bad inputs and their messages ------------------------------------------------------------


def test_wrong_magic() -> None:
    batch = with_field(build_simple_batch([b"a"], 1), ">b", 16, 1, seal=False)
    with pytest.raises(CorruptRecordError, match=r"magic at byte 16: expected 2, found 1"):
        BatchHeader.parse(batch)
    with pytest.raises(CorruptRecordError, match=r"batch 0 at byte 0: magic"):
        validate_batches(batch)
    result = scan_valid_prefix(batch)
    assert result.stop is ScanStop.CORRUPT and result.valid_bytes == 0


def test_short_header() -> None:
    with pytest.raises(CorruptRecordError, match=r"short batch header at byte 0: 60 bytes"):
        BatchHeader.parse(bytes(60))
    with pytest.raises(CorruptRecordError, match=r"batch 0 at byte 0: incomplete: 10 bytes"):
        validate_batches(build_simple_batch([b"a"], 1)[:10])


def test_negative_and_too_small_batch_length() -> None:
    for length in (-5, 0, 48):
        batch = with_field(build_simple_batch([b"a"], 1), ">i", 8, length, seal=False)
        with pytest.raises(CorruptRecordError, match=rf"batchLength at byte 8: {length} is below"):
            BatchHeader.parse(batch)
        assert scan_valid_prefix(batch).stop is ScanStop.CORRUPT
        with pytest.raises(CorruptRecordError, match="batchLength"):
            validate_batches(batch)
        with pytest.raises(CorruptRecordError):
            assign_offsets(bytearray(batch), 0)


def test_negative_last_offset_delta_and_record_count() -> None:
    batch = build_simple_batch([b"a"], 1)
    with pytest.raises(CorruptRecordError, match="lastOffsetDelta at byte 23: -1 is negative"):
        BatchHeader.parse(with_field(batch, ">i", 23, -1))
    with pytest.raises(CorruptRecordError, match="recordCount at byte 57: -2 is negative"):
        BatchHeader.parse(with_field(batch, ">i", 57, -2))
    with pytest.raises(CorruptRecordError, match="recordCount at byte 57: 5 records cannot fit"):
        BatchHeader.parse(with_field(batch, ">i", 57, 5))
    assert scan_valid_prefix(with_field(batch, ">i", 23, -1)).stop is ScanStop.CORRUPT


def test_batch_length_past_the_buffer() -> None:
    batch = build_simple_batch([b"abc"], 1)
    longer = with_field(batch, ">i", 8, len(batch) + 100, seal=False)
    result = scan_valid_prefix(longer)
    assert result.stop is ScanStop.TORN_TAIL and result.valid_bytes == 0
    assert "needs" in (result.error or "")
    assert list(iter_batches(longer)) == []
    with pytest.raises(CorruptRecordError, match="batch 0 at byte 0: incomplete: batchLength"):
        validate_batches(longer)
    with pytest.raises(CorruptRecordError, match="incomplete"):
        decode_records(longer)


def test_crc_mismatch_names_stored_and_computed() -> None:
    batch = bytearray(build_simple_batch([b"abc"], 1))
    batch[-2] ^= 0xFF  # inside the value, so the records still parse
    with pytest.raises(CorruptRecordError, match=r"batch 0 at byte 0: crc at byte 17: stored 0x"):
        validate_batches(batch)
    with pytest.raises(CorruptRecordError, match="crc"):
        decode_records(batch)
    with pytest.raises(CorruptRecordError, match="crc"):
        list(iter_batches(batch))
    assert len(decode_records(batch, verify_crc=False)) == 1
    assert scan_valid_prefix(batch, verify_crc=False).stop is ScanStop.END


def test_produce_batches_must_have_one_record_per_offset() -> None:
    batch = with_field(build_simple_batch([b"a", b"b"], 1), ">i", 57, 1)
    with pytest.raises(
        CorruptRecordError, match=r"recordCount at byte 57: expected 2 \(lastOffsetDelta 1 \+ 1\)"
    ):
        validate_batches(batch)


# Record sections written by hand: length varint, attributes, timestampDelta, offsetDelta,
# key, value, headers count; all one byte here. zigzag: 0 -> 00, -1 -> 01, 1 -> 02, 3 -> 06.
_ONE_RECORD = bytes([0x0E, 0x00, 0x00, 0x00, 0x01, 0x02, 0x61, 0x00])  # value b"a", 7-byte body


@pytest.mark.parametrize(
    ("section", "count", "message"),
    [
        (
            bytes([0x0E, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
            1,
            r"record 0: offsetDelta: varint longer than 5 bytes at byte 64",
        ),
        (
            bytes([0x0E, 0x00, 0x00, 0x00, 0x01, 0x40, 0x61, 0x00]),
            1,
            r"record 0: value: length 32 does not fit",
        ),
        (
            bytes([0x0E, 0x00, 0x00, 0x00, 0x01, 0x02, 0x61, 0x02]),
            1,
            r"record 0: header 0 key: buffer ends inside a varint after 0 bytes at byte 69",
        ),
        (
            bytes([0x10, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x01, 0x01]),
            1,
            r"record 0: header 0 key: header key is null",
        ),
        (bytes([0x30]) + _ONE_RECORD[1:], 1, r"record 0: length: length 24 does not fit"),
        (_ONE_RECORD + b"\x00", 1, r"1 more bytes follow"),
        (_ONE_RECORD, 2, r"record 1: length: buffer ends inside a varint"),
        (_ONE_RECORD + _ONE_RECORD, 2, r"record 1: offsetDelta: 0 does not increase"),
        (
            bytes([0x12, 0x00, 0x00, 0x00, 0x01, 0x02, 0x61, 0x00, 0x00, 0x00]),
            1,
            r"record 0: length: record declares 9 bytes but its fields take 7",
        ),
    ],
)
def test_malformed_records_are_named(section: bytes, count: int, message: str) -> None:
    batch = raw_batch(section, count, max(count - 1, 1))
    BatchHeader.parse(batch)  # the header itself is fine; only the records are not
    with pytest.raises(CorruptRecordError, match=message):
        decode_records(batch)


def test_hand_written_record_decodes() -> None:
    assert decode_records(raw_batch(_ONE_RECORD, 1, 0)) == [(0, Record(None, b"a", 1_000))]


def test_unsupported_codec_keeps_header_operations_working() -> None:
    batch = with_field(build_simple_batch([b"a", b"b"], 1), ">h", 21, 2)  # snappy
    assert validate_batches(batch).count_records == 2
    buf = bytearray(batch)
    assert assign_offsets(buf, 40, 1) == 42
    assert scan_valid_prefix(buf, expected_next_offset=40).stop is ScanStop.END
    with pytest.raises(UnsupportedCodecError, match=r"codec 2 \(snappy\) is not supported"):
        decode_records(buf)
    undefined = with_field(batch, ">h", 21, 5)
    with pytest.raises(CorruptRecordError, match="compression codec 5 is not defined"):
        validate_batches(undefined)
    with pytest.raises(CorruptRecordError, match="compression codec 5 is not defined"):
        decode_records(undefined)


def test_corrupt_gzip_payload() -> None:
    batch = bytearray(build_simple_batch([b"a" * 100], 1, attributes=1))
    batch[-12] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="gzip"):
        decode_records(reseal(batch))


def test_build_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        build_batch([])
    with pytest.raises(ValueError, match="partition_leader_epoch"):
        build_simple_batch([b"a"], 1, partition_leader_epoch=2**31)
    with pytest.raises(ValueError, match=r"record 1: timestamp_ms -2 is outside \[-1, "):
        build_batch([Record(None, b"a", 5), Record(None, b"b", -2)])
    with pytest.raises(ValueError, match=r"record 1: timestamp delta 9223372036854775808"):
        build_batch([Record(None, b"a", -1), Record(None, b"b", 2**63 - 1)])
    with pytest.raises(ValueError, match="base_offset"):
        build_simple_batch([b"a"], 1, base_offset=-1)
    with pytest.raises(ValueError, match="compression codec 2: only none and gzip"):
        build_simple_batch([b"a"], 1, attributes=2)


# --- offsets: assignment, ordering, summaries -------------------------------------------------


@given(
    sizes=st.lists(st.integers(1, 5), min_size=1, max_size=6),
    base_offset=st.integers(0, 2**40),
    epoch=st.none() | st.integers(0, 2**31 - 1),
)
def test_offset_assignment_keeps_crc_valid(
    sizes: list[int], base_offset: int, epoch: int | None
) -> None:
    buf = bytearray()
    for n in sizes:
        buf += build_simple_batch([b"x%d" % i for i in range(n)], 5, base_offset=0)
    before = validate_batches(buf)
    assert assign_offsets(buf, base_offset, epoch) == base_offset + sum(sizes)
    assert validate_batches(buf) == before
    result = scan_valid_prefix(buf, expected_next_offset=base_offset)
    assert result.stop is ScanStop.END and result.last_offset == base_offset + sum(sizes) - 1
    offsets = [o for pos, _ in iter_batches(buf) for o, _ in decode_records(buf, pos)]
    assert offsets == list(range(base_offset, base_offset + sum(sizes)))
    epochs = {h.partition_leader_epoch for _, h in iter_batches(buf)}
    assert epochs == {-1 if epoch is None else epoch}


def test_assign_offsets_needs_a_writable_buffer_and_walkable_batches() -> None:
    batch = build_simple_batch([b"a"], 1)
    with pytest.raises(TypeError, match="bytearray"):
        assign_offsets(batch, 0)  # type: ignore[arg-type]
    with pytest.raises(CorruptRecordError, match="incomplete"):
        assign_offsets(bytearray(batch + batch[:30]), 0)
    with pytest.raises(ValueError, match="negative"):
        assign_offsets(bytearray(batch), -1)


def test_offset_order() -> None:
    first = build_simple_batch([b"a", b"b"], 1, base_offset=10)
    gap = build_simple_batch([b"c"], 1, base_offset=15)
    back = build_simple_batch([b"d"], 1, base_offset=11)
    assert scan_valid_prefix(first + gap).stop is ScanStop.END  # gaps: as compaction leaves
    strict = scan_valid_prefix(first + gap, expected_next_offset=10)
    assert strict.stop is ScanStop.OFFSET_ORDER and strict.valid_bytes == len(first)
    assert "baseOffset 15 skips past the expected next offset 12" in (strict.error or "")
    backwards = scan_valid_prefix(first + back)
    assert backwards.stop is ScanStop.OFFSET_ORDER and backwards.last_offset == 11
    assert "baseOffset 11 is below" in (backwards.error or "")
    assert scan_valid_prefix(first, expected_next_offset=9).valid_bytes == 0
    negative = with_field(first, ">q", 0, -3, seal=False)
    assert scan_valid_prefix(negative).stop is ScanStop.CORRUPT


def test_scan_reports_each_batch_and_the_max_timestamp() -> None:
    batches = [build_simple_batch([b"a"], ts, base_offset=i) for i, ts in enumerate((5, 9, 7))]
    buf = b"".join(batches)
    seen: list[tuple[int, int]] = []
    result = scan_valid_prefix(buf, on_batch=lambda pos, h: seen.append((pos, h.base_offset)))
    size = len(batches[0])
    assert seen == [(p, h.base_offset) for p, h in iter_batches(buf)]
    assert seen == [(0, 0), (size, 1), (2 * size, 2)]
    assert (result.batches, result.max_timestamp, result.last_offset) == (3, 9, 2)
    empty = scan_valid_prefix(b"")
    assert (empty.batches, empty.max_timestamp, empty.last_offset, empty.stop) == (
        0,
        -1,
        None,
        ScanStop.END,
    )
    assert scan_valid_prefix(buf, position=size).batches == 2


def test_validation_summary() -> None:
    buf = (
        build_simple_batch([b"a", b"b"], 5)
        + build_simple_batch([b"c", b"d", b"e"], 9)
        + build_simple_batch([b"f"], 9)
    )
    summary = validate_batches(buf)
    assert (summary.count_batches, summary.count_records, summary.total_bytes) == (3, 6, len(buf))
    # The time index points at the last offset of the first batch holding the max timestamp.
    assert (summary.max_timestamp, summary.last_offset_delta_of_max_timestamp) == (9, 4)
    empty = validate_batches(b"")
    assert (empty.count_batches, empty.max_timestamp) == (0, -1)


# --- varints ----------------------------------------------------------------------------------


def test_varint_known_encodings() -> None:
    cases = {
        0: "00",
        -1: "01",
        1: "02",
        63: "7e",
        -64: "7f",
        64: "8001",
        2**31 - 1: "feffffff0f",
        -(2**31): "ffffffff0f",
    }
    for value, encoded in cases.items():
        assert encode_varint(value).hex() == encoded
        assert decode_varint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)
        assert size_of_varint(value) == len(encoded) // 2
    assert encode_varlong(-(2**63)).hex() == "ff" * 9 + "01"


@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1))
def test_varint_round_trip(small: int, large: int) -> None:
    assert decode_varint(encode_varint(small) + b"\xff", 0) == (small, len(encode_varint(small)))
    assert decode_varlong(encode_varlong(large), 0) == (large, len(encode_varlong(large)))


def test_malformed_varints() -> None:
    with pytest.raises(VarintError, match="longer than 5 bytes"):
        decode_varint(b"\xff" * 6, 0)
    with pytest.raises(VarintError, match="does not fit in 32 bits"):
        decode_varint(b"\xff\xff\xff\xff\x1f", 0)
    with pytest.raises(VarintError, match="longer than 10 bytes"):
        decode_varlong(b"\x80" * 11, 0)
    with pytest.raises(VarintError, match="does not fit in 64 bits"):
        decode_varlong(b"\xff" * 9 + b"\x7f", 0)
    with pytest.raises(VarintError, match="ends inside"):
        decode_varint(b"\x80\x80", 0)
    with pytest.raises(VarintError, match="ends inside"):
        decode_varint(b"\x80\x01", 0, end=1)
    with pytest.raises(ValueError, match="int32"):
        encode_varint(2**31)
