"""Tests generated from the ControllerFencing model, driven through a simulated cluster.

What it upholds: each generated path of the ControllerFencing twin (its .cfg's constants: one
broker, two failovers, one restart, one leader election, two requests in flight), driven
through a real :class:`~logwright.cluster.Cluster` in the simulated world, leaves the partition
in the same abstract state as the twin after every move, read through
:class:`~logwright.conformance.controller_fencing.ControllerFencingProjection` (which also checks
each change as twin steps and the invariants, after every event of the world).

The cluster has two brokers; the twin's broker 1 is the cluster's broker 1, and the partition
(``cf-0``, replicas 2 and 1, led by broker 2) is compared on broker 1 alone, which is cut
from broker 2 (so out of the ISR: its restarts change no ISR, which would write a leader
epoch the twin's ``Register`` does not). Every control
request a controller sends broker 1 is intercepted on the simulated network
(:meth:`~logwright.world.network.SimNetwork.intercept`) and kept from it: broker 1 hears only
the requests the case sends. A move is performed as:

* ``ElectController``: the controller fails over, the old one left running (a zombie);
* ``ElectLeader(c)``: controller ``c`` (by its epoch) writes the partition's next leader epoch
  to the metadata store, through the store's write conditional on ``c`` (a deposed
  controller's write is refused: nothing changes);
* ``Register(1)``: broker 1's process is killed and restarted (a new incarnation, a new broker
  epoch from the store; its replica stays on disk);
* ``SendLeaderAndIsr`` / ``SendStopReplica(c, b, e, le)``: the request controller ``c`` would
  send broker ``b``'s incarnation ``e`` with leader epoch ``le`` is built (the real message,
  the partition's stored state) and kept in flight by the driver (the twin's ``network``);
* ``Deliver(m)``: ``m`` is handed to broker 1 as the network hands it a message from
  controller ``c`` (its real fence and handling), and may be again (a duplicate);
* ``Lose(m)``: ``m`` is dropped from the driver's network.

The cluster's epochs are renamed to the twin's: controller epochs are the same (the first
controller claims 1), leader epochs count from the partition's at creation, and broker 1's
broker epochs are numbered by its incarnations (the first one of the case is 1).

Cases (:func:`generated_cases`): a covering set of the correct twin (:func:`covering_paths`:
every action; a delivery of each kind applied; each kind of delivery the twin refuses: from a
stale controller, to an old incarnation, one that would change nothing; a deposed controller's
refused write), and each bug's counterexample (:func:`bug_cases`), which the implementation must
leave where the bug acts: the fenced request changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from logwright.cluster import Cluster
from logwright.conformance.controller_fencing import ControllerFencingProjection
from logwright.conformance.generated import (
    BugReport,
    Case,
    CaseRun,
    Coverage,
    ModelDivergence,
    Move,
    bug_case,
    covering_cases,
    run_case,
)
from logwright.controller import StaleControllerEpoch
from logwright.controller.store import MetadataDelta
from logwright.identity import TopicPartition, Uuid, broker_node_id, controller_node_id
from logwright.model.controller_fencing import (
    BUGS,
    LEADER_AND_ISR,
    NOT_HOSTED,
    STOP_REPLICA,
    CFState,
    ControllerFencingConfig,
    ControllerFencingTwin,
    Request,
)
from logwright.model.core import State
from logwright.protocol.messages import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrType,
    Message,
    StopReplicaPartition,
    StopReplicaRequest,
    UpdateMetadataRequest,
)

MODULE = "ControllerFencing"

BROKER = 1
"""The twin's broker: the cluster's broker 1."""

LEADER = 2
"""The partition's leader in the cluster (never the twin's broker, whose restart would move
the leadership and write leader epochs the twin's Register does not)."""

TP = TopicPartition("cf", 0)

SETTLE_MS = 20
"""How long the world runs after each move (the effects of a delivery: logs, fetchers)."""


def twin_config(bug: str = "none") -> ControllerFencingConfig:
    """The constants of spec/ControllerFencing.cfg (and of each bug's .cfg), with ``bug``."""
    return ControllerFencingConfig(brokers=(BROKER,), max_controller_epoch=3, max_broker_epoch=2,
                                   max_leader_epoch=1, max_in_flight=2, bug=bug)


def twin(bug: str = "none") -> ControllerFencingTwin:
    """The generating twin."""
    return ControllerFencingTwin(twin_config(bug))


# ---- the model's side -----------------------------------------------------------------------

def moves_of(spec: ControllerFencingTwin) -> _MovesOf:
    """Every move worth trying from a state: every action the twin's ``Next`` enumerates with
    its parameters, and the delivery of every request in flight (refused ones too)."""
    return _MovesOf(spec)


class _MovesOf:
    def __init__(self, spec: ControllerFencingTwin) -> None:
        self.spec = spec

    def __call__(self, state: State) -> Iterator[Move]:
        assert isinstance(state, CFState)
        s, k = state, self.spec.config
        yield Move("ElectController")
        for c in range(1, s.controllerEpoch + 1):
            yield Move("ElectLeader", (c,))
        for b in k.brokers:
            yield Move("Register", (b,))
        for kind in (LEADER_AND_ISR, STOP_REPLICA):
            for c in range(1, s.controllerEpoch + 1):
                for i, b in enumerate(k.brokers):
                    for e in range(1, s.brokerEpoch[i] + 1):
                        for le in range(s.leaderEpoch + 1):
                            yield Move(f"Send{kind}", (c, b, e, le))
        for m in sorted(s.network):
            yield Move("Deliver", tuple(m))
            yield Move("Lose", tuple(m))


def step_of(spec: ControllerFencingTwin) -> _Step:
    """The twin's successor of a state under a move (None: not enabled)."""
    return _Step(spec)


class _Step:
    def __init__(self, spec: ControllerFencingTwin) -> None:
        self.spec = spec

    def __call__(self, state: State, move: Move) -> State | None:
        assert isinstance(state, CFState)
        spec, a = self.spec, move.args
        if move.action == "ElectController":
            return spec.ElectController(state)
        if move.action == "ElectLeader":
            return spec.ElectLeader(state, _int(a[0]))
        if move.action == "Register":
            return spec.Register(state, _int(a[0]))
        if move.action in (f"Send{LEADER_AND_ISR}", f"Send{STOP_REPLICA}"):
            kind = move.action.removeprefix("Send")
            c, b, e, le = (_int(x) for x in a)
            return spec.Send(state, kind, c, b, e, le)
        if move.action == "Deliver":
            return spec.Deliver(state, _request(move))
        if move.action == "Lose":
            return spec.Lose(state, _request(move))
        raise ValueError(f"no ControllerFencing move {move}")


def _int(x: object) -> int:
    assert isinstance(x, int)
    return x


def _request(move: Move) -> Request:
    kind, c, b, e, le = move.args
    assert isinstance(kind, str)
    return Request(kind, _int(c), _int(b), _int(e), _int(le))


GOALS = ("ElectController", "ElectLeader", "Register", f"Send{LEADER_AND_ISR}",
         f"Send{STOP_REPLICA}", "Deliver", "Lose", "Deliver LeaderAndIsr applied",
         "Deliver StopReplica applied", "Deliver refused: stale controller epoch",
         "Deliver refused: stale broker epoch", "Deliver refused: changes nothing",
         "ElectLeader refused: deposed controller", "ElectLeader by a later controller",
         "Register with the replica hosted", "Deliver applied to a restarted incarnation",
         "Deliver LeaderAndIsr applied: a newer leader epoch",
         "Deliver StopReplica with an older leader epoch: the replica stays",
         "Deliver from a newer controller: the replica stays")
"""The coverage goals: every action; each way a delivery or a store write is applied or
refused; a restart with the replica on disk, a delivery to the restarted incarnation, a leader
epoch raised, a StopReplica fenced by its leader epoch, a newer controller's epoch recorded with
the replica left as it is."""


def goals_of(spec: ControllerFencingTwin) -> _GoalsOf:
    """The goals a move reaches (see :data:`GOALS`)."""
    return _GoalsOf(spec)


class _GoalsOf:
    def __init__(self, spec: ControllerFencingTwin) -> None:
        self.spec = spec

    def __call__(self, s: State, move: Move, t: State | None) -> list[str]:
        assert isinstance(s, CFState)
        if move.action == "ElectLeader" and t is None and _int(move.args[0]) < s.controllerEpoch:
            return ["ElectLeader refused: deposed controller"]
        if move.action != "Deliver":
            if t is None:
                return []
            goals = [move.action]
            if move.action == "ElectLeader" and _int(move.args[0]) > 1:
                goals.append("ElectLeader by a later controller")
            if move.action == "Register" and s.replicaEpoch[0] != NOT_HOSTED:
                goals.append("Register with the replica hosted")
            return goals
        m = _request(move)
        if t is not None:
            assert isinstance(t, CFState)
            goals = ["Deliver", f"Deliver {m.type} applied"]
            if s.brokerEpoch[0] > 1:
                goals.append("Deliver applied to a restarted incarnation")
            if NOT_HOSTED != s.replicaEpoch[0] < t.replicaEpoch[0]:
                goals.append("Deliver LeaderAndIsr applied: a newer leader epoch")
            if s.replicaEpoch[0] != NOT_HOSTED and t.replicaEpoch[0] == s.replicaEpoch[0]:
                if m.type == STOP_REPLICA:
                    goals.append("Deliver StopReplica with an older leader epoch: the replica "
                                 "stays")
                elif t.brokerControllerEpoch[0] > s.brokerControllerEpoch[0]:
                    goals.append("Deliver from a newer controller: the replica stays")
            return goals
        if self.spec.StaleControllerEpoch(s, m.broker, m):
            return ["Deliver refused: stale controller epoch"]
        if self.spec.StaleBrokerEpoch(s, m.broker, m):
            return ["Deliver refused: stale broker epoch"]
        return ["Deliver refused: changes nothing"]


def covering_paths(seed: int) -> Coverage:
    """A covering set of the correct twin: the shortest path to every goal of :data:`GOALS`
    (the search's order shuffled by ``seed``)."""
    spec = twin()
    return covering_cases(MODULE, spec, moves_of(spec), step_of(spec), goals_of(spec), GOALS,
                          seed)


def bug_cases() -> list[BugReport]:
    """Every bug switch's counterexample under its .cfg's constants, as a case."""
    correct = twin()
    out = []
    for bug in BUGS:
        buggy = twin(bug)
        out.append(bug_case(MODULE, bug, buggy, step_of(correct), step_of(buggy),
                            moves_of(buggy)))
    return out


def generated_cases(seed: int) -> Iterator[Case]:
    """The covering set, then every bug's counterexample."""
    yield from covering_paths(seed).cases
    for report in bug_cases():
        if report.case is not None:
            yield report.case


# ---- the implementation's side --------------------------------------------------------------

_CONTROL = (LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest)


class FencingDriver:
    """A simulated two-broker cluster driven by ControllerFencing moves (module docstring)."""

    def __init__(self, seed: int) -> None:
        self.cluster = Cluster.simulated(brokers=2, log_dirs_per_broker=1, seed=seed)
        self.world = self.cluster.simulated_world
        self.kept_from_broker: list[tuple[str, object]] = []
        target = broker_node_id(BROKER)
        self.world.network.intercept(
            lambda src, dst, m: dst == target and isinstance(m, _CONTROL),
            lambda src, dst, m: self.kept_from_broker.append((src, m)))
        # A new incarnation, which has heard from no controller (the twin's initial state),
        # cut from the leader: it never fetches, so it never joins the ISR, and its restarts
        # are no ISR change (the controller's removal of a replica from the ISR writes a new
        # leader epoch, which the twin's Register does not).
        self.cluster.crash_broker(BROKER, power_loss=False)
        self.cluster.restart_broker(BROKER)
        self.cluster.partition_network(BROKER, LEADER)
        self.topic_id: Uuid = self.cluster.controller.create_topic(
            TP.topic, 1, 2, None, assignment=[[LEADER, BROKER]])
        # Out of the ISR (the leader shrinks it to itself).
        if not self.world.run_until(lambda: self._isr() == (LEADER,), 120_000):
            raise ModelDivergence(f"the leader never shrank the ISR to itself: {self._isr()}")
        stored = self.cluster.store.partition(TP)
        assert stored is not None and stored.leader == LEADER
        self.leader_epoch_base = stored.leader_epoch
        assert self.cluster.store.controller_epoch() == 1, "the first controller claims 1"
        registration = self.cluster.store.broker(BROKER)
        assert registration is not None
        self.broker_epochs = [registration.broker_epoch]
        self.network: dict[Request, Message] = {}
        self.correlation = 1 << 40  # far from any a controller uses
        self.projection = ControllerFencingProjection(self.cluster, follow=lambda: [TP])
        self.projection.attach()
        self.projection.check("the case starts")

    def _isr(self) -> tuple[int, ...]:
        stored = self.cluster.store.partition(TP)
        return stored.isr if stored is not None else ()

    # -- the abstract state, in the twin's numbering --------------------------------------

    def state(self) -> CFState:
        """Broker 1's part of the partition's abstract state, renamed, with the driver's
        requests in flight as the network."""
        self.projection.check("a move")
        full = self.projection.state_of(TP)
        assert full is not None
        i = sorted(self.cluster.brokers).index(BROKER)
        record = full.lastApply[i]
        if record:
            ce, be, ce_before, be_before = record
            record = (ce, self._broker_epoch(be), ce_before, self._broker_epoch(be_before))
        return CFState(
            full.controllerEpoch, full.leaderEpoch - self.leader_epoch_base,
            (self._broker_epoch(full.brokerEpoch[i]),), (full.brokerControllerEpoch[i],),
            (self._leader_epoch(full.replicaEpoch[i]),), frozenset(self.network), (record,),
            full.lastStoreWrite, (full.appliedEpoch[i],),
            (self._leader_epoch(full.replicaPeak[i]),))

    def _broker_epoch(self, e: int) -> int:
        if e in self.broker_epochs:
            return self.broker_epochs.index(e) + 1
        raise ModelDivergence(f"broker epoch {e} is none of broker {BROKER}'s incarnations "
                              f"{self.broker_epochs}")

    def _leader_epoch(self, le: int) -> int:
        return le if le == NOT_HOSTED else le - self.leader_epoch_base

    # -- moves ------------------------------------------------------------------------------

    def apply(self, move: Move) -> State:
        """Perform ``move`` (module docstring); the abstract state after it."""
        if move.action == "ElectController":
            epoch = self.cluster.store.controller_epoch()
            self.cluster.fail_controller(zombie=True)
            if not self.world.run_until(
                    lambda: self.cluster.store.controller_epoch() > epoch, 10_000):
                raise ModelDivergence("the new controller never claimed an epoch")
        elif move.action == "ElectLeader":
            self._elect_leader(_int(move.args[0]))
        elif move.action == "Register":
            self.cluster.crash_broker(BROKER, power_loss=False)
            self.cluster.restart_broker(BROKER)
            registration = self.cluster.store.broker(BROKER)
            assert registration is not None
            self.broker_epochs.append(registration.broker_epoch)
        elif move.action.startswith("Send"):
            m = Request(move.action.removeprefix("Send"), *(_int(x) for x in move.args))
            self.network.setdefault(m, self._message(m))
        elif move.action == "Deliver":
            m = _request(move)
            controller = self._controller(m.controllerEpoch)
            self.cluster.broker(BROKER).receive(controller_node_id(controller), self.network[m])
        elif move.action == "Lose":
            self.network.pop(_request(move), None)
        else:
            raise ValueError(f"no ControllerFencing move {move}")
        self.world.run_for(SETTLE_MS)
        return self.state()

    def _controller(self, epoch: int) -> int:
        """The id of the controller that claimed ``epoch``."""
        for c in self.cluster.controllers:
            if c.epoch == epoch:
                return c.controller_id
        raise ModelDivergence(f"no controller claimed epoch {epoch}")

    def _elect_leader(self, epoch: int) -> None:
        controller = next(c for c in self.cluster.controllers if c.epoch == epoch)
        stored = self.cluster.store.partition(TP)
        assert stored is not None
        nxt = replace(stored, leader_epoch=stored.leader_epoch + 1,
                      partition_epoch=stored.partition_epoch + 1)
        try:
            controller.store.write(epoch, MetadataDelta(partitions=[nxt]))
        except StaleControllerEpoch:
            pass  # a deposed controller's write: the store refuses it, as the model's does

    def _message(self, m: Request) -> Message:
        """The request controller ``m.controllerEpoch`` would send (the real message)."""
        self.correlation += 1
        controller = self._controller(m.controllerEpoch)
        broker_epoch = self.broker_epochs[m.brokerEpoch - 1]
        leader_epoch = m.leaderEpoch + self.leader_epoch_base
        stored = self.cluster.store.partition(TP)
        assert stored is not None
        if m.type == LEADER_AND_ISR:
            wire = LeaderAndIsrPartitionState(
                tp=TP, topic_id=self.topic_id, controller_epoch=m.controllerEpoch, leader=LEADER,
                leader_epoch=leader_epoch, isr=(LEADER, BROKER),
                partition_epoch=stored.partition_epoch, replicas=(LEADER, BROKER))
            return LeaderAndIsrRequest(self.correlation, controller, m.controllerEpoch,
                                       broker_epoch, LeaderAndIsrType.INCREMENTAL, (wire,),
                                       (LEADER,))
        return StopReplicaRequest(self.correlation, controller, m.controllerEpoch, broker_epoch,
                                  (StopReplicaPartition(TP, leader_epoch, False, self.topic_id),))

    def close(self) -> None:
        """Shut the cluster down."""
        self.cluster.close()


def run(case: Case, seed: int) -> CaseRun:
    """Drive ``case`` through a fresh :class:`FencingDriver`; raises
    :class:`~logwright.conformance.generated.ModelDivergence` where it and the model part."""
    spec = twin()
    driver = FencingDriver(seed)
    try:
        return run_case(case, driver, spec, step_of(spec))
    finally:
        driver.close()


__all__ = ["GOALS", "MODULE", "FencingDriver", "bug_cases", "covering_paths", "generated_cases",
           "goals_of", "moves_of", "run", "step_of", "twin", "twin_config"]
