"""The leader's view of its followers on one partition (broker/partition.py), driven directly over
a real log: when a follower counts as caught up, when it falls out of sync, and what the high
watermark may advance to. Boundaries and orders the cluster tests pass over without looking
(found by `make mutmut`)."""

from __future__ import annotations

import pytest

from logwright.broker.partition import Partition, PendingIsrChange, Role
from logwright.protocol import LeaderAndIsrPartitionState
from logwright.storage.naming import Uuid
from tests.storage_helpers import TP, batch, new_log, world

LAG = 10_000
T = 5_000_000


def leader(isr: tuple[int, ...] = (1, 2, 3), replicas: tuple[int, ...] = (1, 2, 3),
           records: int = 4, lineage_recorded: bool = True) -> Partition:
    """A leader in epoch 0 with ``records`` records; ``lineage_recorded``: the controller has
    answered its RecordLineage (the replica manager sets ``lineage_epoch`` then)."""
    fs, clock = world()
    log = new_log(fs, clock)
    p = Partition(TP, 1, log)
    st = LeaderAndIsrPartitionState(TP, Uuid(bytes(range(16))), 1, 1, 0, isr, 0, replicas)
    assert p.make_leader(st, T)
    assert p.lineage_epoch == -1
    if lineage_recorded:
        p.lineage_epoch = p.leader_epoch
    for n in range(records):
        log.append_as_leader(batch(b"v%d" % n), leader_epoch=0)
    return p


@pytest.mark.parametrize("silent_ms, dropped", [
    (0, False), (LAG - 1, False), (LAG, False), (LAG + 1, True), (3 * LAG, True)])
def test_an_isr_member_is_out_of_sync_only_after_more_than_the_lag_time(
        silent_ms: int, dropped: bool) -> None:
    """replica.lag.time.max.ms is the longest a member may go without catching up: exactly that
    long is still in sync (Kafka compares with >)."""
    p = leader()
    for r in (2, 3):
        p.update_follower_fetch_state(r, p.log_end_offset, 0, T)
    assert p.out_of_sync_replicas(T + silent_ms, LAG) == ([2, 3] if dropped else [])


def test_a_new_leader_gives_its_isr_the_full_lag_time_and_never_lists_itself() -> None:
    p = leader(isr=(1, 2), replicas=(1, 2, 3))
    assert p.out_of_sync_replicas(T + LAG, LAG) == []
    assert p.out_of_sync_replicas(T + LAG + 1, LAG) == [2]
    assert p.role is Role.LEADER and 1 not in p.followers


def test_a_fetch_at_the_leaders_end_catches_up_now_one_that_reaches_the_previous_end_then() -> None:
    p = leader(isr=(1, 2), replicas=(1, 2))
    end = p.log_end_offset
    p.update_follower_fetch_state(2, end - 2, 0, T + 100)     # behind: not caught up
    assert p.followers[2].last_caught_up_time_ms == T         # the new leader's grace
    p.log.append_as_leader(batch(b"x"), leader_epoch=0)
    # Reaches what the leader's end was at its previous fetch: caught up as of that fetch.
    p.update_follower_fetch_state(2, end, 0, T + 200)
    assert p.followers[2].last_caught_up_time_ms == T + 100
    assert p.followers[2].log_end_offset == end
    # Below the previous fetch's leader end: no change.
    p.update_follower_fetch_state(2, end - 1, 7, T + 300)
    assert p.followers[2].last_caught_up_time_ms == T + 100
    assert p.followers[2].log_start_offset == 7
    # At the leader's end: caught up now.
    p.update_follower_fetch_state(2, p.log_end_offset, 0, T + 400)
    assert p.followers[2].last_caught_up_time_ms == T + 400
    # A fetch never moves the caught-up time back.
    p.update_follower_fetch_state(2, p.log_end_offset, 0, T + 350)
    assert p.followers[2].last_caught_up_time_ms == T + 400
    # A replica the leader does not know is ignored.
    p.update_follower_fetch_state(9, 0, 0, T + 500)
    assert 9 not in p.followers


@pytest.mark.parametrize("leos, expected", [
    ({2: 3, 3: 1}, 1), ({2: 4, 3: 4}, 4), ({2: 2}, None), ({}, None), ({2: 0, 3: 4}, 0)])
def test_the_high_watermark_candidate_is_the_smallest_end_over_the_isr(
        leos: dict[int, int], expected: int | None) -> None:
    p = leader()
    for r, leo in leos.items():
        p.update_follower_fetch_state(r, leo, 0, T)
    assert p.high_watermark_candidate() == expected
    moved = p.maybe_increment_high_watermark()
    assert moved == (expected is not None and expected > 0)
    assert p.high_watermark == (expected or 0)


def test_the_high_watermark_counts_a_pending_expansion_not_replicas_outside_the_isr() -> None:
    p = leader(isr=(1, 2), replicas=(1, 2, 3))
    p.update_follower_fetch_state(2, 4, 0, T)
    p.update_follower_fetch_state(3, 1, 0, T)
    assert p.high_watermark_candidate() == 4                # 3 is outside the ISR
    p.pending_isr = PendingIsrChange((1, 2, 3), 0, 1)
    assert p.maximal_isr == (1, 2, 3)
    assert p.high_watermark_candidate() == 1                # ...unless it may be in it
    p.pending_isr = PendingIsrChange((1, 2), 0, 1)          # a shrink in flight: no change
    assert p.maximal_isr == (1, 2) and p.high_watermark_candidate() == 4


def test_the_high_watermark_waits_for_the_controller_to_record_the_epoch_s_lineage() -> None:
    p = leader(isr=(1, 2), replicas=(1, 2), lineage_recorded=False)
    p.update_follower_fetch_state(2, 3, 0, T)
    assert p.high_watermark_candidate() == 3
    assert not p.maybe_increment_high_watermark() and p.high_watermark == 0
    p.lineage_epoch = p.leader_epoch - 1  # an older epoch's lineage does not count
    assert not p.maybe_increment_high_watermark() and p.high_watermark == 0
    p.lineage_epoch = p.leader_epoch
    assert p.maybe_increment_high_watermark() and p.high_watermark == 3


def test_the_high_watermark_never_moves_back_nor_on_a_follower() -> None:
    p = leader(isr=(1, 2), replicas=(1, 2))
    p.update_follower_fetch_state(2, 3, 0, T)
    assert p.maybe_increment_high_watermark() and p.high_watermark == 3
    assert not p.maybe_increment_high_watermark()            # equal: no move
    p.followers[2].log_end_offset = 1
    assert not p.maybe_increment_high_watermark() and p.high_watermark == 3
    p.followers[2].log_end_offset = 4
    p.role = Role.FOLLOWER
    assert not p.maybe_increment_high_watermark() and p.high_watermark == 3


@pytest.mark.parametrize("follower_leo, joins", [(1, False), (2, True), (4, True)])
def test_a_follower_joins_the_isr_once_at_the_high_watermark_and_the_epochs_start(
        follower_leo: int, joins: bool) -> None:
    p = leader(isr=(1, 2), replicas=(1, 2, 3))
    p.update_follower_fetch_state(2, 2, 0, T)
    assert p.maybe_increment_high_watermark() and p.high_watermark == 2
    p.update_follower_fetch_state(3, follower_leo, 0, T, p.leader_epoch)
    assert p.replicas_to_add_to_isr() == ([3] if joins else [])
    # The start of the leader's epoch bounds it too (it may lie above the high watermark).
    p.leader_epoch_start_offset = follower_leo + 1
    assert p.replicas_to_add_to_isr() == []
    p.leader_epoch_start_offset = follower_leo
    assert p.replicas_to_add_to_isr() == ([3] if joins else [])
    # So does the epoch its cache has reached: not before it recorded the leader's epoch.
    p.update_follower_fetch_state(3, follower_leo, 0, T, p.leader_epoch - 1)
    assert p.replicas_to_add_to_isr() == []


def test_under_replication_is_a_leaders_isr_smaller_than_its_replicas() -> None:
    assert leader(isr=(1, 2), replicas=(1, 2, 3)).is_under_replicated
    assert not leader(isr=(1, 2, 3), replicas=(1, 2, 3)).is_under_replicated
    p = leader(isr=(1, 2), replicas=(1, 2, 3))
    p.role = Role.FOLLOWER
    assert not p.is_under_replicated


def test_the_isr_floor_starts_at_the_leaders_durable_start_and_rises_with_acknowledgements(
        ) -> None:
    """Beyond Kafka (the LogStartOffset model's isrFloor): a follower joins the ISR only with a
    reported start offset at least the floor, which is the leader's durable start offset when
    its leadership began, raised to each low watermark a DeleteRecords was acknowledged with.
    It is not the leader's current start offset: a follower one retention pass behind joins."""
    p = leader(isr=(1, 2), replicas=(1, 2, 3))
    assert p.isr_floor == 0
    p.update_follower_fetch_state(2, 4, 0, T, p.leader_epoch)
    assert p.maybe_increment_high_watermark() and p.high_watermark == 4
    p.log.increment_log_start_offset(2)                     # retention, not acknowledged
    p.check_offsets()
    p.update_follower_fetch_state(3, 4, 0, T, p.leader_epoch)
    assert p.replicas_to_add_to_isr() == [3]                # start 0 >= floor 0
    p.raise_isr_floor(2)                                    # a deletion acknowledged at 2
    assert p.isr_floor == 2
    for start, joins in ((0, False), (1, False), (2, True), (3, True)):
        p.update_follower_fetch_state(3, 4, start, T, p.leader_epoch)
        assert p.replicas_to_add_to_isr() == ([3] if joins else []), start
    p.raise_isr_floor(1)                                    # never lowered
    assert p.isr_floor == 2
    # A new leadership starts again from the durable start offset, here 2.
    st = LeaderAndIsrPartitionState(TP, Uuid(bytes(range(16))), 1, 1, 1, (1, 2), 1, (1, 2, 3))
    p.log.increment_log_start_offset(3)
    assert p.make_leader(st, T) and p.isr_floor == 3
    p.update_follower_fetch_state(3, 4, 2, T, p.leader_epoch)
    assert p.replicas_to_add_to_isr() == []


def test_a_follower_that_never_reported_its_start_offset_stays_out() -> None:
    p = leader(isr=(1, 2), replicas=(1, 2, 3))
    p.followers[3].log_end_offset = 4
    assert p.followers[3].log_start_offset < 0
    assert p.replicas_to_add_to_isr() == []


def test_the_isr_floor_is_never_above_the_leaders_durable_start_offset() -> None:
    p = leader()
    p.raise_isr_floor(1)
    with pytest.raises(AssertionError, match="ISR floor"):
        p.check_offsets()


@pytest.mark.parametrize("floor, start, end, hw", [
    (0, 0, 4, 0),    # nothing reported above its own start: unchanged
    (2, 2, 4, 2),    # inside the log, above its HW: the HW rises to it first
    (4, 4, 4, 4),    # at its end: every record gone
    (7, 7, 7, 7),    # beyond its end: restarts empty there
])
def test_a_leader_starts_its_log_at_the_start_offset_a_recovery_election_reported(
        floor: int, start: int, end: int, hw: int) -> None:
    """traces/regressions/0031: a leader made by a LeaderAndIsr carrying
    ``leader_log_start_offset`` starts its log there at least (durably, before its epoch's
    start is recorded), however its log compares with it."""
    fs, clock = world()
    log = new_log(fs, clock)
    for n in range(4):
        log.append_as_leader(batch(b"v%d" % n), leader_epoch=0)
    p = Partition(TP, 1, log)
    st = LeaderAndIsrPartitionState(TP, Uuid(bytes(range(16))), 1, 1, 1, (1,), 0, (1, 2, 3),
                                    leader_log_start_offset=floor)
    assert p.make_leader(st, T)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (start, end, hw)
    assert log.leader_epoch_cache.latest_epoch == 1
