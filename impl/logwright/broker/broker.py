"""The broker node: registration, heartbeats, authorization and request dispatch.

Invariant upheld: StaleControllerFenced (spec/ControllerFencing.tla, hazards 3 and 4), with the
checks in ``fencing.py``. Because a broker cannot judge a broker epoch before it knows its own,
control requests that arrive before the registration is answered wait, in order, and are judged
once it is.

A broker is an h11-style state machine: ``handle`` is the decision for one message and returns
its effects (responses and requests to send, timers to arm) without performing any; ``receive``
hands them to the broker's driver (``driver.py``), the only part that touches the injected
network and scheduler. Timers and answers to the broker's own requests come back through the
driver as decisions too. A crash is the facade's ``fs.crash()`` plus ``halt()`` (no I/O, every
task cancelled) and dropping the object; a broker that notices it is no longer the node
registered under its id halts itself.
"""

from __future__ import annotations

import enum
import posixpath
import random
from collections import deque
from collections.abc import Callable, Iterable
from typing import Final

from logwright.broker import tracing
from logwright.broker.authorizer import AclAuthorizer, Operation
from logwright.broker.config import BrokerConfig
from logwright.broker.driver import BrokerDriver
from logwright.broker.effects import ArmTask, Call, Effect, Notify, Send
from logwright.broker.fencing import ControlRequest, fence, fenced_response
from logwright.broker.log_dirs import describe_log_dirs
from logwright.broker.metrics import BrokerMetrics, LogReading, MetricSources
from logwright.broker.partition import NO_LEADER, Role
from logwright.broker.replica_manager import ReplicaManager
from logwright.errors import Errors
from logwright.identity import TopicPartition, Uuid
from logwright.logmanager import DataDirIdentity, LogManager, StartupReport
from logwright.protocol import (
    NO_EPOCH,
    AlterReplicaLogDirsPartitionResult,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirsTopicResult,
    BrokerHeartbeat,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    DeleteRecordsRequest,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    ListOffsetsRequest,
    Message,
    MetadataRequest,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResult,
    PartitionError,
    ProduceRequest,
    ReplicaReport,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from logwright.protocol.channel import RequestChannel
from logwright.protocol.messages import control_partitions
from logwright.world.clock import Clock
from logwright.world.fs import FileSystem
from logwright.world.network import Network
from logwright.world.scheduler import Scheduler
from logwright.world.trace import (
    CONTROLLER_FENCING,
    FETCHER_FAILURE,
    NO_TRACE,
    TraceRecorder,
    first_of_each,
    topic_id_text,
)

ControllerLocator = Callable[[], str | None]

_SERVED = (LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest, ProduceRequest,
           FetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest, MetadataRequest,
           DeleteRecordsRequest, DescribeLogDirsRequest, AlterReplicaLogDirsRequest)
"""The requests a broker serves (never answers to its own requests)."""


class BrokerState(enum.Enum):
    """Where a broker process is in its life."""

    NOT_RUNNING = "not running"
    REGISTERING = "registering"  # started, waiting for its broker epoch
    RUNNING = "running"
    SHUT_DOWN = "shut down"
    HALTED = "halted"  # crashed, or stopped because every log dir failed


# Read per message: globals, not enum lookups (``logwright.errors.NO_ERROR`` says why).
_LIVE_STATES: Final = (BrokerState.REGISTERING, BrokerState.RUNNING)
"""The states of a live broker (a tuple: its members are compared by identity first, an enum's
hash is a Python call)."""
_WRITE: Final = Operation.WRITE
_CLUSTER_ACTION: Final = Operation.CLUSTER_ACTION


class Broker:
    """One broker process ("broker-<id>")."""

    def __init__(self, broker_id: int, fs: FileSystem, log_dirs: Iterable[str], clock: Clock,
                 scheduler: Scheduler, network: Network, rng: random.Random,
                 config: BrokerConfig | None = None,
                 controller_locator: ControllerLocator | None = None,
                 authorizer: AclAuthorizer | None = None,
                 identity: DataDirIdentity | None = None,
                 trace: TraceRecorder = NO_TRACE,
                 unique_rng: random.Random | None = None) -> None:
        """``identity`` (cluster id and this broker's id as node id) turns on the data-dir
        checks: each log dir's ``.lock`` held while running and its ``meta.properties``
        checked or written at start-up (``Cluster`` always passes one). ``trace`` records the
        broker's model events (``world/trace.py``; off by default). ``unique_rng`` (default
        ``rng``) draws the uuids in -delete, -future and -stray dir names, which must never
        repeat a name left on disk by an earlier process; a real cluster passes the operating
        system's randomness."""
        assert broker_id >= 0, "broker ids are non-negative"
        assert identity is None or identity.node_id == broker_id, "node.id is the broker id"
        self.broker_id = broker_id
        self.node_id = f"broker-{broker_id}"
        self.fs = fs
        self.clock = clock
        self.scheduler = scheduler
        self.network = network
        self.rng = rng
        self.config = config if config is not None else BrokerConfig()
        self.controller_locator = controller_locator
        self.authorizer = authorizer if authorizer is not None else AclAuthorizer()
        self.incarnation_id = Uuid.from_random(rng)
        self.state = BrokerState.NOT_RUNNING
        self.broker_epoch = NO_EPOCH
        self.controller_epoch = -1  # the highest controller epoch accepted
        #: The last control request applied here, as (its controller epoch, its broker epoch,
        #: this broker's controller epoch and broker epoch before): read by the refinement
        #: check of ControllerFencing (conformance/controller_fencing.py), never by a decision.
        self.last_applied_control: tuple[int, int, int, int] | None = None
        #: How many control requests this incarnation applied (read by the same check only).
        self.applied_control_count = 0
        self.active_controller: str | None = None
        self.log_manager = LogManager(fs, log_dirs, clock, scheduler, self.config.log, rng,
                                      identity=identity, name_rng=unique_rng)
        self.log_manager.await_topic_configs()  # the controller's LeaderAndIsr carries them
        self.channel = RequestChannel(self.node_id, network, scheduler, rng)
        self.driver = BrokerDriver(self.node_id, network, scheduler, self.channel,
                                   alive=self._is_alive)
        self.replica_manager = ReplicaManager(
            broker_id, self.config, self.log_manager, clock, scheduler,
            broker_epoch=lambda: self.broker_epoch, controller_node=self.controller_node,
            emit=self.driver.emit, on_offline_dirs=self._on_offline_dirs)
        self.metrics = BrokerMetrics(broker_id, self._metric_sources())
        self.trace = trace
        if trace.enabled:
            self.replica_manager.trace = trace
            self.replica_manager.replica_fetcher_manager.trace = trace
            self.replica_manager.replica_fetcher_manager.trace_broker = broker_id
            self.replica_manager.replica_fetcher_manager.trace_topic_id = (
                self.replica_manager.topic_id_of)
            self.log_manager.trace = trace
            self.log_manager.trace_replica = broker_id
        self._deferred: deque[tuple[str, ControlRequest]] = deque()
        self.startup_report: StartupReport | None = None
        self.replica_reports: tuple[ReplicaReport, ...] = ()
        # Counters for tests, the facade and the trace.
        self.fenced_requests = 0
        self.dropped_deferred_requests = 0
        self.unknown_messages = 0
        self.last_fence: tuple[str, Errors] | None = None

    def __repr__(self) -> str:
        return f"Broker({self.broker_id}, {self.state.value}, epoch={self.broker_epoch})"

    # ---- lifecycle -------------------------------------------------------------------------------

    def start(self) -> StartupReport:
        """Load every log dir, join the network, and register with the controller (retrying
        until answered).

        Raises ``DataDirLockedError`` (a log dir is in use) or ``DataDirMismatchError`` (a log
        dir of another cluster or node) before anything is written; the broker stays not
        running."""
        assert self.state is BrokerState.NOT_RUNNING, f"{self.node_id} already started"
        self.startup_report = self.log_manager.startup()
        self.replica_reports = self._replica_reports()
        if self.trace.enabled:
            self._trace_restart()
        self.replica_manager.known_offline_dirs = set(self.log_manager.offline_dirs)
        self.network.register(self)
        self.state = BrokerState.REGISTERING
        self.driver.perform(self.replica_manager.startup())
        if self.log_manager.all_dirs_offline:
            self.halt()
            return self.startup_report
        self.driver.run(self._register)
        return self.startup_report

    def shutdown(self) -> None:
        """Clean shutdown: stop fetchers and timers, flush and checkpoint every log, leave."""
        if self.state not in (BrokerState.REGISTERING, BrokerState.RUNNING):
            return
        self._stop_activity()
        self.log_manager.shutdown()
        self.state = BrokerState.SHUT_DOWN

    def halt(self) -> None:
        """Stop at once, with no I/O at all: the process died (or every log dir failed).

        The facade calls this when it crashes the broker, so that no timer of the dead process
        runs against the file system again.
        """
        if self.state in (BrokerState.HALTED, BrokerState.SHUT_DOWN):
            return
        self._stop_activity()
        self.log_manager.halt()  # its periodic tasks belong to the dead process too
        self.state = BrokerState.HALTED

    def _stop_activity(self) -> None:
        self.driver.stop()
        self._deferred.clear()
        self.replica_manager.halt()
        self.channel.close()
        if self.network.endpoints.get(self.node_id) is self:
            self.network.unregister(self.node_id)

    @property
    def alive(self) -> bool:
        """Started, not stopped, and still the node registered under this id."""
        return self._is_alive()

    def _is_alive(self) -> bool:
        """``alive``, as a method (the driver asks it before every effect it performs)."""
        if self.state not in _LIVE_STATES:
            return False
        if self.network.endpoints.get(self.node_id) is not self:
            # Crashed by a facade that did not call halt(): stop before touching anything.
            self.halt()
            return False
        return True

    def _emit(self, effect: Effect) -> None:
        self.driver.emit(effect)

    # ---- registration and heartbeats -----------------------------------------------------------

    def controller_node(self) -> str | None:
        """Where the active controller is: the locator's answer, else the last one accepted."""
        located = self.controller_locator() if self.controller_locator is not None else None
        return located if located is not None else self.active_controller

    def _register(self) -> None:
        if not self.alive or self.state is not BrokerState.REGISTERING:
            return
        controller = self.controller_node()
        retry_ms = self.config.broker_registration_retry_ms
        if controller is None:
            self._emit(ArmTask("registration retry", retry_ms, self._register))
            return
        log_dirs = tuple(self.log_manager.dirs)
        self._emit(Call(
            controller,
            lambda cid: BrokerRegistrationRequest(cid, self.broker_id, self.incarnation_id,
                                                  log_dirs, self.replica_reports),
            self._on_registration, retry_ms))

    def _replica_reports(self) -> tuple[ReplicaReport, ...]:
        """Unclean-shutdown detection (KIP-966), per replica: a log is clean only when its dir
        carried the clean-shutdown marker at start-up; a dir without one (a crash, a power
        loss, a dir that failed while the broker ran) may have lost unflushed records."""
        assert self.startup_report is not None
        clean_dirs = set(self.startup_report.clean_dirs)
        reports = []
        for log in self.log_manager.all_logs():
            state = self.log_manager.dir_of(log.tp)
            reports.append(_report(log.tp, log.topic_id, log.leader_epoch_cache.pairs,
                                   log.log_end_offset,
                                   state is not None and state.path in clean_dirs,
                                   log.log_start_offset))
        # Copies of one partition under different topic ids, set aside until the controller
        # names the current one (R7): each is reported, the controller keeps the one of its id.
        for copy in self.startup_report.doubted:
            reports.append(_report(copy.stray.tp, copy.stray.topic_id, copy.epochs,
                                   copy.log_end_offset, copy.stray.log_dir in clean_dirs,
                                   copy.log_start_offset))
        return tuple(sorted(reports, key=lambda r: (r.tp.topic, r.tp.partition,
                                                    topic_id_text(r.topic_id))))

    def _on_registration(self, response: Message | None) -> None:
        if not self.alive or self.state is not BrokerState.REGISTERING:
            return
        if response is None:
            self._register()  # the wait was the retry interval already
            return
        if (not isinstance(response, BrokerRegistrationResponse)
                or response.error is not Errors.NONE or response.broker_epoch < 0):
            self._emit(ArmTask("registration retry", self.config.broker_registration_retry_ms,
                                self._register))
            return
        assert response.broker_epoch > self.broker_epoch
        self.broker_epoch = response.broker_epoch
        self.controller_epoch = max(self.controller_epoch, response.controller_epoch)
        if self.trace.enabled:
            b = str(self.broker_id)
            self.trace.emit(self.node_id, CONTROLLER_FENCING, "*", "ControllerEpochSeen",
                            {"b": self.broker_id, "type": "BrokerRegistration",
                             "c": self.controller_epoch},
                            {"brokerControllerEpoch": {b: self.controller_epoch}})
        self.state = BrokerState.RUNNING
        self._emit(ArmTask("heartbeat", 0, self._heartbeat,
                            self.config.broker_heartbeat_interval_ms))
        while self._deferred and self.state is BrokerState.RUNNING:
            src, request = self._deferred.popleft()
            for effect in self._handle_control(src, request):
                self._emit(effect)

    def _heartbeat(self) -> None:
        self.replica_manager.check_offline_dirs()
        if self.state is not BrokerState.RUNNING:
            return
        controller = self.controller_node()
        if controller is None:
            return
        offline = tuple(self.log_manager.offline_dirs)
        broker_epoch = self.broker_epoch
        leaderless = self._leaderless_reports()
        self._emit(Notify(
            controller,
            lambda cid: BrokerHeartbeat(cid, self.broker_id, broker_epoch, offline, leaderless)))

    def _leaderless_reports(self) -> tuple[ReplicaReport, ...]:
        """Where the logs of replicas whose partition has no leader end (the controller
        needs every replica's for a recovery election; docs/cluster.md)."""
        out = []
        for tp, partition in sorted(self.replica_manager.partitions.items(),
                                    key=lambda kv: (kv[0].topic, kv[0].partition)):
            if partition.leader_id != NO_LEADER or partition.offline:
                continue
            log = partition.log
            out.append(_report(tp, log.topic_id, log.leader_epoch_cache.pairs,
                               log.log_end_offset, True, log.log_start_offset))
        return tuple(out)

    def _on_offline_dirs(self, new_dirs: list[str]) -> None:
        if self.log_manager.all_dirs_offline:
            # Kafka halts a broker with no log dir left: nothing is left to serve from.
            self.halt()

    # ---- dispatch --------------------------------------------------------------------------------

    def receive(self, src: str, message: object) -> None:
        """Handle one message from ``src``: decide (``handle``), then let the driver perform."""
        if not self._is_alive():
            return
        self.driver.run_message(self._dispatch, src, message)  # perform(handle(src, message))

    def handle(self, src: str, message: object) -> list[Effect]:
        """The decision for one message from ``src``: this broker's state changes, and the
        effects (responses, requests, timers) are returned in order, none performed. Answers
        that delayed operations or the broker's own requests give meanwhile are among them."""
        return self.driver.decide(lambda: self._dispatch(src, message))

    def _dispatch(self, src: str, message: object) -> None:
        # The two requests of replication traffic first (exact types: what _effects_of does
        # with them, without its chain of isinstance checks).
        if type(message) is FetchRequest:
            for effect in self._handle_fetch(src, message):
                self._emit(effect)
            return
        if type(message) is ProduceRequest:
            for effect in self._handle_produce(src, message):
                self._emit(effect)
            return
        if type(message) is FetchResponse:  # an answer to this follower's fetch, usually
            if not self.channel.receive(src, message):
                self.unknown_messages += 1  # what _effects_of does with it: a late answer
            return
        if not isinstance(message, Message):
            self.unknown_messages += 1
            return
        if not isinstance(message, _SERVED) and self.channel.receive(src, message):
            # An answer to one of this broker's requests. A request is never taken for one,
            # even when its correlation id (another node's numbering) equals that of a request
            # this broker awaits an answer to: Kafka tells them apart by the connection.
            return
        for effect in self._effects_of(src, message):
            self._emit(effect)

    def _effects_of(self, src: str, message: Message) -> list[Effect]:
        if isinstance(message, (LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest)):
            if self.state is BrokerState.REGISTERING:
                self._defer(src, message)
                return []
            return self._handle_control(src, message)
        if isinstance(message, ProduceRequest):
            return self._handle_produce(src, message)
        if isinstance(message, FetchRequest):
            return self._handle_fetch(src, message)
        if isinstance(message, ListOffsetsRequest):
            return self._handle_list_offsets(src, message)
        if isinstance(message, DeleteRecordsRequest):
            return self._handle_delete_records(src, message)
        if isinstance(message, OffsetForLeaderEpochRequest):
            return self._handle_offsets_for_leader_epoch(src, message)
        if isinstance(message, MetadataRequest):
            return self._handle_metadata(src, message)
        if isinstance(message, DescribeLogDirsRequest):
            return self._handle_describe_log_dirs(src, message)
        if isinstance(message, AlterReplicaLogDirsRequest):
            return self._handle_alter_replica_log_dirs(src, message)
        self.unknown_messages += 1  # a late answer, or nothing a broker serves
        return []

    def _defer(self, src: str, request: ControlRequest) -> None:
        # Judged once the registration gives this broker its epoch; the oldest drop first.
        if len(self._deferred) >= self.config.max_deferred_control_requests:
            self._deferred.popleft()
            self.dropped_deferred_requests += 1
        self._deferred.append((src, request))

    # ---- control requests ------------------------------------------------------------------------

    def fence(self, request: ControlRequest) -> Errors | None:
        """Why ``request`` must change nothing here, or None if it may be applied."""
        return fence(request, self.authorizer, self.broker_epoch, self.controller_epoch)

    def _handle_control(self, src: str, request: ControlRequest) -> list[Effect]:
        error = self.fence(request)
        if error is not None:
            self.fenced_requests += 1
            self.last_fence = (type(request).__name__, error)
            if self.trace.enabled:
                self._trace_delivery(request, error)
            return [Send(src, fenced_response(request, error))]
        self.last_applied_control = (request.controller_epoch, request.broker_epoch,
                                     self.controller_epoch, self.broker_epoch)
        self.applied_control_count += 1
        self.controller_epoch = request.controller_epoch
        self.active_controller = f"controller-{request.controller_id}"
        rm = self.replica_manager
        if isinstance(request, LeaderAndIsrRequest):
            results = rm.become_leader_or_follower(request)
            if self.trace.enabled:
                self._trace_delivery(request, None, results)
            return [Send(src, LeaderAndIsrResponse(request.correlation_id, Errors.NONE,
                                                   tuple(results)))]
        if isinstance(request, StopReplicaRequest):
            results = rm.stop_replicas(request)
            if self.trace.enabled:
                self._trace_delivery(request, None, results)
            return [Send(src, StopReplicaResponse(request.correlation_id, Errors.NONE,
                                                  tuple(results)))]
        if self.trace.enabled:
            self._trace_delivery(request, None)
        rm.update_metadata(request)
        return [Send(src, UpdateMetadataResponse(request.correlation_id, Errors.NONE))]

    # ---- client and replication requests ---------------------------------------------------------

    def _denied_topics(self, principal: str, operation: Operation,
                       tps: Iterable[TopicPartition]) -> dict[TopicPartition, Errors]:
        return {tp: Errors.TOPIC_AUTHORIZATION_FAILED for tp in tps
                if not self.authorizer.authorize_topic(principal, operation, tp.topic)}

    def _responder(self, src: str) -> Callable[[Message], None]:
        """Where a delayed operation's later answer goes: a ``Send`` effect, as any other."""
        return lambda response: self._emit(Send(src, response))

    def _handle_produce(self, src: str, request: ProduceRequest) -> list[Effect]:
        denied = self._denied_topics(request.principal, _WRITE,
                                     (tp for tp, _ in request.partitions))
        response = self.replica_manager.append_records(request, denied, self._responder(src))
        return [] if response is None else [Send(src, response)]

    def _handle_fetch(self, src: str, request: FetchRequest) -> list[Effect]:
        if request.replica_id >= 0:
            if not self.authorizer.authorize_cluster(request.principal, _CLUSTER_ACTION):
                error = Errors.CLUSTER_AUTHORIZATION_FAILED
                return [Send(src, FetchResponse(request.correlation_id, error, tuple(
                    FetchPartitionData(p.tp, error) for p in request.partitions)))]
            denied: dict[TopicPartition, Errors] = {}
        else:
            denied = self._denied_topics(request.principal, Operation.READ,
                                         (p.tp for p in request.partitions))
        response = self.replica_manager.fetch_messages(request, denied, self._responder(src))
        return [] if response is None else [Send(src, response)]

    def _handle_list_offsets(self, src: str, request: ListOffsetsRequest) -> list[Effect]:
        denied = self._denied_topics(request.principal, Operation.DESCRIBE,
                                     (tp for tp, _ in request.partitions))
        return [Send(src, self.replica_manager.list_offsets(request, denied))]

    def _handle_delete_records(self, src: str, request: DeleteRecordsRequest) -> list[Effect]:
        # DELETE on the topic, as Kafka requires (TOPIC_AUTHORIZATION_FAILED per partition).
        denied = self._denied_topics(request.principal, Operation.DELETE, (
            TopicPartition(t.name, p.partition_index) for t in request.topics
            for p in t.partitions))
        response = self.replica_manager.handle_delete_records(request, denied,
                                                              self._responder(src))
        return [] if response is None else [Send(src, response)]

    def _handle_metadata(self, src: str, request: MetadataRequest) -> list[Effect]:
        # Answered from the metadata cache, by any broker, leader or not (as Kafka does).
        def authorized(topic: str) -> bool:
            return self.authorizer.authorize_topic(request.principal, Operation.DESCRIBE, topic)

        return [Send(src, self.replica_manager.metadata.topic_metadata(request, authorized))]

    def _handle_describe_log_dirs(self, src: str, request: DescribeLogDirsRequest
                                  ) -> list[Effect]:
        # DESCRIBE on the cluster, as Kafka requires; answered from the log manager's state.
        if not self.authorizer.authorize_cluster(request.principal, Operation.DESCRIBE):
            return [Send(src, DescribeLogDirsResponse(request.correlation_id,
                                                      Errors.CLUSTER_AUTHORIZATION_FAILED))]
        rm, lm = self.replica_manager, self.log_manager
        futures = {tp: log for state in lm.dirs.values() if state.online
                   for tp, log in state.future_logs.items()}
        return [Send(src, describe_log_dirs(lm, request, lambda tp: tp in rm.partitions,
                                            futures))]

    def _handle_alter_replica_log_dirs(self, src: str, request: AlterReplicaLogDirsRequest
                                       ) -> list[Effect]:
        # ALTER on the cluster, as Kafka requires (CLUSTER_AUTHORIZATION_FAILED per replica).
        # A replica named twice takes its last dir, as Kafka's map of them does.
        assignments = {TopicPartition(t.name, p): d.path for d in request.dirs
                       for t in d.topics for p in t.partitions}
        if self.authorizer.authorize_cluster(request.principal, Operation.ALTER):
            results = self.replica_manager.alter_replica_log_dirs(assignments)
        else:
            results = dict.fromkeys(assignments, Errors.CLUSTER_AUTHORIZATION_FAILED)
        by_topic: dict[str, list[AlterReplicaLogDirsPartitionResult]] = {}
        for tp, error in results.items():
            by_topic.setdefault(tp.topic, []).append(
                AlterReplicaLogDirsPartitionResult(tp.partition, error))
        return [Send(src, AlterReplicaLogDirsResponse(request.correlation_id, tuple(
            AlterReplicaLogDirsTopicResult(topic, tuple(parts))
            for topic, parts in by_topic.items())))]

    def _handle_offsets_for_leader_epoch(self, src: str, request: OffsetForLeaderEpochRequest
                                         ) -> list[Effect]:
        if request.replica_id >= 0:
            if not self.authorizer.authorize_cluster(request.principal, Operation.CLUSTER_ACTION):
                error = Errors.CLUSTER_AUTHORIZATION_FAILED
                return [Send(src, OffsetForLeaderEpochResponse(request.correlation_id, tuple(
                    OffsetForLeaderEpochResult(p.tp, error) for p in request.partitions)))]
            denied: dict[TopicPartition, Errors] = {}
        else:
            denied = self._denied_topics(request.principal, Operation.DESCRIBE,
                                         (p.tp for p in request.partitions))
        return [Send(src, self.replica_manager.offsets_for_leader_epoch(request, denied))]

    # ---- metrics ---------------------------------------------------------------------------------

    def _metric_sources(self) -> MetricSources:
        rm = self.replica_manager
        fetchers = rm.replica_fetcher_manager
        lm = self.log_manager
        return MetricSources(
            failed_partitions=lambda: float(fetchers.failed_partitions_count),
            alter_log_dirs_failed_partitions=lambda: float(
                rm.dir_mover.failed_partitions_count),
            dead_threads=lambda: float(fetchers.dead_thread_count),
            max_lag=lambda: float(fetchers.max_lag),
            under_replicated=lambda: float(rm.under_replicated_count()),
            offline_replicas=lambda: float(rm.offline_replica_count()),
            leader_count=lambda: float(len(rm.leader_partitions())),
            partition_count=lambda: float(len(rm.partitions)),
            offline_log_dirs=lambda: float(len(lm.offline_dirs)),
            log_dirs=tuple(lm.dirs),
            log_dir_offline=lambda path: 0.0 if lm.dirs[posixpath.normpath(path)].online else 1.0,
            logs=self._log_readings,
            orphan_count=lambda: float(lm.orphan_count()),
            orphan_size=lambda: float(lm.orphan_size_bytes()),
        )

    def _log_readings(self) -> list[LogReading]:
        # Logs of online dirs only (a failed dir's logs are gone, as in Kafka). Each dict is
        # copied in one step: an HTTP scrape may run on another thread than the broker's.
        return [LogReading(log.tp.topic, log.tp.partition, log.log_start_offset,
                           log.log_end_offset, log.size_bytes)
                for state in list(self.log_manager.dirs.values()) if state.online
                for log in list(state.logs.values())]

    def snapshot(self) -> dict[str, float]:
        """Every metric's value, keyed by Kafka's MBean name."""
        return self.metrics.snapshot()

    # ---- trace (world/trace.py) ----------------------------------------------------------------

    def _trace_delivery(self, request: ControlRequest, error: Errors | None,
                        results: Iterable[PartitionError] = ()) -> None:
        """ControllerFencing: ``request`` was applied (``error`` None; ``results``: each
        partition's outcome) or rejected, per partition it names; any applied request also sets
        the broker's controller epoch for every partition's instance (``"*"``)."""
        outcome = {r.tp: r.error for r in results}
        b = str(self.broker_id)
        rm = self.replica_manager
        named = control_partitions(request)
        kind = type(request).__name__.removesuffix("Request")
        parts = [(tp, (le, tid)) for tp, le, tid in named or ()]
        for tp, (leader_epoch, topic_id) in first_of_each(parts).items():
            args: dict[str, object] = {
                "type": kind, "c": request.controller_epoch, "b": self.broker_id,
                "e": request.broker_epoch, "le": leader_epoch,
                "outcome": "accept" if error is None else "reject",
                "topicId": topic_id_text(topic_id)}
            changed: dict[str, object] = {}
            if error is None:
                args["result"] = outcome.get(tp, Errors.NONE).name
                partition = rm.partitions.get(tp)
                # The replica of this generation of the topic (another generation's, under the
                # same name, is not hosted as far as this one is concerned).
                hosted = (partition is not None and partition.role is not Role.NONE
                          and (topic_id == Uuid.ZERO or partition.topic_id in (None, topic_id)))
                changed = {"brokerControllerEpoch": {b: self.controller_epoch},
                           "replicaEpoch": {b: partition.leader_epoch
                                            if hosted and partition is not None else -1}}
            else:
                args["error"] = error.name
            self.trace.emit(self.node_id, CONTROLLER_FENCING, tracing.instance(tp), "Deliver",
                            args, changed)
        if error is None:
            self.trace.emit(self.node_id, CONTROLLER_FENCING, "*", "ControllerEpochSeen",
                            {"b": self.broker_id, "type": kind, "c": request.controller_epoch},
                            {"brokerControllerEpoch": {b: self.controller_epoch}})

    def _trace_restart(self) -> None:
        """This broker (re)started: each loaded log is a CrashRestart of its replica, and its
        fetchers start empty."""
        for state in self.log_manager.dirs.values():
            if not state.online:
                continue
            for log in state.logs.values():
                # With the start offset checkpointed lazily, what the checkpoint held (a write
                # whose CheckpointStartOffset a power loss cut may have raised it).
                lazy = log.start_offset_checkpoint is None
                tracing.replica(self.trace, self.broker_id, log, "CrashRestart",
                                {"h": log.high_watermark},
                                ckpt=log.loaded_start_offset_checkpoint if lazy else None,
                                always=True)
        self.trace.emit(self.node_id, FETCHER_FAILURE, self.node_id, "Restart", {}, {})
        self.log_manager.trace_live = True


def _report(tp: TopicPartition, topic_id: Uuid | None, epochs: tuple[tuple[int, int], ...],
            end_offset: int, clean: bool, start_offset: int) -> ReplicaReport:
    """What the controller is told of one replica's log: the latest leader epoch of its cache
    (-1 for an empty log or none recorded), its end, its start and its whole leader epoch
    cache (``epochs``, each epoch with the offset it begins at)."""
    return ReplicaReport(tp, topic_id, -1 if not epochs or end_offset == 0 else epochs[-1][0],
                         end_offset, clean, start_offset, epochs)
