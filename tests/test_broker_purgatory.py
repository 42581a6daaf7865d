"""The purgatory: each delayed operation completes exactly once, by its condition or by its
timeout, and the number waiting is bounded."""

from __future__ import annotations

import pytest

from logwright.broker.purgatory import DelayedOperation, Purgatory, PurgatoryFull
from logwright.world import SimScheduler, VirtualClock


class WaitFor(DelayedOperation):
    """Completes when ``box[0]`` reaches ``target``."""

    def __init__(self, box: list[int], target: int, done: list[str]) -> None:
        super().__init__()
        self.box, self.target, self.done = box, target, done

    def try_complete(self) -> bool:
        return self.box[0] >= self.target and self.force_complete()

    def on_complete(self) -> None:
        self.done.append("expired" if self.expired else "met")


def test_operations_complete_once_by_condition_or_timeout() -> None:
    scheduler = SimScheduler(VirtualClock(0), seed=0)
    purgatory: Purgatory[WaitFor] = Purgatory("test", scheduler, max_operations=10)
    box = [0]
    done: list[str] = []
    assert purgatory.try_complete_else_watch(WaitFor([5], 1, done), ["k"], 100)
    assert done == ["met"] and len(purgatory) == 0, "met at once: never watched"
    slow = WaitFor(box, 3, done)
    fast = WaitFor(box, 1, done)
    assert not purgatory.try_complete_else_watch(slow, ["k"], 100)
    assert not purgatory.try_complete_else_watch(fast, ["k", "j"], 100)
    box[0] = 1
    assert purgatory.check_and_complete("k") == 1
    assert purgatory.check_and_complete("j") == 0, "already completed through another key"
    scheduler.advance(150)
    assert done == ["met", "met", "expired"] and purgatory.expired_count == 1
    box[0] = 9
    assert purgatory.check_and_complete("k") == 0 and done[-1] == "expired"
    assert len(purgatory) == 0


def test_the_purgatory_is_bounded() -> None:
    scheduler = SimScheduler(VirtualClock(0), seed=0)
    purgatory: Purgatory[WaitFor] = Purgatory("test", scheduler, max_operations=2)
    done: list[str] = []
    for _ in range(2):
        purgatory.try_complete_else_watch(WaitFor([0], 1, done), ["k"], 100)
    with pytest.raises(PurgatoryFull):
        purgatory.try_complete_else_watch(WaitFor([0], 1, done), ["k"], 100)
    purgatory.cancel_all()
    scheduler.advance(200)
    assert done == [], "cancelled operations are never answered"


@pytest.mark.parametrize("timeouts", [[100], [100, 250], [30, 30, 400]])
def test_an_operation_expires_at_its_timeout_and_a_completed_ones_timer_is_cancelled(
        timeouts: list[int]) -> None:
    scheduler = SimScheduler(VirtualClock(0), seed=0)
    purgatory: Purgatory[WaitFor] = Purgatory("test", scheduler, max_operations=10)
    done: list[str] = []
    boxes = [[0] for _ in timeouts]
    ops = [WaitFor(box, 1, done) for box in boxes]
    for op, timeout in zip(ops, timeouts, strict=True):
        assert not purgatory.try_complete_else_watch(op, [id(op)], timeout)
    assert len(scheduler.pending()) == len(timeouts), "one expiry timer each"
    first = min(timeouts)
    scheduler.advance(first - 1)
    assert done == [] and purgatory.expired_count == 0, "not before its timeout"
    scheduler.advance(1)
    expired = timeouts.count(first)
    assert done == ["expired"] * expired and purgatory.expired_count == expired
    for op, box in zip(ops, boxes, strict=True):  # the others complete by their condition
        box[0] = 1
        purgatory.check_and_complete(id(op))
    assert done == ["expired"] * expired + ["met"] * (len(timeouts) - expired)
    assert scheduler.pending() == [], "a completed operation's timer is cancelled"
    scheduler.advance(1_000)
    assert purgatory.expired_count == expired
