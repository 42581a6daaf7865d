"""The controller, driven with real messages through a SimNetwork.

The brokers here are recording endpoints: they only keep what arrives. The test plays the broker
side by hand (registrations, heartbeats, AlterPartition as a leader would send it), so each test
states exactly which broker behaviour it assumes.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from logwright.controller import (
    LEADER_DURING_DELETE,
    Controller,
    ControllerConfig,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    MemoryStore,
    MetadataDelta,
    MetadataStore,
    NotController,
    PartitionState,
    SqliteStore,
    StaleControllerEpoch,
    TopicAlreadyExists,
    TopicDeletion,
)
from logwright.errors import Errors, KafkaError
from logwright.protocol.messages import (
    EPOCH_DURING_DELETE,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeat,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrType,
    PartitionError,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from logwright.storage.naming import TopicPartition, Uuid
from logwright.world import SimScheduler, Task, VirtualClock
from logwright.world.network import SimNetwork

M = TypeVar("M")
SESSION_MS = 9_000
HEARTBEAT_MS = 2_000
SETTLE_MS = 50  # longer than any SimNetwork delay (1 to 10 ms), so every message has arrived


class Recorder:
    """A broker endpoint that records what arrives; with ``ack`` it also answers every control
    request with success (the transport-level answer a retrying controller needs), nothing else.
    """

    def __init__(self, node_id: str, net: SimNetwork) -> None:
        self.node_id = node_id
        self.net = net
        self.ack = False
        self.received: list[tuple[str, object]] = []

    def receive(self, src: str, message: object) -> None:
        self.received.append((src, message))
        if not self.ack:
            return
        if isinstance(message, LeaderAndIsrRequest):
            self.net.send(self.node_id, src, LeaderAndIsrResponse(message.correlation_id,
                                                                  Errors.NONE))
        elif isinstance(message, StopReplicaRequest):
            self.net.send(self.node_id, src, StopReplicaResponse(message.correlation_id,
                                                                 Errors.NONE))
        elif isinstance(message, UpdateMetadataRequest):
            self.net.send(self.node_id, src, UpdateMetadataResponse(message.correlation_id,
                                                                    Errors.NONE))


class Harness:
    """A controller (or several) over one store, brokers as recorders, driven by the test."""

    def __init__(self, brokers: Iterable[int] = (1, 2, 3), store: MetadataStore | None = None,
                 seed: int = 0, duplicate_rate: float = 0.0,
                 retry_ms: int | None = None) -> None:
        self.clock = VirtualClock()
        self.sched = SimScheduler(self.clock, seed=seed)
        self.net = SimNetwork(self.sched, seed=seed, duplicate_rate=duplicate_rate)
        self.store = store if store is not None else MemoryStore()
        self.seed = seed
        self.retry_ms = retry_ms  # off by default, so a test sees exactly what was decided
        self.brokers = {b: Recorder(f"broker-{b}", self.net) for b in brokers}
        for recorder in self.brokers.values():
            self.net.register(recorder)
        self.broker_epoch: dict[int, int] = {}
        self.incarnation: dict[int, Uuid] = {}
        self._heartbeats: dict[int, Task] = {}
        self._rng = random.Random(seed)
        self._correlation = 1000
        self.controllers: list[Controller] = []
        self.controller = self.start_controller(0)

    def start_controller(self, n: int, store: MetadataStore | None = None) -> Controller:
        controller = Controller(n, self.net, self.sched, self.clock,
                                store if store is not None else self.store,
                                random.Random(self.seed * 100 + n),
                                ControllerConfig(SESSION_MS, HEARTBEAT_MS,
                                                 control_request_retry_ms=self.retry_ms))
        self.net.register(controller)
        controller.activate()
        self.controllers.append(controller)
        self.controller = controller
        return controller

    # -- the broker side, played by the test -----------------------------------------------

    def cid(self) -> int:
        self._correlation += 1
        return self._correlation

    def active_node(self) -> str:
        """What a broker's controller_locator answers: the store's active controller."""
        record = self.store.controller()
        assert record is not None
        return f"controller-{record.controller_id}"

    def send(self, broker_id: int, message: object, dst: str | None = None) -> None:
        self.net.send(f"broker-{broker_id}", dst or self.active_node(), message)

    def register(self, broker_id: int, new_incarnation: bool = True,
                 log_dirs: tuple[str, ...] | None = None) -> BrokerRegistrationResponse:
        """Start (or restart) a broker process: register and heartbeat from then on."""
        if new_incarnation or broker_id not in self.incarnation:
            self.incarnation[broker_id] = Uuid.from_random(self._rng)
        dirs = log_dirs or (f"/data/{broker_id}/d1", f"/data/{broker_id}/d2")
        cid = self.cid()
        self.send(broker_id, BrokerRegistrationRequest(cid, broker_id,
                                                       self.incarnation[broker_id], dirs))
        self.run(SETTLE_MS)
        response = [m for m in self.got(broker_id, BrokerRegistrationResponse)
                    if m.correlation_id == cid][-1]
        if response.error == Errors.NONE:
            self.broker_epoch[broker_id] = response.broker_epoch
            self.start_heartbeats(broker_id)
        return response

    def start_heartbeats(self, broker_id: int) -> None:
        self.stop_heartbeats(broker_id)
        self._heartbeats[broker_id] = self.sched.schedule(
            f"heartbeat broker-{broker_id}",
            lambda: self.send(broker_id, BrokerHeartbeat(self.cid(), broker_id,
                                                         self.broker_epoch[broker_id])),
            HEARTBEAT_MS, HEARTBEAT_MS)

    def stop_heartbeats(self, broker_id: int) -> None:
        """The broker goes silent (crashed or cut off)."""
        task = self._heartbeats.pop(broker_id, None)
        if task is not None:
            task.cancel()

    def alter(self, broker_id: int, tp: TopicPartition, new_isr: tuple[int, ...],
              leader_epoch: int | None = None, partition_epoch: int | None = None,
              broker_epoch: int | None = None, dst: str | None = None,
              member_epochs: tuple[int, ...] = ()) -> AlterPartitionResponse:
        """Send AlterPartition as broker ``broker_id`` (defaults: the current epochs;
        ``member_epochs``: KIP-903's broker epoch per member, none by default)."""
        state = self.store.partition(tp) or PartitionState(tp, Uuid.ZERO, (broker_id,),
                                                           (broker_id,), broker_id, 0, 0)
        cid = self.cid()
        self.send(broker_id, AlterPartitionRequest(
            cid, broker_id,
            self.broker_epoch[broker_id] if broker_epoch is None else broker_epoch, tp,
            state.leader_epoch if leader_epoch is None else leader_epoch,
            state.partition_epoch if partition_epoch is None else partition_epoch, new_isr,
            member_epochs), dst)
        self.run(SETTLE_MS)
        return [m for m in self.got(broker_id, AlterPartitionResponse)
                if m.correlation_id == cid][-1]

    # -- observing -------------------------------------------------------------------------

    def run(self, ms: int) -> None:
        self.sched.advance(ms)

    def got(self, broker_id: int, kind: type[M], src: str | None = None) -> list[M]:
        return [m for s, m in self.brokers[broker_id].received
                if isinstance(m, kind) and (src is None or s == src)]

    def clear(self) -> None:
        for recorder in self.brokers.values():
            recorder.received.clear()

    def sent_by(self, node_id: str) -> int:
        return sum(1 for r in self.brokers.values() for s, _ in r.received if s == node_id)

    def start(self, broker_ids: Iterable[int] | None = None) -> None:
        for broker_id in broker_ids if broker_ids is not None else sorted(self.brokers):
            assert self.register(broker_id).error == Errors.NONE

    def state(self, topic: str, partition: int = 0) -> PartitionState:
        state = self.store.partition(TopicPartition(topic, partition))
        assert state is not None
        return state


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.start()
    return harness


def tp(topic: str = "t", partition: int = 0) -> TopicPartition:
    return TopicPartition(topic, partition)


def full_requests(h: Harness, broker_id: int) -> list[LeaderAndIsrRequest]:
    return [r for r in h.got(broker_id, LeaderAndIsrRequest) if r.type == LeaderAndIsrType.FULL]


# ---- registration ---------------------------------------------------------------------------


def test_registration_gives_strictly_increasing_broker_epochs_across_restarts() -> None:
    h = Harness(brokers=(1, 2, 3))
    epochs = [h.register(b).broker_epoch for b in (1, 2, 3)]
    for b in (2, 2, 1):  # process restarts: a new incarnation each time
        epochs.append(h.register(b).broker_epoch)
    assert epochs == sorted(set(epochs)) and min(epochs) >= 1
    # The same incarnation asking again (a retried or duplicated request) keeps its epoch, so
    # its heartbeats stay valid.
    again = h.register(1, new_incarnation=False)
    assert again.error == Errors.NONE and again.broker_epoch == epochs[-1]
    # A new controller continues the sequence from the store.
    h.start_controller(1)
    assert h.register(3).broker_epoch > max(epochs)


def test_registration_is_answered_with_a_full_leader_and_isr_of_every_hosted_partition(
        h: Harness) -> None:
    h.controller.create_topic("a", 3, 2)
    h.controller.create_topic("b", 2, 1)
    h.run(SETTLE_MS)
    hosted = {s.tp for s in h.store.partitions() if 2 in s.replicas}
    h.clear()
    epoch = h.register(2).broker_epoch
    [full] = full_requests(h, 2)
    assert {s.tp for s in full.partition_states} == hosted
    assert full.broker_epoch == epoch and full.controller_epoch == h.controller.epoch
    assert full.controller_id == 0
    for wire in full.partition_states:
        stored = h.store.partition(wire.tp)
        assert stored is not None
        assert (wire.leader, wire.leader_epoch, wire.isr, wire.replicas, wire.topic_id) == (
            stored.leader, stored.leader_epoch, stored.isr, stored.replicas, stored.topic_id)
    # Every live broker hears about the new broker through UpdateMetadata.
    for b in (1, 2, 3):
        assert any(2 in m.live_brokers for m in h.got(b, UpdateMetadataRequest))


def test_a_broker_that_hosts_nothing_still_gets_a_full_request(h: Harness) -> None:
    h.controller.create_topic("t", 1, 1, assignment=[[1]])
    h.clear()
    h.register(3)
    [full] = full_requests(h, 3)
    assert full.partition_states == (), "an empty FULL request: everything on disk is a stray"


def test_a_quick_restart_is_the_old_incarnations_failure_first(h: Harness) -> None:
    """hazard 3: the old incarnation led; its replacement must not inherit that leadership."""
    h.controller.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    h.run(SETTLE_MS)
    before = h.state("t")
    assert before.leader == 1
    old_epoch = h.broker_epoch[1]
    h.clear()
    new_epoch = h.register(1).broker_epoch  # well inside the session timeout
    assert new_epoch > old_epoch
    after = h.state("t")
    assert after.leader == 2 and after.isr == (2, 3)
    assert after.leader_epoch == before.leader_epoch + 1
    [full] = full_requests(h, 1)
    assert full.broker_epoch == new_epoch
    assert [(s.leader, s.leader_epoch) for s in full.partition_states] == [(2, after.leader_epoch)]
    survivors = [r for b in (2, 3) for r in h.got(b, LeaderAndIsrRequest)]
    assert survivors and all(
        s.leader == 2 and s.leader_epoch == after.leader_epoch
        for r in survivors for s in r.partition_states)


def test_a_registration_with_a_mismatched_sender_is_refused(h: Harness) -> None:
    cid = h.cid()
    h.net.send("broker-2", "controller-0", BrokerRegistrationRequest(cid, 3, Uuid.from_random(
        random.Random(1)), ("/d",)))
    h.run(SETTLE_MS)
    [response] = [m for m in h.got(2, BrokerRegistrationResponse) if m.correlation_id == cid]
    assert response.error == Errors.INVALID_REQUEST
    registration = h.store.broker(3)
    assert registration is not None and registration.broker_epoch == h.broker_epoch[3]


# ---- liveness and election ------------------------------------------------------------------


def test_heartbeats_keep_brokers_alive(h: Harness) -> None:
    h.run(10 * SESSION_MS)
    assert h.controller.live_brokers() == (1, 2, 3)
    assert all(not b.fenced for b in h.store.brokers())


def test_broker_death_elects_the_first_live_isr_replica_with_a_bumped_epoch(h: Harness) -> None:
    h.controller.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    h.run(SETTLE_MS)
    # The leader shrinks the ISR to (1, 3): so after 1 dies, 3 must lead, not 2.
    assert h.alter(1, tp(), (1, 3)).error == Errors.NONE
    before = h.state("t")
    h.clear()
    h.stop_heartbeats(1)
    h.run(SESSION_MS + HEARTBEAT_MS)
    after = h.state("t")
    assert 1 not in h.controller.live_brokers()
    broker_1 = h.store.broker(1)
    assert broker_1 is not None and broker_1.fenced
    assert (after.leader, after.isr) == (3, (3,))
    assert after.leader_epoch == before.leader_epoch + 1
    assert after.partition_epoch > before.partition_epoch
    for b in (2, 3):  # the live replicas learn the new leader and epoch
        states = [s for r in h.got(b, LeaderAndIsrRequest) for s in r.partition_states]
        assert any(s.leader == 3 and s.leader_epoch == after.leader_epoch for s in states)
    assert not h.got(1, LeaderAndIsrRequest), "nothing is sent to a dead broker"


def test_election_prefers_assignment_order_over_isr_order(h: Harness) -> None:
    h.controller.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    h.run(SETTLE_MS)
    assert h.alter(1, tp(), (1, 3, 2)).error == Errors.NONE  # the leader lists 3 before 2
    h.stop_heartbeats(1)
    h.run(SESSION_MS + HEARTBEAT_MS)
    assert (h.state("t").leader, h.state("t").isr) == (2, (3, 2))


def test_no_live_isr_member_means_no_leader_until_one_returns(h: Harness) -> None:
    h.controller.create_topic("t", 1, 2, assignment=[[1, 2]])
    for b in (1, 2):
        h.stop_heartbeats(b)
        h.run(SESSION_MS + HEARTBEAT_MS)
    dead = h.state("t")
    # The last ISR member leaves it for the eligible leader replicas (KIP-966): the ISR was
    # smaller than min.insync.replicas (1) without it, so it holds every committed record.
    assert (dead.leader, dead.isr, dead.elr) == (-1, (), (2,))
    # Broker 1 returns first: it is in neither the ISR nor the ELR, so it cannot lead.
    h.register(1)
    assert h.state("t").leader == -1
    # Broker 2 (the ELR member) returns, shut down cleanly (a registration without replica
    # reports), and leads again, alone in the ISR, with a newer epoch.
    h.register(2)
    back = h.state("t")
    assert (back.leader, back.isr, back.elr) == (2, (2,), ())
    assert back.leader_epoch == dead.leader_epoch + 1
    assert h.controller.elections_by_kind == {"eligible leader replica": 1}


def test_a_broker_declared_dead_comes_back_by_heartbeating(h: Harness) -> None:
    h.controller.create_topic("t", 1, 2, assignment=[[1, 2]])
    h.stop_heartbeats(1)
    h.run(SESSION_MS + HEARTBEAT_MS)
    assert h.controller.live_brokers() == (2, 3)
    h.clear()
    h.start_heartbeats(1)  # the same incarnation, same epoch: the partition healed
    h.run(HEARTBEAT_MS + SETTLE_MS)
    assert h.controller.live_brokers() == (1, 2, 3)
    broker_1 = h.store.broker(1)
    assert broker_1 is not None and not broker_1.fenced
    [full] = full_requests(h, 1)
    assert [s.leader for s in full.partition_states] == [2], "it returns as a follower"


def test_heartbeats_of_an_old_incarnation_do_not_keep_the_broker_alive(h: Harness) -> None:
    old_epoch = h.broker_epoch[3]
    h.register(3)
    h.stop_heartbeats(3)
    h.sched.schedule("zombie heartbeat", lambda: h.send(3, BrokerHeartbeat(h.cid(), 3, old_epoch)),
                     HEARTBEAT_MS, HEARTBEAT_MS)
    h.run(SESSION_MS + HEARTBEAT_MS)
    assert 3 not in h.controller.live_brokers()


# ---- controller failover and fencing --------------------------------------------------------


def test_failover_sends_full_leader_and_isr_to_every_live_broker(h: Harness) -> None:
    h.controller.create_topic("t", 3, 2)
    h.stop_heartbeats(3)
    h.run(SESSION_MS + HEARTBEAT_MS)
    h.clear()
    old = h.controller
    new = h.start_controller(1)
    assert new.epoch == old.epoch + 1
    h.run(SETTLE_MS)
    for b in (1, 2):
        [full] = full_requests(h, b)
        assert (full.controller_id, full.controller_epoch) == (1, new.epoch)
        assert full.broker_epoch == h.broker_epoch[b]
        assert {s.tp for s in full.partition_states} == {
            s.tp for s in h.store.partitions() if b in s.replicas}
        assert all(s.controller_epoch == new.epoch for s in full.partition_states)
        [metadata] = h.got(b, UpdateMetadataRequest)
        assert metadata.controller_epoch == new.epoch and metadata.live_brokers == (1, 2)
        assert len(metadata.partition_states) == 3
    assert not h.got(3, LeaderAndIsrRequest), "the fenced broker is not live for the new one"


def test_failover_elects_leaders_the_old_controller_left_behind(h: Harness) -> None:
    h.controller.create_topic("t", 1, 2, assignment=[[1, 2]])
    h.controller.shutdown()  # the controller crashes; then broker 1 dies before the failover
    h.stop_heartbeats(1)
    h.run(SESSION_MS + HEARTBEAT_MS)
    assert h.state("t").leader == 1, "no controller noticed"
    new = h.start_controller(1)
    h.run(SESSION_MS + HEARTBEAT_MS)  # the new controller gave broker 1 a session; it expires
    assert new.live_brokers() == (2, 3)
    assert h.state("t").leader == 2


@pytest.fixture(params=["memory", "sqlite"])
def stores(request: pytest.FixtureRequest,
           tmp_path: Path) -> Iterator[tuple[MetadataStore, MetadataStore]]:
    """What each of two controllers writes through: one store, or two SQLite handles on one
    file (as two processes would have)."""
    if request.param == "memory":
        store = MemoryStore()
        yield store, store
        return
    path = str(tmp_path / "metadata.db")
    first, second = SqliteStore(path), SqliteStore(path)
    yield first, second
    first.close()
    second.close()


def test_a_deposed_controller_is_rejected_by_the_store_and_resigns(
        stores: tuple[MetadataStore, MetadataStore]) -> None:
    """hazard 4: the old controller keeps running, but none of its writes land."""
    store_old, store_new = stores
    h = Harness(store=store_old)
    h.start()
    old = h.controller
    old.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    h.run(SETTLE_MS)
    new = h.start_controller(1, store=store_new)
    assert old.active, "the old controller does not know yet"
    before = h.state("t")
    # The old controller's admin write is refused by the store, and it resigns.
    with pytest.raises(StaleControllerEpoch):
        old.create_topic("u", 1, 1)
    assert not old.active and store_new.topic("u") is None
    with pytest.raises(NotController):
        old.delete_topic("t")
    assert store_new.topic("t") is not None
    # A leader still talking to the old controller gets STALE_CONTROLLER_EPOCH; nothing changes.
    response = h.alter(1, tp(), (1, 2), dst="controller-0")
    assert response.error == Errors.STALE_CONTROLLER_EPOCH
    assert h.state("t") == before
    # The deposed controller sends nothing more, even when its timers would have fired.
    h.clear()
    h.stop_heartbeats(3)
    h.run(SESSION_MS + HEARTBEAT_MS)
    assert h.sent_by("controller-0") == 0
    assert h.sent_by("controller-1") > 0 and 3 not in new.live_brokers()


def test_a_deposed_controller_resigns_when_its_timer_write_fails() -> None:
    h = Harness()
    h.start()
    old = h.controller
    old.create_topic("t", 1, 2, assignment=[[1, 2]])
    # A second controller claims the epoch without the first one hearing of it.
    newer_epoch = h.store.claim_controller(7)
    h.stop_heartbeats(1)
    h.run(SESSION_MS + HEARTBEAT_MS)  # old notices broker 1 is gone and tries to write
    assert not old.active and old.resign_reason is not None
    assert "stale" in old.resign_reason
    assert h.state("t").leader == 1 and h.store.controller_epoch() == newer_epoch


def test_a_stale_controller_epoch_response_makes_the_deposed_controller_resign(
        h: Harness) -> None:
    h.store.claim_controller(9)
    h.net.send("broker-1", "controller-0",
               LeaderAndIsrResponse(1, Errors.STALE_CONTROLLER_EPOCH))
    h.run(SETTLE_MS)
    assert not h.controller.active
    assert h.controller.control_errors[-1].error == Errors.STALE_CONTROLLER_EPOCH


def test_control_request_partition_errors_are_recorded(h: Harness) -> None:
    h.net.send("broker-2", "controller-0", LeaderAndIsrResponse(
        5, Errors.NONE, (PartitionError(tp("x", 1), Errors.KAFKA_STORAGE_ERROR),
                         PartitionError(tp("x", 2)))))
    h.run(SETTLE_MS)
    assert h.controller.active
    assert [(e.broker, e.tp, e.error) for e in h.controller.control_errors] == [
        ("broker-2", tp("x", 1), Errors.KAFKA_STORAGE_ERROR)]


def test_a_sqlite_backed_controller_restarts_from_its_file(tmp_path: Path) -> None:
    path = str(tmp_path / "metadata.db")
    h = Harness(store=SqliteStore(path))
    h.start()
    topic_id = h.controller.create_topic("t", 2, 2)
    h.controller.shutdown()
    h.store.close()
    h.store = SqliteStore(path)
    h.clear()
    new = h.start_controller(1)
    assert new.epoch == 2 and new.topic("t").topic_id == topic_id
    h.run(SETTLE_MS)
    assert all(full_requests(h, b) for b in (1, 2, 3))
    h.store.close()


# ---- AlterPartition -------------------------------------------------------------------------


def test_a_member_added_on_an_earlier_incarnation_s_fetches_is_refused(h: Harness) -> None:
    """KIP-903 (trace seed 170 of the trace checker's topic-changes run): follower 3, out of
    the ISR, lost its unflushed records in a power loss and came back as a new broker epoch;
    its leader, which had last heard from the earlier incarnation at the high watermark,
    asked to add it back. An ISR member without the committed records could then be elected.
    The leader names each member's broker epoch as the member's last fetch gave it, and the
    controller refuses a member added with one that is not its broker's registered epoch."""
    h.controller.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    h.run(SETTLE_MS)
    assert h.alter(1, tp(), (1, 2)).error == Errors.NONE
    old = h.broker_epoch[3]
    h.register(3)  # restarted: a new incarnation, a new broker epoch
    assert h.broker_epoch[3] != old
    before = h.state("t")
    epochs = (h.broker_epoch[1], h.broker_epoch[2], old)
    response = h.alter(1, tp(), (1, 2, 3), member_epochs=epochs)
    assert response.error == Errors.INELIGIBLE_REPLICA
    assert h.state("t") == before
    # Counts must match the members; a present member's epoch is not checked (-1: unknown).
    assert h.alter(1, tp(), (1, 2, 3), member_epochs=epochs[:2]).error == Errors.INVALID_REQUEST
    assert h.alter(1, tp(), (1, 2, 3), member_epochs=(-1, 77, h.broker_epoch[3])
                   ).error == Errors.NONE
    assert h.state("t").isr == (1, 2, 3)


def test_alter_partition_checks_epochs_and_changes_nothing_when_it_refuses(h: Harness) -> None:
    h.controller.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    h.run(SETTLE_MS)
    start = h.state("t")
    refusals = [
        # a leader epoch from before a leadership change (or a future one)
        (dict(leader_epoch=start.leader_epoch - 1), Errors.FENCED_LEADER_EPOCH),
        (dict(leader_epoch=start.leader_epoch + 1), Errors.FENCED_LEADER_EPOCH),
        # a partition epoch the leader read before some other change (INVALID_UPDATE_VERSION
        # in Kafka, which Errors lacks)
        (dict(partition_epoch=start.partition_epoch + 3), Errors.INVALID_REQUEST),
        # an older incarnation of the leader
        (dict(broker_epoch=h.broker_epoch[1] - 100), Errors.STALE_BROKER_EPOCH),
    ]
    for overrides, error in refusals:
        response = h.alter(1, tp(), (1, 2), **overrides)  # type: ignore[arg-type]
        assert response.error == error, overrides
        assert h.state("t") == start
    assert h.alter(2, tp(), (1, 2)).error == Errors.NOT_LEADER_OR_FOLLOWER
    assert h.alter(1, tp("t", 9), (1,)).error == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert h.alter(1, tp(), (2, 3)).error == Errors.INVALID_REQUEST  # the leader left out
    assert h.alter(1, tp(), (1, 4)).error == Errors.INVALID_REQUEST  # not a replica
    assert h.alter(1, tp(), (1, 1)).error == Errors.INVALID_REQUEST  # duplicated
    assert h.state("t") == start
    # A good shrink: a new partition epoch, the same leader epoch, everyone told.
    h.clear()
    response = h.alter(1, tp(), (1, 3))
    shrunk = h.state("t")
    assert response.error == Errors.NONE and response.isr == (1, 3) == shrunk.isr
    assert response.partition_epoch == start.partition_epoch + 1 == shrunk.partition_epoch
    assert response.leader_epoch == start.leader_epoch == shrunk.leader_epoch
    for b in (1, 2, 3):
        assert any(s.isr == (1, 3) for m in h.got(b, UpdateMetadataRequest)
                   for s in m.partition_states)
    # The same request again (duplicated by the network) gets the current state back; a
    # different ISR with that old partition epoch is refused.
    again = h.alter(1, tp(), (1, 3), partition_epoch=start.partition_epoch)
    assert (again.error, again.partition_epoch, again.isr) == (
        Errors.NONE, shrunk.partition_epoch, (1, 3))
    assert h.alter(1, tp(), (1, 2, 3), partition_epoch=start.partition_epoch).error == \
        Errors.INVALID_REQUEST
    assert h.state("t") == shrunk
    # Expanding to a member that is not alive is refused.
    h.stop_heartbeats(2)
    h.run(SESSION_MS + HEARTBEAT_MS)
    assert h.alter(1, tp(), (1, 2, 3)).error == Errors.INVALID_REQUEST
    assert h.alter(1, tp(), (1, 3)).error == Errors.NONE  # no change asked: current state


# ---- topics ---------------------------------------------------------------------------------


def test_create_topic_assigns_round_robin_and_sends_new_partitions(h: Harness) -> None:
    topic_id = h.controller.create_topic("t", 6, 2, configs={"retention.ms": "1000"})
    h.run(SETTLE_MS)
    states = h.store.partitions("t")
    assert [s.tp.partition for s in states] == list(range(6))
    leaders = [s.leader for s in states]
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3], "leaders spread evenly"
    for s in states:
        assert s.isr == s.replicas and s.leader == s.replicas[0] and s.topic_id == topic_id
        assert len(set(s.replicas)) == 2 and s.leader_epoch == 0
    assert h.controller.topic("t").config_map == {"retention.ms": "1000"}
    for b in (1, 2, 3):
        sent = {s.tp for r in h.got(b, LeaderAndIsrRequest) for s in r.partition_states
                if s.is_new and s.topic_id == topic_id}
        assert sent == {s.tp for s in states if b in s.replicas}


def test_create_topic_errors(h: Harness) -> None:
    for name in ("", "a/b", "x" * 250, ".."):
        with pytest.raises(KafkaError) as info:
            h.controller.create_topic(name, 1, 1)
        assert info.value.error == Errors.INVALID_TOPIC_EXCEPTION
    with pytest.raises(InvalidReplicationFactor, match="larger than the 3 live brokers"):
        h.controller.create_topic("t", 1, 4)
    with pytest.raises(InvalidReplicaAssignment, match="unknown broker ids"):
        h.controller.create_topic("t", 1, 2, assignment=[[1, 9]])
    with pytest.raises(InvalidReplicaAssignment, match="duplicate"):
        h.controller.create_topic("t", 1, 2, assignment=[[1, 1]])
    assert h.store.topics() == []
    h.controller.create_topic("t", 1, 1)
    with pytest.raises(TopicAlreadyExists):
        h.controller.create_topic("t", 1, 1)


def test_create_partitions_adds_new_partitions_and_leaves_the_old_ones(h: Harness) -> None:
    topic_id = h.controller.create_topic("t", 2, 2)
    h.run(SETTLE_MS)
    before = h.store.partitions("t")
    h.clear()
    assert h.controller.create_partitions("t", 5) == (2, 3, 4)
    h.run(SETTLE_MS)
    states = h.store.partitions("t")
    assert states[:2] == before, "the existing partitions are untouched"
    assert h.store.topic("t") is not None and h.store.topic("t").partition_count == 5
    for s in states[2:]:
        assert s.topic_id == topic_id and len(set(s.replicas)) == 2
        assert s.isr == s.replicas and s.leader == s.replicas[0] and s.leader_epoch == 0
    for b in (1, 2, 3):
        sent = {s.tp for r in h.got(b, LeaderAndIsrRequest) for s in r.partition_states
                if s.is_new}
        assert sent == {s.tp for s in states[2:] if b in s.replicas}, "only the new ones"


def test_create_partitions_errors_change_nothing(h: Harness) -> None:
    h.controller.create_topic("t", 3, 2)
    h.run(SETTLE_MS)
    before = h.store.partitions("t")
    for total in (3, 2, 0):
        with pytest.raises(KafkaError) as info:
            h.controller.create_partitions("t", total)
        assert info.value.error == Errors.INVALID_PARTITIONS
    with pytest.raises(KafkaError) as info:
        h.controller.create_partitions("nope", 4)
    assert info.value.error == Errors.UNKNOWN_TOPIC_OR_PARTITION
    with pytest.raises(InvalidReplicaAssignment, match="unknown broker ids"):
        h.controller.create_partitions("t", 4, assignment=[[1, 9]])
    assert h.store.partitions("t") == before and h.store.topic("t").partition_count == 3
    h.controller.delete_topic("t")
    with pytest.raises(KafkaError) as info:
        h.controller.create_partitions("t", 4)
    assert info.value.error == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_delete_topic_stops_every_replica_and_recreation_gets_a_new_id(h: Harness) -> None:
    old_id = h.controller.create_topic("t", 2, 3)
    h.run(SETTLE_MS)
    h.clear()
    h.controller.delete_topic("t")
    h.run(SETTLE_MS)
    assert h.store.topic("t") is None and h.store.partitions("t") == []
    assert h.store.deletions() == []
    for b in (1, 2, 3):
        [stop] = h.got(b, StopReplicaRequest)
        assert stop.controller_epoch == h.controller.epoch
        assert stop.broker_epoch == h.broker_epoch[b]
        assert {(p.tp, p.leader_epoch, p.delete_partition, p.topic_id)
                for p in stop.partitions} == {(tp("t", 0), EPOCH_DURING_DELETE, True, old_id),
                                              (tp("t", 1), EPOCH_DURING_DELETE, True, old_id)}
        [metadata] = h.got(b, UpdateMetadataRequest)
        assert {s.leader for s in metadata.partition_states} == {LEADER_DURING_DELETE}
    with pytest.raises(KafkaError) as info:
        h.controller.delete_topic("t")
    assert info.value.error == Errors.UNKNOWN_TOPIC_OR_PARTITION
    h.clear()
    new_id = h.controller.create_topic("t", 1, 3)
    assert new_id != old_id
    h.run(SETTLE_MS)
    for b in (1, 2, 3):
        [request] = h.got(b, LeaderAndIsrRequest)
        assert [(s.topic_id, s.is_new) for s in request.partition_states] == [(new_id, True)]


def test_a_deletion_the_old_controller_left_half_done_is_finished_on_failover(
        h: Harness) -> None:
    topic_id = h.controller.create_topic("t", 1, 2, assignment=[[1, 2]])
    h.run(SETTLE_MS)
    # The old controller recorded the deletion, then crashed before sending StopReplica.
    h.store.write(h.controller.epoch, MetadataDelta(deletions=[TopicDeletion("t", topic_id)]))
    h.controller.shutdown()
    with pytest.raises(NotController):
        h.controller.create_topic("u", 1, 1)
    h.clear()
    h.start_controller(1)
    h.run(SETTLE_MS)
    assert h.store.topic("t") is None and h.store.deletions() == []
    for b in (1, 2):
        [stop] = h.got(b, StopReplicaRequest)
        assert stop.partitions[0].leader_epoch == EPOCH_DURING_DELETE
        [full] = full_requests(h, b)
        assert full.partition_states == (), "a topic being deleted is not hosted"


# ---- lost requests and failed dirs ----------------------------------------------------------


def test_a_lost_control_request_is_sent_again_as_the_state_is_now() -> None:
    h = Harness(retry_ms=1_000)
    for recorder in h.brokers.values():
        recorder.ack = True
    h.start()
    h.run(SETTLE_MS)
    h.clear()
    h.net.partition("controller-0", "broker-2")  # shorter than a session: 2 stays alive
    h.controller.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    h.run(SETTLE_MS)
    assert h.alter(1, tp(), (1, 3)).error == Errors.NONE  # the state moves on meanwhile
    [original] = h.got(1, LeaderAndIsrRequest)
    h.net.heal()
    h.run(1_000)
    [retried] = h.got(2, LeaderAndIsrRequest)
    [wire] = retried.partition_states
    assert (wire.isr, wire.partition_epoch, wire.is_new) == ((1, 3), 1, True), "current state"
    assert retried.correlation_id > original.correlation_id
    h.run(5_000)
    assert [len(h.got(b, LeaderAndIsrRequest)) for b in (1, 2, 3)] == [1, 1, 1], \
        "answered requests are not sent again"



def test_a_lost_stop_replica_of_a_topic_re_created_since_becomes_its_leader_and_isr() -> None:
    """Broker 2 misses the deletion of t (its StopReplica is lost) and the creation of t again
    under a new id. Sent again, the StopReplica is not: broker 2 hosts the name again, so it
    gets the current decision, a LeaderAndIsr of the new topic id (which sets its old log
    aside). A lost UpdateMetadata is sent again with the partitions as they are now."""
    h = Harness(retry_ms=1_000)
    for recorder in h.brokers.values():
        recorder.ack = True
    h.start()
    h.run(SETTLE_MS)
    h.controller.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    h.run(SETTLE_MS)
    old_id = h.store.topic("t").topic_id  # type: ignore[union-attr]
    h.clear()
    h.net.partition("controller-0", "broker-2")  # shorter than a session: 2 stays alive
    h.controller.delete_topic("t")
    h.run(SETTLE_MS)
    h.controller.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    h.run(SETTLE_MS)
    new_id = h.store.topic("t").topic_id  # type: ignore[union-attr]
    assert new_id != old_id
    assert [r for r in h.got(2, StopReplicaRequest)] == [], "cut off: nothing arrived"
    h.net.heal()
    h.run(1_500)
    assert h.got(2, StopReplicaRequest) == [], "the old id's StopReplica is not sent again"
    states = [s for r in h.got(2, LeaderAndIsrRequest) for s in r.partition_states]
    assert states and {s.topic_id for s in states} == {new_id}
    assert all(r.type == LeaderAndIsrType.INCREMENTAL for r in h.got(2, LeaderAndIsrRequest))
    metadata = [s for r in h.got(2, UpdateMetadataRequest) for s in r.partition_states
                if s.tp == tp()]
    assert metadata and metadata[-1].topic_id == new_id
    # The deletion's UpdateMetadata, sent again, tells the new topic's state, not "deleted":
    # newer than the creation's, it would otherwise hide the new topic (traces/regressions/0040).
    assert all(s.topic_id == new_id and s.leader != LEADER_DURING_DELETE for s in metadata)

def test_retries_stop_when_the_broker_dies() -> None:
    h = Harness(retry_ms=1_000)
    h.start()
    h.controller.create_topic("t", 1, 3, assignment=[[1, 2, 3]])  # nobody answers
    h.run(3_500)
    incremental = [r for r in h.got(3, LeaderAndIsrRequest)
                   if r.type == LeaderAndIsrType.INCREMENTAL]
    assert len(incremental) == 4, "the first send and three retries"
    h.stop_heartbeats(3)
    h.run(SESSION_MS + HEARTBEAT_MS)
    h.clear()
    h.run(5_000)
    assert h.got(3, LeaderAndIsrRequest) == [] and h.got(3, UpdateMetadataRequest) == []


def test_replicas_on_a_failed_log_dir_leave_the_isr_and_lose_leadership(h: Harness) -> None:
    h.controller.create_topic("t", 2, 3, assignment=[[1, 2, 3], [2, 1, 3]])
    h.run(SETTLE_MS)
    h.clear()
    # Broker 1 reports a failed dir; the controller asks it what it can still serve.
    h.send(1, BrokerHeartbeat(h.cid(), 1, h.broker_epoch[1], offline_log_dirs=("/data/1/d1",)))
    h.run(SETTLE_MS)
    [probe] = h.got(1, LeaderAndIsrRequest)
    assert {s.tp for s in probe.partition_states} == {tp("t", 0), tp("t", 1)}
    # Only t-0 was on the failed dir.
    h.net.send("broker-1", "controller-0", LeaderAndIsrResponse(
        probe.correlation_id, Errors.NONE,
        (PartitionError(tp("t", 0), Errors.KAFKA_STORAGE_ERROR), PartitionError(tp("t", 1)))))
    h.run(SETTLE_MS)
    lost, kept = h.state("t", 0), h.state("t", 1)
    assert (lost.leader, lost.isr) == (2, (2, 3)) and lost.leader_epoch == 1
    assert (kept.leader, kept.isr, kept.leader_epoch) == (2, (2, 1, 3), 0)
    assert h.controller.live_brokers() == (1, 2, 3), "the broker itself is alive"
    assert h.alter(2, tp("t", 0), (2, 3, 1)).error == Errors.INVALID_REQUEST
    # The same report again changes nothing; a new process of broker 1 starts afresh.
    h.clear()
    h.send(1, BrokerHeartbeat(h.cid(), 1, h.broker_epoch[1], offline_log_dirs=("/data/1/d1",)))
    h.run(SETTLE_MS)
    assert h.got(1, LeaderAndIsrRequest) == []
    h.register(1)
    assert h.alter(2, tp("t", 0), (2, 3, 1)).error == Errors.NONE


def test_a_storage_error_from_an_earlier_incarnation_is_not_believed(h: Harness) -> None:
    h.controller.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    h.run(SETTLE_MS)
    h.send(1, BrokerHeartbeat(h.cid(), 1, h.broker_epoch[1], offline_log_dirs=("/data/1/d1",)))
    h.run(SETTLE_MS)
    [probe] = [r for r in h.got(1, LeaderAndIsrRequest)
               if r.type == LeaderAndIsrType.INCREMENTAL and not r.partition_states[0].is_new]
    h.register(1)  # a new process before the old one answered
    h.net.send("broker-1", "controller-0", LeaderAndIsrResponse(
        probe.correlation_id, Errors.NONE, (PartitionError(tp(), Errors.KAFKA_STORAGE_ERROR),)))
    h.run(SETTLE_MS)
    assert h.alter(2, tp(), (2, 3, 1)).error == Errors.NONE, "broker 1's replica is usable"


# ---- a duplicating network ------------------------------------------------------------------


def test_duplicated_messages_change_nothing_twice() -> None:
    h = Harness(seed=5, duplicate_rate=0.5)
    h.start()
    for b in (1, 2, 3):
        responses = h.got(b, BrokerRegistrationResponse)
        assert len({r.broker_epoch for r in responses}) == 1, "a duplicate gets the same epoch"
    assert h.net.stats.duplicated > 0
    h.controller.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    h.run(SETTLE_MS)
    first = h.alter(1, tp(), (1, 2))
    shrunk = h.state("t")
    assert first.error == Errors.NONE and shrunk.partition_epoch == 1
    # Every answer to the (possibly duplicated) request reports the one state it produced.
    answers = [m for m in h.got(1, AlterPartitionResponse)
               if m.correlation_id == first.correlation_id]
    assert {(a.error, a.partition_epoch, a.isr) for a in answers} == {(Errors.NONE, 1, (1, 2))}
    h.run(10 * SESSION_MS)
    assert h.controller.live_brokers() == (1, 2, 3) and h.state("t") == shrunk


# ---- determinism ----------------------------------------------------------------------------


def scenario(seed: int) -> list[tuple[str, str]]:
    h = Harness(seed=seed)
    h.start()
    h.controller.create_topic("t", 4, 2)
    h.stop_heartbeats(2)
    h.run(SESSION_MS + HEARTBEAT_MS)
    h.start_controller(1)
    h.run(SETTLE_MS)
    return [(s, repr(m)) for b in sorted(h.brokers) for s, m in h.brokers[b].received]


def test_one_seed_replays_one_run() -> None:
    assert scenario(3) == scenario(3)
