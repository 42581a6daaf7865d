"""Broker registration and liveness: broker epochs, sessions kept alive by heartbeats, a
broker's failure and its return, and the log dirs it reports offline.

Invariant upheld: broker incarnations are fenced (hazard 3, KIP-380). Each registration of a new
incarnation gets a broker epoch larger than any before; a registration of a broker whose previous
incarnation was still alive is handled as that incarnation's failure first (its leadership moves,
it leaves the ISR); a heartbeat counts only with the broker's current epoch.

One session timer per live broker at a time (an ArmTimer effect keyed ("session", broker id)),
re-armed lazily at the current deadline when it fires, so heartbeats cost no timer work.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace

from logwright.controller.election import Election
from logwright.controller.errors import StaleControllerEpoch
from logwright.controller.store import NO_LEADER, BrokerRegistration, MetadataDelta
from logwright.errors import Errors
from logwright.identity import broker_node_id
from logwright.protocol.messages import (
    BrokerHeartbeat,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    LeaderAndIsrType,
    ReplicaReport,
    replica_reports_by_partition,
)

__all__ = ["Liveness"]

log = logging.getLogger(__name__)


class Liveness(Election):
    """The room of broker registration, sessions and failures."""

    def _on_registration(self, src: str, request: BrokerRegistrationRequest) -> None:
        """A broker registers: answer with its broker epoch, then bring it in."""
        def refuse(error: Errors, why: str) -> None:
            log.warning("%s refuses the registration of %s: %s", self.node_id, src, why)
            self._reply(src, BrokerRegistrationResponse(
                request.correlation_id, error, controller_epoch=self.store.controller_epoch()))

        problem = self._registration_problem(src, request)
        if problem is not None:
            refuse(*problem)
            return
        try:
            registration = self._register(request)
        except StaleControllerEpoch as e:
            if self.active:
                self._resign(f"store rejected a registration: {e}")
            refuse(Errors.STALE_CONTROLLER_EPOCH, "lost the controller epoch")
            return
        log.info("%s registered broker %d with broker epoch %d", self.node_id,
                 request.broker_id, registration.broker_epoch)
        self._reply(src, BrokerRegistrationResponse(request.correlation_id, Errors.NONE,
                                                    registration.broker_epoch, self.epoch))
        self._broker_started(request.broker_id)

    def _registration_problem(self, src: str,
                              request: BrokerRegistrationRequest) -> tuple[Errors, str] | None:
        """Why ``request`` is refused, with the error to answer (None: it is not)."""
        if not self.active:
            return Errors.STALE_CONTROLLER_EPOCH, "not the active controller"
        broker_id = request.broker_id
        if broker_id < 0 or src != broker_node_id(broker_id):
            return Errors.INVALID_REQUEST, f"broker id {broker_id} does not match sender {src}"
        if not request.log_dirs or not all(isinstance(d, str) and d for d in request.log_dirs):
            return (Errors.INVALID_REQUEST,
                    f"log dirs {request.log_dirs!r} are not a non-empty list of paths")
        if (broker_id, request.incarnation_id) in self._replaced_incarnations:
            # A late copy of a registration from an incarnation a newer one replaced (the
            # network delays and duplicates): taking it for a restart would depose the live
            # incarnation with a dead one's epoch (spec/README.md, ControllerFencing).
            return (Errors.STALE_BROKER_EPOCH,
                    f"incarnation {request.incarnation_id} was replaced by a newer one")
        return None

    def _register(self, request: BrokerRegistrationRequest) -> BrokerRegistration:
        """The registration ``request`` gets (raises StaleControllerEpoch if the store refuses)."""
        broker_id = request.broker_id
        existing = self.store.broker(broker_id)
        if existing is not None and existing.incarnation_id == request.incarnation_id:
            # The same process registering again (a duplicated or retried request): the same
            # epoch, so its heartbeats stay valid; only a new incarnation gets a new epoch.
            if existing.fenced:
                self._commit(MetadataDelta(brokers=[replace(existing, fenced=False)]))
            return existing
        if existing is not None:
            self._replaced_incarnations.add((broker_id, existing.incarnation_id))
        if broker_id in self._session_deadline_ms:
            # A quick restart: the old incarnation never missed its session, but its state
            # is gone. Handle it as that incarnation's failure first (hazard 3).
            self._broker_failed(broker_id, "re-registered with a new incarnation")
        registration = self.store.register_broker(
            self.epoch, broker_id, request.incarnation_id, request.log_dirs)
        # A new process starts with its dirs re-checked: earlier failures are forgotten.
        self._offline_dirs.pop(broker_id, None)
        self._offline_replicas = {(tp, b) for tp, b in self._offline_replicas if b != broker_id}
        if request.replica_reports is not None:
            self._note_replica_reports(broker_id, request.replica_reports)
        return registration

    def _note_replica_reports(self, broker_id: int, reports: tuple[ReplicaReport, ...]) -> None:
        """Unclean-shutdown detection (KIP-966) for a new incarnation of ``broker_id``.

        A replica it did not shut down cleanly (or did not load at all: its dir is still
        failed) may have lost unflushed records: it leaves the ISR and the ELR, and is not
        eligible to lead until it has caught up from the leader and rejoined the ISR. The log
        ends it reports count for recovery elections (``Election._note_log_ends``); those
        happen when the broker's session starts (``_broker_started``)."""
        partitions = self.store.partitions()
        # A replica of a deleted generation of the topic is not this partition's.
        by_tp = replica_reports_by_partition(reports, {s.tp: s.topic_id for s in partitions})
        changes = []
        for state in partitions:
            if broker_id not in (*state.isr, *state.elr):
                continue
            report = by_tp.get(state.tp)
            if report is not None and report.clean:
                continue
            isr = tuple(r for r in state.isr if r != broker_id)
            new = replace(state, isr=isr, elr=tuple(r for r in state.elr if r != broker_id),
                          leader=NO_LEADER if state.leader == broker_id else state.leader,
                          partition_epoch=state.partition_epoch + 1)
            if isr != state.isr:
                new = replace(new, leader_epoch=state.leader_epoch + 1)
            log.info("%s: broker %d's replica of %s %s; it may have lost unflushed records and "
                     "is not eligible to lead until it rejoins the ISR", self.node_id, broker_id,
                     state.tp, "is missing" if report is None else "was not shut down cleanly")
            changes.append(new)
        self._commit(MetadataDelta(partitions=changes))
        self._announce(changes)
        self._note_log_ends(broker_id, reports)

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
            self._note_log_ends(heartbeat.broker_id, heartbeat.leaderless_replicas)
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
        self._note_log_ends(heartbeat.broker_id, heartbeat.leaderless_replicas)

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
        hosted = self._hosted_by(broker_id)
        if hosted:
            self._leader_and_isr(broker_id, LeaderAndIsrType.INCREMENTAL, hosted)


    def _start_session(self, broker_id: int) -> None:
        self._session_deadline_ms[broker_id] = (
            self.clock.now_ms() + self.config.broker_session_timeout_ms)
        self._arm_session_timer(broker_id, self.config.broker_session_timeout_ms)

    def _arm_session_timer(self, broker_id: int, delay_ms: int) -> None:
        # One timer per live broker at a time, re-armed lazily at the current deadline, so
        # heartbeats cost no scheduler work and an idle cluster without brokers has no timers.
        if broker_id not in self._armed_sessions:
            self._armed_sessions.add(broker_id)
            self._arm(("session", broker_id), max(0, delay_ms), f"session of broker-{broker_id}")

    def _check_session(self, broker_id: int) -> None:
        """The session timer of ``broker_id`` fired."""
        self._armed_sessions.discard(broker_id)
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
        if broker_id in self._armed_sessions:
            self._armed_sessions.discard(broker_id)
            self._cancel(("session", broker_id))
        self._forget_requests_to(broker_id)
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
        self._send_full_update_metadata()
        for pending in self.store.reassignments():
            self._maybe_complete_reassignment(pending.tp)

