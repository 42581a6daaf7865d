"""The controller node: one driver that feeds inputs to the decisions and performs their effects.

:class:`Controller` is what the network knows as ``controller-<id>`` and what the ``Cluster``
facade, the tests and the stateful test call. Each input (a message from the network, a timer
firing, an answer or a timeout from its request channel, an admin call) goes to one decision of
:class:`~logwright.controller.decisions.ControllerDecisions`; the effects it returns are performed
here, in order, over the injected network and scheduler:

- ``Send``: handed to the network;
- ``Request``: sent through the node's :class:`~logwright.protocol.channel.RequestChannel`, which
  keeps it until answered (bounded by ``max_outstanding_requests``, the oldest forgotten first)
  and after ``control_request_retry_ms`` feeds its absence back as an input;
- ``ForgetRequests``: the channel forgets them; ``ArmTimer`` / ``CancelTimer``: the scheduler.

The decisions emit exactly the calls the node used to make itself, in the same order, so one seed
replays the same run as before the split.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from logwright.controller.config import ControllerConfig
from logwright.controller.control import (
    CONTROL_REQUESTS,
    CONTROL_RESPONSES,
    LEADER_DURING_DELETE,
)
from logwright.controller.core import Outcome
from logwright.controller.decisions import ControlError, ControllerDecisions
from logwright.controller.dir_moves import DIR_MOVE_REQUESTS, DIR_MOVE_RESPONSES
from logwright.controller.errors import StaleControllerEpoch
from logwright.controller.metrics import ControllerMetrics
from logwright.controller.reassigning import ReassignmentStatus
from logwright.controller.store import MetadataStore, PartitionState, TopicRecord
from logwright.identity import TopicPartition, Uuid, broker_node_id, controller_node_id
from logwright.protocol.channel import RequestChannel
from logwright.protocol.effects import (
    ArmTimer,
    Effect,
    ForgetRequests,
    Request,
    Send,
    TimerKey,
)
from logwright.protocol.messages import (
    LeaderAndIsrRequest,
    Message,
    StopReplicaRequest,
    control_partitions,
)
from logwright.world.clock import Clock
from logwright.world.network import Network
from logwright.world.scheduler import Scheduler, Task
from logwright.world.trace import (
    CONTROLLER_FENCING,
    INIT,
    NO_TRACE,
    Json,
    TraceRecorder,
    first_of_each,
    partition_instance,
    topic_id_text,
)

__all__ = [
    "LEADER_DURING_DELETE",
    "ControlError",
    "Controller",
    "ReassignmentStatus",
    "broker_node_id",
    "controller_node_id",
]

T = TypeVar("T")


class Controller:
    """The active (or standby, or deposed) controller ``controller-<controller_id>``."""

    def __init__(self, controller_id: int, network: Network, scheduler: Scheduler, clock: Clock,
                 store: MetadataStore, rng: random.Random,
                 config: ControllerConfig | None = None,
                 trace: TraceRecorder = NO_TRACE, id_rng: random.Random | None = None) -> None:
        """``trace`` records the controller's model events (``world/trace.py``; off by
        default). ``id_rng`` draws topic ids (default ``rng``; see ``ControllerCore``)."""
        config = config or ControllerConfig()
        self.trace = trace
        self.node_id = controller_node_id(controller_id)
        self.network = network
        self.scheduler = scheduler
        # Control requests are sent before their retry timer is armed, and ids start at 1.
        self.channel = RequestChannel(self.node_id, network, scheduler, first_correlation_id=0,
                                      max_pending=max(1, config.max_outstanding_requests),
                                      when_full="forget_oldest", timer_after_send=True)
        self.decisions = ControllerDecisions(controller_id, store, clock, rng, config,
                                             self.channel.next_correlation_id, id_rng)
        self.metrics = ControllerMetrics(
            controller_id, lambda: self.decisions.elections_by_kind,
            self.decisions.offline_partition_count,
            self.decisions.eligible_leader_replica_count)
        self._timers: dict[TimerKey, Task] = {}

    # ---- performing effects --------------------------------------------------------------

    @property
    def elections_by_kind(self) -> dict[str, int]:
        """Elections from outside the ISR this controller made, by kind ("eligible leader
        replica", "recovery", "unclean"); a copy."""
        return dict(self.decisions.elections_by_kind)

    @property
    def reported_elections(self) -> list[tuple[TopicPartition, Uuid, str, int, int]]:
        """The latest 1,000 elections from outside the ISR: (partition, topic id, kind, new
        leader, new leader epoch); a copy."""
        return list(self.decisions.reported_elections)

    def _run(self, decide: Callable[[], Outcome[T]]) -> T:
        """Take one decision and perform its effects (those decided before an error, too)."""
        try:
            outcome = decide()
        except BaseException as exc:
            if self.trace.enabled:
                self._trace_store(exc)
            self._perform(self.decisions.take_effects())
            raise
        if self.trace.enabled:
            self._trace_store(None)
        self._perform(outcome.effects)
        return outcome.value

    def _perform(self, effects: Iterable[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, Send):
                self.network.send(self.node_id, effect.dst, effect.message)
            elif isinstance(effect, Request):
                self._request(effect)
            elif isinstance(effect, ForgetRequests):
                self.channel.forget(effect.dst)
            elif isinstance(effect, ArmTimer):
                self._arm(effect)
            else:
                timer = self._timers.pop(effect.key, None)
                if timer is not None:
                    timer.cancel()

    def _request(self, effect: Request) -> None:
        dst, request = effect.dst, effect.message
        if isinstance(request, DIR_MOVE_REQUESTS):
            # A reassignment's dir move (dir_moves.py): its answer goes back to that room.
            def moved(answer: Message | None) -> None:
                assert answer is None or isinstance(answer, DIR_MOVE_RESPONSES)
                self._run(lambda: self.decisions.on_dir_move_answer(dst, request, answer))

            self.channel.send_request(dst, request, moved, effect.timeout_ms,
                                      effect.timer_name or None)
            return
        assert isinstance(request, CONTROL_REQUESTS), f"{self.node_id}: only control requests"
        if self.trace.enabled:
            self._trace_send(dst, request)

        def answered(answer: Message | None) -> None:
            assert answer is None or isinstance(answer, CONTROL_RESPONSES)
            self._run(lambda: self.decisions.on_control_answer(dst, request, answer))

        self.channel.send_request(dst, request, answered, effect.timeout_ms,
                                  effect.timer_name or None)

    def _arm(self, effect: ArmTimer) -> None:
        key = effect.key
        assert key not in self._timers, f"{self.node_id}: timer {key} armed twice"
        self._timers[key] = self.scheduler.schedule(effect.name, lambda: self._fire(key),
                                                    effect.delay_ms)

    def _fire(self, key: TimerKey) -> None:
        self._timers.pop(key, None)
        self._run(lambda: self.decisions.on_timer(key))

    # ---- inputs --------------------------------------------------------------------------

    def receive(self, src: str, message: object) -> None:
        """Handle one message from the network."""
        if (isinstance(message, CONTROL_RESPONSES + DIR_MOVE_RESPONSES)
                and self.channel.receive(src, message)):
            return  # an answer to an outstanding request: its callback took it in
        self._run(lambda: self.decisions.receive(src, message))

    def activate(self) -> int:
        """Become the active controller: claim epoch+1, then do the failover work (see
        :meth:`ControllerDecisions.activate`). Returns the new controller epoch."""
        return self._run(self.decisions.activate)

    def shutdown(self) -> None:
        """Stop as a crashed process would: no more timers or sends; the store is untouched."""
        self._run(self.decisions.shutdown)

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: Mapping[str, object] | None = None,
                     assignment: Sequence[Sequence[int]] | None = None) -> Uuid:
        """Create topic ``name`` with a new topic id; returns the id (see
        :meth:`logwright.controller.topics.Topics.create_topic` for the rules and errors)."""
        return self._run(lambda: self.decisions.create_topic(
            name, partitions, replication_factor, configs, assignment))

    def create_partitions(self, name: str, total: int,
                          assignment: Sequence[Sequence[int]] | None = None) -> tuple[int, ...]:
        """Grow topic ``name`` to ``total`` partitions; returns the new partition numbers (see
        :meth:`logwright.controller.topics.Topics.create_partitions`)."""
        return self._run(lambda: self.decisions.create_partitions(name, total, assignment))

    def delete_topic(self, name: str) -> None:
        """Delete topic ``name`` (see :meth:`logwright.controller.topics.Topics.delete_topic`)."""
        self._run(lambda: self.decisions.delete_topic(name))

    def alter_topic_configs(self, name: str, set: Mapping[str, object] | None = None,
                            delete: Iterable[str] = ()) -> dict[str, str]:
        """Change topic ``name``'s config overrides incrementally; returns those now stored
        (see :meth:`logwright.controller.topics.Topics.alter_topic_configs`)."""
        return self._run(lambda: self.decisions.alter_topic_configs(name, set, delete))

    def reassign(self, json_text: str) -> tuple[TopicPartition, ...]:
        """Start the reassignment in Kafka's JSON; returns the partitions it covers (see
        :meth:`logwright.controller.reassigning.Reassignments.reassign`)."""
        return self._run(lambda: self.decisions.reassign(json_text))

    # ---- reads ---------------------------------------------------------------------------

    @property
    def controller_id(self) -> int:
        """This controller's id (its node id is ``controller-<id>``)."""
        return self.decisions.controller_id

    @property
    def store(self) -> MetadataStore:
        """The metadata store it writes."""
        return self.decisions.store

    @property
    def config(self) -> ControllerConfig:
        """Its configuration."""
        return self.decisions.config

    @property
    def active(self) -> bool:
        """True between a successful activate() and resignation or shutdown."""
        return self.decisions.active

    @property
    def epoch(self) -> int:
        """The controller epoch this controller claimed (0 before activate())."""
        return self.decisions.epoch

    @property
    def resign_reason(self) -> str | None:
        """Why it stopped being active (None while active or before activate())."""
        return self.decisions.resign_reason

    @property
    def control_errors(self) -> deque[ControlError]:
        """Errors brokers reported in control responses, most recent last (bounded)."""
        return self.decisions.control_errors

    def live_brokers(self) -> tuple[int, ...]:
        """The brokers this controller considers alive, by id."""
        return self.decisions.live_brokers()

    def replica_alive(self, broker_id: int, tp: TopicPartition) -> bool:
        """Whether this controller takes ``broker_id``'s replica of ``tp`` as able to serve
        (the broker's session is live and the replica's dir has not failed)."""
        return self.decisions._replica_alive(broker_id, tp)

    def partition_state(self, tp: TopicPartition) -> PartitionState:
        """The stored state of ``tp``; UNKNOWN_TOPIC_OR_PARTITION if there is none."""
        return self.decisions.partition_state(tp)

    def topic(self, name: str) -> TopicRecord:
        """The topic ``name``; UNKNOWN_TOPIC_OR_PARTITION if there is none."""
        return self.decisions.topic(name)

    def topics(self) -> list[TopicRecord]:
        """Every topic, by name (topics being deleted included until they are removed)."""
        return self.decisions.topics()

    def describe_topic_configs(self, name: str) -> dict[str, str]:
        """Topic ``name``'s stored config overrides; UNKNOWN_TOPIC_OR_PARTITION if none."""
        return self.decisions.describe_topic_configs(name)

    def reassignment_status(self, json_text: str | None = None) -> list[ReassignmentStatus]:
        """Progress of the pending reassignments, or of the partitions named in ``json_text``."""
        return self.decisions.reassignment_status(json_text)

    # ---- trace (world/trace.py) ----------------------------------------------------------------

    def _trace_store(self, error: BaseException | None) -> None:
        """After a decision: record what it changed in the store that a model knows about
        (a claimed controller epoch, a new leader epoch, a new or removed partition), or a
        write the store refused."""
        trace, store, node = self.trace, self.store, self.node_id
        memo = trace.memo.setdefault("controller", {"epoch": 0, "partitions": {}})
        record = store.controller()
        epoch = record.epoch if record is not None else 0
        if isinstance(error, StaleControllerEpoch):
            trace.emit(node, CONTROLLER_FENCING, "*", "ElectLeader",
                       {"c": self.epoch, "outcome": "refused"}, {})
        if epoch != memo["epoch"]:
            memo["epoch"] = epoch
            trace.emit(node, CONTROLLER_FENCING, "*", "ElectController", {"c": epoch},
                       {"controllerEpoch": epoch})
        registered: dict[str, int] = memo.setdefault("brokers", {})
        for r in store.brokers():
            b = str(r.broker_id)
            if registered.get(b) != r.broker_epoch:
                registered[b] = r.broker_epoch
                trace.emit(node, CONTROLLER_FENCING, "*", "Register",
                           {"b": r.broker_id, "e": r.broker_epoch},
                           {"brokerEpoch": {b: r.broker_epoch}, "brokerControllerEpoch": {b: 0}})
        known: dict[str, int] = memo["partitions"]
        current = {partition_instance(p.tp.topic, p.tp.partition): p
                   for p in store.partitions()}
        brokers = {str(r.broker_id): r.broker_epoch for r in store.brokers()}
        for inst in [i for i in known if i not in current]:
            del known[inst]
            trace.emit(node, "-", inst, "Removed", {}, {})
            trace.forget_instance(inst)
        for inst, p in current.items():
            if inst not in known:
                known[inst] = p.leader_epoch
                trace.emit(node, "-", inst, INIT, {
                    "topicId": topic_id_text(p.topic_id),
                    "replicas": sorted(p.replicas), "leader": p.leader,
                    "isr": sorted(p.isr), "leaderEpoch": p.leader_epoch,
                    "controllerEpoch": epoch, "brokerEpochs": brokers}, {})
            elif p.leader_epoch != known[inst]:
                known[inst] = p.leader_epoch
                trace.emit(node, CONTROLLER_FENCING, inst, "ElectLeader",
                           {"c": self.epoch, "outcome": "written", "leader": p.leader,
                            "topicId": topic_id_text(p.topic_id)},
                           {"leaderEpoch": p.leader_epoch})

    def _trace_send(self, dst: str, request: Message) -> None:
        """A LeaderAndIsr or StopReplica put on the network: one Send per partition."""
        b = int(dst.rsplit("-", 1)[1])
        named = control_partitions(request)
        if named is None:
            return
        assert isinstance(request, LeaderAndIsrRequest | StopReplicaRequest)
        kind = "Send" + type(request).__name__.removesuffix("Request")
        # A LeaderAndIsr's ISR is the store's as the request was built, just now: the
        # controller's ISR, which the leader's (the one LogStartOffset's events record) may lag
        # (a shrink the leader has not yet heard was committed).
        isr = first_of_each((s.tp, sorted(s.isr)) for s in request.partition_states) \
            if isinstance(request, LeaderAndIsrRequest) else {}
        for tp, (le, topic_id) in first_of_each((tp, (le, tid)) for tp, le, tid in named).items():
            args: dict[str, Json] = {"c": request.controller_epoch, "b": b,
                                     "e": request.broker_epoch, "le": le,
                                     "topicId": topic_id_text(topic_id)}
            if tp in isr:
                args["isr"] = list(isr[tp])
            self.trace.emit(self.node_id, CONTROLLER_FENCING,
                            partition_instance(tp.topic, tp.partition), kind, args, {})
