"""A segment finds its last appended batch from the bytes appended (``LogSegment.locate``).

While the last append to a segment was one whole batch and nothing cut it since, ``locate``
answers for the offsets of that batch from what the append knew of it instead of the offset
index and a header read. Each scenario compares every ``locate`` and ``read`` with the general path
(the same segment with the memo set aside) after every change: leader appends, follower appends
of several batches at once and of a ``bytearray``, truncations, rolls and a reopened log.
"""

from __future__ import annotations

from logwright.records import build_simple_batch
from logwright.storage.log import PartitionLog
from logwright.storage.segment import BatchLocation, LogSegment
from logwright.world import SimFileSystem, VirtualClock
from tests.storage_helpers import SMALL, TP

CLOCK = VirtualClock(1_000_000)


def general_locate(seg: LogSegment, offset: int) -> BatchLocation | None:
    memo, seg._last_append = seg._last_append, None
    try:
        return seg.locate(offset)
    finally:
        seg._last_append = memo


def general_read(seg: LogSegment, offset: int, max_bytes: int, limit: int,
                 min_one: bool) -> tuple[int, bytes]:
    memo, seg._last_append = seg._last_append, None
    try:
        return seg.read(offset, max_bytes, limit, min_one)
    finally:
        seg._last_append = memo


def check_everywhere(log: PartitionLog) -> int:
    """Every offset of every segment (and one past each end), located and read both ways; how
    many offsets the memo answered for."""
    used = 0
    for seg in log.segments:
        for offset in range(seg.base_offset - 1, seg.next_offset + 2):
            general = general_locate(seg, offset)
            located = seg.locate(offset)  # named: pytest's message for a compiled method fails
            assert located == general, (seg.base_offset, offset)
            memo = seg._last_append
            used += memo is not None and general is not None and general.position == memo[0]
            for max_bytes in (1, 100, 10_000):
                for limit in (offset, offset + 1, seg.next_offset):
                    for min_one in (True, False):
                        assert seg.read(offset, max_bytes, limit, min_one) == general_read(
                            seg, offset, max_bytes, limit, min_one), (offset, max_bytes, limit)
    return used


def values(n: int, seed: int) -> list[bytes]:
    return [bytes([seed % 256]) * ((seed * 7 + i * 13) % 60) for i in range(n)]


def test_the_last_batch_is_found_as_the_index_and_headers_find_it() -> None:
    fs = SimFileSystem(CLOCK)
    fs.makedirs("/d")
    leader = PartitionLog.create(fs, "/d/t-0", TP, SMALL, CLOCK)
    follower = PartitionLog.create(fs, "/d/f-0", TP, SMALL, CLOCK)
    used = 0
    for i in range(30):
        leader.append_as_leader(build_simple_batch(values(1 + i % 5, i), 1_000_000), 0)
        used += check_everywhere(leader)
    assert len(leader.segments) >= 3, "the scenario needs rolls"
    assert used > 0, "the memo was used"
    # A follower appends what it fetched: one batch, several at once, a bytearray.
    offset = 0
    step = 0
    while offset < leader.log_end_offset:
        data = leader.read(offset, 1 if step % 2 == 0 else 400, None).records
        follower.append_as_follower(bytearray(data) if step % 3 == 2 else data)
        offset = follower.log_end_offset
        step += 1
        check_everywhere(follower)
    assert any(s._last_append is not None for s in follower.segments), "a follower's too"
    # A truncation drops the memo with the batch; the next append sets it again.
    for log in (leader, follower):
        log.truncate_to(log.log_end_offset - 3)
        assert log.segments[-1]._last_append is None
        check_everywhere(log)
    leader.append_as_leader(build_simple_batch(values(2, 99), 1_000_000), 0)
    assert leader.segments[-1]._last_append is not None
    check_everywhere(leader)
    leader.close()
    reopened, _ = PartitionLog.load(fs, "/d/t-0", TP, SMALL, CLOCK, log_start_offset_checkpoint=0,
                                    recovery_point=0, high_watermark_checkpoint=0,
                                    clean_shutdown=False)
    assert all(s._last_append is None for s in reopened.segments)
    check_everywhere(reopened)


def test_a_memo_answering_for_another_batch_is_caught() -> None:
    """The comparison can fail: a memo holding the segment's first batch at the position of its
    second (as if it were the last) answers for the first batch's offsets wrongly."""
    fs = SimFileSystem(CLOCK)
    fs.makedirs("/d")
    log = PartitionLog.create(fs, "/d/t-0", TP, SMALL, CLOCK)
    first = build_simple_batch(values(3, 1), 1_000_000)
    log.append_as_leader(first, 0)
    log.append_as_leader(build_simple_batch(values(3, 2), 1_000_000), 0)
    seg = log.segments[-1]
    memo = seg._last_append
    assert memo is not None and memo[0] == len(first), "the second batch is the last append"
    seg._last_append = (memo[0], 0, 2, len(first))
    try:
        check_everywhere(log)
    except AssertionError:
        return
    raise AssertionError("a wrong memo went unnoticed")
