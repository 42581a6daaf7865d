"""The embedded cluster: the library's front door.

``Cluster.simulated(...)`` runs a controller and brokers in a seeded simulated world (virtual
time, simulated disks and network; one seed reproduces one run). ``Cluster.real(path, ...)``
runs the same nodes on the real file system and wall clock, in one process, with the metadata
store in a SQLite file. Every call that fails raises a ``KafkaError`` carrying Kafka's error name
and code. produce, fetch and list_offsets go through the embedded client (``cluster/client.py``),
which learns leaders from Metadata requests and retries as Kafka's clients do.
"""

from __future__ import annotations

import errno
import os
import posixpath
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Literal
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from logwright.broker import Broker, BrokerConfig, BrokerState
from logwright.broker.acl_file import ACL_FILE, load_acls, save_acls
from logwright.broker.authorizer import AclAuthorizer, AclBinding
from logwright.broker.config import ANONYMOUS, INTERNAL_PRINCIPAL
from logwright.broker.metrics import MAX_LAG, PER_LOG_PREFIX, BrokerMetrics, merged_collector
from logwright.cluster import validate
from logwright.cluster.client import (
    Acks,
    Client,
    ClientConfig,
    ClientNode,
    ConsumerRecord,
    DeleteRecordsResult,
)
from logwright.configs import (
    ConfigEntry,
    describe_topic_configs,
    parse_topic_configs,
    read_properties_file,
)
from logwright.controller import (
    Controller,
    ControllerConfig,
    MemoryStore,
    MetadataStore,
    PartitionState,
    SqliteStore,
)
from logwright.errors import (
    ClusterError,
    DataDirLockedError,
    DataDirMismatchError,
    Errors,
    InvalidConfig,
    KafkaError,
    LogwrightError,
)
from logwright.identity import TopicPartition, Uuid, broker_node_id, controller_node_id
from logwright.logmanager import DataDirIdentity
from logwright.protocol import (
    NO_EPOCH,
    AlterReplicaLogDirsDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirsTopic,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)
from logwright.storage.meta_properties import (
    LOCK_FILE,
    MetaProperties,
    MetaPropertiesFile,
    duplicate_directory_id,
    identity_mismatch,
)
from logwright.world import FileLock, FileSystem, RealFileSystem, RealRuntime, SimWorld
from logwright.world.trace import NO_TRACE, Json, TraceRecorder, open_trace

__all__ = ["Cluster", "ClusterError", "ConsumerRecord"]

Runtime = SimWorld | RealRuntime


class Cluster:
    """A controller and brokers in one process, simulated or real. A context manager: leaving
    the ``with`` block closes it (a clean shutdown of every broker)."""

    def __init__(self, runtime: Runtime, store: MetadataStore, root: str, brokers: int,
                 log_dirs_per_broker: int, broker_config: BrokerConfig | None = None,
                 controller_config: ControllerConfig | None = None,
                 client_config: ClientConfig | None = None,
                 trace: TraceRecorder = NO_TRACE) -> None:
        if brokers < 1:
            raise ClusterError(f"a cluster needs at least one broker, not {brokers}")
        if log_dirs_per_broker < 1:
            raise ClusterError(f"a broker needs at least one log dir, not {log_dirs_per_broker}")
        self.runtime = runtime
        self.store = store
        #: The trace recorder every node reports to (``world/trace.py``); off by default.
        self.trace = trace
        self.root = root
        self.broker_config = broker_config or BrokerConfig()
        self.controller_config = controller_config or ControllerConfig(
            min_insync_replicas=self.broker_config.min_insync_replicas)
        # The cluster's own nodes speak as INTERNAL_PRINCIPAL, a super user of the one
        # authorizer every broker shares, so that no client ACL can lock the controller or the
        # replica fetchers out (unless a config names other principals for them).
        if self.broker_config.inter_broker_principal == ANONYMOUS:
            self.broker_config = replace(self.broker_config,
                                         inter_broker_principal=INTERNAL_PRINCIPAL)
        if self.controller_config.principal == ANONYMOUS:
            self.controller_config = replace(self.controller_config,
                                             principal=INTERNAL_PRINCIPAL)
        #: The ACLs every broker enforces (allow-all while there are none); a real cluster
        #: keeps them in ``<path>/acls.json``. Change them with ``add_acls``/``remove_acls``.
        self.authorizer = AclAuthorizer(super_users=[self.broker_config.inter_broker_principal,
                                                     self.controller_config.principal])
        for acl in load_acls(RealFileSystem(), self._acl_path(root, runtime)):
            self.authorizer.add_acl(acl)
        self.client_config = client_config if client_config is not None else ClientConfig()
        # The facade's own waits (registration, a new topic's leaders), not the client's.
        self.request_timeout_ms = 30_000
        self.closed = False
        self.log_dirs = {b: tuple(posixpath.join(root, f"broker-{b}", f"d{j}")
                                  for j in range(1, log_dirs_per_broker + 1))
                         for b in range(1, brokers + 1)}
        self.brokers: dict[int, Broker] = {}
        self.controllers: list[Controller] = []
        client_node = ClientNode("client-1", runtime.network)
        self._next_controller_id = 1
        # The one cluster id, owned by the metadata store, written to every log dir's
        # meta.properties. In simulation it is drawn from a generator of its own (seed and
        # root), so adding it changed no other random choice of a seeded run. A real cluster's
        # is random: a lost or replaced metadata.db then gets a new id, and its log dirs are
        # refused (DataDirMismatchError) instead of being taken over by new topics.
        id_rng = (random.Random(f"logwright-cluster-id:{runtime.seed}:{root}")
                  if isinstance(runtime, SimWorld) else random.SystemRandom())
        self.cluster_id = store.ensure_cluster_id(str(Uuid.from_random(id_rng)))
        self._broker_starts = 0
        #: The port of the metrics HTTP endpoint (``Cluster.real(..., metrics_port=...)``).
        self.metrics_port: int | None = None
        self._metrics_server: WSGIServer | None = None
        self._data_lock: tuple[RealFileSystem, FileLock] | None = None
        self._check_data_dirs()
        if isinstance(runtime, SimWorld):
            runtime.crash_listeners.append(self._machine_crashed)
        self._start_controller()
        try:
            for b in self.log_dirs:
                self._start_broker(b)
        except BaseException:
            self._release()  # what the started brokers hold (their dir locks)
            raise
        self._wait(lambda: all(self._registered(b) for b in self.brokers), "brokers registering")
        # Forked after the nodes', so that adding the client left their generators unchanged.
        self.client = Client(client_node, runtime, [broker_node_id(b) for b in self.log_dirs],
                             self.client_config, runtime.fork_rng())

    # ---- construction --------------------------------------------------------------------------

    @classmethod
    def simulated(cls, brokers: int = 3, log_dirs_per_broker: int = 2, seed: int = 0,
                  drop_rate: float = 0.0, duplicate_rate: float = 0.0, min_delay_ms: int = 1,
                  max_delay_ms: int = 5, broker_config: BrokerConfig | None = None,
                  controller_config: ControllerConfig | None = None,
                  client_config: ClientConfig | None = None,
                  trace: str | os.PathLike[str] | None = None,
                  trace_id: str | None = None) -> Cluster:
        """A cluster in a seeded simulated world: virtual time, simulated disks and network.

        ``trace`` (a path; default none) records every model event of the run there, in JSON
        Lines (Parquet if the path ends in ``.parquet`` and pyarrow is installed), for
        ``logwright traces check`` (traces/SCHEMA.md); ``close()`` finishes the file. Its trace
        id is ``trace_id``, by default ``sim-seed-<seed>``: give runs that share a seed ids of
        their own when their traces are checked together."""
        validate.simulated(brokers, log_dirs_per_broker, seed, drop_rate, duplicate_rate,
                           min_delay_ms, max_delay_ms, broker_config, controller_config)
        validate.client_config(client_config)
        trace = validate.trace_path(trace)
        trace_id = validate.trace_id(trace_id, trace)
        world = SimWorld(seed, min_delay_ms=min_delay_ms, max_delay_ms=max_delay_ms,
                         drop_rate=drop_rate, duplicate_rate=duplicate_rate)
        recorder = NO_TRACE
        if trace is not None:
            log_config = (broker_config or BrokerConfig()).log
            header: dict[str, Json] = {
                "seed": seed, "brokers": list(range(1, brokers + 1)), "runtime": "simulated",
                "durable_log_start_offset": log_config.durable_log_start_offset}
            recorder = open_trace(trace, world.clock, trace_id=trace_id or f"sim-seed-{seed}",
                                  header=header)
        try:
            return cls(world, MemoryStore(), "/cluster", brokers, log_dirs_per_broker,
                       broker_config, controller_config, client_config, trace=recorder)
        except BaseException:
            recorder.close()
            raise

    @classmethod
    def real(cls, path: str, brokers: int = 3, log_dirs_per_broker: int = 2, seed: int = 0,
             broker_config: BrokerConfig | None = None,
             controller_config: ControllerConfig | None = None,
             config_file: str | None = None,
             broker_properties: Mapping[str, object] | None = None,
             client_config: ClientConfig | None = None,
             metrics_port: int | None = None, metrics_host: str = "127.0.0.1",
             trace: str | os.PathLike[str] | None = None) -> Cluster:
        """The same cluster on the real file system and wall clock, under ``path``.

        The metadata store is ``<path>/metadata.db`` (SQLite); opening an existing ``path``
        brings the cluster back with its topics and records. A path that is a file or cannot
        be created, or a metadata.db that is not a readable store, is refused (ClusterError).
        ``<path>/.lock`` is held until
        ``close()``: a second ``Cluster`` (in this process or another) on the same ``path``
        raises ``DataDirLockedError`` before anything is written.

        ``config_file`` (a ``server.properties``-style file, its path taken as given) and
        ``broker_properties`` (Kafka property names; they win over the file) configure every
        broker and the controller instead of ``broker_config``/``controller_config``. A bad
        property raises InvalidConfig naming the key (and the file and line, for the file).

        ``metrics_port`` (default: off) serves every live broker's metrics, each sample
        labelled ``broker``, in Prometheus text format at ``http://<metrics_host>:<port>/``
        (prometheus_client's own server, in a thread, stopped by ``close()``); 0 picks a free
        port, reported as ``cluster.metrics_port``.

        ``trace`` (a path; default none) records the run's model events as
        ``Cluster.simulated(trace=...)`` does, timed by the wall clock (traces/SCHEMA.md).
        """
        validate.construction(brokers, log_dirs_per_broker, seed, broker_config, controller_config)
        validate.client_config(client_config)
        validate.metrics_endpoint(metrics_port, metrics_host)
        trace = validate.trace_path(trace)
        validate.config_source(config_file, broker_properties)
        if config_file is not None or broker_properties is not None:
            if broker_config is not None or controller_config is not None:
                raise ClusterError("give either broker_config/controller_config or "
                                   "config_file/broker_properties, not both")
            broker_config, controller_config = _configs_from_properties(config_file,
                                                                        broker_properties)
        root = validate.data_dir(path, brokers, log_dirs_per_broker)
        fs = RealFileSystem()
        lock_path = os.path.join(root, LOCK_FILE)
        lock_existed = fs.exists(lock_path)
        try:
            lock = fs.lock(lock_path)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise DataDirLockedError(root) from exc
            raise ClusterError(f"cannot lock {root}: {exc}") from exc
        try:
            store = validate.open_store(root)
        except BaseException:
            fs.unlock(lock)
            if not lock_existed:  # a refused store leaves the data path as it found it
                fs.remove(lock_path)
            raise
        runtime = RealRuntime(seed)
        recorder = _real_trace(trace, runtime, seed, brokers, broker_config)
        try:
            cluster = cls(runtime, store, root, brokers, log_dirs_per_broker,
                          broker_config, controller_config, client_config, trace=recorder)
        except BaseException:
            recorder.close()
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
                                rt.fork_rng(), self.controller_config, trace=self.trace,
                                id_rng=self._unique_rng())
        rt.network.register(controller)
        controller.activate()
        self.controllers.append(controller)
        return controller

    def _unique_rng(self) -> random.Random | None:
        """What draws ids and names that must never repeat: the node's own seeded generator in
        simulation (one seed reproduces one run), the operating system's randomness in a real
        cluster, whose seeded generators start their sequences again at every process start
        (a re-created topic would get a deleted generation's id, a -delete dir of the last
        run a name still on disk)."""
        return None if isinstance(self.runtime, SimWorld) else random.SystemRandom()

    def _disk_of(self, broker_id: int) -> FileSystem:
        rt = self.runtime
        return rt.new_fs(broker_node_id(broker_id)) if isinstance(rt, SimWorld) else rt.new_fs()

    def _check_data_dirs(self) -> None:
        """Every existing meta.properties of every broker's dirs names this cluster and its
        broker, and no directory.id appears twice, checked before any node starts: a dir copied
        from another broker, or another cluster's, is refused (DataDirMismatchError) before the
        controller claims an epoch or any broker writes a file. (Each broker checks its own dirs
        again at start-up; an unreadable file is left to it, which takes that dir offline.)"""
        seen: dict[str, MetaProperties] = {}
        for broker_id, dirs in self.log_dirs.items():
            fs = self._disk_of(broker_id)
            for path in dirs:
                try:
                    meta = MetaPropertiesFile(fs, path).read()
                except (OSError, LogwrightError):
                    continue
                if meta is None:
                    continue
                problem = (identity_mismatch(path, meta, self.cluster_id, broker_id)
                           or duplicate_directory_id(path, meta, seen))
                if problem is not None:
                    raise DataDirMismatchError(problem)
                seen[path] = meta

    def _start_broker(self, broker_id: int) -> Broker:
        rt = self.runtime
        fs = self._disk_of(broker_id)
        for d in self.log_dirs[broker_id]:
            try:
                fs.makedirs(d)
            except OSError:
                pass  # an unusable dir: the broker's start-up takes it offline and says why
        # Fresh dirs' directory.ids come from a generator of their own per broker start, so
        # the other random choices of a seeded run stay as they were.
        identity = DataDirIdentity(self.cluster_id, broker_id, random.Random(
            f"logwright-directory-ids:{self.cluster_id}:{broker_id}:{self._broker_starts}"))
        self._broker_starts += 1
        broker = Broker(broker_id, fs, self.log_dirs[broker_id], rt.clock, rt.scheduler,
                        rt.network, rt.fork_rng(), self.broker_config,
                        controller_locator=self._locate_controller, identity=identity,
                        trace=self.trace, authorizer=self.authorizer,
                        unique_rng=self._unique_rng())
        self.brokers[broker_id] = broker
        broker.start()
        return broker

    def _registered(self, broker_id: int) -> bool:
        broker = self.brokers[broker_id]
        return broker.alive and broker.broker_epoch != NO_EPOCH

    def _wait(self, done: Callable[[], bool], what: str, timeout_ms: int | None = None) -> None:
        if not self.runtime.run_until(done, timeout_ms or self.request_timeout_ms):
            raise KafkaError.of(Errors.REQUEST_TIMED_OUT, f"timed out waiting for {what}")

    # ---- controller view -----------------------------------------------------------------------

    @property
    def controller(self) -> Controller:
        """The controller that most recently took over."""
        self._require_open()
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
                     configs: Mapping[str, object] | None = None) -> Uuid:
        """Create a topic and wait until every partition has a leader serving it.

        ``configs``: topic configs by Kafka name (docs/configs.md); InvalidConfig for an unknown
        name or a bad value, and then nothing is created."""
        validate.create_topic(self, name, partitions, replication_factor, configs)
        rf = replication_factor if replication_factor is not None else min(3, len(self.brokers))
        topic_id = self.controller.create_topic(name, partitions, rf, configs)
        tps = [TopicPartition(name, p) for p in range(partitions)]
        self._wait(lambda: all(self._leader_ready(tp) for tp in tps), f"leaders of {name}")
        return topic_id

    def create_partitions(self, name: str, total: int) -> list[int]:
        """Grow topic ``name`` to ``total`` partitions (``kafka-topics.sh --alter
        --partitions``) and wait until each new one has a leader serving it; returns the new
        partition numbers. Records already written stay where they are: a key may map to
        another partition afterwards, as in Kafka. Errors (nothing changed):
        UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS (not above the current count, or above
        the cap), INVALID_REPLICATION_FACTOR (too few live brokers)."""
        validate.create_partitions(self, name, total)
        added = self.controller.create_partitions(name, total)
        tps = [TopicPartition(name, p) for p in added]
        self._wait(lambda: self.leaders_ready(tps), f"leaders of {name}'s new partitions")
        return list(added)

    def delete_topic(self, name: str) -> None:
        """Delete a topic: its replicas are stopped and their logs deleted."""
        validate.delete_topic(self, name)
        self.controller.delete_topic(name)
        self.runtime.run_for(100)

    def alter_topic_configs(self, topic: str, set: Mapping[str, object] | None = None,
                            delete: Iterable[str] = ()) -> dict[str, ConfigEntry]:
        """Change a live topic's configs incrementally, like ``kafka-configs.sh --alter
        --add-config k=v --delete-config k``: ``set`` adds or replaces overrides, ``delete``
        reverts them to the broker default. Waits until every live broker hosting the topic
        applies them (a broker that is down gets them when it comes back) and returns the
        effective configs. Errors (nothing changed): UNKNOWN_TOPIC_OR_PARTITION, InvalidConfig.
        """
        applied = self.begin_alter_topic_configs(topic, set, delete)
        self._wait(applied, f"the configs of {topic} reaching its brokers")
        return self.describe_topic_configs(topic)

    def begin_alter_topic_configs(self, topic: str, set: Mapping[str, object] | None = None,
                                  delete: Iterable[str] = ()) -> Callable[[], bool]:
        """``alter_topic_configs`` without the wait: the overrides are stored and sent, and the
        returned predicate says whether every live broker hosting the topic applies them (for
        callers that cannot block, such as the wire server). Same errors."""
        validate.alter_topic_configs(self, topic, set, delete)
        stored = self.controller.alter_topic_configs(topic, set, list(delete))
        wanted = parse_topic_configs(stored)
        hosts = {r for s in self.store.partitions(topic) for r in s.replicas}

        def applied() -> bool:
            return all(self.brokers[b].log_manager.topic_overrides.get(topic, {}) == wanted
                       for b in hosts if b in self.brokers and self._registered(b))
        return applied

    def describe_topic_configs(self, topic: str) -> dict[str, ConfigEntry]:
        """Every topic config of ``topic`` with its effective value and its source
        (``DYNAMIC_TOPIC_CONFIG``: the topic's override; ``STATIC_BROKER_CONFIG`` or
        ``DEFAULT_CONFIG``: the broker default). UNKNOWN_TOPIC_OR_PARTITION if none."""
        validate.delete_topic(self, topic)  # the same check: a topic name, a usable cluster
        overrides = self.controller.describe_topic_configs(topic)
        defaults = dict(self.broker_config.log.log.topic_config_values())
        defaults["file.delete.delay.ms"] = self.broker_config.log.file_delete_delay_ms
        defaults["min.insync.replicas"] = self.broker_config.min_insync_replicas
        defaults["unclean.leader.election.enable"] = \
            self.controller_config.unclean_leader_election_enable
        return describe_topic_configs(overrides, defaults)

    def leaders_ready(self, tps: Iterable[TopicPartition]) -> bool:
        """Whether every partition in ``tps`` has a live leader serving it at the controller's
        current leader epoch (what ``create_topic`` waits for)."""
        return all(self._leader_ready(tp) for tp in validate.topic_partitions(self, tps))

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

    # ---- ACLs ----------------------------------------------------------------------------------

    @staticmethod
    def _acl_path(root: str, runtime: Runtime) -> str | None:
        return None if isinstance(runtime, SimWorld) else posixpath.join(root, ACL_FILE)

    def add_acls(self, acls: Iterable[AclBinding]) -> None:
        """Add ACLs (Kafka's CreateAcls); every broker enforces them at once. A real cluster
        writes them to ``<path>/acls.json`` (atomically) before they apply, so they survive a
        restart. Adding the first ACL ends allow-all: from then on a principal may do only what
        an ACL allows (super users and the cluster's own nodes excepted)."""
        wanted = validate.acl_bindings(self, acls)
        self._save_acls([*self.authorizer.acls, *wanted])
        for acl in wanted:
            self.authorizer.add_acl(acl)

    def remove_acls(self, acls: Iterable[AclBinding]) -> list[AclBinding]:
        """Remove ACLs (Kafka's DeleteAcls); returns those that were there."""
        wanted = validate.acl_bindings(self, acls)
        gone = [a for a in self.authorizer.acls if a in wanted]
        self._save_acls([a for a in self.authorizer.acls if a not in wanted])
        for acl in gone:
            self.authorizer.remove_acl(acl)
        return gone

    def _save_acls(self, acls: Sequence[AclBinding]) -> None:
        path = self._acl_path(self.root, self.runtime)
        if path is not None:
            save_acls(RealFileSystem(), path, acls)

    # ---- requests ------------------------------------------------------------------------------

    def produce(self, topic: str, partition: int, values: Sequence[bytes | None],
                keys: Sequence[bytes | None] | None = None, acks: Acks = -1,
                timeout_ms: int | None = None) -> int:
        """Append ``values`` as one batch; returns the base offset (-1 for acks=0).

        acks=-1 or "all" returns once every in-sync replica has the batch; acks=1 once the
        leader has it; acks=0 does not wait for an answer. Retried as Kafka's producer does until
        ``timeout_ms`` (default ``delivery.timeout.ms``) passes.
        """
        validate.produce(self, topic, partition, values, keys, acks, timeout_ms)
        return self.client.produce(TopicPartition(topic, partition), values, keys, acks,
                                   timeout_ms, topic_id=self._current_topic_id(topic))

    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int = 1 << 20,
              timeout_ms: int | None = None) -> list[ConsumerRecord]:
        """Committed records (below the high watermark) from ``offset``, as a consumer reads.
        Below the log start offset (or past the high watermark) raises ``OffsetOutOfRange``."""
        validate.fetch(self, topic, partition, offset, max_bytes, timeout_ms)
        return self.client.fetch(TopicPartition(topic, partition), offset, max_bytes, timeout_ms,
                                 topic_id=self._current_topic_id(topic))

    def _current_topic_id(self, topic: str) -> Uuid | None:
        """The id of ``topic``'s current generation, as a Kafka 4 client knows it from
        CreateTopics or DescribeTopics, so that produce, fetch, list offsets and delete records
        name it (KIP-516 and logwright's extensions): a broker still holding a deleted
        generation refuses them instead of serving it. None: no such topic."""
        record = self.store.topic(topic)
        return record.topic_id if record is not None else None

    def list_offsets(self, topic: str, partition: int, which: Literal["earliest", "latest"],
                     timeout_ms: int | None = None) -> int:
        """"earliest" is the log start offset; "latest" the high watermark."""
        validate.list_offsets(self, topic, partition, which, timeout_ms)
        return self.client.list_offsets(TopicPartition(topic, partition), which, timeout_ms,
                                        topic_id=self._current_topic_id(topic))

    def delete_records(self, offsets: Mapping[tuple[str, int], int], timeout_ms: int = 30_000
                       ) -> dict[tuple[str, int], DeleteRecordsResult]:
        """DeleteRecords (KIP-107): delete every record below ``offset`` of each
        ``(topic, partition)`` (-1: below the high watermark). Returns one
        ``DeleteRecordsResult`` per partition, keyed as given: its low watermark once every
        replica counted holds the new start offset durably (docs/delete-records.md), else its
        error (OFFSET_OUT_OF_RANGE above the high watermark, POLICY_VIOLATION without
        ``delete`` in cleanup.policy, TOPIC_AUTHORIZATION_FAILED, REQUEST_TIMED_OUT after
        ``timeout_ms``, ...). Bad arguments raise ``InvalidArgument`` before anything is sent.
        """
        checked = validate.delete_records(self, offsets, timeout_ms)
        ids = {t: i for t in {t for (t, _), _ in checked}
               if (i := self._current_topic_id(t)) is not None}
        results = self.client.delete_records(
            [(TopicPartition(t, p), o) for (t, p), o in checked], timeout_ms, topic_ids=ids)
        return {(t, p): results[TopicPartition(t, p)] for (t, p), _ in checked}

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

    def _machine_crashed(self, host: str) -> None:
        """Simulation: machine ``host`` lost power in the middle of a task (its disk's
        ``crash_after`` fired); its broker process stops at once, with no further I/O."""
        for broker in self.brokers.values():
            if broker.node_id == host:
                broker.halt()

    def partition_network(self, a: int | str, b: int | str) -> None:
        """Cut two nodes apart (broker ids or node ids such as "controller-1")."""
        world, (node_a, node_b) = self.simulated_world, validate.node_pair(self, a, b)
        world.network.partition(node_a, node_b)

    def heal_network(self) -> None:
        """Reconnect every pair of nodes."""
        validate.usable(self)
        self.simulated_world.network.heal()

    def advance_time(self, delta_ms: int) -> None:
        """Let ``delta_ms`` pass (virtual in simulation, real otherwise), running every task."""
        validate.advance_time(self, delta_ms)
        self.runtime.run_for(delta_ms)

    def run_until_idle(self, max_ms: int = 60_000) -> bool:
        """Run until every live leader has its records committed (and its epoch's lineage
        recorded, where it reaches the controller), every live replica of its
        partitions has caught up and is in the ISR, no move between a live broker's log dirs
        is running, and no reassignment is pending whose targets are all in the ISR and reach
        the controller (or ``max_ms`` passed); returns whether that
        happened. An elected leader that has not created its replica yet, and a partition
        without a live leader but with a live in-sync or eligible (ELR) replica that reaches
        the controller and hosts it, or is yet to be told of it on its first heartbeat since it
        was cut off (it is elected then), are waited for; so is a partition with no replica in
        the ISR or the ELR whose replicas all do (a recovery election, once each has reported
        its log in a heartbeat)."""
        validate.run_until_idle(self, max_ms)
        return self.runtime.run_until(self._quiet, max_ms)

    def _quiet(self) -> bool:
        if any(b.alive and b.replica_manager.dir_mover.moves for b in self.brokers.values()):
            return False  # a JBOD move is still copying (docs/jbod.md)
        for pending in self.store.reassignments():
            state = self.store.partition(pending.tp)
            if state is not None and all(
                    r in state.isr and self._reaching_controller(r) is not None
                    for r in pending.target_replicas):
                # About to complete: its targets' LeaderAndIsr answers are on their way.
                return False
        for record in self.controller.topics():
            for p in range(record.partition_count):
                tp = TopicPartition(record.name, p)
                state = self.controller.partition_state(tp)
                leader = self.brokers.get(state.leader)
                if leader is None or not leader.alive:
                    if any(self._may_lead(tp, r) for r in (*state.isr, *state.elr)):
                        return False  # a live in-sync or eligible replica is about to lead
                    if (not state.isr and not state.elr
                            and all(self._may_report(tp, r) for r in state.replicas)):
                        return False  # a recovery election, once every replica reported
                    continue  # no live leader: nothing can make progress until one returns
                part = leader.replica_manager.describe().get(tp)
                if part is None or part.topic_id not in (None, state.topic_id):
                    # The live leader elected has not created its replica yet (it may still
                    # hold a deleted generation of the topic under the name).
                    return False
                if part.offline:
                    continue
                if not part.is_leader or part.leader_epoch != state.leader_epoch:
                    return False  # the elected leader has not taken over yet
                if (part.lineage_epoch != part.leader_epoch
                        and self._reaching_controller(state.leader) is not None):
                    return False  # its RecordLineage is on its way (its HW waits for it)
                if part.high_watermark != part.log_end_offset:
                    return False
                for r in state.replicas:
                    peer = self.brokers.get(r)
                    if peer is None or not peer.alive or r == state.leader:
                        continue
                    other = peer.replica_manager.describe().get(tp)
                    if other is None or other.topic_id not in (None, state.topic_id):
                        return False  # a live replica that does not host it (this one) yet
                    if other.offline:
                        continue
                    if other.log_end_offset != part.log_end_offset or r not in part.isr:
                        return False
        return True

    def _may_report(self, tp: TopicPartition, broker_id: int) -> bool:
        """Whether ``broker_id`` runs, can reach the controller, and does not hold ``tp`` on
        a failed dir: it will report its log of ``tp`` for a recovery election."""
        broker = self._reaching_controller(broker_id)
        if broker is None:
            return False
        part = broker.replica_manager.describe().get(tp)
        return not (part.offline if part is not None else broker.log_manager.offline_dirs)

    def _reaching_controller(self, broker_id: int) -> Broker | None:
        """Broker ``broker_id`` if it runs and the network lets it reach the controller."""
        broker = self.brokers.get(broker_id)
        if broker is None or not broker.alive:
            return None
        if isinstance(self.runtime, SimWorld) and not self.runtime.network.connected(
                broker.node_id, self.controller.node_id):
            return None
        return broker

    def _may_lead(self, tp: TopicPartition, broker_id: int) -> bool:
        """Whether ``broker_id`` runs, can reach the controller, and hosts ``tp`` online, or
        does not host it yet while the controller has not heard from it since it was cut off
        (its LeaderAndIsr was lost) and no dir of it is offline: the controller elects it once
        it hears from it (a heartbeat after a partition healed), telling it of ``tp`` first."""
        broker = self._reaching_controller(broker_id)
        if broker is None:
            return False
        part = broker.replica_manager.describe().get(tp)
        if part is None:
            return (broker_id not in self.controller.live_brokers()
                    and not broker.log_manager.offline_dirs)
        return not part.offline

    def reassign(self, json_text: str, wait: bool = True, timeout_ms: int = 120_000) -> None:
        """Carry out a reassignment given as Kafka's reassignment JSON; with ``wait``, until it
        is complete: every target replica in the ISR, and every replica whose ``log_dirs`` entry
        names a dir in that dir with no future log left (docs/jbod.md)."""
        validate.reassign(self, json_text, wait, timeout_ms)
        self.controller.reassign(json_text)
        if wait:
            self._wait(lambda: all(s.state == "complete"
                                   for s in self.controller.reassignment_status(json_text)),
                       "the reassignment", timeout_ms)

    def describe_log_dirs(self, broker_id: int | None = None
                          ) -> dict[int, DescribeLogDirsResponse]:
        """Each live broker's DescribeLogDirs answer (or only ``broker_id``'s), by broker id,
        sent and answered over the network: per log dir its error (KAFKA_STORAGE_ERROR when
        offline), partitions and, a logwright extension, its strays with orphan removal's last
        decision. ``describe_json`` (``logwright.broker.log_dirs``) renders it as Kafka's
        ``kafka-log-dirs.sh`` does. REQUEST_TIMED_OUT if a broker does not answer."""
        validate.usable(self)
        if broker_id is not None:
            validate.broker_id(self, broker_id)
            if not self.brokers[broker_id].alive:
                raise ClusterError(f"broker {broker_id} is not running")
        ids = [broker_id] if broker_id is not None else sorted(
            b for b, broker in self.brokers.items() if broker.alive)
        node = self.client.node
        asked = {b: node.request(broker_node_id(b), DescribeLogDirsRequest(
            node.next_correlation_id())) for b in ids}
        self.runtime.run_until(lambda: all(c in node.responses for c in asked.values()),
                               self.request_timeout_ms)
        answers: dict[int, DescribeLogDirsResponse] = {}
        for b, cid in asked.items():
            answer = node.take(cid)
            if not isinstance(answer, DescribeLogDirsResponse):
                raise KafkaError.of(Errors.REQUEST_TIMED_OUT,
                                    f"broker {b} did not answer DescribeLogDirs")
            answers[b] = answer
        return answers

    def alter_replica_log_dirs(self, moves: Mapping[tuple[str, int, int], str]
                               ) -> dict[tuple[str, int, int], Errors]:
        """Move replicas between a broker's log dirs (KIP-113, docs/jbod.md): for each
        ``(topic, partition, broker)``, the absolute dir the broker should keep that replica
        in. One AlterReplicaLogDirs request per broker, over the network; each answer is per
        replica: NONE (the move started, restarted towards this dir, or the replica is already
        there; the copy goes on in the background), LOG_DIR_NOT_FOUND, KAFKA_STORAGE_ERROR (the
        destination or the replica's dir offline), REPLICA_NOT_AVAILABLE (not hosted there
        yet: the dir is used when it is), CLUSTER_AUTHORIZATION_FAILED, or REQUEST_TIMED_OUT
        when the broker does not answer. InvalidArgument for an unknown broker or a key that
        is not (topic, partition, broker) or a dir not a string; ClusterError when the broker is
        not running. Nothing is sent unless every entry is well formed."""
        checked = validate.alter_replica_log_dirs(self, moves)
        for (_, _, b), _ in checked:
            if not self.brokers[b].alive:
                raise ClusterError(f"broker {b} is not running")
        per_broker: dict[int, dict[str, dict[str, list[int]]]] = {}
        for (topic, partition, b), log_dir in checked:
            per_broker.setdefault(b, {}).setdefault(log_dir, {}).setdefault(
                topic, []).append(partition)
        node = self.client.node
        asked = {b: node.request(broker_node_id(b), AlterReplicaLogDirsRequest(
            node.next_correlation_id(), tuple(
                AlterReplicaLogDirsDir(d, tuple(AlterReplicaLogDirsTopic(t, tuple(ps))
                                                for t, ps in topics.items()))
                for d, topics in dirs.items())))
            for b, dirs in per_broker.items()}
        self.runtime.run_until(lambda: all(c in node.responses for c in asked.values()),
                               self.request_timeout_ms)
        out: dict[tuple[str, int, int], Errors] = {}
        for b, cid in asked.items():
            answer = node.take(cid)
            if isinstance(answer, AlterReplicaLogDirsResponse):
                for t in answer.results:
                    for p in t.partitions:
                        out[(t.name, p.partition_index, b)] = p.error
        return {key: out.get(key, Errors.REQUEST_TIMED_OUT) for key, _ in checked}

    def metrics(self, broker_id: int | None = None) -> dict[str, float]:
        """Metric values with Kafka's names: one broker's, or over live brokers (counts summed,
        MaxLag the largest) with the active controller's (``kafka.controller:...``: offline
        partitions, unclean and ELR elections; see ``logwright.controller.metrics``).

        Per-log gauges (``kafka.log:type=Log,...``) are in one broker's values only: a sum of
        log end offsets over replicas means nothing, so the summed view leaves them out.
        """
        validate.usable(self)
        if broker_id is not None:
            validate.broker_id(self, broker_id)
            return self.broker(broker_id).snapshot()
        total: dict[str, float] = {}
        for b in self.brokers.values():
            if b.alive:
                for name, value in b.snapshot().items():
                    if name.startswith(PER_LOG_PREFIX):
                        continue
                    # A lag is the largest over brokers, as Kafka's MaxLag is over fetchers;
                    # counts add up.
                    total[name] = (max(total.get(name, value), value) if name == MAX_LAG
                                   else total.get(name, 0.0) + value)
        if self.controllers:
            total.update(self.controller.metrics.snapshot())
        return total

    def _live_broker_metrics(self) -> list[BrokerMetrics]:
        # No side effects (``Broker.alive`` may halt a broker): this may run on the HTTP thread.
        return [b.metrics for b in list(self.brokers.values())
                if b.state in (BrokerState.REGISTERING, BrokerState.RUNNING)]

    def metrics_exposition(self) -> bytes:
        """Every live broker's metrics in one Prometheus text exposition, each sample labelled
        ``broker="<id>"`` (what the HTTP endpoint serves)."""
        validate.usable(self)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(merged_collector(self._live_broker_metrics))
        if self.controllers:
            registry.register(self.controller.metrics.collector())
        return bytes(generate_latest(registry))

    def serve_metrics(self, port: int = 0, host: str = "127.0.0.1") -> int:
        """Serve ``metrics_exposition()`` over HTTP with prometheus_client's server (real
        clusters only; ``Cluster.real(..., metrics_port=...)`` calls this). Returns the port
        (0 picks a free one); ``close()`` stops the server."""
        validate.usable(self)
        validate.metrics_endpoint(port, host)
        if isinstance(self.runtime, SimWorld):
            raise ClusterError("a simulated cluster has no network to serve metrics on; use "
                               "metrics_exposition()")
        if self._metrics_server is not None:
            raise ClusterError(f"metrics are already served on port {self.metrics_port}")
        registry = CollectorRegistry(auto_describe=False)
        registry.register(merged_collector(self._live_broker_metrics))
        registry.register(_ActiveController(self))
        try:
            server, _thread = start_http_server(port, addr=host, registry=registry)
        except OSError as exc:
            raise ClusterError(f"cannot serve metrics on {host}:{port}: {exc}") from exc
        self._metrics_server = server
        self.metrics_port = int(server.server_port)
        return self.metrics_port

    def close(self) -> None:
        """Shut every broker down cleanly (each log dir gets its clean-shutdown marker), the
        controllers and the client; stop the metrics endpoint and release the data path's lock
        (real clusters). Idempotent; any later call raises ``ClusterError``."""
        if self.closed:
            return
        self.client.close()
        self.runtime.network.unregister(self.client.node.node_id)
        self._release()

    def _release(self) -> None:
        """Shut the brokers and controllers down, close the store, stop the metrics endpoint
        and release the data path's lock; the cluster is closed from then on."""
        self.closed = True
        for b in self.brokers.values():
            b.shutdown()
        for c in self.controllers:
            c.shutdown()
        self.trace.close()
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

    def _require_open(self) -> None:
        validate.usable(self)

    def __enter__(self) -> Cluster:
        self._require_open()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class _ActiveController(Collector):
    """The metrics of whichever controller is active at collection time (a failover moves
    them to the new one)."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def collect(self) -> Iterable[Metric]:
        controllers = self._cluster.controllers
        if not controllers:
            return []
        for attempt in range(3):  # the HTTP thread may read while the cluster runs
            try:
                return list(controllers[-1].metrics.collector().collect())
            except RuntimeError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


def _real_trace(path: str | None, runtime: RealRuntime, seed: int, brokers: int,
                broker_config: BrokerConfig | None) -> TraceRecorder:
    """``Cluster.real(trace=...)``'s recorder (NO_TRACE without a path): the simulated one's
    header, with ``runtime`` "real", on the wall clock."""
    if path is None:
        return NO_TRACE
    log_config = (broker_config or BrokerConfig()).log
    return open_trace(path, runtime.clock, trace_id=f"real-seed-{seed}", header={
        "seed": seed, "brokers": list(range(1, brokers + 1)), "runtime": "real",
        "durable_log_start_offset": log_config.durable_log_start_offset})


def _configs_from_properties(config_file: str | None,
                             properties: Mapping[str, object] | None
                             ) -> tuple[BrokerConfig, ControllerConfig]:
    """Broker and controller configs from a properties file and/or a mapping (which wins)."""
    merged: dict[str, object] = {}
    file = read_properties_file(config_file) if config_file is not None else None
    if file is not None:
        merged.update(file.values)
    given = dict(properties or {})
    merged.update(given)
    try:
        return BrokerConfig.from_properties(merged), ControllerConfig.from_properties(merged)
    except InvalidConfig as exc:
        if file is not None and exc.key in file.values and exc.key not in given:
            raise file.error_for(exc) from exc
        raise
