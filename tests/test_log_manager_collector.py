"""Start-up pauses the cyclic garbage collector while it loads the logs, and leaves it as it
found it: on if it was on, off if it was off, after a pause inside a pause, after an error."""

from __future__ import annotations

import gc
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
