"""A simulated world of real brokers with the test playing the controller, and the tests of the
broker's own life cycle (registration, heartbeats, halt, restart).

The test is the controller: ``ControllerStub`` is a node on the simulated network that answers
registrations with ever larger broker epochs, accepts AlterPartition requests, and sends control
requests the test builds by hand. Everything else is the real code: brokers, log managers,
fetchers, the simulated network, scheduler, clock and file system.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Sequence

from logwright.broker import Broker, BrokerConfig, BrokerState
from logwright.broker.authorizer import AclAuthorizer
from logwright.broker.partition import Partition
from logwright.errors import Errors
from logwright.logmanager import LogManagerConfig
from logwright.protocol import (
    CONSUMER_REPLICA_ID,
    NO_EPOCH,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeat,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrType,
    ListOffsetsRequest,
    ListOffsetsResponse,
    Message,
    ProduceRequest,
    ProduceResponse,
    RecordLineageRequest,
    RecordLineageResponse,
    StopReplicaPartition,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.naming import TopicPartition, Uuid
from logwright.world import SimFileSystem, SimScheduler, VirtualClock
from logwright.world.network import SimNetwork

TOPIC_ID = Uuid.from_random(random.Random(7))
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def fast_config(**changes: object) -> BrokerConfig:
    """Kafka's defaults, with small segments so tests see rolls."""
    base: dict[str, object] = {"log": LogManagerConfig(log=LogConfig(segment_bytes=4096))}
    base.update(changes)
    return BrokerConfig(**base)  # type: ignore[arg-type]


class ControllerStub:
    """The test's controller: node ``controller-<id>``."""

    def __init__(self, network: SimNetwork, controller_id: int = 1,
                 controller_epoch: int = 1) -> None:
        self.controller_id = controller_id
        self.node_id = f"controller-{controller_id}"
        self.network = network
        self.controller_epoch = controller_epoch
        self.next_broker_epoch = 100
        self.broker_epochs: dict[int, int] = {}
        self.answer_registrations = True
        self.answer_alter_partition = True
        self.received: list[tuple[str, Message]] = []
        self.responses: dict[int, Message] = {}
        self.heartbeats: list[BrokerHeartbeat] = []
        self.alter_requests: list[AlterPartitionRequest] = []
        self.answer_record_lineage = True
        self.lineage_requests: list[RecordLineageRequest] = []
        self.pending_registrations: list[tuple[str, BrokerRegistrationRequest]] = []
        self._ids = itertools.count(1)
        network.register(self)

    def receive(self, src: str, message: object) -> None:
        assert isinstance(message, Message)
        self.received.append((src, message))
        if isinstance(message, BrokerRegistrationRequest):
            if self.answer_registrations:
                self.answer_registration(src, message)
            else:
                self.pending_registrations.append((src, message))
        elif isinstance(message, BrokerHeartbeat):
            self.heartbeats.append(message)
        elif isinstance(message, AlterPartitionRequest):
            self.alter_requests.append(message)
            if self.answer_alter_partition:
                self.network.send(self.node_id, src, AlterPartitionResponse(
                    message.correlation_id, message.tp, Errors.NONE, message.leader_epoch,
                    message.partition_epoch + 1, message.new_isr))
        elif isinstance(message, RecordLineageRequest):
            self.lineage_requests.append(message)
            if self.answer_record_lineage:
                self.network.send(self.node_id, src, RecordLineageResponse(
                    message.correlation_id, message.tp, Errors.NONE, message.leader_epoch))
        else:
            self.responses.setdefault(message.correlation_id, message)

    def answer_registration(self, src: str, request: BrokerRegistrationRequest) -> None:
        self.next_broker_epoch += 1
        self.broker_epochs[request.broker_id] = self.next_broker_epoch
        self.network.send(self.node_id, src, BrokerRegistrationResponse(
            request.correlation_id, Errors.NONE, self.next_broker_epoch, self.controller_epoch))

    # ---- control requests, built by hand --------------------------------------------------------

    def _send(self, broker_id: int, build: Callable[[int], Message]) -> int:
        cid = next(self._ids)
        self.network.send(self.node_id, f"broker-{broker_id}", build(cid))
        return cid

    def leader_and_isr(self, broker_id: int, states: Sequence[LeaderAndIsrPartitionState],
                       *, controller_epoch: int | None = None, broker_epoch: int | None = None,
                       full: bool = False, principal: str = "User:ANONYMOUS") -> int:
        epoch = self.controller_epoch if controller_epoch is None else controller_epoch
        b_epoch = self.broker_epochs.get(broker_id, NO_EPOCH) if broker_epoch is None \
            else broker_epoch
        kind = LeaderAndIsrType.FULL if full else LeaderAndIsrType.INCREMENTAL
        return self._send(broker_id, lambda cid: LeaderAndIsrRequest(
            cid, self.controller_id, epoch, b_epoch, kind, tuple(states), principal=principal))

    def stop_replica(self, broker_id: int, partitions: Sequence[StopReplicaPartition], *,
                     controller_epoch: int | None = None, broker_epoch: int | None = None) -> int:
        epoch = self.controller_epoch if controller_epoch is None else controller_epoch
        b_epoch = self.broker_epochs.get(broker_id, NO_EPOCH) if broker_epoch is None \
            else broker_epoch
        return self._send(broker_id, lambda cid: StopReplicaRequest(
            cid, self.controller_id, epoch, b_epoch, tuple(partitions)))

    def update_metadata(self, broker_id: int, states: Sequence[LeaderAndIsrPartitionState],
                        live: Sequence[int], *, controller_epoch: int | None = None) -> int:
        epoch = self.controller_epoch if controller_epoch is None else controller_epoch
        return self._send(broker_id, lambda cid: UpdateMetadataRequest(
            cid, self.controller_id, epoch, self.broker_epochs.get(broker_id, NO_EPOCH),
            tuple(states), tuple(live)))


def state(tp: TopicPartition, leader: int, leader_epoch: int, isr: Iterable[int],
          replicas: Iterable[int] | None = None, *, partition_epoch: int | None = None,
          controller_epoch: int = 1, log_dir: str = "any") -> LeaderAndIsrPartitionState:
    """A LeaderAndIsr partition state; replicas default to the ISR."""
    isr_t = tuple(isr)
    return LeaderAndIsrPartitionState(
        tp, TOPIC_ID, controller_epoch, leader, leader_epoch, isr_t,
        leader_epoch if partition_epoch is None else partition_epoch,
        tuple(replicas) if replicas is not None else isr_t, log_dir=log_dir)


class Client:
    """A producer/consumer node that keeps the first answer to each request."""

    node_id = "client-1"

    def __init__(self, network: SimNetwork) -> None:
        self.network = network
        self.responses: dict[int, Message] = {}
        self._ids = itertools.count(1)
        network.register(self)

    def receive(self, src: str, message: object) -> None:
        assert isinstance(message, Message)
        self.responses.setdefault(message.correlation_id, message)

    def send(self, broker_id: int, build: Callable[[int], Message]) -> int:
        cid = next(self._ids)
        self.network.send(self.node_id, f"broker-{broker_id}", build(cid))
        return cid


class World:
    """Brokers (ids given), each with ``dirs`` log dirs /b<id>/d<n>, on one simulated world."""

    def __init__(self, broker_ids: Iterable[int] = (1, 2, 3), dirs: int = 2, seed: int = 0,
                 config: BrokerConfig | None = None, delay_ms: tuple[int, int] = (1, 5),
                 authorizer: Callable[[int], AclAuthorizer] | None = None,
                 drop_rate: float = 0.0, duplicate_rate: float = 0.0) -> None:
        self.clock = VirtualClock(1_700_000_000_000)
        self.scheduler = SimScheduler(self.clock, seed=seed)
        self.fs = SimFileSystem(self.clock)
        self.network = SimNetwork(self.scheduler, seed=seed, min_delay_ms=delay_ms[0],
                                  max_delay_ms=delay_ms[1], drop_rate=drop_rate,
                                  duplicate_rate=duplicate_rate)
        self.rng = random.Random(seed)
        self.config = config if config is not None else fast_config()
        self.dirs = dirs
        self.authorizer = authorizer
        self.controller = ControllerStub(self.network)
        self.client = Client(self.network)
        self.brokers: dict[int, Broker] = {}
        for broker_id in broker_ids:
            self.start_broker(broker_id)

    def log_dirs(self, broker_id: int) -> list[str]:
        return [f"/b{broker_id}/d{n}" for n in range(1, self.dirs + 1)]

    def start_broker(self, broker_id: int, wait: bool = True) -> Broker:
        broker = Broker(broker_id, self.fs, self.log_dirs(broker_id), self.clock, self.scheduler,
                        self.network, random.Random(self.rng.randrange(1 << 62)), self.config,
                        controller_locator=lambda: self.controller.node_id,
                        authorizer=self.authorizer(broker_id) if self.authorizer else None)
        self.brokers[broker_id] = broker
        broker.start()
        if wait:
            assert self.run_until(lambda: broker.state is BrokerState.RUNNING, 5_000)
        return broker

    def crash_broker(self, broker_id: int) -> None:
        """The process dies (the page cache survives): no clean-shutdown marker is written."""
        self.brokers.pop(broker_id).halt()

    def run(self, ms: int) -> None:
        self.scheduler.advance(ms)

    def run_until(self, done: Callable[[], bool], timeout_ms: int,
                  observe: Callable[[], None] | None = None) -> bool:
        deadline = self.clock.now_ms() + timeout_ms
        while not done():
            due = self.scheduler.next_due_ms()
            if due is None or due > deadline:
                self.clock.advance_to(deadline)
                return done()
            self.scheduler.step()
            if observe is not None:
                observe()
        return True

    # ---- control --------------------------------------------------------------------------------

    def control(self, broker_id: int, cid_send: Callable[[], int]) -> Message:
        """Send a control request and wait for its answer."""
        cid = cid_send()
        assert self.run_until(lambda: cid in self.controller.responses, 2_000), "no answer"
        return self.controller.responses[cid]

    def lair(self, broker_id: int, states: Sequence[LeaderAndIsrPartitionState],
             **kw: object) -> LeaderAndIsrResponse:
        response = self.control(broker_id, lambda: self.controller.leader_and_isr(
            broker_id, states, **kw))  # type: ignore[arg-type]
        assert isinstance(response, LeaderAndIsrResponse)
        return response

    def stop(self, broker_id: int, partitions: Sequence[StopReplicaPartition],
             **kw: object) -> StopReplicaResponse:
        response = self.control(broker_id, lambda: self.controller.stop_replica(
            broker_id, partitions, **kw))  # type: ignore[arg-type]
        assert isinstance(response, StopReplicaResponse)
        return response

    def metadata(self, broker_id: int, states: Sequence[LeaderAndIsrPartitionState],
                 **kw: object) -> UpdateMetadataResponse:
        response = self.control(broker_id, lambda: self.controller.update_metadata(
            broker_id, states, sorted(self.brokers), **kw))  # type: ignore[arg-type]
        assert isinstance(response, UpdateMetadataResponse)
        return response

    def assign(self, tp: TopicPartition, leader: int, leader_epoch: int, isr: Iterable[int],
               replicas: Iterable[int] | None = None, **kw: object) -> None:
        """Send one partition's LeaderAndIsr to every replica and expect NONE from each."""
        st = state(tp, leader, leader_epoch, isr, replicas, **kw)  # type: ignore[arg-type]
        for broker_id in st.replicas:
            if broker_id in self.brokers:
                response = self.lair(broker_id, [st])
                assert response.error is Errors.NONE
                assert [e.error for e in response.partition_errors] == [Errors.NONE], response

    # ---- clients --------------------------------------------------------------------------------

    def produce_async(self, broker_id: int, tp: TopicPartition, values: Sequence[bytes],
                      acks: int = -1, timeout_ms: int = 30_000,
                      principal: str = "User:ANONYMOUS") -> int:
        records = build_simple_batch(list(values), self.clock.now_ms())
        return self.client.send(broker_id, lambda cid: ProduceRequest(
            cid, acks, timeout_ms, ((tp, records),), principal=principal))

    def produce(self, broker_id: int, tp: TopicPartition, values: Sequence[bytes],
                acks: int = -1, timeout_ms: int = 30_000, wait_ms: int = 60_000,
                principal: str = "User:ANONYMOUS") -> ProduceResponse:
        cid = self.produce_async(broker_id, tp, values, acks, timeout_ms, principal)
        assert self.run_until(lambda: cid in self.client.responses, wait_ms), "no answer"
        response = self.client.responses[cid]
        assert isinstance(response, ProduceResponse)
        return response

    def fetch(self, broker_id: int, tp: TopicPartition, offset: int,
              principal: str = "User:ANONYMOUS") -> FetchResponse:
        cid = self.client.send(broker_id, lambda cid: FetchRequest(
            cid, CONSUMER_REPLICA_ID, -1, 0, 1, 1 << 20,
            (FetchPartition(tp, -1, offset, -1, 1 << 20),), principal=principal))
        assert self.run_until(lambda: cid in self.client.responses, 2_000)
        response = self.client.responses[cid]
        assert isinstance(response, FetchResponse)
        return response

    def list_offsets(self, broker_id: int, tp: TopicPartition, timestamp: int,
                     principal: str = "User:ANONYMOUS") -> tuple[Errors, int]:
        cid = self.client.send(broker_id, lambda cid: ListOffsetsRequest(
            cid, CONSUMER_REPLICA_ID, ((tp, timestamp),), principal=principal))
        assert self.run_until(lambda: cid in self.client.responses, 2_000)
        response = self.client.responses[cid]
        assert isinstance(response, ListOffsetsResponse)
        _, error, offset = response.partitions[0]
        return error, offset

    # ---- inspection -----------------------------------------------------------------------------

    def partition(self, broker_id: int, tp: TopicPartition) -> Partition:
        return self.brokers[broker_id].replica_manager.partitions[tp]

    def values(self, broker_id: int, tp: TopicPartition) -> list[tuple[int, bytes | None]]:
        """Every (offset, value) in the replica's log, from its log start offset."""
        log = self.partition(broker_id, tp).log
        return [(offset, rec.value) for offset, rec in log.read_records()]

    def check_offsets(self) -> None:
        """0 <= log start offset <= high watermark <= log end offset on every replica."""
        for broker in self.brokers.values():
            for p in broker.replica_manager.partitions.values():
                if not p.offline:
                    p.check_offsets()


# ---- tests of the broker's life cycle ------------------------------------------------------------


def test_registration_is_retried_until_answered_and_heartbeats_follow() -> None:
    w = World(broker_ids=())
    w.controller.answer_registrations = False
    broker = w.start_broker(1, wait=False)
    w.run(3_500)
    # One registration per retry interval (1000 ms), all from the same incarnation.
    registrations = [m for _, m in w.controller.received
                     if isinstance(m, BrokerRegistrationRequest)]
    assert len(registrations) >= 3
    assert {r.incarnation_id for r in registrations} == {broker.incarnation_id}
    assert broker.state is BrokerState.REGISTERING and broker.broker_epoch == NO_EPOCH
    src, last = w.controller.pending_registrations[-1]
    w.controller.answer_registration(src, last)
    assert w.run_until(lambda: broker.state is BrokerState.RUNNING, 100)
    assert broker.broker_epoch == w.controller.broker_epochs[1]
    w.run(4_100)
    beats = [h for h in w.controller.heartbeats if h.broker_id == 1]
    assert len(beats) >= 2 and {h.broker_epoch for h in beats} == {broker.broker_epoch}


def test_halt_cancels_every_task_of_the_dead_process() -> None:
    w = World(broker_ids=(1, 2))
    w.assign(T0, 1, 1, [1, 2])
    assert w.produce(1, T0, [b"a"]).partitions[0].error is Errors.NONE
    before = {t.name for t in w.scheduler.pending()}
    assert {"broker-1 heartbeat", "broker-2 heartbeat", "broker-1 isr-expiration",
            "log-retention", "high-watermark-checkpoint"} <= before
    w.crash_broker(2)
    w.brokers[1].halt()
    w.brokers.clear()
    w.run(120_000)  # nothing of either process may run again: no I/O, no message
    sent = w.network.stats.sent
    w.run(120_000)
    assert w.network.stats.sent == sent
    live = [t.name for t in w.scheduler.pending()]
    assert not any(n.startswith("broker-") or "checkpoint" in n or "log" in n for n in live), live


def test_a_broker_replaced_without_halt_stops_itself() -> None:
    w = World(broker_ids=(1,))
    old = w.brokers[1]
    w.network.unregister(old.node_id)  # a facade that forgot halt()
    w.start_broker(1)
    w.run(5_000)
    assert old.state is BrokerState.HALTED
    assert w.brokers[1].state is BrokerState.RUNNING


def test_clean_shutdown_and_restart_keeps_the_log_and_its_epochs() -> None:
    w = World(broker_ids=(1,))
    w.assign(T0, 1, 3, [1])
    assert w.produce(1, T0, [b"a", b"b"]).partitions[0].base_offset == 0
    w.brokers[1].shutdown()
    assert w.brokers[1].state is BrokerState.SHUT_DOWN
    w.start_broker(1)
    assert w.brokers[1].startup_report is not None
    assert w.brokers[1].startup_report.clean_dirs  # the clean-shutdown marker was found
    w.assign(T0, 1, 4, [1])
    p = w.partition(1, T0)
    assert [(e.epoch, e.start_offset) for e in p.epoch_cache.entries] == [(3, 0), (4, 2)]
    assert p.high_watermark == 2 and w.values(1, T0) == [(0, b"a"), (1, b"b")]
