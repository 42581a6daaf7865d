"""The embedded cluster: the library's front door.

``Cluster.simulated(...)`` runs a controller and brokers in a seeded simulated world (virtual
time, simulated disks and network; one seed reproduces one run). ``Cluster.real(path, ...)``
runs the same nodes on the real file system and wall clock, in one process, with the metadata
store in a SQLite file. Every call that fails raises a ``KafkaError`` carrying Kafka's error name
and code.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from logwright.broker import Broker, BrokerConfig
from logwright.cluster import validate
from logwright.cluster.client import ClientNode
from logwright.cluster.runtime import RealRuntime
from logwright.cluster.world import SimWorld
from logwright.controller import (
    Controller,
    ControllerConfig,
    MemoryStore,
    MetadataStore,
    PartitionState,
    SqliteStore,
    broker_node_id,
    controller_node_id,
)
from logwright.errors import ClusterError, Errors, KafkaError
from logwright.protocol import (
    CONSUMER_REPLICA_ID,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    NO_EPOCH,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    Message,
    ProduceRequest,
    ProduceResponse,
)
from logwright.records import Record, build_batch, decode_batches
from logwright.storage.naming import TopicPartition, Uuid

Runtime = SimWorld | RealRuntime
RETRIABLE = (Errors.NOT_LEADER_OR_FOLLOWER, Errors.REPLICA_NOT_AVAILABLE,
             Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.REQUEST_TIMED_OUT,
             Errors.KAFKA_STORAGE_ERROR, Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH)


@dataclass(frozen=True)
class ConsumerRecord:
    """One record as a consumer sees it."""

    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int


class Cluster:
    """A controller and brokers in one process, simulated or real."""

    def __init__(self, runtime: Runtime, store: MetadataStore, root: str, brokers: int,
                 log_dirs_per_broker: int, broker_config: BrokerConfig | None = None,
                 controller_config: ControllerConfig | None = None,
                 request_timeout_ms: int = 30_000) -> None:
        if brokers < 1:
            raise ClusterError(f"a cluster needs at least one broker, not {brokers}")
        if log_dirs_per_broker < 1:
            raise ClusterError(f"a broker needs at least one log dir, not {log_dirs_per_broker}")
        self.runtime = runtime
        self.store = store
        self.root = root
        self.broker_config = broker_config or BrokerConfig()
        self.controller_config = controller_config or ControllerConfig()
        self.request_timeout_ms = request_timeout_ms
        self.log_dirs = {b: tuple(posixpath.join(root, f"broker-{b}", f"d{j}")
                                  for j in range(1, log_dirs_per_broker + 1))
                         for b in range(1, brokers + 1)}
        self.brokers: dict[int, Broker] = {}
        self.controllers: list[Controller] = []
        self.client = ClientNode("client-1", runtime.network)
        self._next_controller_id = 1
        self._start_controller()
        for b in self.log_dirs:
            self._start_broker(b)
        self._wait(lambda: all(self._registered(b) for b in self.brokers), "brokers registering")

    # ---- construction --------------------------------------------------------------------------

    @classmethod
    def simulated(cls, brokers: int = 3, log_dirs_per_broker: int = 2, seed: int = 0,
                  drop_rate: float = 0.0, duplicate_rate: float = 0.0, min_delay_ms: int = 1,
                  max_delay_ms: int = 5, broker_config: BrokerConfig | None = None,
                  controller_config: ControllerConfig | None = None) -> Cluster:
        """A cluster in a seeded simulated world: virtual time, simulated disks and network."""
        validate.simulated(brokers, log_dirs_per_broker, seed, drop_rate, duplicate_rate,
                           min_delay_ms, max_delay_ms, broker_config, controller_config)
        world = SimWorld(seed, min_delay_ms=min_delay_ms, max_delay_ms=max_delay_ms,
                         drop_rate=drop_rate, duplicate_rate=duplicate_rate)
        return cls(world, MemoryStore(), "/cluster", brokers, log_dirs_per_broker,
                   broker_config, controller_config)

    @classmethod
    def real(cls, path: str, brokers: int = 3, log_dirs_per_broker: int = 2, seed: int = 0,
             broker_config: BrokerConfig | None = None,
             controller_config: ControllerConfig | None = None) -> Cluster:
        """The same cluster on the real file system and wall clock, under ``path``.

        The metadata store is ``<path>/metadata.db`` (SQLite); opening an existing ``path``
        brings the cluster back with its topics and records. A path that is a file or cannot
        be created, or a metadata.db that is not a readable store, is refused (ClusterError).
        """
        validate.construction(brokers, log_dirs_per_broker, seed, broker_config, controller_config)
        root = validate.data_dir(path, brokers, log_dirs_per_broker)
        return cls(RealRuntime(seed), validate.open_store(root), root,
                   brokers, log_dirs_per_broker, broker_config, controller_config)

    @property
    def simulated_world(self) -> SimWorld:
        """The simulated world (simulated clusters only)."""
        if not isinstance(self.runtime, SimWorld):
            raise ClusterError("this cluster runs on the real file system and wall clock")
        return self.runtime

    def _locate_controller(self) -> str | None:
        record = self.store.controller()
        return None if record is None else controller_node_id(record.controller_id)

    def _start_controller(self) -> Controller:
        cid = self._next_controller_id
        self._next_controller_id += 1
        rt = self.runtime
        controller = Controller(cid, rt.network, rt.scheduler, rt.clock, self.store,
                                rt.fork_rng(), self.controller_config)
        rt.network.register(controller)
        controller.activate()
        self.controllers.append(controller)
        return controller

    def _start_broker(self, broker_id: int) -> Broker:
        rt = self.runtime
        fs = rt.new_fs(broker_node_id(broker_id)) if isinstance(rt, SimWorld) else rt.new_fs()
        for d in self.log_dirs[broker_id]:
            try:
                fs.makedirs(d)
            except OSError:
                pass  # an unusable dir: the broker's start-up takes it offline and says why
        broker = Broker(broker_id, fs, self.log_dirs[broker_id], rt.clock, rt.scheduler,
                        rt.network, rt.fork_rng(), self.broker_config,
                        controller_locator=self._locate_controller)
        self.brokers[broker_id] = broker
        broker.start()
        return broker

    def _registered(self, broker_id: int) -> bool:
        broker = self.brokers[broker_id]
        return broker.alive and broker.broker_epoch != NO_EPOCH

    def _wait(self, done: Callable[[], bool], what: str, timeout_ms: int | None = None) -> None:
        if not self.runtime.run_until(done, timeout_ms or self.request_timeout_ms):
            raise KafkaError(Errors.REQUEST_TIMED_OUT, f"timed out waiting for {what}")

    # ---- controller view -----------------------------------------------------------------------

    @property
    def controller(self) -> Controller:
        """The controller that most recently took over."""
        return self.controllers[-1]

    def partition_state(self, topic: str, partition: int) -> PartitionState:
        """The controller's view of one partition (leader, epochs, ISR, replicas)."""
        validate.partition_state(self, topic, partition)
        return self.controller.partition_state(TopicPartition(topic, partition))

    def broker(self, broker_id: int) -> Broker:
        """The running broker object with id ``broker_id``."""
        return self.brokers[validate.broker_id(self, broker_id)]

    # ---- topics --------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None) -> Uuid:
        """Create a topic and wait until every partition has a leader serving it."""
        validate.create_topic(self, name, partitions, replication_factor, configs)
        rf = replication_factor if replication_factor is not None else min(3, len(self.brokers))
        topic_id = self.controller.create_topic(name, partitions, rf, configs)
        tps = [TopicPartition(name, p) for p in range(partitions)]
        self._wait(lambda: all(self._leader_ready(tp) for tp in tps), f"leaders of {name}")
        return topic_id

    def delete_topic(self, name: str) -> None:
        """Delete a topic: its replicas are stopped and their logs deleted."""
        validate.delete_topic(self, name)
        self.controller.delete_topic(name)
        self.runtime.run_for(100)

    def _leader_ready(self, tp: TopicPartition) -> bool:
        try:
            state = self.controller.partition_state(tp)
        except KafkaError:
            return False
        broker = self.brokers.get(state.leader)
        if broker is None or not broker.alive:
            return False
        part = broker.replica_manager.describe().get(tp)
        return part is not None and part.is_leader and part.leader_epoch == state.leader_epoch

    # ---- requests ------------------------------------------------------------------------------

    def _leader_node(self, tp: TopicPartition) -> str | None:
        try:
            state = self.controller.partition_state(tp)
        except KafkaError as exc:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{tp}: {exc.message}") from exc
        return None if state.leader < 0 else broker_node_id(state.leader)

    def _call(self, dst: str, request: Message, timeout_ms: int) -> Message | None:
        self.client.send(dst, request)
        cid = request.correlation_id
        self.runtime.run_until(lambda: cid in self.client.responses, timeout_ms)
        return self.client.take(cid)

    def _with_retries(self, tp: TopicPartition, attempt: Callable[[str], Errors],
                      timeout_ms: int) -> None:
        """Call ``attempt(leader_node)`` until it succeeds, refreshing the leader on retriable
        errors, for at most ``timeout_ms``; raise the last error."""
        deadline = self.runtime.clock.now_ms() + timeout_ms
        last = Errors.REQUEST_TIMED_OUT
        while True:
            leader = self._leader_node(tp)
            if leader is not None:
                last = attempt(leader)
                if last is Errors.NONE:
                    return
                if last not in RETRIABLE:
                    break
            else:
                last = Errors.NOT_LEADER_OR_FOLLOWER
            if self.runtime.clock.now_ms() >= deadline:
                break
            self.runtime.run_for(100)
        raise KafkaError(last, f"{tp}: request failed")

    def produce(self, topic: str, partition: int, values: Sequence[bytes | None],
                keys: Sequence[bytes | None] | None = None, acks: Literal[0, 1, -1] = -1,
                timeout_ms: int | None = None) -> int:
        """Append ``values`` as one batch; returns the base offset (-1 for acks=0).

        acks=-1 ("all") returns once every in-sync replica has the batch; acks=1 once the
        leader has it; acks=0 does not wait for an answer.
        """
        validate.produce(self, topic, partition, values, keys, acks, timeout_ms)
        if acks not in (0, 1, -1):
            raise KafkaError(Errors.INVALID_REQUEST, f"acks must be 0, 1 or -1, not {acks}")
        if not values:
            raise KafkaError(Errors.INVALID_REQUEST, "nothing to produce")
        tp = TopicPartition(topic, partition)
        now = self.runtime.clock.now_ms()
        ks = list(keys) if keys is not None else [None] * len(values)
        if len(ks) != len(values):
            raise KafkaError(Errors.INVALID_REQUEST, "keys and values differ in length")
        batch = build_batch([Record(k, v, now) for k, v in zip(ks, values, strict=True)])
        timeout = timeout_ms if timeout_ms is not None else self.request_timeout_ms
        result: list[int] = [-1]

        def attempt(leader: str) -> Errors:
            request = ProduceRequest(self.client.next_correlation_id(), acks, timeout,
                                     ((tp, batch),))
            if acks == 0:
                self.client.send(leader, request)
                return Errors.NONE
            response = self._call(leader, request, timeout + 1_000)
            if not isinstance(response, ProduceResponse) or not response.partitions:
                return Errors.REQUEST_TIMED_OUT
            answer = response.partitions[0]
            if answer.error is Errors.NONE:
                result[0] = answer.base_offset
            elif answer.error not in RETRIABLE:
                raise KafkaError(answer.error, f"{tp}: {answer.error_message}")
            return answer.error

        self._with_retries(tp, attempt, timeout)
        return result[0]

    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int = 1 << 20,
              timeout_ms: int | None = None) -> list[ConsumerRecord]:
        """Committed records (below the high watermark) from ``offset``, as a consumer reads."""
        validate.fetch(self, topic, partition, offset, max_bytes, timeout_ms)
        tp = TopicPartition(topic, partition)
        out: list[ConsumerRecord] = []

        def attempt(leader: str) -> Errors:
            request = FetchRequest(self.client.next_correlation_id(), CONSUMER_REPLICA_ID,
                                   NO_EPOCH, 0, 0, max_bytes,
                                   (FetchPartition(tp, NO_EPOCH, offset, -1, max_bytes),))
            response = self._call(leader, request, self.request_timeout_ms)
            if not isinstance(response, FetchResponse):
                return Errors.REQUEST_TIMED_OUT
            if response.error is not Errors.NONE:
                return response.error
            data = response.partitions[0]
            if data.error is not Errors.NONE:
                if data.error not in RETRIABLE:
                    raise KafkaError(data.error, f"{tp}: fetch at offset {offset} "
                                     f"(log start offset {data.log_start_offset}, "
                                     f"high watermark {data.high_watermark})")
                return data.error
            for position_offset, record in decode_batches(data.records):
                if position_offset >= offset:
                    out.append(ConsumerRecord(position_offset, record.key, record.value,
                                              record.timestamp_ms))
            return Errors.NONE

        self._with_retries(tp, attempt, timeout_ms or self.request_timeout_ms)
        return out

    def list_offsets(self, topic: str, partition: int,
                     which: Literal["earliest", "latest"]) -> int:
        """"earliest" is the log start offset; "latest" the high watermark."""
        validate.list_offsets(self, topic, partition, which)
        if which not in ("earliest", "latest"):
            raise KafkaError(Errors.INVALID_REQUEST, f"which must be earliest or latest: {which}")
        tp = TopicPartition(topic, partition)
        timestamp = EARLIEST_TIMESTAMP if which == "earliest" else LATEST_TIMESTAMP
        result: list[int] = [-1]

        def attempt(leader: str) -> Errors:
            request = ListOffsetsRequest(self.client.next_correlation_id(), CONSUMER_REPLICA_ID,
                                         ((tp, timestamp),))
            response = self._call(leader, request, self.request_timeout_ms)
            if not isinstance(response, ListOffsetsResponse) or not response.partitions:
                return Errors.REQUEST_TIMED_OUT
            _, error, found = response.partitions[0]
            if error is Errors.NONE:
                result[0] = found
            elif error not in RETRIABLE:
                raise KafkaError(error, f"{tp}: list offsets {which}")
            return error

        self._with_retries(tp, attempt, self.request_timeout_ms)
        return result[0]

    # ---- faults --------------------------------------------------------------------------------

    def crash_broker(self, broker_id: int, power_loss: bool = True) -> None:
        """The broker's process dies. In simulation, with ``power_loss`` its machine loses power
        too, so its unsynced writes are gone; without, the page cache survives."""
        validate.broker_id(self, broker_id), validate.boolean("power_loss", power_loss)
        broker = self.broker(broker_id)
        broker.halt()
        if isinstance(self.runtime, SimWorld):
            if power_loss:
                self.runtime.power_loss(broker.node_id)
            else:
                self.runtime.new_fs(broker.node_id).kill_process()

    def restart_broker(self, broker_id: int, wait: bool = True) -> Broker:
        """Start a new process for ``broker_id`` on the same log dirs (a new incarnation)."""
        validate.broker_id(self, broker_id), validate.boolean("wait", wait)
        old = self.broker(broker_id)
        if old.alive:
            old.shutdown()
        broker = self._start_broker(broker_id)
        if wait:
            self._wait(lambda: self._registered(broker_id), f"broker {broker_id} registering")
        return broker

    def fail_controller(self, zombie: bool = False) -> Controller:
        """Fail over to a new controller (epoch + 1). With ``zombie`` the old one keeps running
        and sending, unaware, so fencing can be watched at work."""
        validate.fail_controller(self, zombie)
        old = self.controller
        if not zombie:
            old.shutdown()
            self.runtime.network.unregister(old.node_id)
        new = self._start_controller()
        self.runtime.run_for(50)
        return new

    def partition_network(self, a: int | str, b: int | str) -> None:
        """Cut two nodes apart (broker ids or node ids such as "controller-1")."""
        world, (node_a, node_b) = self.simulated_world, validate.node_pair(self, a, b)
        world.network.partition(node_a, node_b)

    def heal_network(self) -> None:
        """Reconnect every pair of nodes."""
        self.simulated_world.network.heal()

    def advance_time(self, delta_ms: int) -> None:
        """Let ``delta_ms`` pass (virtual in simulation, real otherwise), running every task."""
        validate.advance_time(self, delta_ms)
        self.runtime.run_for(delta_ms)

    def run_until_idle(self, max_ms: int = 60_000) -> bool:
        """Run until every live leader has its records committed, and every live replica of its
        partitions has caught up and is in the ISR (or ``max_ms`` passed); returns whether that
        happened."""
        validate.run_until_idle(self, max_ms)
        return self.runtime.run_until(self._quiet, max_ms)

    def _quiet(self) -> bool:
        for record in self.controller.topics():
            for p in range(record.partition_count):
                tp = TopicPartition(record.name, p)
                state = self.controller.partition_state(tp)
                leader = self.brokers.get(state.leader)
                if leader is None or not leader.alive:
                    continue  # no live leader: nothing can make progress until one returns
                part = leader.replica_manager.describe().get(tp)
                if part is None or part.offline:
                    continue
                if not part.is_leader or part.leader_epoch != state.leader_epoch:
                    return False  # the elected leader has not taken over yet
                if part.high_watermark != part.log_end_offset:
                    return False
                for r in state.replicas:
                    peer = self.brokers.get(r)
                    if peer is None or not peer.alive or r == state.leader:
                        continue
                    other = peer.replica_manager.describe().get(tp)
                    if other is None:
                        return False  # a live replica that does not host it yet
                    if other.offline:
                        continue
                    if other.log_end_offset != part.log_end_offset or r not in part.isr:
                        return False
        return True

    def reassign(self, json_text: str, wait: bool = True, timeout_ms: int = 120_000) -> None:
        """Carry out a reassignment given as Kafka's reassignment JSON."""
        validate.reassign(self, json_text, wait, timeout_ms)
        self.controller.reassign(json_text)
        if wait:
            self._wait(lambda: all(s.state == "complete"
                                   for s in self.controller.reassignment_status(json_text)),
                       "the reassignment", timeout_ms)

    def metrics(self, broker_id: int | None = None) -> dict[str, float]:
        """Metric values with Kafka's names: one broker's, or summed over live brokers."""
        if broker_id is not None:
            validate.broker_id(self, broker_id)
            return self.broker(broker_id).snapshot()
        total: dict[str, float] = {}
        for b in self.brokers.values():
            if b.alive:
                for name, value in b.snapshot().items():
                    total[name] = total.get(name, 0.0) + value
        return total

    def close(self) -> None:
        """Shut every broker down cleanly, and the controllers."""
        for b in self.brokers.values():
            b.shutdown()
        for c in self.controllers:
            c.shutdown()
        if isinstance(self.store, SqliteStore):
            self.store.close()
        self.closed = True  # every later call is refused (validate.usable)

