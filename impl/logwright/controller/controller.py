"""The controller node: broker liveness, leader and ISR, topics, reassignment, control requests.

Invariants upheld:

- StaleControllerFenced (HAZARDS 4): every state change is written to the metadata store first,
  conditional on this controller's epoch, and only then announced with control requests. A write
  the store rejects as stale makes this controller resign: it stops sending and changes nothing.
- Broker incarnations are fenced (HAZARDS 3, KIP-380): each registration of a new incarnation gets
  a broker epoch larger than any before; a registration of a broker whose previous incarnation
  was still alive is handled as that incarnation's failure first (its leadership moves, it leaves
  the ISR), and every control request carries the addressee's current broker epoch.
- Clean election unless the topic allows unclean election: a leader is always an ISR member that
  is alive, the first such replica in assignment order; with none alive the leader is -1 and the
  ISR keeps its last member, so that member leads again when it returns and no committed record
  is lost. Only with unclean.leader.election.enable=true (topic override, else the controller
  default) may a live replica outside the ISR lead then; that is logged as a warning because
  committed records may be lost.
- Topic configs are validated (logwright.configs) before they are stored, stored in the topic
  record with the same epoch-conditional write as everything else, and carried in every
  LeaderAndIsr and UpdateMetadata partition state, so a replica never creates or keeps a log
  with configs older than the newest message it accepted.
- Every leadership or replica-set change the controller pushes with LeaderAndIsr bumps the leader
  epoch (ISR changes a leader asked for with AlterPartition bump only the partition epoch).
- A replica on a failed log dir counts as dead for its partition (it leaves the ISR and cannot
  lead), while the broker's other replicas go on (HAZARDS 5 seen from the controller).
- A control request the network lost is sent again while its broker lives, rebuilt from the
  current state with a new correlation id: a retry never carries a state older than one already
  sent, and within one controller epoch correlation ids grow in send order.

The node is an h11-style state machine: messages in through :meth:`Controller.receive`, messages
out through the injected network; time, timers and randomness are injected. The facade calls the
admin methods (create_topic, delete_topic, reassign...) in process.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeAlias

from logwright.configs import TOPIC_CONFIGS, canonical_string, parse_topic_configs
from logwright.controller.config import ControllerConfig
from logwright.controller.errors import (
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    NotController,
    StaleControllerEpoch,
    TopicAlreadyExists,
)
from logwright.controller.reassignment import (
    begin_reassignment,
    complete_reassignment,
    parse_reassignment,
    reassignment_done,
    validate_plan,
)
from logwright.controller.store import (
    NO_CONTROLLER_EPOCH,
    NO_LEADER,
    MetadataDelta,
    MetadataStore,
    PartitionState,
    PendingReassignment,
    TopicDeletion,
    TopicRecord,
)
from logwright.errors import Errors, InvalidConfig, KafkaError
from logwright.identity import (
    TopicPartition,
    Uuid,
    broker_node_id,
    controller_node_id,
    validate_topic,
)
from logwright.protocol.messages import (
    EPOCH_DURING_DELETE,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeat,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrType,
    StopReplicaPartition,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from logwright.world.clock import Clock
from logwright.world.network import Network
from logwright.world.scheduler import Scheduler, Task

ControlRequest: TypeAlias = LeaderAndIsrRequest | StopReplicaRequest | UpdateMetadataRequest
ControlResponse: TypeAlias = LeaderAndIsrResponse | StopReplicaResponse | UpdateMetadataResponse

__all__ = [
    "LEADER_DURING_DELETE",
    "ControlError",
    "Controller",
    "ReassignmentStatus",
    "broker_node_id",
    "controller_node_id",
]

log = logging.getLogger(__name__)

LEADER_DURING_DELETE = -2
"""``leader`` in the UpdateMetadata state of a partition whose topic was deleted (Kafka's
LeaderDuringDelete): brokers drop the partition from their metadata cache."""


@dataclass(frozen=True)
class ControlError:
    """An error a broker reported in a control response (whole request or one partition)."""

    broker: str
    request: str
    tp: TopicPartition | None
    error: Errors


@dataclass(frozen=True)
class ReassignmentStatus:
    """Progress of one partition's reassignment (``kafka-reassign-partitions --verify``).

    ``state`` is "in progress" (old replicas still there), "complete" (the replicas are the
    target) or "differs" (no reassignment pending, and the replicas are not the target).
    """

    tp: TopicPartition
    state: str
    target_replicas: tuple[int, ...]
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    waiting_for: tuple[int, ...]  # target replicas not yet in the ISR


@dataclass
class _Outstanding:
    """A control request sent and not yet answered."""

    broker_id: int
    broker_epoch: int
    request: ControlRequest
    retry: Task | None


class Controller:
    """The active (or standby, or deposed) controller ``controller-<controller_id>``."""

    def __init__(self, controller_id: int, network: Network, scheduler: Scheduler, clock: Clock,
                 store: MetadataStore, rng: random.Random,
                 config: ControllerConfig | None = None) -> None:
        assert controller_id >= 0
        self.controller_id = controller_id
        self.node_id = controller_node_id(controller_id)
        self.network = network
        self.scheduler = scheduler
        self.clock = clock
        self.store = store
        self.rng = rng
        self.config = config or ControllerConfig()
        self.active = False
        """True between a successful activate() and resignation or shutdown."""
        self.epoch = NO_CONTROLLER_EPOCH
        """The controller epoch this controller claimed (0 before activate())."""
        self.control_errors: deque[ControlError] = deque(maxlen=self.config.max_recorded_errors)
        """Errors brokers reported in control responses, most recent last (bounded)."""
        self.resign_reason: str | None = None
        self._session_deadline_ms: dict[int, int] = {}  # live brokers -> session expiry
        self._session_timers: dict[int, Task] = {}
        self._correlation_id = 0
        self._outstanding: dict[int, _Outstanding] = {}  # by correlation id, oldest first
        # Replicas a broker reported KAFKA_STORAGE_ERROR for (their log dir failed), and the
        # offline dirs each broker reported in heartbeats; both end with the incarnation.
        self._offline_replicas: set[tuple[TopicPartition, int]] = set()
        self._offline_dirs: dict[int, frozenset[str]] = {}

    # ---- lifecycle -----------------------------------------------------------------------

    def activate(self) -> int:
        """Become the active controller: claim epoch+1, then do the failover work.

        Failover: every unfenced registered broker gets a fresh session; topic deletions left
        half done are finished; partitions without a live leader get one from the ISR; every live
        broker gets a FULL LeaderAndIsr and UpdateMetadata; reassignments whose target replicas
        are all in the ISR complete. Returns the new controller epoch.
        """
        assert not self.active, f"{self.node_id} is already active"
        self.epoch = self.store.claim_controller(self.controller_id)
        self.active = True
        self.resign_reason = None
        log.info("%s active with controller epoch %d", self.node_id, self.epoch)
        for registration in self.store.brokers():
            if not registration.fenced:
                self._start_session(registration.broker_id)
        try:
            for deletion in self.store.deletions():
                self._finish_deletion(deletion)
            self._commit(MetadataDelta(partitions=self._elect_where_needed()))
        except StaleControllerEpoch:
            return self.epoch
        for broker_id in self.live_brokers():
            self._send_full_leader_and_isr(broker_id)
        self._send_update_metadata(self.store.partitions())
        for pending in self.store.reassignments():
            self._maybe_complete_reassignment(pending.tp)
        return self.epoch

    def shutdown(self) -> None:
        """Stop as a crashed process would: no more timers or sends; the store is untouched."""
        self._stop("shut down")

    def _resign(self, reason: str) -> None:
        log.warning("%s (epoch %d) resigns: %s", self.node_id, self.epoch, reason)
        self._stop(reason)

    def _stop(self, reason: str) -> None:
        self.active = False
        self.resign_reason = reason
        for task in self._session_timers.values():
            task.cancel()
        self._session_timers.clear()
        self._session_deadline_ms.clear()
        for outstanding in self._outstanding.values():
            if outstanding.retry is not None:
                outstanding.retry.cancel()
        self._outstanding.clear()

    def _require_active(self) -> None:
        if not self.active:
            raise NotController(f"{self.node_id} is not the active controller"
                                + (f" ({self.resign_reason})" if self.resign_reason else ""))

    def _commit(self, delta: MetadataDelta) -> None:
        """Write ``delta`` conditional on our epoch; a stale epoch makes us resign."""
        if delta.empty():
            return
        try:
            self.store.write(self.epoch, delta)
        except StaleControllerEpoch as e:
            self._resign(f"store rejected a write: epoch {e.writer_epoch} is stale, "
                         f"the current epoch is {e.current_epoch}")
            raise

    # ---- describe ------------------------------------------------------------------------

    def live_brokers(self) -> tuple[int, ...]:
        """The brokers this controller considers alive, by id."""
        return tuple(sorted(self._session_deadline_ms))

    def partition_state(self, tp: TopicPartition) -> PartitionState:
        """The stored state of ``tp``; UNKNOWN_TOPIC_OR_PARTITION if there is none."""
        state = self.store.partition(tp)
        if state is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {tp}")
        return state

    def topic(self, name: str) -> TopicRecord:
        """The topic ``name``; UNKNOWN_TOPIC_OR_PARTITION if there is none."""
        record = self.store.topic(name)
        if record is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
        return record

    def topics(self) -> list[TopicRecord]:
        """Every topic, by name (topics being deleted included until they are removed)."""
        return self.store.topics()

    # ---- messages in ---------------------------------------------------------------------

    def receive(self, src: str, message: object) -> None:
        """Handle one message from the network."""
        if isinstance(message, BrokerHeartbeat):
            self._on_heartbeat(src, message)
        elif isinstance(message, BrokerRegistrationRequest):
            self._on_registration(src, message)
        elif isinstance(message, AlterPartitionRequest):
            self._on_alter_partition(src, message)
        elif isinstance(message, LeaderAndIsrResponse | StopReplicaResponse
                        | UpdateMetadataResponse):
            self._on_control_response(src, message)
        else:
            log.warning("%s ignores an unexpected %s from %s", self.node_id,
                        type(message).__name__, src)

    def _reply(self, dst: str, message: object) -> None:
        self.network.send(self.node_id, dst, message)

    # -- registration and liveness ---------------------------------------------------------

    def _on_registration(self, src: str, request: BrokerRegistrationRequest) -> None:
        def refuse(error: Errors, why: str) -> None:
            log.warning("%s refuses the registration of %s: %s", self.node_id, src, why)
            self._reply(src, BrokerRegistrationResponse(
                request.correlation_id, error, controller_epoch=self.store.controller_epoch()))

        if not self.active:
            refuse(Errors.STALE_CONTROLLER_EPOCH, "not the active controller")
            return
        broker_id = request.broker_id
        if broker_id < 0 or src != broker_node_id(broker_id):
            refuse(Errors.INVALID_REQUEST, f"broker id {broker_id} does not match sender {src}")
            return
        if not request.log_dirs or not all(isinstance(d, str) and d for d in request.log_dirs):
            refuse(Errors.INVALID_REQUEST, f"log dirs {request.log_dirs!r} are not a non-empty "
                                           "list of paths")
            return
        existing = self.store.broker(broker_id)
        try:
            if existing is not None and existing.incarnation_id == request.incarnation_id:
                # The same process registering again (a duplicated or retried request): the same
                # epoch, so its heartbeats stay valid; only a new incarnation gets a new epoch.
                registration = existing
                if existing.fenced:
                    self._commit(MetadataDelta(brokers=[replace(existing, fenced=False)]))
            else:
                if broker_id in self._session_deadline_ms:
                    # A quick restart: the old incarnation never missed its session, but its state
                    # is gone. Handle it as that incarnation's failure first (HAZARDS 3).
                    self._broker_failed(broker_id, "re-registered with a new incarnation")
                registration = self.store.register_broker(
                    self.epoch, broker_id, request.incarnation_id, request.log_dirs)
                # A new process starts with its dirs re-checked: earlier failures are forgotten.
                self._offline_dirs.pop(broker_id, None)
                self._offline_replicas = {(tp, b) for tp, b in self._offline_replicas
                                          if b != broker_id}
        except StaleControllerEpoch as e:
            if self.active:
                self._resign(f"store rejected a registration: {e}")
            refuse(Errors.STALE_CONTROLLER_EPOCH, "lost the controller epoch")
            return
        log.info("%s registered broker %d with broker epoch %d", self.node_id, broker_id,
                 registration.broker_epoch)
        self._reply(src, BrokerRegistrationResponse(request.correlation_id, Errors.NONE,
                                                    registration.broker_epoch, self.epoch))
        self._broker_started(broker_id)

    def _on_heartbeat(self, src: str, heartbeat: BrokerHeartbeat) -> None:
        if not self.active:
            return
        registration = self.store.broker(heartbeat.broker_id)
        if (registration is None or registration.broker_epoch != heartbeat.broker_epoch
                or src != broker_node_id(heartbeat.broker_id)):
            log.debug("%s ignores a heartbeat from %s with broker epoch %d", self.node_id, src,
                      heartbeat.broker_epoch)
            return
        if heartbeat.broker_id in self._session_deadline_ms:
            self._session_deadline_ms[heartbeat.broker_id] = (
                self.clock.now_ms() + self.config.broker_session_timeout_ms)
            self._note_offline_dirs(heartbeat.broker_id, heartbeat.offline_log_dirs)
            return
        # A broker declared dead (or fenced before a failover) is heard from again with its
        # current epoch, for example after a network partition healed: it is alive again.
        try:
            if registration.fenced:
                self._commit(MetadataDelta(brokers=[replace(registration, fenced=False)]))
        except StaleControllerEpoch:
            return
        log.info("%s: broker %d is alive again", self.node_id, heartbeat.broker_id)
        self._broker_started(heartbeat.broker_id)
        self._note_offline_dirs(heartbeat.broker_id, heartbeat.offline_log_dirs)

    def _note_offline_dirs(self, broker_id: int, offline_log_dirs: Iterable[str]) -> None:
        """A broker reported failed log dirs: find out which of its replicas they held.

        Only the broker knows which replica lives in which dir, so (as Kafka's ZooKeeper-mode
        controller does) it is sent a LeaderAndIsr of everything it hosts; it answers
        KAFKA_STORAGE_ERROR for each replica it cannot serve, and those are handled as offline.
        """
        known = self._offline_dirs.get(broker_id, frozenset())
        reported = frozenset(offline_log_dirs)
        if reported <= known:
            return
        self._offline_dirs[broker_id] = known | reported
        log.info("%s: broker %d reports offline log dirs %s", self.node_id, broker_id,
                 sorted(reported - known))
        deleting = {d.name for d in self.store.deletions()}
        hosted = [s for s in self.store.partitions()
                  if broker_id in s.replicas and s.tp.topic not in deleting]
        if hosted:
            self._leader_and_isr(broker_id, LeaderAndIsrType.INCREMENTAL, hosted)

    def _replicas_offline(self, broker_id: int, tps: Iterable[TopicPartition]) -> None:
        """``broker_id``'s replicas of ``tps`` are on a failed dir: out of the ISR, no leading."""
        fresh = [tp for tp in tps if (tp, broker_id) not in self._offline_replicas]
        if not fresh:
            return
        self._offline_replicas.update((tp, broker_id) for tp in fresh)
        log.info("%s: replicas of %s on broker %d are offline", self.node_id,
                 [str(tp) for tp in fresh], broker_id)
        changes = [new for tp in fresh
                   if (state := self.store.partition(tp)) is not None
                   and broker_id in state.replicas and (new := self._elect(state)) is not None]
        try:
            self._commit(MetadataDelta(partitions=changes))
        except StaleControllerEpoch:
            return
        self._announce(changes)

    def _start_session(self, broker_id: int) -> None:
        self._session_deadline_ms[broker_id] = (
            self.clock.now_ms() + self.config.broker_session_timeout_ms)
        self._arm_session_timer(broker_id, self.config.broker_session_timeout_ms)

    def _arm_session_timer(self, broker_id: int, delay_ms: int) -> None:
        # One timer per live broker at a time, re-armed lazily at the current deadline, so
        # heartbeats cost no scheduler work and an idle cluster without brokers has no timers.
        if broker_id not in self._session_timers:
            self._session_timers[broker_id] = self.scheduler.schedule(
                f"{self.node_id} session of broker-{broker_id}",
                lambda: self._check_session(broker_id), max(0, delay_ms))

    def _check_session(self, broker_id: int) -> None:
        self._session_timers.pop(broker_id, None)
        if not self.active or broker_id not in self._session_deadline_ms:
            return
        remaining_ms = self._session_deadline_ms[broker_id] - self.clock.now_ms()
        if remaining_ms > 0:
            self._arm_session_timer(broker_id, remaining_ms)
            return
        try:
            self._broker_failed(broker_id, "session timed out")
        except StaleControllerEpoch:
            return

    def _broker_failed(self, broker_id: int, why: str) -> None:
        """Declare ``broker_id`` dead: fence it, shrink ISRs, re-elect, tell the survivors."""
        log.info("%s: broker %d failed (%s)", self.node_id, broker_id, why)
        self._session_deadline_ms.pop(broker_id, None)
        timer = self._session_timers.pop(broker_id, None)
        if timer is not None:
            timer.cancel()
        for correlation_id in [c for c, o in self._outstanding.items() if o.broker_id == broker_id]:
            retry = self._outstanding.pop(correlation_id).retry
            if retry is not None:
                retry.cancel()
        changes = [new for state in self.store.partitions()
                   if broker_id in state.replicas
                   and (new := self._elect(state)) is not None]
        registration = self.store.broker(broker_id)
        fence = [] if registration is None else [replace(registration, fenced=True)]
        self._commit(MetadataDelta(brokers=fence, partitions=changes))
        self._announce(changes)

    def _broker_started(self, broker_id: int) -> None:
        """``broker_id`` (re)joined: elect leaders it unblocks, send it a FULL LeaderAndIsr."""
        self._start_session(broker_id)
        try:
            changes = self._elect_where_needed()
            self._commit(MetadataDelta(partitions=changes))
        except StaleControllerEpoch:
            return
        self._send_full_leader_and_isr(broker_id)
        self._send_leader_and_isr(changes, exclude={broker_id})
        self._send_update_metadata(self.store.partitions())
        for pending in self.store.reassignments():
            self._maybe_complete_reassignment(pending.tp)

    # -- leader election -------------------------------------------------------------------

    def _unclean_allowed(self, topic: TopicRecord | None) -> bool:
        """unclean.leader.election.enable of ``topic``: its override, else the default."""
        value = None if topic is None else topic.config_map.get("unclean.leader.election.enable")
        if value is None:
            return self.config.unclean_leader_election_enable
        return value == "true"

    def _elect(self, state: PartitionState,
               topic: TopicRecord | None = None) -> PartitionState | None:
        """The state after removing dead brokers from the ISR and electing a live ISR leader.

        None when nothing changes. With no live ISR member the leader is -1 and the ISR is kept
        as it is, so its last member can lead again when it returns; unless the topic allows
        unclean election (``topic``: its record, read from the store when not given) and a
        replica outside the ISR is alive: that replica leads, alone in the ISR.
        """
        live_isr = tuple(r for r in state.isr if self._replica_alive(r, state.tp))
        unclean = False
        if state.leader in live_isr:
            leader, isr = state.leader, live_isr
        elif live_isr:
            leader = next(r for r in state.replicas if r in live_isr)
            isr = live_isr
        else:
            leader, isr = NO_LEADER, state.isr
            live = [r for r in state.replicas if self._replica_alive(r, state.tp)
                    and r not in state.removing_replicas]
            if live and self._unclean_allowed(
                    topic if topic is not None else self.store.topic(state.tp.topic)):
                leader, isr, unclean = live[0], (live[0],), True
        if leader == state.leader and isr == state.isr:
            return None
        if unclean:
            log.warning("%s: unclean leader election for %s: broker %d leads from outside the "
                        "ISR %s; records committed after it fell behind are lost", self.node_id,
                        state.tp, leader, list(state.isr))
        new = replace(state, leader=leader, isr=isr, leader_epoch=state.leader_epoch + 1,
                      partition_epoch=state.partition_epoch + 1)
        assert new.leader == NO_LEADER or (
            new.leader in new.isr and self._replica_alive(new.leader, new.tp))
        return new

    def _replica_alive(self, broker_id: int, tp: TopicPartition) -> bool:
        """Whether ``broker_id``'s replica of ``tp`` can serve: broker live, its dir not failed."""
        return (broker_id in self._session_deadline_ms
                and (tp, broker_id) not in self._offline_replicas)

    def _elect_where_needed(self) -> list[PartitionState]:
        """New states for every partition whose leader or ISR holds a replica that cannot serve
        (broker dead or dir failed), or that has no leader while an ISR member could lead."""
        deleting = {d.name for d in self.store.deletions()}
        return [new for state in self.store.partitions()
                if state.tp.topic not in deleting
                and (new := self._elect(state)) is not None]

    # -- ISR changes from leaders ----------------------------------------------------------

    def _on_alter_partition(self, src: str, request: AlterPartitionRequest) -> None:
        def answer(error: Errors, state: PartitionState | None = None) -> None:
            if error != Errors.NONE:
                log.info("%s rejects AlterPartition %s from %s: %s", self.node_id, request.tp,
                         src, error.name)
            if state is None:
                self._reply(src, AlterPartitionResponse(request.correlation_id, request.tp, error))
            else:
                self._reply(src, AlterPartitionResponse(
                    request.correlation_id, request.tp, error, state.leader_epoch,
                    state.partition_epoch, state.isr))

        if not self.active:
            answer(Errors.STALE_CONTROLLER_EPOCH)  # Kafka: NOT_CONTROLLER
            return
        registration = self.store.broker(request.broker_id)
        if (registration is None or registration.broker_epoch != request.broker_epoch
                or src != broker_node_id(request.broker_id)):
            answer(Errors.STALE_BROKER_EPOCH)
            return
        state = self.store.partition(request.tp)
        if state is None or request.tp.topic in {d.name for d in self.store.deletions()}:
            answer(Errors.UNKNOWN_TOPIC_OR_PARTITION)
            return
        if request.leader_epoch != state.leader_epoch:
            answer(Errors.FENCED_LEADER_EPOCH)
            return
        if request.broker_id != state.leader:
            answer(Errors.NOT_LEADER_OR_FOLLOWER)
            return
        new_isr = tuple(request.new_isr)
        if new_isr == state.isr:
            # Already so (a duplicated or retried request): answer with the current state, which
            # tells the leader the truth whatever partition epoch it sent.
            answer(Errors.NONE, state)
            return
        if request.partition_epoch != state.partition_epoch:
            answer(Errors.INVALID_REQUEST)  # Kafka: INVALID_UPDATE_VERSION (95)
            return
        if (not new_isr or len(set(new_isr)) != len(new_isr) or state.leader not in new_isr
                or not set(new_isr) <= set(state.replicas)
                or not all(self._replica_alive(r, request.tp) for r in new_isr)):
            # Kafka: INELIGIBLE_REPLICA (107) for a member that is not alive.
            answer(Errors.INVALID_REQUEST)
            return
        new = replace(state, isr=new_isr, partition_epoch=state.partition_epoch + 1)
        try:
            self._commit(MetadataDelta(partitions=[new]))
        except StaleControllerEpoch:
            answer(Errors.STALE_CONTROLLER_EPOCH)
            return
        answer(Errors.NONE, new)
        self._send_update_metadata([new])
        self._maybe_complete_reassignment(request.tp)

    # -- responses -------------------------------------------------------------------------

    def _on_control_response(self, src: str, response: ControlResponse) -> None:
        request = type(response).__name__.replace("Response", "Request")
        outstanding = self._outstanding.pop(response.correlation_id, None)
        if outstanding is not None and outstanding.retry is not None:
            outstanding.retry.cancel()
        if response.error != Errors.NONE:
            log.warning("%s: %s from %s failed: %s", self.node_id, request, src,
                        response.error.name)
            self.control_errors.append(ControlError(src, request, None, response.error))
            if response.error == Errors.STALE_CONTROLLER_EPOCH and self.active:
                current = self.store.controller_epoch()
                if current != self.epoch:
                    self._resign(f"{src} has seen a newer controller (epoch {current})")
        partition_errors = ([] if isinstance(response, UpdateMetadataResponse)
                            else list(response.partition_errors))
        for result in partition_errors:
            if result.error != Errors.NONE:
                log.warning("%s: %s from %s: %s failed with %s", self.node_id, request, src,
                            result.tp, result.error.name)
                self.control_errors.append(ControlError(src, request, result.tp, result.error))
        # Storage errors name replicas on failed dirs; believe them only from the incarnation the
        # request went to (a late answer from a dead process says nothing about the new one).
        if (self.active and outstanding is not None
                and isinstance(response, LeaderAndIsrResponse)
                and src == broker_node_id(outstanding.broker_id)):
            registration = self.store.broker(outstanding.broker_id)
            if registration is not None and registration.broker_epoch == outstanding.broker_epoch:
                self._replicas_offline(outstanding.broker_id, [
                    r.tp for r in partition_errors if r.error == Errors.KAFKA_STORAGE_ERROR])

    # ---- topics --------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: Mapping[str, object] | None = None,
                     assignment: Sequence[Sequence[int]] | None = None) -> Uuid:
        """Create topic ``name`` with a new topic id; returns the id.

        Without ``assignment`` the replicas go round-robin over the live brokers from a start
        offset drawn from the rng; with it, ``assignment[p]`` lists partition p's replicas.
        ``configs`` are topic configs by Kafka name (string values as Kafka takes them, or Python
        values of the config's type); they are validated and stored in canonical string form.
        Errors: INVALID_TOPIC_EXCEPTION (bad name), TopicAlreadyExists, InvalidConfig (an
        unknown config or a bad value), InvalidPartitions, InvalidReplicationFactor (below 1 or
        above the live brokers), InvalidReplicaAssignment. As in Kafka, min.insync.replicas
        above the replication factor is accepted (producing with acks=all then fails with
        NOT_ENOUGH_REPLICAS).
        """
        self._require_active()
        validate_topic(name)
        existing = self.store.topic(name)
        if existing is not None:
            deleting = name in {d.name for d in self.store.deletions()}
            raise TopicAlreadyExists(f"topic {name!r} already exists"
                                     + (" and is being deleted" if deleting else ""))
        config_pairs = self._canonical_configs(configs or {})
        if not isinstance(partitions, int) or isinstance(partitions, bool):
            raise InvalidPartitions(f"topic {name!r}: partitions must be an int, not "
                                    f"{type(partitions).__name__}")
        if not isinstance(replication_factor, int) or isinstance(replication_factor, bool):
            raise InvalidReplicationFactor(f"topic {name!r}: replication factor must be an int, "
                                           f"not {type(replication_factor).__name__}")
        if partitions < 1:
            raise InvalidPartitions(f"topic {name!r}: {partitions} partitions; at least 1")
        if replication_factor < 1:
            raise InvalidReplicationFactor(
                f"topic {name!r}: replication factor {replication_factor}; at least 1")
        live = self.live_brokers()
        if assignment is None:
            if replication_factor > len(live):
                raise InvalidReplicationFactor(
                    f"topic {name!r}: replication factor {replication_factor} is larger than "
                    f"the {len(live)} live brokers {list(live)}")
            replica_lists = self._round_robin(live, partitions, replication_factor)
        else:
            replica_lists = self._check_assignment(name, assignment, partitions,
                                                   replication_factor)
        taken = {t.topic_id for t in self.store.topics()}
        topic_id = Uuid.from_random(self.rng)
        while topic_id in taken:
            topic_id = Uuid.from_random(self.rng)
        record = TopicRecord(name, topic_id, partitions, replication_factor, config_pairs)
        states = []
        for p, replicas in enumerate(replica_lists):
            isr = tuple(r for r in replicas if r in self._session_deadline_ms)
            states.append(PartitionState(TopicPartition(name, p), topic_id, replicas, isr,
                                         leader=isr[0], leader_epoch=0, partition_epoch=0))
        self._commit(MetadataDelta(topics=[record], partitions=states))
        log.info("%s created topic %s (id %s, %d partitions)", self.node_id, name, topic_id,
                 partitions)
        self._send_leader_and_isr(states, new=[s.tp for s in states])
        self._send_update_metadata(states)
        return topic_id

    @staticmethod
    def _canonical_configs(configs: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
        parsed = parse_topic_configs(configs)
        return TopicRecord.configs_from({k: canonical_string(v) for k, v in parsed.items()})

    def alter_topic_configs(self, name: str, set: Mapping[str, object] | None = None,
                            delete: Iterable[str] = ()) -> dict[str, str]:
        """Change topic ``name``'s config overrides incrementally (``kafka-configs.sh --alter
        --add-config k=v --delete-config k``): ``set`` adds or replaces overrides, ``delete``
        removes them (the broker default applies again). Returns the overrides now stored.

        The new overrides are stored (conditional on the controller epoch), then an
        UpdateMetadata carrying them goes to every live broker; a broker that is down gets them
        in the FULL LeaderAndIsr of its next registration. Errors, with nothing changed:
        UNKNOWN_TOPIC_OR_PARTITION (no such topic, or it is being deleted), InvalidConfig (an
        unknown name in ``set`` or ``delete``, or a bad value), INVALID_REQUEST (a name both set
        and deleted).
        """
        self._require_active()
        record = self.store.topic(name)
        if record is None or name in {d.name for d in self.store.deletions()}:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
        additions = dict(self._canonical_configs(set or {}))
        removals = [key.strip() if isinstance(key, str) else key for key in delete]
        for key in removals:
            if not isinstance(key, str) or key not in TOPIC_CONFIGS:
                raise InvalidConfig(str(key), None, "unknown topic config")
            if key in additions:
                raise KafkaError(Errors.INVALID_REQUEST,
                                 f"topic config {key} is both set and deleted")
        configs = {k: v for k, v in record.configs if k not in removals}
        configs.update(additions)
        new = replace(record, configs=TopicRecord.configs_from(configs))
        if new == record:
            return new.config_map
        states = self.store.partitions(name)
        changes = [c for st in states if (c := self._elect(st, new)) is not None]
        self._commit(MetadataDelta(topics=[new], partitions=changes))
        log.info("%s altered the configs of topic %s: %s", self.node_id, name, new.config_map)
        if changes:
            self._send_leader_and_isr(changes)
        self._send_update_metadata(self.store.partitions(name))
        return new.config_map

    def describe_topic_configs(self, name: str) -> dict[str, str]:
        """Topic ``name``'s stored config overrides (canonical strings, by Kafka name);
        UNKNOWN_TOPIC_OR_PARTITION if there is no such topic."""
        return self.topic(name).config_map

    def _round_robin(self, live: Sequence[int], partitions: int,
                     replication_factor: int) -> list[tuple[int, ...]]:
        # Partition p starts at live[(start + p) % n] and takes the next brokers in id order, so
        # leaders (first replicas) spread evenly; the rng picks where the rotation starts.
        n = len(live)
        start = self.rng.randrange(n)
        return [tuple(live[(start + p + k) % n] for k in range(replication_factor))
                for p in range(partitions)]

    def _check_assignment(self, name: str, assignment: Sequence[Sequence[int]], partitions: int,
                          replication_factor: int) -> list[tuple[int, ...]]:
        if len(assignment) != partitions:
            raise InvalidReplicaAssignment(f"topic {name!r}: assignment lists {len(assignment)} "
                                           f"partitions, expected {partitions}")
        registered = {b.broker_id for b in self.store.brokers()}
        lists = []
        for p, given in enumerate(assignment):
            replicas = tuple(given)
            if len(replicas) != replication_factor:
                raise InvalidReplicaAssignment(
                    f"topic {name!r} partition {p}: {len(replicas)} replicas, expected the "
                    f"replication factor {replication_factor}")
            if len(set(replicas)) != len(replicas):
                raise InvalidReplicaAssignment(
                    f"topic {name!r} partition {p}: duplicate replicas {list(replicas)}")
            unknown = [r for r in replicas if r not in registered]
            if unknown:
                raise InvalidReplicaAssignment(
                    f"topic {name!r} partition {p}: unknown broker ids {unknown}")
            if not any(r in self._session_deadline_ms for r in replicas):
                raise InvalidReplicaAssignment(
                    f"topic {name!r} partition {p}: none of the replicas {list(replicas)} is "
                    "alive, so no leader can be elected")
            lists.append(replicas)
        return lists

    def delete_topic(self, name: str) -> None:
        """Delete topic ``name``: StopReplica(delete, leader epoch -2) to every live replica,
        then remove the topic from the store (its name may be created again at once, with a new
        id). A replica that misses the StopReplica learns of the deletion from the FULL
        LeaderAndIsr it gets on its next registration (the partition is then a stray).
        """
        self._require_active()
        record = self.store.topic(name)
        if record is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
        deletion = TopicDeletion(name, record.topic_id)
        if name not in {d.name for d in self.store.deletions()}:
            self._commit(MetadataDelta(deletions=[deletion]))
        self._finish_deletion(deletion)

    def _finish_deletion(self, deletion: TopicDeletion) -> None:
        states = self.store.partitions(deletion.name)
        per_broker: dict[int, list[StopReplicaPartition]] = {}
        for state in states:
            for broker_id in state.replicas:
                per_broker.setdefault(broker_id, []).append(StopReplicaPartition(
                    state.tp, EPOCH_DURING_DELETE, delete_partition=True,
                    topic_id=state.topic_id))
        # Recorded first, so a controller that takes over mid-way finishes the deletion; the
        # StopReplica goes out before the removal so that no window exists in which the name is
        # free but replicas still serve the old topic id without having been told.
        for broker_id in sorted(per_broker):
            if broker_id in self._session_deadline_ms:
                self._send_stop_replica(broker_id, per_broker[broker_id])
        self._commit(MetadataDelta(removed_topics=[deletion.name]))
        self._offline_replicas = {(tp, b) for tp, b in self._offline_replicas
                                  if tp.topic != deletion.name}
        log.info("%s deleted topic %s (id %s)", self.node_id, deletion.name, deletion.topic_id)
        self._send_update_metadata(states, leader_override=LEADER_DURING_DELETE)

    # ---- reassignment --------------------------------------------------------------------

    def reassign(self, json_text: str) -> tuple[TopicPartition, ...]:
        """Start the reassignment in Kafka's JSON; returns the partitions it covers.

        The whole request is validated first and written in one transaction (all partitions or
        none). Then each partition gets its new replicas (LeaderAndIsr), and completes once every
        target replica is in the ISR: leadership moves to a target replica if needed, the old
        replicas get StopReplica(delete), and the leader epoch is bumped.
        Raises ReassignmentError (see logwright.controller.reassignment) for bad input.
        """
        self._require_active()
        moves = validate_plan(parse_reassignment(json_text), self.store)
        delta = MetadataDelta()
        for move in moves:
            state = self.partition_state(move.tp)
            delta.partitions.append(begin_reassignment(state, move))
            delta.reassignments.append(PendingReassignment(move.tp, move.replicas, move.log_dirs))
        self._commit(delta)
        for state in delta.partitions:
            log.info("%s reassigning %s: replicas %s, adding %s, removing %s", self.node_id,
                     state.tp, state.replicas, state.adding_replicas, state.removing_replicas)
        self._send_leader_and_isr(delta.partitions)
        self._send_update_metadata(delta.partitions)
        for move in moves:
            self._maybe_complete_reassignment(move.tp)
        return tuple(move.tp for move in moves)

    def _maybe_complete_reassignment(self, tp: TopicPartition) -> None:
        if not self.active:
            return
        pending = next((r for r in self.store.reassignments() if r.tp == tp), None)
        state = self.store.partition(tp)
        if pending is None or state is None or not reassignment_done(state, pending):
            return
        new = complete_reassignment(state, pending,
                                    [r for r in state.replicas if self._replica_alive(r, tp)])
        removed = [r for r in state.replicas if r not in new.replicas]
        try:
            self._commit(MetadataDelta(partitions=[new], cleared_reassignments=[tp]))
        except StaleControllerEpoch:
            return
        log.info("%s completed the reassignment of %s: replicas %s, leader %d, leader epoch %d",
                 self.node_id, tp, new.replicas, new.leader, new.leader_epoch)
        self._send_leader_and_isr([new])
        for broker_id in removed:
            if broker_id in self._session_deadline_ms:
                self._send_stop_replica(broker_id, [StopReplicaPartition(
                    tp, new.leader_epoch, delete_partition=True, topic_id=new.topic_id)])
            self._offline_replicas.discard((tp, broker_id))
        self._send_update_metadata([new])

    def reassignment_status(self, json_text: str | None = None) -> list[ReassignmentStatus]:
        """Progress of the pending reassignments, or of the partitions named in ``json_text``."""
        pending = {r.tp: r for r in self.store.reassignments()}
        if json_text is None:
            wanted = [(tp, r.target_replicas) for tp, r in pending.items()]
        else:
            wanted = [(m.tp, m.replicas) for m in parse_reassignment(json_text).moves]
        statuses = []
        for tp, target in wanted:
            state = self.partition_state(tp)
            if tp in pending:
                target = pending[tp].target_replicas
                phase = "in progress"
            else:
                phase = "complete" if state.replicas == target else "differs"
            statuses.append(ReassignmentStatus(
                tp, phase, target, state.replicas, state.isr, state.leader,
                state.adding_replicas, state.removing_replicas,
                tuple(r for r in target if r not in state.isr)))
        return statuses

    # ---- messages out --------------------------------------------------------------------

    def _next_correlation_id(self) -> int:
        self._correlation_id += 1
        return self._correlation_id

    def _send(self, broker_id: int, request: ControlRequest) -> None:
        """Send a control request, remember it until answered, and retry it if it goes missing."""
        if not self.active:
            return
        self.network.send(self.node_id, broker_node_id(broker_id), request)
        while len(self._outstanding) >= max(1, self.config.max_outstanding_requests):
            # The bound: forget the oldest (its broker gets a FULL request on any restart).
            oldest = self._outstanding.pop(next(iter(self._outstanding)))
            if oldest.retry is not None:
                oldest.retry.cancel()
        retry = None
        if self.config.control_request_retry_ms is not None:
            correlation_id = request.correlation_id
            retry = self.scheduler.schedule(
                f"{self.node_id} retry {type(request).__name__} {correlation_id}",
                lambda: self._retry(correlation_id), self.config.control_request_retry_ms)
        self._outstanding[request.correlation_id] = _Outstanding(
            broker_id, request.broker_epoch, request, retry)

    def _retry(self, correlation_id: int) -> None:
        """No answer came: send what the request meant again, as the state is NOW."""
        outstanding = self._outstanding.pop(correlation_id, None)
        if outstanding is None or not self.active:
            return
        broker_id, request = outstanding.broker_id, outstanding.request
        registration = self.store.broker(broker_id)
        if (broker_id not in self._session_deadline_ms or registration is None
                or registration.broker_epoch != outstanding.broker_epoch):
            return  # a dead broker gets everything again (FULL) when it registers
        log.debug("%s: no answer to %s %d from broker %d; sending again", self.node_id,
                  type(request).__name__, correlation_id, broker_id)
        if isinstance(request, LeaderAndIsrRequest) and request.type == LeaderAndIsrType.FULL:
            self._send_full_leader_and_isr(broker_id)
        elif isinstance(request, LeaderAndIsrRequest):
            states = [s for w in request.partition_states
                      if (s := self.store.partition(w.tp)) is not None
                      and s.topic_id == w.topic_id and broker_id in s.replicas]
            new = {w.tp for w in request.partition_states if w.is_new}
            if states:
                self._leader_and_isr(broker_id, LeaderAndIsrType.INCREMENTAL, states, new)
        elif isinstance(request, StopReplicaRequest):
            # Not if the broker became a replica of the partition again since.
            partitions = [p for p in request.partitions
                          if (s := self.store.partition(p.tp)) is None
                          or s.topic_id != p.topic_id or broker_id not in s.replicas]
            if partitions:
                self._send_stop_replica(broker_id, partitions)
        else:
            current = [s for w in request.partition_states
                       if (s := self.store.partition(w.tp)) is not None
                       and s.topic_id == w.topic_id]
            gone = tuple(w for w in request.partition_states if w.leader == LEADER_DURING_DELETE)
            configs = self._topic_configs()
            self._update_metadata_to(broker_id, tuple(self._wire_state(s, configs=configs)
                                                      for s in current) + gone)

    def _broker_epoch(self, broker_id: int) -> int:
        registration = self.store.broker(broker_id)
        assert registration is not None, f"broker {broker_id} is live but not registered"
        return registration.broker_epoch

    def _topic_configs(self) -> dict[tuple[str, Uuid], tuple[tuple[str, str], ...]]:
        """Every topic's stored configs, by (name, id): read once per message built."""
        return {(t.name, t.topic_id): t.configs for t in self.store.topics()}

    def _wire_state(self, state: PartitionState, broker_id: int | None = None,
                    is_new: bool = False,
                    configs: Mapping[tuple[str, Uuid], tuple[tuple[str, str], ...]] | None = None,
                    ) -> LeaderAndIsrPartitionState:
        if configs is None:
            configs = self._topic_configs()
        return LeaderAndIsrPartitionState(
            tp=state.tp, topic_id=state.topic_id, controller_epoch=self.epoch,
            leader=state.leader, leader_epoch=state.leader_epoch, isr=state.isr,
            partition_epoch=state.partition_epoch, replicas=state.replicas,
            adding_replicas=state.adding_replicas, removing_replicas=state.removing_replicas,
            is_new=is_new,
            log_dir=state.log_dir_for(broker_id) if broker_id is not None else "any",
            topic_configs=configs.get((state.tp.topic, state.topic_id), ()))

    def _leader_and_isr(self, broker_id: int, kind: LeaderAndIsrType,
                        states: Iterable[PartitionState],
                        new: Iterable[TopicPartition] = ()) -> None:
        new_tps = set(new)
        configs = self._topic_configs()
        wire = tuple(self._wire_state(s, broker_id,
                                      is_new=s.tp in new_tps or broker_id in s.adding_replicas,
                                      configs=configs)
                     for s in states)
        leaders = tuple(sorted({s.leader for s in wire if s.leader in self._session_deadline_ms}))
        self._send(broker_id, LeaderAndIsrRequest(
            self._next_correlation_id(), self.controller_id, self.epoch,
            self._broker_epoch(broker_id), kind, wire, leaders))

    def _send_full_leader_and_isr(self, broker_id: int) -> None:
        """FULL: every partition the broker hosts (KIP-550); anything else it holds is a stray."""
        deleting = {d.name for d in self.store.deletions()}
        hosted = [s for s in self.store.partitions()
                  if broker_id in s.replicas and s.tp.topic not in deleting]
        self._leader_and_isr(broker_id, LeaderAndIsrType.FULL, hosted)

    def _send_leader_and_isr(self, states: Sequence[PartitionState],
                             new: Iterable[TopicPartition] = (),
                             exclude: Iterable[int] = ()) -> None:
        """INCREMENTAL LeaderAndIsr to every live replica of ``states``."""
        skip = set(exclude)
        new_tps = set(new)
        per_broker: dict[int, list[PartitionState]] = {}
        for state in states:
            for broker_id in state.replicas:
                if broker_id in self._session_deadline_ms and broker_id not in skip:
                    per_broker.setdefault(broker_id, []).append(state)
        for broker_id in sorted(per_broker):
            self._leader_and_isr(broker_id, LeaderAndIsrType.INCREMENTAL, per_broker[broker_id],
                                 new_tps)

    def _send_stop_replica(self, broker_id: int,
                           partitions: Sequence[StopReplicaPartition]) -> None:
        self._send(broker_id, StopReplicaRequest(
            self._next_correlation_id(), self.controller_id, self.epoch,
            self._broker_epoch(broker_id), tuple(partitions)))

    def _send_update_metadata(self, states: Sequence[PartitionState],
                              leader_override: int | None = None) -> None:
        configs = self._topic_configs()
        wire = tuple(self._wire_state(s, configs=configs) for s in states)
        if leader_override is not None:
            wire = tuple(replace(w, leader=leader_override) for w in wire)
        for broker_id in self.live_brokers():
            self._update_metadata_to(broker_id, wire)

    def _update_metadata_to(self, broker_id: int,
                            wire: tuple[LeaderAndIsrPartitionState, ...]) -> None:
        self._send(broker_id, UpdateMetadataRequest(
            self._next_correlation_id(), self.controller_id, self.epoch,
            self._broker_epoch(broker_id), wire, self.live_brokers()))

    def _announce(self, changes: Sequence[PartitionState]) -> None:
        """Tell the live replicas (LeaderAndIsr) and every live broker (UpdateMetadata)."""
        if changes:
            self._send_leader_and_isr(changes)
            self._send_update_metadata(changes)
