"""A broker's decisions alone: ``Broker.handle`` changes the broker's state and returns its
effects (responses, requests, timers), performing none; the driver performs them over the world.

The brokers are real, on the simulated world of ``test_broker_harness``; a decision is driven by
calling ``handle`` (or ``driver.decide``) without running the scheduler, so nothing reaches the
network unless the test performs the effects.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from logwright.broker import Broker, BrokerState
from logwright.broker.effects import ArmTask, Call, CancelTask, Effect, Notify, Send
from logwright.errors import Errors
from logwright.identity import TopicPartition, Uuid
from logwright.protocol import (
    NO_EPOCH,
    AlterPartitionRequest,
    BrokerHeartbeat,
    BrokerRegistrationResponse,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrType,
    ProduceRequest,
    ProduceResponse,
    RecordLineageRequest,
    UpdateMetadataResponse,
)
from logwright.records import build_simple_batch
from tests.test_broker_harness import T0, T1, World, state

CLIENT = "client-1"
CONTROLLER = "controller-1"


def produce_request(w: World, correlation_id: int, acks: int, tp: TopicPartition = T0,
                    values: tuple[bytes, ...] = (b"a", b"b"), timeout_ms: int = 30_000
                    ) -> ProduceRequest:
    records = build_simple_batch(list(values), w.clock.now_ms())
    return ProduceRequest(correlation_id, acks, timeout_ms, ((tp, records),))


def follower_fetch(correlation_id: int, replica_id: int, broker_epoch: int, offset: int,
                   tp: TopicPartition = T0) -> FetchRequest:
    return FetchRequest(correlation_id, replica_id, broker_epoch, 0, 1, 1 << 20,
                        (FetchPartition(tp, NO_EPOCH, offset, 0, 1 << 20),))


class Untouched:
    """Asserts that nothing reached the network or the scheduler meanwhile."""

    def __init__(self, w: World) -> None:
        self.w = w
        self.sent = w.network.stats.sent
        self.tasks = {id(t) for t in w.scheduler.pending()}

    def check(self) -> None:
        assert self.w.network.stats.sent == self.sent, "a decision sent a message itself"
        new = [t.name for t in self.w.scheduler.pending() if id(t) not in self.tasks]
        assert not new, f"a decision armed a timer itself: {new}"


def leader_alone(isr: tuple[int, ...] = (1,)) -> tuple[World, Broker]:
    """Broker 1 leads T0 (and T1) with ``isr``; only broker 1 runs."""
    w = World(broker_ids=(1,))
    w.assign(T0, 1, 1, isr)
    w.assign(T1, 1, 1, isr)
    w.run(100)
    return w, w.brokers[1]


# ---- client requests ----------------------------------------------------------------------------


@pytest.mark.parametrize("acks", [1, -1])
def test_a_produce_answered_at_once_is_one_send_and_nothing_performed(acks: int) -> None:
    w, b = leader_alone()
    untouched = Untouched(w)
    effects = b.handle(CLIENT, produce_request(w, 41, acks))
    untouched.check()
    assert len(effects) == 1 and isinstance(effects[0], Send)
    send = effects[0]
    assert send.dst == CLIENT and isinstance(send.message, ProduceResponse)
    assert send.message.correlation_id == 41
    assert [(r.error, r.base_offset) for r in send.message.partitions] == [(Errors.NONE, 0)]
    # The decision changed the broker's own state: the records are in the log already.
    assert b.replica_manager.partitions[T0].log_end_offset == 2
    b.driver.perform(effects)
    assert w.run_until(lambda: 41 in w.client.responses, 100)
    assert w.client.responses[41] == send.message


@pytest.mark.parametrize("acks, errors", [(0, None), (2, [Errors.INVALID_REQUEST])])
def test_acks_zero_decides_no_answer_and_bad_acks_an_error(acks: int,
                                                          errors: list[Errors] | None) -> None:
    w, b = leader_alone()
    untouched = Untouched(w)
    effects = b.handle(CLIENT, produce_request(w, 7, acks))
    untouched.check()
    if errors is None:
        assert effects == []
        assert b.replica_manager.partitions[T0].log_end_offset == 2
    else:
        [send] = effects
        assert isinstance(send, Send) and isinstance(send.message, ProduceResponse)
        assert [r.error for r in send.message.partitions] == errors
        assert b.replica_manager.partitions[T0].log_end_offset == 0


def test_a_waiting_produce_is_a_timer_and_its_answer_comes_with_the_follower_fetch() -> None:
    w, b = leader_alone(isr=(1, 2))  # broker 2 never runs: the test plays its fetcher
    untouched = Untouched(w)
    parked = b.handle(CLIENT, produce_request(w, 5, -1))
    untouched.check()
    [timer] = parked
    assert isinstance(timer, ArmTask) and timer.delay_ms == 30_000
    assert timer.key.startswith("produce-expiry")
    # The follower fetches past the records: the high watermark moves, the produce completes.
    # Its answer, the timer's cancellation and the fetch's own answer are one decision's
    # effects, in the order they were decided.
    effects = b.handle("broker-2", follower_fetch(9, 2, 500, offset=2))
    untouched.check()
    assert [type(e) for e in effects] == [CancelTask, Send, Send]
    cancel, produce_answer, fetch_answer = effects
    assert isinstance(cancel, CancelTask) and cancel.key == timer.key
    assert isinstance(produce_answer, Send) and produce_answer.dst == CLIENT
    assert isinstance(produce_answer.message, ProduceResponse)
    assert [r.error for r in produce_answer.message.partitions] == [Errors.NONE]
    assert isinstance(fetch_answer, Send) and fetch_answer.dst == "broker-2"
    assert isinstance(fetch_answer.message, FetchResponse)
    assert fetch_answer.message.partitions[0].high_watermark == 2
    assert b.replica_manager.partitions[T0].high_watermark == 2
    b.driver.perform(parked + effects)
    assert not [t for t in w.scheduler.pending() if "produce-expiry" in t.name], \
        "the cancelled expiry timer is gone from the scheduler"


def test_a_long_poll_fetch_is_answered_within_the_produce_that_feeds_it() -> None:
    w, b = leader_alone()
    consumer = FetchRequest(8, -1, -1, 500, 1, 1 << 20, (FetchPartition(T0, NO_EPOCH, 0, -1,
                                                                        1 << 20),))
    [timer] = b.handle("client-2", consumer)
    assert isinstance(timer, ArmTask) and timer.key.startswith("fetch-expiry")
    assert timer.delay_ms == 500
    effects = b.handle(CLIENT, produce_request(w, 9, 1, values=(b"x",)))
    assert [type(e) for e in effects] == [CancelTask, Send, Send]
    _, fetched, produced = effects
    assert isinstance(fetched, Send) and fetched.dst == "client-2"
    assert isinstance(fetched.message, FetchResponse) and fetched.message.correlation_id == 8
    assert fetched.message.partitions[0].records, "the consumer gets the record just appended"
    assert isinstance(produced, Send) and isinstance(produced.message, ProduceResponse)
    # Left alone, the long poll expires through the driver with an empty answer.
    [timer] = b.handle(CLIENT, FetchRequest(10, -1, -1, 500, 1, 1 << 20, (
        FetchPartition(T0, NO_EPOCH, 1, -1, 1 << 20),)))
    b.driver.perform([timer])
    w.run(499)
    assert 10 not in w.client.responses
    assert w.run_until(lambda: 10 in w.client.responses, 100)
    late = w.client.responses[10]
    assert isinstance(late, FetchResponse)
    assert [(d.error, d.records) for d in late.partitions] == [(Errors.NONE, b"")]


def test_a_waiting_produce_times_out_through_the_driver() -> None:
    w, b = leader_alone(isr=(1, 2))
    effects = b.handle(CLIENT, produce_request(w, 5, -1, timeout_ms=1_000))
    b.driver.perform(effects)
    assert any(t.name.startswith("broker-1 produce-expiry") for t in w.scheduler.pending())
    w.run(999)
    assert 5 not in w.client.responses
    assert w.run_until(lambda: 5 in w.client.responses, 100)
    answer = w.client.responses[5]
    assert isinstance(answer, ProduceResponse)
    assert [r.error for r in answer.partitions] == [Errors.REQUEST_TIMED_OUT]



def test_a_produce_that_times_out_answers_every_partition_each_with_its_own_outcome() -> None:
    """One request, three partitions: one not led here (refused at once), the one that waits
    for the ISR, and one that cannot be appended (unknown): the answer, when the wait expires,
    lists each in the request's order with its own error, the timed-out one with a message."""
    w, b = leader_alone(isr=(1, 2))
    records = build_simple_batch([b"a"], w.clock.now_ms())
    other, unknown = TopicPartition("other", 0), TopicPartition("t", 9)
    request = ProduceRequest(6, -1, 1_000, ((other, records), (T0, records), (unknown, records)))
    b.driver.perform(b.handle(CLIENT, request))
    assert w.run_until(lambda: 6 in w.client.responses, 1_100)
    answer = w.client.responses[6]
    assert isinstance(answer, ProduceResponse)
    assert [r.tp for r in answer.partitions] == [other, T0, unknown]
    refused, timed_out, missing = answer.partitions
    assert refused.error is not Errors.NONE and missing.error is not Errors.NONE
    assert timed_out.error is Errors.REQUEST_TIMED_OUT
    assert "ISR" in timed_out.error_message and timed_out.base_offset == -1


@pytest.mark.parametrize("how", ["re-created", "not in a FULL request"])
def test_a_waiting_produce_is_answered_at_once_when_its_log_is_set_aside_as_a_stray(
        how: str) -> None:
    """The topic was re-created (a LeaderAndIsr names T0 under another topic id), or deleted
    while this broker missed the StopReplica (a FULL LeaderAndIsr leaves T0 out): the log an
    acks=all produce waits on goes aside as a stray. The produce is answered then, not at its
    timeout (the other partition's waiting produce still waits)."""
    w, b = leader_alone(isr=(1, 2))
    b.driver.perform(b.handle(CLIENT, produce_request(w, 7, -1, timeout_ms=30_000)))
    b.driver.perform(b.handle(CLIENT, produce_request(w, 8, -1, tp=T1, timeout_ms=30_000)))
    w.run(100)
    assert 7 not in w.client.responses and 8 not in w.client.responses
    if how == "re-created":
        new_id = Uuid.from_random(random.Random(11))
        w.controller.leader_and_isr(1, [dataclasses.replace(state(T0, 1, 2, (1, 2)),
                                                           topic_id=new_id)])
    else:
        w.controller.leader_and_isr(1, [state(T1, 1, 1, (1, 2))], full=True)
    assert w.run_until(lambda: 7 in w.client.responses, 1_000), "answered at its timeout only"
    answer = w.client.responses[7]
    assert isinstance(answer, ProduceResponse)
    assert answer.partitions[0].error is not Errors.NONE
    assert 8 not in w.client.responses

def test_a_produce_to_a_partition_not_led_here_decides_an_error_only() -> None:
    w, b = leader_alone()
    untouched = Untouched(w)
    [send] = b.handle(CLIENT, produce_request(w, 3, -1, tp=TopicPartition("other", 0)))
    untouched.check()
    assert isinstance(send, Send) and isinstance(send.message, ProduceResponse)
    assert [r.error for r in send.message.partitions] == [Errors.UNKNOWN_TOPIC_OR_PARTITION]


# ---- control requests and the broker's own requests ---------------------------------------------


def test_a_fenced_control_request_decides_its_error_answer_and_changes_nothing() -> None:
    w, b = leader_alone()
    before = (b.controller_epoch, b.replica_manager.partitions[T0].leader_epoch)
    untouched = Untouched(w)
    stale = LeaderAndIsrRequest(3, 1, 0, b.broker_epoch, LeaderAndIsrType.INCREMENTAL,
                                (state(T0, 1, 9, [1]),))
    [send] = b.handle(CONTROLLER, stale)
    untouched.check()
    assert isinstance(send, Send) and send.dst == CONTROLLER
    assert isinstance(send.message, LeaderAndIsrResponse)
    assert send.message.error is Errors.STALE_CONTROLLER_EPOCH
    assert (b.controller_epoch, b.replica_manager.partitions[T0].leader_epoch) == before
    assert b.last_fence == ("LeaderAndIsrRequest", Errors.STALE_CONTROLLER_EPOCH)


def test_the_registration_answer_arms_heartbeats_then_answers_the_waiting_requests() -> None:
    w = World(broker_ids=())
    w.controller.answer_registrations = False
    b = w.start_broker(1, wait=False)
    w.run(10)
    assert b.state is BrokerState.REGISTERING
    # Two control requests arrive before the broker knows its epoch: they wait (no effect).
    first = LeaderAndIsrRequest(11, 1, 1, NO_EPOCH, LeaderAndIsrType.INCREMENTAL,
                                (state(T0, 1, 1, [1]),))
    assert b.handle(CONTROLLER, first) == []
    w.controller.update_metadata(1, [state(T0, 1, 1, [1])], [1])
    w.run(10)
    assert not [m for _, m in w.controller.received if not hasattr(m, "incarnation_id")]
    src, registration = w.controller.pending_registrations[-1]
    w.controller.answer_registration(src, registration)
    # Take the answer off the network by hand and decide on it alone.
    answer = [t for t in w.scheduler.pending() if "BrokerRegistrationResponse" in t.name][-1]
    answer.cancel()
    effects = b.handle(CONTROLLER, BrokerRegistrationResponse(
        registration.correlation_id, Errors.NONE, w.controller.broker_epochs[1], 1))
    assert b.state is BrokerState.RUNNING
    kinds: list[type[Effect]] = [type(e) for e in effects]
    # The heartbeats; the leader's RecordLineage for T0 (it leads it now); the two answers.
    assert kinds == [ArmTask, Call, Send, Send], kinds
    lineage = effects[1]
    assert isinstance(lineage, Call)
    assert isinstance(lineage.build(7), RecordLineageRequest)
    assert lineage.build(7).tp == T0
    heartbeat = effects[0]
    assert isinstance(heartbeat, ArmTask) and heartbeat.key == "heartbeat"
    assert heartbeat.delay_ms == 0 and heartbeat.period_ms == b.config.broker_heartbeat_interval_ms
    answers = [e.message for e in effects[1:] if isinstance(e, Send)]
    assert isinstance(answers[0], LeaderAndIsrResponse) and answers[0].correlation_id == 11
    assert isinstance(answers[1], UpdateMetadataResponse)
    # The heartbeat timer's action is a decision too: one Notify to the controller.
    [beat] = b.driver.decide(heartbeat.action)
    assert isinstance(beat, Notify) and beat.dst == CONTROLLER
    message = beat.build(77)
    assert isinstance(message, BrokerHeartbeat)
    assert (message.correlation_id, message.broker_epoch) == (77, b.broker_epoch)


def test_an_isr_shrink_decides_an_alter_partition_request_built_only_when_sent() -> None:
    w, b = leader_alone(isr=(1, 2))
    w.clock.advance_to(w.clock.now_ms() + b.config.replica_lag_time_max_ms + 1)
    untouched = Untouched(w)
    requests = b.driver.decide(b.replica_manager.maybe_shrink_isr)
    untouched.check()
    assert all(isinstance(r, Call) and r.dst == CONTROLLER for r in requests)
    built = [r.build(1234 + i) for i, r in enumerate(requests) if isinstance(r, Call)]
    assert all(isinstance(m, AlterPartitionRequest) for m in built)
    assert sorted((m.correlation_id, m.tp, m.new_isr) for m in built
                  if isinstance(m, AlterPartitionRequest)) == [(1234, T0, (1,)), (1235, T1, (1,))]
    rm = b.replica_manager
    assert all(rm.partitions[tp].pending_isr is not None for tp in (T0, T1))
    assert rm.partitions[T0].isr == (1, 2), "the ISR waits for the controller's answer"
    # Performed, they go through the channel; the stub controller accepts them.
    b.driver.perform(requests)
    assert w.run_until(lambda: all(rm.partitions[tp].isr == (1,) for tp in (T0, T1)), 100)


def test_a_dead_broker_performs_nothing() -> None:
    w, b = leader_alone()
    effects = b.handle(CLIENT, produce_request(w, 41, 1))
    b.halt()
    sent = w.network.stats.sent
    b.driver.perform([*effects, ArmTask("late", 10, lambda: None)])
    assert w.network.stats.sent == sent
    assert not [t for t in w.scheduler.pending() if t.name.startswith("broker-1")]
    assert b.driver.armed == []
