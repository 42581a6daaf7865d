"""The leader's shortcut for a produce request of one batch decides exactly as the general path.

``assign_one_batch`` is ``validate_batches`` then ``assign_offsets`` for input that is one
batch: on random input (valid batches of any size, compressed, idempotent or transactional, and
the same with a flipped byte, a field rewritten and resealed, cut short, extended, or several
batches together), at random base offsets and leader epochs (some out of range), it either gives
what the two would (the same bytes, last offset and summary), or steps aside (None) for input
the general functions answer or refuse themselves; it never steps aside from a valid single
batch they accept.

The log appends one batch three ways: ``PartitionLog.append_as_leader`` itself (its inlined
path: the checks of ``assign_one_batch``, ``LogSegment.append`` and, on the real file system,
``RealFileHandle.append``, written out in one function), ``_append_one_batch`` (the shortcut
through ``assign_one_batch`` and ``LogSegment.append``, where the inlined path steps aside) and
``_append_as_leader`` (the general path, for any input). The three leave the same answers, the
same errors, the same files byte for byte, the same recovery point and the same leader epoch
cache after the same random requests, on small segments and indexes so that index entries, time
index entries, flushes by count and rolls (by size, by segment.ms, by a full index) all happen;
on the simulated file system and on the real one, whose writes the inlined path makes itself
(a short ``pwrite`` and a failing one included).
"""

from __future__ import annotations

import errno
import os
import posixpath
import struct
import tempfile
from collections.abc import Callable
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
from logwright.storage.log import AppendInfo, PartitionLog
from logwright.world import SimFileSystem, VirtualClock
from logwright.world import realfs as realfs_module
from logwright.world.realfs import RealFileSystem
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


PATHS = ["inline", "one", "general"]


def append(log: PartitionLog, records: bytes, epoch: int, path: str) -> AppendInfo:
    """Append as leader by ``path``: the inlined path, the one-batch shortcut, the general."""
    if path == "inline":
        return log.append_as_leader(records, epoch)
    log._guard()  # as append_as_leader begins
    if path == "one":
        return log._append_one_batch(records, epoch)
    return log._append_as_leader(records, epoch)


Request = tuple[bytes, int, int]  # produce input, leader epoch, ms the clock moves before it


def play(log: PartitionLog, clock: VirtualClock, requests: list[Request], path: str,
         configs: dict[int, LogConfig] | None = None) -> list[object]:
    """Append ``requests`` by ``path``; the answers and errors, with the log's offsets after
    each. ``configs``: configs the log takes before the request of that index."""
    answers: list[object] = []
    for i, (records, epoch, tick) in enumerate(requests):
        if configs and i in configs:
            log.update_config(configs[i])
        clock.advance(tick)
        try:
            answers.append(append(log, records, epoch, path))
        except (LogwrightError, ValueError) as exc:
            answers.append((type(exc), str(exc)))
        answers.append((log.log_end_offset, log.recovery_point, log.offline,
                        [s.base_offset for s in log.segments]))
    return answers


Prelude = Callable[[PartitionLog], None]  # what a fresh log goes through before the requests


def run(requests: list[Request], config: LogConfig, path: str,
        configs: dict[int, LogConfig] | None = None, prelude: Prelude | None = None
        ) -> tuple[list[object], dict[str, bytes], dict[str, bytes], object]:
    clock = VirtualClock(1_000_000)
    fs = SimFileSystem(clock)
    fs.makedirs("/d1")
    log = PartitionLog.create(fs, "/d1/t-0", TP, config, clock)
    if prelude is not None:
        prelude(log)
    answers = play(log, clock, requests, path, configs)
    durable = {name: fs.durable_bytes(f"/d1/t-0/{name}") for name in fs.durable_listdir("/d1/t-0")}
    log.close()
    files = {name: fs.read_file(f"/d1/t-0/{name}") for name in fs.listdir("/d1/t-0")}
    return answers, files, durable, log.leader_epoch_cache.pairs


def run_real(requests: list[Request], config: LogConfig, path: str,
             configs: dict[int, LogConfig] | None = None, prelude: Prelude | None = None
             ) -> tuple[list[object], dict[str, bytes], object]:
    """``run`` on the real file system, in a fresh temporary directory."""
    clock = VirtualClock(1_000_000)
    fs = RealFileSystem()
    with tempfile.TemporaryDirectory() as root:
        log = PartitionLog.create(fs, posixpath.join(root, "t-0"), TP, config, clock)
        if prelude is not None:
            prelude(log)
        answers = play(log, clock, requests, path, configs)
        log.close()
        files = {name: fs.read_file(posixpath.join(log.dir_path, name))
                 for name in fs.listdir(log.dir_path)}
    return [_without_dir(a, root) for a in answers], files, log.leader_epoch_cache.pairs


def _without_dir(answer: object, root: str) -> object:
    """An answer with the temporary directory's name taken out of an error message."""
    if isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[1], str):
        return (answer[0], answer[1].replace(root, "ROOT"))
    return answer


@settings(max_examples=max(100, settings().max_examples))
@given(requests=st.lists(request_st(), min_size=1, max_size=25),
       config=st.sampled_from(CONFIGS))
def test_append_as_leader_decides_as_the_general_path(
    requests: list[Request], config: LogConfig
) -> None:
    inline = run(requests, config, "inline")
    assert inline == run(requests, config, "one")
    assert inline == run(requests, config, "general")


@settings(max_examples=max(30, settings().max_examples // 3), deadline=None)
@given(requests=st.lists(request_st(), min_size=1, max_size=25),
       config=st.sampled_from(CONFIGS))
def test_append_as_leader_decides_as_the_general_path_on_real_files(
    requests: list[Request], config: LogConfig
) -> None:
    inline = run_real(requests, config, "inline")
    assert inline == run_real(requests, config, "one")
    assert inline == run_real(requests, config, "general")


def producer_stream(records: int, step_ms: int, value_bytes: int = 20) -> list[Request]:
    """A producer's stream: one batch per request, timestamps rising by step_ms (0: equal),
    the leader epoch rising now and then; indexes fill and segments roll on the way."""
    requests = []
    for i in range(60):
        timestamp = 1_000_000 + i * step_ms
        batch = build_batch([Record(None, b"v" * (i % 5 * value_bytes), timestamp)] * records,
                            producer_id=7, producer_epoch=0, base_sequence=i * records)
        requests.append((batch, i // 20, 1 if i % 3 else 0))
    return requests


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("step_ms", [0, 1, 7])
@pytest.mark.parametrize("records", [1, 3])
def test_append_as_leader_decides_as_the_general_path_on_a_producer_stream(
    config: LogConfig, step_ms: int, records: int
) -> None:
    requests = producer_stream(records, step_ms)
    inline = run(requests, config, "inline")
    assert inline == run(requests, config, "one")
    assert inline == run(requests, config, "general")
    inline_real = run_real(requests, config, "inline")
    assert inline_real == run_real(requests, config, "one")
    assert inline_real == run_real(requests, config, "general")
    assert inline_real[1] == inline[1], "the real files hold what the simulated ones do"


@pytest.mark.parametrize("real", [False, True])
def test_append_as_leader_decides_as_the_general_path_on_large_batches(real: bool) -> None:
    # Batches up to 12 KiB: the CRC over a view of the copy above 8 KiB, over a slice below.
    requests = producer_stream(3, 1, value_bytes=1000)
    config = LogConfig(segment_bytes=100_000, index_interval_bytes=5000)
    go = run_real if real else run
    inline = go(requests, config, "inline")
    assert inline == go(requests, config, "one")
    assert inline == go(requests, config, "general")
    assert max(len(r[0]) for r in requests) > 8192


@pytest.mark.parametrize("real", [False, True])
def test_append_as_leader_follows_a_config_change(real: bool) -> None:
    # flush.messages, segment.bytes, segment.ms and segment.index.bytes changed between
    # appends: the inlined path's thresholds worked out per config follow the change.
    requests = producer_stream(2, 3)
    configs = {10: LogConfig(flush_messages=4, segment_index_bytes=24),
               25: LogConfig(segment_bytes=900, segment_ms=20, index_interval_bytes=50),
               40: LogConfig(flush_messages=1, segment_index_bytes=36, index_interval_bytes=0)}
    go = run_real if real else run
    inline = go(requests, CONFIGS[1], "inline", configs)
    assert inline == go(requests, CONFIGS[1], "one", configs)
    assert inline == go(requests, CONFIGS[1], "general", configs)


def _short_pwrite(fd: int, data: bytes | bytearray | memoryview, position: int) -> int:
    """``os.pwrite`` of at most the first 100 bytes: a short write."""
    return os.pwrite(fd, memoryview(data)[:100], position)


def _failing_pwrite(fd: int, data: bytes | bytearray | memoryview, position: int) -> int:
    raise OSError(errno.EIO, "Input/output error (injected)")


@pytest.mark.parametrize("fake", [_short_pwrite, _failing_pwrite])
def test_the_inlined_write_on_real_files_fails_and_completes_as_the_handle(
    fake: Callable[[int, bytes | bytearray | memoryview, int], int]
) -> None:
    # The inlined path's pwrite (log_module._pwrite) and the file handle's (realfs._pwrite)
    # made short, or failing, from the 10th request on: the same files, answers and errors.
    requests = producer_stream(2, 1)[:20]

    def go(path: str) -> tuple[list[object], dict[str, bytes], object]:
        real_pwrite = os.pwrite
        calls = 0

        def pwrite(fd: int, data: bytes | bytearray | memoryview, position: int) -> int:
            nonlocal calls
            calls += 1
            return (fake if calls >= 10 else real_pwrite)(fd, data, position)

        with mock.patch.object(log_module, "_pwrite", pwrite), \
                mock.patch.object(realfs_module, "_pwrite", pwrite):
            return run_real(requests, CONFIGS[1], path)

    inline = go("inline")
    if fake is _failing_pwrite:
        assert inline[0][-1][2], "the log went offline"
    assert inline == go("one")
    assert inline == go("general")


def test_the_shortcut_leaves_an_offset_overflow_to_the_general_path() -> None:
    batch = build_batch([Record(None, b"v", 5)] * 3)
    assert assign_one_batch(batch, 2**63 - 3, -1) is not None
    assert assign_one_batch(batch, 2**63 - 2, -1) is None
    with pytest.raises(CorruptRecordError, match="overflows"):
        assign_offsets(bytearray(batch), 2**63 - 2)


def _leap_to(base: int, start: int | None = None) -> Prelude:
    """A prelude: the log, started at ``start`` if given, takes as a follower one batch of two
    records at ``base``; the leader's appends go on from there in the same segment."""

    def prelude(log: PartitionLog) -> None:
        if start is not None:
            log.truncate_fully_and_start_at(start)
        log.append_as_follower(build_batch([Record(None, b"f", 1_000_000)] * 2, base_offset=base))

    return prelude


@pytest.mark.parametrize("real", [False, True])
@pytest.mark.parametrize("start, base", [(None, 2**31 - 12), (2**63 - 40, 2**63 - 12)])
def test_append_as_leader_decides_as_the_general_path_at_the_offset_limits(
    real: bool, start: int | None, base: int
) -> None:
    # Batches of three records from 10 below a relative offset past int32 (the segment at 0
    # rolls: its largest offset is 2**31 - 1) or an offset past int64 (refused; the segment's
    # largest offset is int64's).
    requests = producer_stream(3, 1)[:6]
    go = run_real if real else run
    prelude = _leap_to(base, start)
    inline = go(requests, CONFIGS[1], "inline", None, prelude)
    assert inline == go(requests, CONFIGS[1], "one", None, prelude)
    assert inline == go(requests, CONFIGS[1], "general", None, prelude)
    answers = inline[0]
    if start is None:
        offsets = answers[-1]  # the log's offsets after the last request
        assert isinstance(offsets, tuple) and offsets[3] == [0, 2**31 - 1], "a roll at 2**31 - 1"
    else:
        assert any(isinstance(a, tuple) and a[0] is CorruptRecordError for a in answers)
