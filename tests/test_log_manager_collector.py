"""Start-up pauses the cyclic garbage collector while it loads the logs, and leaves it as it
found it: on if it was on, off if it was off, after a pause inside a pause, after an error;
objects frozen before stay frozen. What the pause made and keeps ends in the oldest generation,
and the garbage cycles it made are freed at its end by a collection of the young and middle
generations."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from random import Random

import pytest

from logwright.logmanager import LogManager
from logwright.logmanager.collector import collector_paused
from logwright.storage.naming import TopicPartition
from logwright.world import SimFileSystem, SimScheduler, VirtualClock


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_off_inside_and_on_again_after() -> None:
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()


def test_an_error_inside_still_turns_it_back_on() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_start_up_leaves_the_collector_on() -> None:
    clock = VirtualClock(1_000_000)
    fs = SimFileSystem(clock)
    fs.makedirs("/d1")
    manager = LogManager(fs, ["/d1"], clock, SimScheduler(clock, seed=0), None, Random(0))
    manager.startup()
    manager.create_log(TopicPartition("t", 0))
    manager.shutdown()
    gc.enable()
    again = LogManager(fs, ["/d1"], clock, SimScheduler(clock, seed=0), None, Random(0))
    again.startup()
    assert gc.isenabled()
    assert again.get_log(TopicPartition("t", 0)) is not None


class _Node:
    def __init__(self) -> None:
        self.other: object = None


def _cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_what_the_pause_made_goes_to_the_oldest_generation_and_its_garbage_is_freed() -> None:
    """One collection of the young and middle generations at the end of the pause: what
    survives is in the oldest generation, and a garbage cycle made in the pause is freed there
    and then. (Moved with ``gc.freeze()``/``gc.unfreeze()`` instead, without that pass, such
    cycles waited for a full collection, which the move kept from coming: a fuzz campaign's
    start-ups piled up a million of them.)"""
    gc.enable()
    assert gc.get_freeze_count() == 0
    with collector_paused():
        kept = _Node()
        kept.other = [kept]
        dead = _cycle()
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert _in_generation(kept, 2) and not _in_generation(kept, 0)
    assert dead() is None
    assert kept.other == [kept]


def test_repeated_pauses_leave_no_garbage_behind() -> None:
    """Many short pauses, each making garbage cycles (a campaign's broker start-ups): none of
    them is left for a full collection to find."""
    gc.enable()
    for _ in range(200):
        with collector_paused():
            refs = [_cycle() for _ in range(50)]
        assert all(r() is None for r in refs)


def test_objects_frozen_before_stay_frozen_and_the_pause_collects_as_before() -> None:
    gc.enable()
    mine = _Node()
    mine.other = [mine]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with collector_paused():
            dead = _cycle()
        # Nothing frozen by the pause, and nothing thawed (that would empty the permanent
        # generation); the count may fall if a frozen object dies meanwhile (another thread's).
        assert 0 < gc.get_freeze_count() <= frozen
        assert not _in_generation(mine, 2)
        assert dead() is None  # the collection of the young and middle generations freed it
    finally:
        gc.unfreeze()
