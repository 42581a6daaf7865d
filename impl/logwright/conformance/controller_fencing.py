"""The abstraction of a simulated cluster onto the ControllerFencing twin, per partition.

One twin instance per partition (per topic id: a topic deleted and created again under its name
is a new instance), over every broker of the cluster (``Brokers``, sorted). What is abstracted:

* ``controllerEpoch``: the metadata store's controller epoch; ``leaderEpoch``: the store's leader
  epoch of the partition (the latest decision);
* per broker, ``brokerEpoch``: the epoch of its running incarnation's latest registration in
  the store, or the broker's own if higher (a broker still registering keeps the previous
  incarnation's). The model's ``Register`` is one step; the implementation's registration is a
  request and its response, so the controller may address a request to the new epoch before the
  broker has heard of it, and the broker accepts it (KIP-380 rejects only older epochs): the
  store's write is the model's ``Register`` (spec/README.md, ControllerFencing);
  ``brokerControllerEpoch``: the highest controller epoch it accepted (0 before any);
  ``replicaEpoch``: its replica's leader epoch, or ``NOT_HOSTED`` when it holds no replica of
  this topic id, or a stopped one (StopReplica). A broker that is down, and a new incarnation
  not yet told about the partition, keep the value last seen: the replica is on its disk, and
  the model's ``Register`` keeps ``replicaEpoch``;
* ``network``: empty (no invariant reads it; in-flight requests are not abstracted).

Ghosts, kept by the projection from what it observed:

* ``lastApply[b]``: the broker's record of the last control request it applied
  (``Broker.last_applied_control``: the request's controller and broker epochs, the broker's
  own before), recorded when it changes; the broker sets it when a request passes its fence,
  which the model records only for a delivery that changes something: a stricter reading,
  equal on a correct broker (every accepted request satisfies the fence);
* ``appliedEpoch[b]``: the highest request controller epoch applied by the current incarnation
  (0 at its registration);
* ``replicaPeak[b]``: the highest ``replicaEpoch`` seen since the replica was last not hosted;
* ``lastStoreWrite``: (store epoch, store epoch) once the partition's leader epoch changed. The
  store holds no writer's epoch, so this ghost cannot see a deposed controller's write; the
  store's conditional write (``MetadataStore._check_epoch``) and its tests cover it.

The twin's epochs are bounded and the implementation's are not: the twin is built with small
bounds (its request set is enumerated at construction) and ``TypeOK`` is left out of the
invariants checked; ``StaleControllerFenced`` and ``BrokerFollowsLatestDecision`` read no bound.

What is checked: both invariants on every partition's abstract state after every event of the
world (and after every step of the fuzzer), when that state changed. Steps are not checked: one
event of the cluster (a controller's decision reaching several brokers over a reordering network)
is not one short path of the twin's actions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from logwright.broker.broker import Broker
from logwright.broker.partition import Partition, Role
from logwright.cluster import Cluster
from logwright.conformance.refinement import (
    ClusterObserver,
    RefinementChecker,
    RefinementViolation,
)
from logwright.identity import TopicPartition, Uuid
from logwright.model.controller_fencing import (
    NOT_HOSTED,
    CFState,
    ControllerFencingConfig,
    ControllerFencingTwin,
)
from logwright.model.core import State

INVARIANTS = ("StaleControllerFenced", "BrokerFollowsLatestDecision")
"""The twin invariants checked (TypeOK bounds epochs the implementation does not bound)."""


def twin_for(brokers: tuple[int, ...]) -> ControllerFencingTwin:
    """The twin a cluster's partition is checked against (see the module docstring)."""
    return ControllerFencingTwin(ControllerFencingConfig(
        brokers=tuple(sorted(brokers)), max_controller_epoch=1, max_broker_epoch=1,
        max_leader_epoch=0, max_in_flight=0, invariants=INVARIANTS))


class _NoSteps:
    """A refinement whose step search is never run (only invariants are checked)."""

    def __init__(self, spec: ControllerFencingTwin) -> None:
        self._spec = spec

    @property
    def spec(self) -> ControllerFencingTwin:
        """The twin."""
        return self._spec

    def successors(self, state: State, target: State) -> Iterable[tuple[str, State]]:
        """None: this projection checks invariants only."""
        return ()


@dataclass
class _BrokerSeen:
    """What the projection keeps of one broker for one partition between events."""

    incarnation: object | None = None
    broker_epoch: int = 1
    controller_epoch: int = 0
    replica: int = NOT_HOSTED
    told: bool = False  # the current incarnation has held the partition
    record: tuple[int, int, int, int] | None = None
    last_apply: tuple[()] | tuple[int, int, int, int] = ()
    applied: int = 0
    peak: int = NOT_HOSTED


@dataclass
class _Instance:
    spec: ControllerFencingTwin
    checker: RefinementChecker
    topic_id: Uuid
    brokers: dict[int, _BrokerSeen] = field(default_factory=dict)
    store_leader_epoch: int = -1
    store_write: tuple[()] | tuple[int, int] = ()


class ControllerFencingProjection(ClusterObserver):
    """Every partition of a simulated cluster as a ControllerFencing state, its invariants
    checked after every event (``attach``) and on ``check``.

    ``follow`` returns the partitions to watch at each check (the fuzzer's: every partition the
    controller knows). A violation raises :class:`RefinementViolation` naming the invariant and
    the abstract states before and after.
    """

    def __init__(self, cluster: Cluster,
                 follow: Callable[[], Iterable[TopicPartition]]) -> None:
        self.cluster = cluster
        self.follow = follow
        self.events = 0
        self.checks = 0
        self.instances: dict[TopicPartition, _Instance] = {}

    def check(self, context: str = "") -> None:
        """Abstract every followed partition and check the twin's invariants."""
        store_epoch = max(1, self.cluster.store.controller_epoch())
        brokers = {b: self._broker_now(b, broker)
                   for b, broker in self.cluster.brokers.items()}
        for tp in self.follow():
            self._check_partition(tp, store_epoch, brokers, context)

    def _broker_now(self, b: int, broker: Broker) -> _BrokerNow | None:
        """What the abstraction reads of broker ``b`` (None: down, or not registered yet)."""
        if not broker.alive:
            return None
        epoch = broker.broker_epoch
        registration = self.cluster.store.broker(b)
        if registration is not None and registration.incarnation_id == broker.incarnation_id:
            epoch = max(epoch, registration.broker_epoch)  # the store's is the model's Register
        if epoch < 0:
            return None
        return _BrokerNow(broker.incarnation_id, epoch, max(0, broker.controller_epoch),
                          broker.last_applied_control, broker.replica_manager.partitions)

    def state_of(self, tp: TopicPartition) -> CFState | None:
        """The last abstract state checked for ``tp`` (None: not watched)."""
        inst = self.instances.get(tp)
        last = inst.checker.last if inst is not None else None
        assert last is None or isinstance(last, CFState)
        return last

    def _instance(self, tp: TopicPartition, topic_id: Uuid) -> _Instance:
        inst = self.instances.get(tp)
        brokers = tuple(sorted(self.cluster.brokers))
        if inst is not None and inst.topic_id == topic_id and tuple(inst.brokers) == brokers:
            return inst
        spec = twin_for(brokers)
        fresh = _Instance(spec, RefinementChecker(_NoSteps(spec)), topic_id,
                          {b: _BrokerSeen() for b in brokers})
        if inst is not None and inst.topic_id == topic_id:  # a broker was added: keep the rest
            fresh.brokers.update({b: v for b, v in inst.brokers.items() if b in brokers})
            fresh.store_leader_epoch, fresh.store_write = inst.store_leader_epoch, inst.store_write
        self.instances[tp] = fresh
        return fresh

    def _check_partition(self, tp: TopicPartition, store_epoch: int,
                         brokers: dict[int, _BrokerNow | None], context: str) -> None:
        record = self.cluster.store.topic(tp.topic)
        state = self.cluster.store.partition(tp)
        if record is None or state is None:
            return  # deleted since the partitions were listed
        inst = self._instance(tp, record.topic_id)
        if state.leader_epoch != inst.store_leader_epoch:
            if inst.store_leader_epoch >= 0:
                inst.store_write = (store_epoch, store_epoch)
            inst.store_leader_epoch = state.leader_epoch
        for b, seen in inst.brokers.items():
            now = brokers.get(b)
            if now is not None:
                _observe(tp, record.topic_id, now, seen)
        order = list(inst.brokers)
        s = CFState(store_epoch, max(0, state.leader_epoch),
                    tuple(inst.brokers[b].broker_epoch for b in order),
                    tuple(inst.brokers[b].controller_epoch for b in order),
                    tuple(inst.brokers[b].replica for b in order), frozenset(),
                    tuple(inst.brokers[b].last_apply for b in order), inst.store_write,
                    tuple(inst.brokers[b].applied for b in order),
                    tuple(inst.brokers[b].peak for b in order))
        if s == inst.checker.last:
            return
        self.checks += 1
        inst.checker.check_invariants(s, inst.checker.last, f"{tp}, {context}")
        inst.checker.last = s



@dataclass(frozen=True)
class _BrokerNow:
    """What one check reads of one running, registered broker."""

    incarnation: object
    epoch: int
    controller_epoch: int
    applied: tuple[int, int, int, int] | None
    partitions: Mapping[TopicPartition, Partition]


def _observe(tp: TopicPartition, topic_id: Uuid, now: _BrokerNow, seen: _BrokerSeen) -> None:
    """Update what is kept of one broker for ``tp`` from what it shows now."""
    if now.incarnation != seen.incarnation:  # registered: the model's Register
        seen.incarnation = now.incarnation
        seen.told = False
        seen.applied = 0
        seen.record = now.applied
    seen.broker_epoch = now.epoch
    seen.controller_epoch = now.controller_epoch
    applied = now.applied
    if applied is not None and applied is not seen.record:
        seen.record = applied
        ce, be, ce_before, be_before = applied
        seen.last_apply = (ce, be, max(0, ce_before), max(be_before, now.epoch))
        seen.applied = max(seen.applied, ce)
    part = now.partitions.get(tp)
    if part is not None and part.topic_id not in (None, topic_id):
        part = None  # another generation of the topic: no replica of this one
    if part is not None:
        seen.told = True
    if seen.told:
        hosted = part is not None and part.role is not Role.NONE and part.leader_epoch >= 0
        seen.replica = part.leader_epoch if hosted and part is not None else NOT_HOSTED
    seen.peak = NOT_HOSTED if seen.replica == NOT_HOSTED else max(seen.peak, seen.replica)


__all__ = ["INVARIANTS", "ControllerFencingProjection", "RefinementViolation", "twin_for"]
