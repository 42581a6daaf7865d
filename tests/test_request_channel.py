"""The request channel (protocol/channel.py) over a real SimNetwork and SimScheduler."""

from __future__ import annotations

import random

import pytest

from logwright.errors import Errors
from logwright.protocol.channel import RequestChannel, WhenFull
from logwright.protocol.messages import Message, StopReplicaRequest, StopReplicaResponse
from logwright.world import SimScheduler, VirtualClock
from logwright.world.network import SimNetwork


class Echo:
    """A node that answers every StopReplica (unless ``silent``) and records what arrives."""

    def __init__(self, node_id: str, net: SimNetwork) -> None:
        self.node_id = node_id
        self.net = net
        self.silent = False
        self.received: list[Message] = []

    def receive(self, src: str, message: object) -> None:
        assert isinstance(message, Message)
        self.received.append(message)
        if not self.silent:
            self.net.send(self.node_id, src, StopReplicaResponse(message.correlation_id,
                                                                 Errors.NONE))


class Sender:
    """The node owning the channel: hands every message to it, keeps what it did not match."""

    def __init__(self, channel: RequestChannel) -> None:
        self.node_id = channel.node_id
        self.channel = channel
        self.unmatched: list[Message] = []

    def receive(self, src: str, message: object) -> None:
        assert isinstance(message, Message)
        if not self.channel.receive(src, message):
            self.unmatched.append(message)


def world(seed: int = 0, duplicate_rate: float = 0.0) -> tuple[SimScheduler, SimNetwork]:
    sched = SimScheduler(VirtualClock(), seed=seed)
    return sched, SimNetwork(sched, seed=seed, duplicate_rate=duplicate_rate)


def stop(correlation_id: int) -> StopReplicaRequest:
    return StopReplicaRequest(correlation_id, 0, 1, 1, ())


def channel_for(sched: SimScheduler, net: SimNetwork, max_pending: int = 100_000,
                when_full: WhenFull = "refuse") -> Sender:
    channel = RequestChannel("controller-0", net, sched, first_correlation_id=0,
                             max_pending=max_pending, when_full=when_full)
    sender = Sender(channel)
    net.register(sender)
    for b in (1, 2):
        net.register(Echo(f"broker-{b}", net))
    return sender


@pytest.mark.parametrize("seed", range(5))
def test_each_callback_runs_once_with_the_answer_even_when_duplicated(seed: int) -> None:
    sched, net = world(seed, duplicate_rate=0.5)
    sender = channel_for(sched, net)
    answers: list[tuple[int, Message | None]] = []
    for i in range(20):
        channel = sender.channel
        correlation_id = channel.next_correlation_id()
        channel.send_request(f"broker-{1 + i % 2}", stop(correlation_id),
                             lambda a, c=correlation_id: answers.append((c, a)), 1_000)
    sched.advance(5_000)
    assert sorted(c for c, _ in answers) == list(range(1, 21))
    assert all(a is not None and a.correlation_id == c for c, a in answers)
    assert sender.channel.pending_count == 0 and sender.channel.timeouts == 0
    # Every duplicate found no callback and was handed back as unmatched.
    assert all(m.correlation_id in range(1, 21) for m in sender.unmatched)


def test_no_answer_times_out_once_and_no_timer_means_waiting_until_forgotten() -> None:
    sched, net = world()
    sender = channel_for(sched, net)
    net.endpoints["broker-1"].silent = True  # type: ignore[attr-defined]
    channel = sender.channel
    answers: list[Message | None] = []
    channel.send_request("broker-1", stop(channel.next_correlation_id()), answers.append, 500)
    channel.send_request("broker-1", stop(channel.next_correlation_id()), answers.append, None)
    sched.advance(10_000)
    assert answers == [None] and channel.timeouts == 1 and channel.pending_count == 1
    assert channel.request(2) == stop(2) and channel.request(1) is None
    assert channel.forget("broker-2") == 0 and channel.forget("broker-1") == 1
    assert channel.pending_count == 0 and sched.pending() == []


def test_an_answer_from_another_node_is_not_taken() -> None:
    sched, net = world()
    sender = channel_for(sched, net)
    channel = sender.channel
    answers: list[Message | None] = []
    channel.send_request("broker-1", stop(channel.next_correlation_id()), answers.append, None)
    assert not channel.receive("broker-2", StopReplicaResponse(1, Errors.NONE))
    assert channel.receive("broker-1", StopReplicaResponse(1, Errors.NONE))
    assert answers == [StopReplicaResponse(1, Errors.NONE)]
    assert not channel.receive("broker-1", StopReplicaResponse(1, Errors.NONE))


def test_the_bound_forgets_the_oldest_or_refuses() -> None:
    sched, net = world()
    sender = channel_for(sched, net, max_pending=3, when_full="forget_oldest")
    channel = sender.channel
    for _ in range(5):
        channel.send_request("broker-1", stop(channel.next_correlation_id()),
                             lambda a: None, 1_000)
    assert channel.pending_count == 3
    assert [channel.request(c) is not None for c in range(1, 6)] == [False] * 2 + [True] * 3
    # Forgotten requests' timers are cancelled: only the three kept remain scheduled.
    assert sum("request timeout" in t.name for t in sched.pending()) == 3
    refusing = RequestChannel("broker-9", net, sched, random.Random(1), max_pending=1)
    refusing.send("broker-1", stop, lambda a: None, 1_000)
    with pytest.raises(AssertionError):
        refusing.send("broker-1", stop, lambda a: None, 1_000)


def test_ids_come_from_exactly_one_base_and_must_be_fresh() -> None:
    sched, net = world()
    with pytest.raises(AssertionError):
        RequestChannel("x", net, sched)
    with pytest.raises(AssertionError):
        RequestChannel("x", net, sched, random.Random(0), first_correlation_id=0)
    drawn = [RequestChannel("x", net, sched, random.Random(s)).next_correlation_id()
             for s in (1, 1, 2)]
    assert drawn[0] == drawn[1] != drawn[2]
    channel = RequestChannel("x", net, sched, first_correlation_id=41)
    assert channel.next_correlation_id() == 42
    with pytest.raises(AssertionError):
        channel.send_request("broker-1", stop(43), lambda a: None, None)  # never handed out


def test_closed_channel_sends_nothing_and_calls_nothing_back() -> None:
    sched, net = world()
    sender = channel_for(sched, net)
    channel = sender.channel
    answers: list[Message | None] = []
    channel.send("broker-1", stop, answers.append, 1_000)
    channel.close()
    assert channel.send("broker-1", stop, answers.append, 1_000) == -1
    sched.advance(5_000)
    assert answers == [] and net.endpoints["broker-1"].received == [stop(1)]  # type: ignore[attr-defined]
