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
  ``brokerControllerEpoch``: the controller epoch of the last request its incarnation
  applied (0 before any; see "Two readings" below);
  ``replicaEpoch``: its replica's leader epoch, or ``NOT_HOSTED`` when it holds no replica of
  this topic id, or a stopped one (StopReplica). A broker that is down, and a new incarnation
  not yet told about the partition, keep the value last seen: the replica is on its disk, and
  the model's ``Register`` keeps ``replicaEpoch``;
* ``network``: empty (no invariant reads it; in-flight requests are not abstracted: the step
  search treats them as hidden).

Ghosts, kept by the projection from what it observed:

* ``lastApply[b]``: the broker's record of the last control request it applied
  (``Broker.last_applied_control``: the request's controller and broker epochs) with the
  abstract controller and broker epochs the broker had before it, when that delivery changed
  something for this partition (one request per event; when an event applied several, a
  registering broker's deferred requests, the broker's own record of what it had before);
* ``appliedEpoch[b]``: the highest request controller epoch applied by the current incarnation
  (0 at its registration);
* ``replicaPeak[b]``: the highest ``replicaEpoch`` seen since the replica was last not hosted;
* ``lastStoreWrite``: (store epoch, store epoch) once the partition's leader epoch changed. The
  store holds no writer's epoch, so this ghost cannot see a deposed controller's write; the
  store's conditional write (``MetadataStore._check_epoch``) and its tests cover it.

The implementation's epochs are unbounded: the twin is built with bounds beyond any a run
reaches (:data:`UNBOUNDED`; its request set is never enumerated) and ``TypeOK`` is left out of
the invariants checked; ``StaleControllerFenced`` and ``BrokerFollowsLatestDecision`` read no
bound.

What is checked, on every partition's abstract state after every event of the world (and
after every step of the fuzzer), when that state changed: both invariants, and that the change
is a stutter or a path of at most K = 3 twin steps (:class:`ControllerFencingRefinement`), with
``network`` hidden: a delivered request may be any the twin could have sent by then (a
controller epoch up to the store's, a leader epoch up to the partition's, an incarnation of the
broker that existed), so the search chooses it. One event of the cluster is one short path: a
controller taking over (``ElectController``, then its first ``ElectLeader``), a broker applying
one request (``Deliver``: a LeaderAndIsr or StopReplica for this partition, or any control
request for another, which moves only the broker's controller epoch here), a registration
(``Register``; the broker's epochs are unbounded and numbered by the store, so a jump of n is n
``Register`` steps, as a reassignment's n leader epochs are n ``ElectLeader``).

Two readings make the code's state the model's (spec/README.md, ControllerFencing, "Steps"):

* ``brokerControllerEpoch`` is the controller epoch of the last request the incarnation
  applied (0 before any, as after the model's ``Register``). The code's registration response
  also raises the broker's fence to the store's controller epoch: it refuses more than the
  model's broker, which no invariant can see, and the model has no step for it;
* a request the broker applies that changes neither its controller epoch nor this partition's
  replica is, for this partition, the model's stutter (the twin's ``Deliver`` is disabled when
  it would change nothing): ``lastApply`` and ``appliedEpoch`` record only a delivery that
  changed something here, the record's "before" being the abstract state before. A request
  the broker applied past its own fence (an older controller or broker epoch than it held) is
  recorded as it is, whether or not it changed anything, and StaleControllerFenced reports it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from logwright.broker.broker import Broker
from logwright.broker.partition import Partition, Role
from logwright.cluster import Cluster
from logwright.conformance.refinement import (
    ClusterObserver,
    Identity,
    RefinementChecker,
    RefinementViolation,
    snapshot,
)
from logwright.identity import TopicPartition, Uuid
from logwright.model.controller_fencing import (
    LEADER_AND_ISR,
    NO_BROKER_EPOCH,
    NOT_HOSTED,
    STOP_REPLICA,
    CFState,
    ControllerFencingConfig,
    ControllerFencingTwin,
    Request,
)
from logwright.model.core import State

INVARIANTS = ("StaleControllerFenced", "BrokerFollowsLatestDecision")
"""The twin invariants checked (TypeOK bounds epochs the implementation does not bound)."""


UNBOUNDED = 2**62
"""The twin's epoch bounds for refinement: beyond any epoch a run reaches."""


def twin_for(brokers: tuple[int, ...]) -> ControllerFencingTwin:
    """The twin a cluster's partition is checked against (see the module docstring): epochs
    unbounded, and no request in flight (the network is hidden)."""
    return ControllerFencingTwin(ControllerFencingConfig(
        brokers=tuple(sorted(brokers)), max_controller_epoch=UNBOUNDED,
        max_broker_epoch=UNBOUNDED, max_leader_epoch=UNBOUNDED, max_in_flight=UNBOUNDED,
        invariants=INVARIANTS))


class ControllerFencingRefinement:
    """The twin's steps with ``network`` hidden (a
    :class:`~logwright.conformance.refinement.Refinement`): only the values the target names
    are tried, and every successor is the result of genuine twin actions."""

    def __init__(self, spec: ControllerFencingTwin) -> None:
        self._spec = spec

    @property
    def spec(self) -> ControllerFencingTwin:
        """The twin."""
        return self._spec

    def successors(self, state: State, target: State) -> Iterable[tuple[str, State]]:
        """The controller's elections and the registrations up to the target's epochs (n
        ``ElectController``/``ElectLeader``/``Register`` steps as one move), and, per broker
        whose state differs from the target's, the delivery of each request the twin could
        have sent whose epochs the two states name (``network`` empty before and after)."""
        assert isinstance(state, CFState) and isinstance(target, CFState)
        return self._moves(state, target)

    def _moves(self, s: CFState, t: CFState) -> Iterator[tuple[str, State]]:
        spec = self._spec
        moves: list[tuple[str, State] | None] = []
        if t.controllerEpoch > s.controllerEpoch:
            moves.append(_repeat("ElectController", s, t.controllerEpoch - s.controllerEpoch,
                                 spec.ElectController))
        if t.leaderEpoch > s.leaderEpoch:
            writers = {t.lastStoreWrite[0]} if t.lastStoreWrite else set()
            for c in sorted(writers | {s.controllerEpoch}):
                moves.append(_repeat(f"ElectLeader({c})", s, t.leaderEpoch - s.leaderEpoch,
                                     _elect_leader(spec, c)))
        for i, b in enumerate(spec.config.brokers):
            if t.brokerEpoch[i] > s.brokerEpoch[i]:
                moves.append(_repeat(f"Register({b})", s, t.brokerEpoch[i] - s.brokerEpoch[i],
                                     _register(spec, b)))
        yield from (m for m in moves if m is not None)
        for i, b in enumerate(spec.config.brokers):
            if _broker_part(s, i) == _broker_part(t, i):
                continue
            record = t.lastApply[i]
            ces = {t.brokerControllerEpoch[i], *((record[0],) if record else ())}
            bes = {s.brokerEpoch[i], *((record[1],) if record else ())}
            les = {t.replicaEpoch[i], s.replicaEpoch[i], 0}
            for kind in (LEADER_AND_ISR, STOP_REPLICA):
                for c in sorted(ce for ce in ces if 1 <= ce <= s.controllerEpoch):
                    for e in sorted(be for be in bes if 1 <= be <= s.brokerEpoch[i]):
                        for le in sorted(x for x in les if 0 <= x <= s.leaderEpoch):
                            m = Request(kind, c, b, e, le)
                            nxt = spec.Deliver(s._replace(network=frozenset((m,))), m)
                            if nxt is not None:
                                yield (f"Deliver({kind}, c={c}, b={b}, e={e}, le={le})",
                                       nxt._replace(network=frozenset()))


def _repeat(name: str, s: CFState, n: int,
            step: Callable[[CFState], CFState | None]) -> tuple[str, State] | None:
    """``step`` taken ``n`` times, each a twin step (None if one is not enabled)."""
    x: CFState | None = s
    for _ in range(n):
        x = step(x) if x is not None else None
    if x is None:
        return None
    return (name if n == 1 else f"{name}×{n}"), x


def _elect_leader(spec: ControllerFencingTwin, c: int) -> Callable[[CFState], CFState | None]:
    return lambda x: spec.ElectLeader(x, c)


def _register(spec: ControllerFencingTwin, b: int) -> Callable[[CFState], CFState | None]:
    return lambda x: spec.Register(x, b)


def _broker_part(s: CFState, i: int) -> tuple[object, ...]:
    """What a delivery to broker ``i`` changes."""
    return (s.brokerControllerEpoch[i], s.replicaEpoch[i], s.lastApply[i], s.appliedEpoch[i],
            s.replicaPeak[i])


@dataclass
class _BrokerSeen:
    """What the projection keeps of one broker for one partition between events."""

    incarnation: object | None = None
    broker_epoch: int = 1
    controller_epoch: int = 0
    replica: int = NOT_HOSTED
    told: bool = False  # the current incarnation has held the partition
    count: int = 0  # the control requests the current incarnation had applied
    fence_broken: bool = False  # it applied a request its own fence refuses
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
        self.steps = 0
        self.instances: dict[TopicPartition, _Instance] = {}
        #: Per partition, the inputs of its last check if it was quiet (``check``), and the
        #: same kept for the cross-check (``cross_check``).
        self._quiet: dict[TopicPartition, tuple[object, ...]] = {}
        self._cross_inputs: dict[TopicPartition, tuple[object, ...]] = {}

    def check(self, context: str = "") -> None:
        """Abstract every followed partition and check the twin's invariants.

        A partition whose inputs (:meth:`_inputs`: every value of the cluster the check reads)
        are those of its last *quiet* check (one that changed nothing the projection keeps) is
        not checked again: the check reads nothing else (no clock, no file), so it would retrace
        that one, changing nothing (see ``_check_tracked``)."""
        store_epoch = max(1, self.cluster.store.controller_epoch())
        read = {b: self._broker_read(b, broker) for b, broker in self.cluster.brokers.items()}
        seen = tuple((b, None if r is None else r[:5]) for b, r in read.items())
        brokers: dict[int, _BrokerNow | None] | None = None
        for tp in self.follow():
            inputs = self._inputs(tp, store_epoch, read, seen)
            if self.cross_check or inputs is None or inputs != self._quiet.get(tp):
                if brokers is None:
                    brokers = {b: None if r is None else _BrokerNow(*r) for b, r in read.items()}
                self._check_tracked(tp, store_epoch, brokers, context, inputs)

    def _inputs(self, tp: TopicPartition, store_epoch: int,
                read: dict[int, _BrokerRead | None], seen: tuple[object, ...]
                ) -> tuple[object, ...] | None:
        """Every value ``_check_partition`` reads for ``tp`` (None: the topic is gone, nothing
        is checked): the store's, and each running broker's (``seen``) with its replica's."""
        store = self.cluster.store
        record = store.topic(tp.topic)
        state = store.partition(tp)
        if record is None or state is None:
            return None
        parts: list[object] = []
        for r in read.values():
            part = r[5].get(tp) if r is not None else None
            parts.append(None if part is None else (part, id(part), part.topic_id, part.role,
                                                    part.leader_epoch))
        return (store_epoch, record, state, seen, tuple(parts))

    def _check_tracked(self, tp: TopicPartition, store_epoch: int,
                       brokers: dict[int, _BrokerNow | None], context: str,
                       inputs: tuple[object, ...] | None) -> None:
        """``_check_partition``, remembering ``inputs`` if the check was quiet: it changed
        nothing the projection keeps of the partition (its instance, what it keeps of each
        broker, the state last checked) nor its counters."""
        inst = self.instances.get(tp)
        last = inst.checker.last if inst is not None else None
        kept = snapshot(_kept(inst))
        counters = (self.checks, self.steps)
        self._quiet.pop(tp, None)
        expected = (self.cross_check and inputs is not None
                    and inputs == self._cross_inputs.get(tp))
        self._check_partition(tp, store_epoch, brokers, context)
        after = self.instances.get(tp)
        quiet = (inputs is not None and after is inst
                 and (inst is None or inst.checker.last is last)
                 and counters == (self.checks, self.steps) and kept == snapshot(_kept(inst)))
        if expected:
            self.cross_checks += 1
            assert quiet, (f"ControllerFencing projection, {tp}: the same inputs as a quiet "
                           "check gave another outcome")
        if quiet and inputs is not None:
            self._quiet[tp] = inputs
            self._cross_inputs[tp] = inputs
        else:
            self._cross_inputs.pop(tp, None)

    def _broker_read(self, b: int, broker: Broker) -> _BrokerRead | None:
        """What the abstraction reads of broker ``b``, a ``_BrokerNow``'s fields in order (None:
        down, or not registered yet); ``check`` makes the ``_BrokerNow`` only when a partition
        is checked in full."""
        if not broker.alive:
            return None
        epoch = broker.broker_epoch
        registration = self.cluster.store.broker(b)
        if registration is not None and registration.incarnation_id == broker.incarnation_id:
            epoch = max(epoch, registration.broker_epoch)  # the store's is the model's Register
        if epoch < 0:
            return None
        applied = broker.applied_control_count
        return (broker.incarnation_id, epoch, max(0, broker.controller_epoch) if applied else 0,
                broker.last_applied_control, applied, broker.replica_manager.partitions)

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
        fresh = _Instance(spec, RefinementChecker(ControllerFencingRefinement(spec)), topic_id,
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
        if any(seen.fence_broken for seen in inst.brokers.values()):
            inst.checker.check_invariants(s, inst.checker.last, f"{tp}, {context}")
        found = inst.checker.check(s, f"{tp}, {context}")
        if found.actions:
            self.steps += 1



def _kept(inst: _Instance | None) -> tuple[object, ...] | None:
    """What a check may change of what the projection keeps of a partition (its twin and
    checker go with the instance; the checker's state changes only as the counters do)."""
    if inst is None:
        return None
    return (Identity(inst), inst.topic_id, inst.brokers, inst.store_leader_epoch,
            inst.store_write)


@dataclass(frozen=True)
class _BrokerNow:
    """What one check reads of one running, registered broker."""

    incarnation: Uuid
    epoch: int
    controller_epoch: int  # of the last request applied; 0 before any (see the docstring)
    applied: tuple[int, int, int, int] | None
    count: int
    partitions: Mapping[TopicPartition, Partition]


_BrokerRead = tuple[Uuid, int, int, "tuple[int, int, int, int] | None", int,
                    Mapping[TopicPartition, Partition]]
"""``_BrokerNow``'s fields."""


def _observe(tp: TopicPartition, topic_id: Uuid, now: _BrokerNow, seen: _BrokerSeen) -> None:
    """Update what is kept of one broker for ``tp`` from what it shows now."""
    if now.incarnation != seen.incarnation:  # registered: the model's Register
        seen.incarnation = now.incarnation
        seen.told = False
        seen.applied = 0
        seen.controller_epoch = 0
        seen.count = 0
    controller_before, epoch_before = seen.controller_epoch, seen.broker_epoch
    replica_before = seen.replica
    seen.broker_epoch = now.epoch
    seen.controller_epoch = now.controller_epoch
    part = now.partitions.get(tp)
    if part is not None and part.topic_id not in (None, topic_id):
        part = None  # another generation of the topic: no replica of this one
    if part is not None:
        seen.told = True
    if seen.told:
        hosted = part is not None and part.role is not Role.NONE and part.leader_epoch >= 0
        seen.replica = part.leader_epoch if hosted and part is not None else NOT_HOSTED
    seen.peak = NOT_HOSTED if seen.replica == NOT_HOSTED else max(seen.peak, seen.replica)
    if now.count > seen.count and now.applied is not None:
        ce, be, ce_before, be_before = now.applied
        record_before = (controller_before, epoch_before)
        if now.count - seen.count > 1 and ce != max(0, ce_before):
            # Several in one event (a registering broker's deferred requests), the last one
            # raising the controller epoch: its own "before" is the state the others left.
            # (Had it raised nothing, an earlier one made the change, with the same epochs.)
            record_before = (max(0, ce_before), max(be_before, now.epoch))
        seen.count = now.count
        if ce < max(0, ce_before) or (be != NO_BROKER_EPOCH and be < be_before):
            # Applied past the broker's own fence: the twin never delivers it, whether or not
            # it changed what the model sees; recorded as is, StaleControllerFenced names it.
            seen.last_apply = (ce, be, max(0, ce_before), be_before)
            seen.fence_broken = True
        elif (now.controller_epoch, seen.replica) != (controller_before, replica_before):
            seen.last_apply = (ce, be, *record_before)
            seen.applied = max(seen.applied, ce)


__all__ = ["INVARIANTS", "UNBOUNDED", "ControllerFencingProjection", "ControllerFencingRefinement",
           "RefinementViolation", "twin_for"]
