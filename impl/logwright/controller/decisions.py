"""The controller's decisions: every input it takes, and the effects each returns.

Inputs: :meth:`ControllerDecisions.receive` (a message from the network), :meth:`on_timer` (a timer
it armed fired), :meth:`on_control_answer` (the answer to a control request, or its absence when
the retry interval passed), and the admin calls (``activate``, ``shutdown``, ``create_topic``,
``delete_topic``, ``alter_topic_configs``, ``reassign``). Each returns an
:class:`~logwright.controller.core.Outcome`: its value and the effects to perform, in order. The
rooms it is built from each hold one idea: ``control`` (building control requests), ``reassigning``
(the reassignment state machine), ``election`` (leaders and the ISR), ``liveness`` (registration,
sessions, failures) and ``topics``. Nothing here touches the network or the scheduler: the driver
(``driver.py``) performs the effects.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from logwright.controller.config import ControllerConfig
from logwright.controller.control import ControlRequest, ControlResponse
from logwright.controller.core import decision
from logwright.controller.errors import StaleControllerEpoch
from logwright.controller.liveness import Liveness
from logwright.controller.store import MetadataDelta, MetadataStore
from logwright.controller.topics import Topics
from logwright.errors import Errors
from logwright.identity import TopicPartition
from logwright.protocol.effects import TimerKey
from logwright.protocol.messages import (
    AlterPartitionRequest,
    AlterReplicaLogDirsResponse,
    BrokerHeartbeat,
    BrokerRegistrationRequest,
    DescribeLogDirsResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    RecordLineageRequest,
    StopReplicaResponse,
    UpdateMetadataResponse,
)
from logwright.world.clock import Clock

__all__ = ["ControlError", "ControllerDecisions"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ControlError:
    """An error a broker reported in a control response (whole request or one partition)."""

    broker: str
    request: str
    tp: TopicPartition | None
    error: Errors


class ControllerDecisions(Topics, Liveness):
    """Every decision of controller ``controller-<controller_id>`` (see the module doc)."""

    def __init__(self, controller_id: int, store: MetadataStore, clock: Clock,
                 rng: random.Random, config: ControllerConfig,
                 next_correlation_id: Callable[[], int],
                 id_rng: random.Random | None = None) -> None:
        super().__init__(controller_id, store, clock, rng, config, next_correlation_id, id_rng)
        self.control_errors: deque[ControlError] = deque(maxlen=self.config.max_recorded_errors)
        """Errors brokers reported in control responses, most recent last (bounded)."""

    # ---- lifecycle -----------------------------------------------------------------------

    @decision
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
        for pending in self.store.reassignments():
            # Only answers to this controller's LeaderAndIsr show a target alive (reassigning.py).
            if (state := self.store.partition(pending.tp)) is not None:
                self._reassignment_since[pending.tp] = state.leader_epoch
        for broker_id in self.live_brokers():
            self._send_full_leader_and_isr(broker_id)
        self._send_full_update_metadata()
        for pending in self.store.reassignments():
            self._maybe_complete_reassignment(pending.tp)
        return self.epoch

    @decision
    def shutdown(self) -> None:
        """Stop as a crashed process would: no more timers or sends; the store is untouched."""
        self._stop("shut down")

    # ---- inputs --------------------------------------------------------------------------

    @decision
    def receive(self, src: str, message: object) -> None:
        """Handle one message from the network (a control response here answers no request
        this controller still awaits: see :meth:`on_control_answer`)."""
        if isinstance(message, BrokerHeartbeat):
            self._on_heartbeat(src, message)
        elif isinstance(message, BrokerRegistrationRequest):
            self._on_registration(src, message)
        elif isinstance(message, AlterPartitionRequest):
            self._on_alter_partition(src, message)
        elif isinstance(message, RecordLineageRequest):
            self._on_record_lineage(src, message)
        elif isinstance(message, LeaderAndIsrResponse | StopReplicaResponse
                        | UpdateMetadataResponse):
            self._on_control_response(src, message, None)
        elif isinstance(message, AlterReplicaLogDirsResponse | DescribeLogDirsResponse):
            pass  # a late answer to a dir-move request (dir_moves.py): the next poll asks again
        else:
            log.warning("%s ignores an unexpected %s from %s", self.node_id,
                        type(message).__name__, src)

    @decision
    def on_timer(self, key: TimerKey) -> None:
        """Timer ``key`` (armed by an ArmTimer effect) fired."""
        kind, broker_id = key
        if kind == "dir-moves":
            self._poll_dir_moves()
            return
        assert kind == "session", f"{self.node_id}: unknown timer {key}"
        self._check_session(broker_id)

    @decision
    def on_control_answer(self, dst: str, request: ControlRequest,
                          answer: ControlResponse | None) -> None:
        """Node ``dst`` answered ``request`` (sent by a Request effect) with ``answer``; None: no
        answer came within control_request_retry_ms, so what the request meant is sent again,
        rebuilt from the state as it is now."""
        broker_id = self._control_dsts[dst]
        if answer is None:
            self._resend(broker_id, request)
        else:
            self._on_control_response(dst, answer, (broker_id, request))

    def _on_control_response(self, src: str, response: ControlResponse,
                             answered: tuple[int, ControlRequest] | None) -> None:
        request = type(response).__name__.replace("Response", "Request")
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
        if (self.active and answered is not None
                and isinstance(response, LeaderAndIsrResponse)):
            # The channel matched the answer to its request: it came from the addressee.
            broker_id, sent = answered
            registration = self.store.broker(broker_id)
            if registration is not None and registration.broker_epoch == sent.broker_epoch:
                self._replicas_offline(broker_id, [
                    r.tp for r in partition_errors if r.error == Errors.KAFKA_STORAGE_ERROR])
                if isinstance(sent, LeaderAndIsrRequest):
                    self._note_leader_and_isr_answer(broker_id, sent, response)


