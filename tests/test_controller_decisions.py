"""The controller's decisions driven alone: no network, no scheduler, only the effects they return.

Each test feeds one input to ``ControllerDecisions`` (over a real MemoryStore and a VirtualClock)
and inspects the Outcome: the messages to send, the requests to track, the timers to arm or
cancel. The driver that performs them is tested through test_controller.py and the cluster tests.
"""

from __future__ import annotations

import itertools
import random

import pytest

from logwright.controller import (
    ControllerConfig,
    MemoryStore,
    MetadataDelta,
    StaleControllerEpoch,
    TopicDeletion,
)
from logwright.controller.decisions import ControllerDecisions
from logwright.errors import Errors
from logwright.identity import TopicPartition, Uuid
from logwright.protocol.effects import (
    ArmTimer,
    CancelTimer,
    Effect,
    ForgetRequests,
    Request,
    Send,
)
from logwright.protocol.messages import (
    BrokerHeartbeat,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrType,
    PartitionError,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from logwright.world import VirtualClock

SESSION_MS = 9_000
RETRY_MS = 1_000


def decisions(store: MemoryStore, clock: VirtualClock, controller_id: int = 0,
              retry_ms: int | None = RETRY_MS) -> ControllerDecisions:
    config = ControllerConfig(SESSION_MS, 2_000, control_request_retry_ms=retry_ms)
    return ControllerDecisions(controller_id, store, clock, random.Random(controller_id), config,
                               itertools.count(1).__next__)


def register(d: ControllerDecisions, broker_id: int, seed: int = 0) -> list[Effect]:
    incarnation = Uuid.from_random(random.Random(broker_id * 1_000 + seed))
    return d.receive(f"broker-{broker_id}", BrokerRegistrationRequest(
        500 + broker_id, broker_id, incarnation, ("/d0",))).effects


def requests(effects: list[Effect], kind: type[object] | None = None) -> list[Request]:
    return [e for e in effects if isinstance(e, Request)
            and (kind is None or isinstance(e.message, kind))]


def two_brokers_one_topic(store: MemoryStore, clock: VirtualClock,
                          ) -> tuple[ControllerDecisions, list[Effect]]:
    """An active controller, brokers 1 and 2 registered, and the effects of creating topic t
    (one partition, replicas [1, 2])."""
    d = decisions(store, clock)
    d.activate()
    for b in (1, 2):
        register(d, b)
    return d, d.create_topic("t", 1, 2, assignment=[[1, 2]]).effects


def leader_and_isr_to(effects: list[Effect], dst: str) -> LeaderAndIsrRequest:
    (request,) = [r.message for r in requests(effects, LeaderAndIsrRequest) if r.dst == dst]
    assert isinstance(request, LeaderAndIsrRequest)
    return request


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


def test_activation_of_an_empty_store_returns_the_epoch_and_no_effects(
        store: MemoryStore, clock: VirtualClock) -> None:
    outcome = decisions(store, clock).activate()
    assert outcome.value == 1 and outcome.effects == []


def test_a_registration_answers_arms_a_session_and_sends_full_state(
        store: MemoryStore, clock: VirtualClock) -> None:
    d = decisions(store, clock)
    d.activate()
    effects = register(d, 1)
    reply, arm, full, metadata = effects
    assert reply == Send("broker-1", BrokerRegistrationResponse(501, Errors.NONE, 1, 1))
    assert arm == ArmTimer(("session", 1), SESSION_MS, "controller-0 session of broker-1")
    assert isinstance(full, Request) and isinstance(full.message, LeaderAndIsrRequest)
    assert full.dst == "broker-1" and full.message.type == LeaderAndIsrType.FULL
    assert full.timeout_ms == RETRY_MS and full.message.broker_epoch == 1
    assert isinstance(metadata, Request) and isinstance(metadata.message, UpdateMetadataRequest)
    assert metadata.message.live_brokers == (1,)
    # Correlation ids come from the injected source, in send order.
    assert [full.message.correlation_id, metadata.message.correlation_id] == [1, 2]
    # A heartbeat with the current epoch only extends the session: nothing to do.
    assert d.receive("broker-1", BrokerHeartbeat(9, 1, 1)).effects == []


def test_a_bad_registration_is_refused_with_no_other_effect(
        store: MemoryStore, clock: VirtualClock) -> None:
    d = decisions(store, clock)
    # Not yet active: refused with the store's epoch.
    (refusal,) = register(d, 1)
    assert refusal == Send("broker-1", BrokerRegistrationResponse(
        501, Errors.STALE_CONTROLLER_EPOCH, controller_epoch=0))
    d.activate()
    # The sender is not the broker it claims to be.
    outcome = d.receive("broker-2", BrokerRegistrationRequest(
        7, 1, Uuid.from_random(random.Random(5)), ("/d0",)))
    assert outcome.effects == [Send("broker-2", BrokerRegistrationResponse(
        7, Errors.INVALID_REQUEST, controller_epoch=1))]


def test_create_topic_returns_the_id_and_tells_replicas_then_every_live_broker(
        store: MemoryStore, clock: VirtualClock) -> None:
    d = decisions(store, clock)
    d.activate()
    for b in (1, 2, 3):
        register(d, b)
    outcome = d.create_topic("t", 2, 2)
    assert store.topic("t") is not None and outcome.value == store.topic("t").topic_id  # type: ignore[union-attr]
    leader_and_isr = requests(outcome.effects, LeaderAndIsrRequest)
    metadata = requests(outcome.effects, UpdateMetadataRequest)
    assert len(leader_and_isr) + len(metadata) == len(outcome.effects)
    # The LeaderAndIsr requests come first, one per replica broker, by broker id.
    assert outcome.effects[:len(leader_and_isr)] == leader_and_isr
    hosted = {b for s in store.partitions("t") for b in s.replicas}
    assert [r.dst for r in leader_and_isr] == [f"broker-{b}" for b in sorted(hosted)]
    for r in leader_and_isr:
        assert isinstance(r.message, LeaderAndIsrRequest)
        assert r.message.type == LeaderAndIsrType.INCREMENTAL
        assert all(w.is_new for w in r.message.partition_states)
    assert sorted(r.dst for r in metadata) == ["broker-1", "broker-2", "broker-3"]
    ids = [r.message.correlation_id for r in requests(outcome.effects)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def test_session_timer_rearms_until_the_deadline_then_fails_the_broker(
        store: MemoryStore, clock: VirtualClock) -> None:
    d = decisions(store, clock)
    d.activate()
    for b in (1, 2):
        register(d, b)
    d.create_topic("t", 1, 2, assignment=[[1, 2]])
    clock.advance(5_000)
    registration = store.broker(1)
    assert registration is not None
    d.receive("broker-1", BrokerHeartbeat(8, 1, registration.broker_epoch))
    clock.advance(4_000)
    # Broker 1's session was extended: its timer is armed again for what remains.
    assert d.on_timer(("session", 1)).effects == [
        ArmTimer(("session", 1), 5_000, "controller-0 session of broker-1")]
    # Broker 2 missed it: its requests are forgotten, it is fenced, and 1 leads alone.
    effects = d.on_timer(("session", 2)).effects
    assert effects[0] == ForgetRequests("broker-2")
    assert store.broker(2).fenced  # type: ignore[union-attr]
    state = store.partition(TopicPartition("t", 0))
    assert state is not None and state.isr == (1,) and state.leader == 1
    assert [r.dst for r in requests(effects)] == ["broker-1", "broker-1"]
    assert d.live_brokers() == (1,)


def test_an_unanswered_request_is_rebuilt_from_the_current_state(
        store: MemoryStore, clock: VirtualClock) -> None:
    d, created = two_brokers_one_topic(store, clock)
    sent = leader_and_isr_to(created, "broker-1")
    # The state moved on since (broker 2 failed): the retry carries the new state, a new id.
    clock.advance(SESSION_MS)
    d.on_timer(("session", 2))
    retry = d.on_control_answer("broker-1", sent, None).effects
    (again,) = requests(retry, LeaderAndIsrRequest)
    assert isinstance(again.message, LeaderAndIsrRequest)
    assert again.message.correlation_id > sent.correlation_id
    assert again.message.partition_states[0].isr == (1,)
    assert again.message.partition_states[0].is_new
    # No retry to a dead broker: it gets a FULL LeaderAndIsr when it registers again.
    to_dead = leader_and_isr_to(created, "broker-2")
    assert d.on_control_answer("broker-2", to_dead, None).effects == []


def test_a_storage_error_answer_takes_the_replica_out(
        store: MemoryStore, clock: VirtualClock) -> None:
    d, created = two_brokers_one_topic(store, clock)
    to_leader = leader_and_isr_to(created, "broker-1")
    tp = TopicPartition("t", 0)
    answer = LeaderAndIsrResponse(to_leader.correlation_id, Errors.NONE,
                                  (PartitionError(tp, Errors.KAFKA_STORAGE_ERROR),))
    effects = d.on_control_answer("broker-1", to_leader, answer).effects
    state = store.partition(tp)
    assert state is not None and state.leader == 2 and state.isr == (2,)
    assert {r.dst for r in requests(effects, LeaderAndIsrRequest)} == {"broker-1", "broker-2"}
    assert d.control_errors[-1].error == Errors.KAFKA_STORAGE_ERROR
    # The same answer unmatched to a request (a late one) is recorded, and changes nothing.
    assert d.receive("broker-1", answer).effects == []


def test_a_deposed_controller_resigns_and_what_it_decided_before_stays(
        store: MemoryStore, clock: VirtualClock) -> None:
    old = decisions(store, clock, controller_id=0)
    old.activate()
    for b in (1, 2):
        register(old, b)
    topic_id = old.create_topic("t", 1, 2).value
    # Its deletion of t was under way (recorded, not finished) when another controller claimed.
    store.write(old.epoch, MetadataDelta(deletions=[TopicDeletion("t", topic_id)]))
    assert store.claim_controller(1) == 2
    # Resuming the deletion, its StopReplica goes out before the store refuses the removal:
    # those effects stay in the buffer for the driver, then the resignation's cancellations.
    with pytest.raises(StaleControllerEpoch):
        old.delete_topic("t")
    left = old.take_effects()
    assert [type(e.message) for e in requests(left)] == [StopReplicaRequest] * 2
    assert left[-1] == ForgetRequests()
    assert {e for e in left if isinstance(e, CancelTimer)} == {
        CancelTimer(("session", 1)), CancelTimer(("session", 2))}
    assert not old.active and old.take_effects() == []
    # Deposed, it sends nothing more: a retry is dropped, a registration refused.
    assert register(old, 3) == [Send("broker-3", BrokerRegistrationResponse(
        503, Errors.STALE_CONTROLLER_EPOCH, controller_epoch=2))]


def test_shutdown_cancels_every_timer_and_request(store: MemoryStore,
                                                  clock: VirtualClock) -> None:
    d = decisions(store, clock, retry_ms=None)
    d.activate()
    register(d, 2)
    register(d, 1)
    assert d.shutdown().effects == [CancelTimer(("session", 1)), CancelTimer(("session", 2)),
                                    ForgetRequests()]
    assert d.shutdown().effects == [ForgetRequests()]

