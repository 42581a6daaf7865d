"""The partition states a reassignment goes through (KIP-455's shape, controller/reassignment.py):
its start keeps the leader and adds the new replicas with their dirs, its end keeps a live
target leader or elects the first live target replica; each is one new leader epoch and one
new partition epoch (found by `make mutmut`: only whole-cluster runs reached these)."""

from __future__ import annotations

import random

import pytest

from logwright.controller.reassignment import (
    PartitionMove,
    begin_reassignment,
    complete_reassignment,
)
from logwright.controller.store.records import NO_LEADER, PartitionState, PendingReassignment
from logwright.identity import TopicPartition, Uuid

TP = TopicPartition("t", 0)
TID = Uuid.from_random(random.Random(1))


def _state(replicas: tuple[int, ...], isr: tuple[int, ...], leader: int,
           dirs: tuple[str, ...] = ()) -> PartitionState:
    return PartitionState(TP, TID, replicas, isr, leader, leader_epoch=4, partition_epoch=7,
                          target_log_dirs=dirs)


def test_the_start_of_a_move_adds_the_new_replicas_and_keeps_the_old_ones_dirs() -> None:
    state = _state((1, 2), (1, 2), 1, dirs=("/d1/a", "/d2/b"))
    move = PartitionMove(TP, (2, 3), ("any", "/d3/c"))
    during = begin_reassignment(state, move)
    assert during.replicas == (1, 2, 3)
    assert (during.adding_replicas, during.removing_replicas) == ((3,), (1,))
    assert during.target_log_dirs == ("/d1/a", "any", "/d3/c"), \
        "the replica leaving keeps its dir; the others take the move's"
    assert (during.leader, during.isr) == (1, (1, 2))
    assert (during.leader_epoch, during.partition_epoch) == (5, 8)


@pytest.mark.parametrize(("leader", "live", "expected"), [
    (2, {1, 2, 3}, 2),          # a live target leader stays
    (2, {1, 3}, 3),             # a target leader that is down is replaced
    (1, {1, 2, 3}, 3),          # a leader leaving: the first live target replica, in order
    (1, {1, 2}, 2),
    (1, {1}, NO_LEADER),        # no live target replica: no leader
])
def test_the_end_of_a_move_keeps_or_elects_a_live_target_leader(
        leader: int, live: set[int], expected: int) -> None:
    state = _state((1, 2, 3), (1, 2, 3), leader)
    done = complete_reassignment(state, PendingReassignment(TP, (3, 2), ("any", "any")), live)
    assert done.leader == expected
    assert (done.replicas, done.isr) == ((3, 2), (2, 3))
    assert (done.adding_replicas, done.removing_replicas) == ((), ())
    assert (done.leader_epoch, done.partition_epoch) == (5, 8)
