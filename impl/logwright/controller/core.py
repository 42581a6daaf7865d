"""What every room of the controller shares: its state, the store writes, and the effects out.

The controller's decisions (``decisions.py``, built from the rooms ``control``, ``reassigning``,
``election``, ``liveness`` and ``topics``) never touch the network or the scheduler: they emit
effects (``logwright.protocol.effects``) into a buffer, and each public decision returns them in an
:class:`Outcome`. The driver (``driver.py``) performs them. Store writes stay in the decision:
the store is the controller's state.

Invariant upheld here (StaleControllerFenced, hazard 4): every state change is written to the
metadata store first, conditional on this controller's epoch, and only then announced; a write the
store rejects as stale makes this controller resign: from then on it emits no control request.
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Concatenate, Generic, ParamSpec, TypeVar

from logwright.controller.config import ControllerConfig
from logwright.controller.errors import NotController, StaleControllerEpoch
from logwright.controller.store import (
    NO_CONTROLLER_EPOCH,
    NO_LEADER,
    MetadataDelta,
    MetadataStore,
    PartitionState,
    TopicRecord,
)
from logwright.errors import Errors, KafkaError
from logwright.identity import TopicPartition, Uuid, controller_node_id
from logwright.protocol.effects import (
    ArmTimer,
    CancelTimer,
    Effect,
    ForgetRequests,
    Send,
    TimerKey,
)
from logwright.protocol.messages import Message
from logwright.world.clock import Clock

__all__ = ["ControllerCore", "Outcome", "decision"]

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")
C = TypeVar("C", bound="ControllerCore")


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What one decision returns: its value (for an admin call) and the effects to perform, in
    the order they were decided."""

    value: T
    effects: list[Effect] = field(default_factory=list)


def decision(method: Callable[Concatenate[C, P], T]) -> Callable[Concatenate[C, P], Outcome[T]]:
    """Make ``method`` a decision: it returns its value with the effects it emitted.

    Decisions do not nest. When one raises, the effects it emitted before raising stay in the
    buffer (:meth:`ControllerCore.take_effects`): they were decided while the controller was
    entitled to them (for example a StopReplica sent before a store write found the epoch stale),
    so the driver performs them before passing the error on.
    """

    @functools.wraps(method)
    def decide(self: C, /, *args: P.args, **kwargs: P.kwargs) -> Outcome[T]:
        assert not self._deciding, f"{self.node_id}: decisions do not nest"
        assert not self._effects, f"{self.node_id}: effects left unperformed"
        self._deciding = True
        try:
            value = method(self, *args, **kwargs)
        finally:
            self._deciding = False
        return Outcome(value, self.take_effects())

    return decide


class ControllerCore:
    """The state of controller ``controller-<controller_id>`` that every room reads and writes.

    ``next_correlation_id`` hands out the correlation ids of control requests (the driver passes
    its request channel's); ``clock`` is read for session deadlines; ``rng`` draws where a
    round-robin assignment starts, and topic ids unless ``id_rng`` is given. A real cluster
    gives an ``id_rng`` of the operating system's randomness: its seeded generator starts its
    sequence again at every process start, so a topic deleted and re-created after a restart
    could get its deleted generation's id, which a broker that missed the deletion would take
    for the new topic.
    """

    def __init__(self, controller_id: int, store: MetadataStore, clock: Clock,
                 rng: random.Random, config: ControllerConfig,
                 next_correlation_id: Callable[[], int],
                 id_rng: random.Random | None = None) -> None:
        assert controller_id >= 0
        self.controller_id = controller_id
        self.node_id = controller_node_id(controller_id)
        self.store = store
        self.clock = clock
        self.rng = rng
        self.id_rng = id_rng if id_rng is not None else rng
        self.config = config
        self._next_correlation_id = next_correlation_id
        self.active = False
        """True between a successful activate() and resignation or shutdown."""
        self.epoch = NO_CONTROLLER_EPOCH
        """The controller epoch this controller claimed (0 before activate())."""
        self.resign_reason: str | None = None
        self._effects: list[Effect] = []
        self._deciding = False
        self._session_deadline_ms: dict[int, int] = {}  # live brokers -> session expiry
        self._armed_sessions: set[int] = set()  # brokers whose session timer is armed
        # Replicas a broker reported KAFKA_STORAGE_ERROR for (their log dir failed), and the
        # offline dirs each broker reported in heartbeats; both end with the incarnation.
        self._offline_replicas: set[tuple[TopicPartition, int]] = set()
        # Elections from outside the ISR this controller made, counted by kind ("eligible
        # leader replica", "recovery", "unclean"), and the latest 1,000 of them: (partition,
        # topic id, kind, new leader, new leader epoch). The facade's metrics read them.
        self.elections_by_kind: dict[str, int] = {}
        self.reported_elections: list[tuple[TopicPartition, Uuid, str, int, int]] = []
        self._offline_dirs: dict[int, frozenset[str]] = {}
        self._control_dsts: dict[str, int] = {}  # node id -> broker id, of every addressee
        # Incarnations this controller saw replaced by a newer one: a late (delayed or
        # duplicated) registration of one is refused, never taken for a restart.
        self._replaced_incarnations: set[tuple[int, Uuid]] = set()
        # Reassignments (reassigning.py): per pending partition, the leader epoch from which a
        # LeaderAndIsr answer counts (the one its reassignment began with, or the current one
        # when this controller took over); per (partition, broker), the incarnation (broker
        # epoch), topic id and highest leader epoch of a LeaderAndIsr it answered without error.
        self._reassignment_since: dict[TopicPartition, int] = {}
        self._reassignment_answers: dict[tuple[TopicPartition, int], tuple[int, Uuid, int]] = {}

    # ---- effects -------------------------------------------------------------------------

    def take_effects(self) -> list[Effect]:
        """The effects emitted and not yet handed out, oldest first; the buffer is emptied."""
        effects, self._effects = self._effects, []
        return effects

    def _emit(self, effect: Effect) -> None:
        self._effects.append(effect)

    def _reply(self, dst: str, message: Message) -> None:
        self._emit(Send(dst, message))

    def _arm(self, key: TimerKey, delay_ms: int, name: str) -> None:
        self._emit(ArmTimer(key, delay_ms, f"{self.node_id} {name}"))

    def _cancel(self, key: TimerKey) -> None:
        self._emit(CancelTimer(key))

    # ---- lifecycle -----------------------------------------------------------------------

    def _resign(self, reason: str) -> None:
        log.warning("%s (epoch %d) resigns: %s", self.node_id, self.epoch, reason)
        self._stop(reason)

    def _stop(self, reason: str) -> None:
        self.active = False
        self.resign_reason = reason
        for broker_id in sorted(self._armed_sessions):
            self._cancel(("session", broker_id))
        self._armed_sessions.clear()
        self._session_deadline_ms.clear()
        self._emit(ForgetRequests())

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

    def offline_partition_count(self) -> int:
        """Partitions with no leader, topics being deleted left out (0 unless active)."""
        if not self.active:
            return 0
        deleting = self._deleting()
        return sum(1 for s in self.store.partitions()
                   if s.leader == NO_LEADER and s.tp.topic not in deleting)

    def eligible_leader_replica_count(self) -> int:
        """The ELR members of every partition, summed (0 unless active)."""
        return sum(len(s.elr) for s in self.store.partitions()) if self.active else 0

    def live_brokers(self) -> tuple[int, ...]:
        """The brokers this controller considers alive, by id."""
        return tuple(sorted(self._session_deadline_ms))

    def _replica_alive(self, broker_id: int, tp: TopicPartition) -> bool:
        """Whether ``broker_id``'s replica of ``tp`` can serve: broker live, its dir not failed."""
        return (broker_id in self._session_deadline_ms
                and (tp, broker_id) not in self._offline_replicas)

    def partition_state(self, tp: TopicPartition) -> PartitionState:
        """The stored state of ``tp``; UNKNOWN_TOPIC_OR_PARTITION if there is none."""
        state = self.store.partition(tp)
        if state is None:
            raise KafkaError.of(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {tp}")
        return state

    def topic(self, name: str) -> TopicRecord:
        """The topic ``name``; UNKNOWN_TOPIC_OR_PARTITION if there is none."""
        record = self.store.topic(name)
        if record is None:
            raise KafkaError.of(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
        return record

    def topics(self) -> list[TopicRecord]:
        """Every topic, by name (topics being deleted included until they are removed)."""
        return self.store.topics()

    def _deleting(self) -> set[str]:
        """The names of the topics whose deletion started and is not finished."""
        return {d.name for d in self.store.deletions()}
