"""The embedded cluster: the library's front door.

``Cluster.simulated(...)`` runs a controller and brokers in a seeded simulated world (virtual
time, simulated disks and network; one seed reproduces one run). ``Cluster.real(path, ...)``
runs the same nodes on the real file system and wall clock, in one process, with the metadata
store in a SQLite file. Every call that fails raises a ``KafkaError`` carrying Kafka's error name
and code.
"""

from __future__ import annotations

import errno
import os
import posixpath
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, generate_latest, start_http_server

from logwright.broker import Broker, BrokerConfig, BrokerState
from logwright.broker.metrics import PER_LOG_PREFIX, BrokerMetrics, merged_collector
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
from logwright.errors import DataDirLockedError, Errors, KafkaError, LogwrightError
from logwright.logmanager import DataDirIdentity
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
from logwright.storage.meta_properties import LOCK_FILE
from logwright.storage.naming import TopicPartition, Uuid
from logwright.world import FileLock, RealFileSystem

Runtime = SimWorld | RealRuntime
RETRIABLE = (Errors.NOT_LEADER_OR_FOLLOWER, Errors.REPLICA_NOT_AVAILABLE,
             Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.REQUEST_TIMED_OUT,
             Errors.KAFKA_STORAGE_ERROR, Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH)


class ClusterError(LogwrightError):
    """A call the cluster cannot make sense of (an unknown broker id, a real-only call...)."""


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
        # The one cluster id, owned by the metadata store, written to every log dir's
        # meta.properties. Drawn from a generator of its own (seed and root), so adding it
        # changed no other random choice of a seeded run.
        self.cluster_id = store.ensure_cluster_id(str(Uuid.from_random(
            random.Random(f"logwright-cluster-id:{runtime.seed}:{root}"))))
        self._broker_starts = 0
        #: The port of the metrics HTTP endpoint (``Cluster.real(..., metrics_port=...)``).
        self.metrics_port: int | None = None
        self._metrics_server: WSGIServer | None = None
        self._data_lock: tuple[RealFileSystem, FileLock] | None = None
        self._start_controller()
        try:
            for b in self.log_dirs:
                self._start_broker(b)
        except BaseException:
            self.close()  # release what the started brokers hold (their dir locks)
            raise
        self._wait(lambda: all(self._registered(b) for b in self.brokers), "brokers registering")

    # ---- construction --------------------------------------------------------------------------

    @classmethod
    def simulated(cls, brokers: int = 3, log_dirs_per_broker: int = 2, seed: int = 0,
                  drop_rate: float = 0.0, duplicate_rate: float = 0.0, min_delay_ms: int = 1,
                  max_delay_ms: int = 5, broker_config: BrokerConfig | None = None,
                  controller_config: ControllerConfig | None = None) -> Cluster:
        """A cluster in a seeded simulated world: virtual time, simulated disks and network."""
        world = SimWorld(seed, min_delay_ms=min_delay_ms, max_delay_ms=max_delay_ms,
                         drop_rate=drop_rate, duplicate_rate=duplicate_rate)
        return cls(world, MemoryStore(), "/cluster", brokers, log_dirs_per_broker,
                   broker_config, controller_config)

    @classmethod
    def real(cls, path: str, brokers: int = 3, log_dirs_per_broker: int = 2, seed: int = 0,
             broker_config: BrokerConfig | None = None,
             controller_config: ControllerConfig | None = None,
             metrics_port: int | None = None, metrics_host: str = "127.0.0.1") -> Cluster:
        """The same cluster on the real file system and wall clock, under ``path``.

        The metadata store is ``<path>/metadata.db`` (SQLite); opening an existing ``path``
        brings the cluster back with its topics and records. ``<path>/.lock`` is held until
        ``close()``: a second ``Cluster`` (in this process or another) on the same ``path``
        raises ``DataDirLockedError`` before anything is written.

        ``metrics_port`` (default: off) serves every live broker's metrics, each sample
        labelled ``broker``, in Prometheus text format at ``http://<metrics_host>:<port>/``
        (prometheus_client's own server, in a thread, stopped by ``close()``); 0 picks a free
        port, reported as ``cluster.metrics_port``.
        """
        os.makedirs(path, exist_ok=True)
        root = os.path.abspath(path)
        fs = RealFileSystem()
        try:
            lock = fs.lock(os.path.join(root, LOCK_FILE))
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise DataDirLockedError(root) from exc
            raise ClusterError(f"cannot lock {root}: {exc}") from exc
        try:
            store = SqliteStore(os.path.join(root, "metadata.db"))
        except BaseException:
            fs.unlock(lock)
            raise
        try:
            cluster = cls(RealRuntime(seed), store, root, brokers, log_dirs_per_broker,
                          broker_config, controller_config)
        except BaseException:
            store.close()
            fs.unlock(lock)
            raise
        cluster._data_lock = (fs, lock)
        if metrics_port is not None:
            try:
                cluster.serve_metrics(metrics_port, metrics_host)
            except BaseException:
                cluster.close()
                raise
        return cluster

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
            fs.makedirs(d)
        # Fresh dirs' directory.ids come from a generator of their own per broker start, so
        # the other random choices of a seeded run stay as they were.
        identity = DataDirIdentity(self.cluster_id, broker_id, random.Random(
            f"logwright-directory-ids:{self.cluster_id}:{broker_id}:{self._broker_starts}"))
        self._broker_starts += 1
        broker = Broker(broker_id, fs, self.log_dirs[broker_id], rt.clock, rt.scheduler,
                        rt.network, rt.fork_rng(), self.broker_config,
                        controller_locator=self._locate_controller, identity=identity)
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
        return self.controller.partition_state(TopicPartition(topic, partition))

    def broker(self, broker_id: int) -> Broker:
        """The running broker object with id ``broker_id``."""
        if broker_id not in self.brokers:
            raise ClusterError(f"no broker {broker_id}; brokers are {sorted(self.brokers)}")
        return self.brokers[broker_id]

    # ---- topics --------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None) -> Uuid:
        """Create a topic and wait until every partition has a leader serving it."""
        rf = replication_factor if replication_factor is not None else min(3, len(self.brokers))
        topic_id = self.controller.create_topic(name, partitions, rf, configs)
        tps = [TopicPartition(name, p) for p in range(partitions)]
        self._wait(lambda: all(self._leader_ready(tp) for tp in tps), f"leaders of {name}")
        return topic_id

    def delete_topic(self, name: str) -> None:
        """Delete a topic: its replicas are stopped and their logs deleted."""
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
        broker = self.broker(broker_id)
        broker.halt()
        if isinstance(self.runtime, SimWorld):
            if power_loss:
                self.runtime.power_loss(broker.node_id)
            else:
                self.runtime.new_fs(broker.node_id).kill_process()

    def restart_broker(self, broker_id: int, wait: bool = True) -> Broker:
        """Start a new process for ``broker_id`` on the same log dirs (a new incarnation)."""
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
        old = self.controller
        if not zombie:
            old.shutdown()
            self.runtime.network.unregister(old.node_id)
        new = self._start_controller()
        self.runtime.run_for(50)
        return new

    def partition_network(self, a: int | str, b: int | str) -> None:
        """Cut two nodes apart (broker ids or node ids such as "controller-1")."""
        self.simulated_world.network.partition(_node(a), _node(b))

    def heal_network(self) -> None:
        """Reconnect every pair of nodes."""
        self.simulated_world.network.heal()

    def advance_time(self, delta_ms: int) -> None:
        """Let ``delta_ms`` pass (virtual in simulation, real otherwise), running every task."""
        self.runtime.run_for(delta_ms)

    def run_until_idle(self, max_ms: int = 60_000) -> bool:
        """Run until every live leader has its records committed, and every live replica of its
        partitions has caught up and is in the ISR (or ``max_ms`` passed); returns whether that
        happened."""
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
        self.controller.reassign(json_text)
        if wait:
            self._wait(lambda: all(s.state == "complete"
                                   for s in self.controller.reassignment_status(json_text)),
                       "the reassignment", timeout_ms)

    def metrics(self, broker_id: int | None = None) -> dict[str, float]:
        """Metric values with Kafka's names: one broker's, or summed over live brokers.

        Per-log gauges (``kafka.log:type=Log,...``) are in one broker's values only: a sum of
        log end offsets over replicas means nothing, so the summed view leaves them out.
        """
        if broker_id is not None:
            return self.broker(broker_id).snapshot()
        total: dict[str, float] = {}
        for b in self.brokers.values():
            if b.alive:
                for name, value in b.snapshot().items():
                    if not name.startswith(PER_LOG_PREFIX):
                        total[name] = total.get(name, 0.0) + value
        return total

    def _live_broker_metrics(self) -> list[BrokerMetrics]:
        # No side effects (``Broker.alive`` may halt a broker): this may run on the HTTP thread.
        return [b.metrics for b in list(self.brokers.values())
                if b.state in (BrokerState.REGISTERING, BrokerState.RUNNING)]

    def metrics_exposition(self) -> bytes:
        """Every live broker's metrics in one Prometheus text exposition, each sample labelled
        ``broker="<id>"`` (what the HTTP endpoint serves)."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(merged_collector(self._live_broker_metrics))
        return bytes(generate_latest(registry))

    def serve_metrics(self, port: int = 0, host: str = "127.0.0.1") -> int:
        """Serve ``metrics_exposition()`` over HTTP with prometheus_client's server (real
        clusters only; ``Cluster.real(..., metrics_port=...)`` calls this). Returns the port
        (0 picks a free one); ``close()`` stops the server."""
        if isinstance(self.runtime, SimWorld):
            raise ClusterError("a simulated cluster has no network to serve metrics on; use "
                               "metrics_exposition()")
        if self._metrics_server is not None:
            raise ClusterError(f"metrics are already served on port {self.metrics_port}")
        registry = CollectorRegistry(auto_describe=False)
        registry.register(merged_collector(self._live_broker_metrics))
        try:
            server, _thread = start_http_server(port, addr=host, registry=registry)
        except OSError as exc:
            raise ClusterError(f"cannot serve metrics on {host}:{port}: {exc}") from exc
        self._metrics_server = server
        self.metrics_port = int(server.server_port)
        return self.metrics_port

    def close(self) -> None:
        """Shut every broker down cleanly, and the controllers; stop the metrics endpoint and
        release the data path's lock (real clusters)."""
        for b in self.brokers.values():
            b.shutdown()
        for c in self.controllers:
            c.shutdown()
        if isinstance(self.store, SqliteStore):
            self.store.close()
        server, self._metrics_server = self._metrics_server, None
        if server is not None:
            server.shutdown()
            server.server_close()
            self.metrics_port = None
        if self._data_lock is not None:
            fs, lock = self._data_lock
            self._data_lock = None
            fs.unlock(lock)


def _node(x: int | str) -> str:
    return broker_node_id(x) if isinstance(x, int) else x
