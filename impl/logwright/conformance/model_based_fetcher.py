"""Tests generated from the FetcherFailure model, driven through a simulated cluster.

What it upholds: each generated path of the FetcherFailure twin (its .cfg's constants: three
partitions, two fetchers, partitions 1 and 3 sharing fetcher 1, two leader elections), driven
through a real :class:`~logwright.cluster.Cluster` in the simulated world, leaves every
partition's replica on the follower in the state the twin says after every move, read through
:class:`~logwright.conformance.fetcher_failure.FetcherFailureProjection` (which also checks each
change as a twin step, and FailureContained, after every event of the world).

The cluster: broker 1 (the twin's broker, three log dirs, ``num.replica.fetchers`` 2) follows
broker 2 for three partitions of topic ``ff``, chosen so that Kafka's fetcher assignment puts
the twin's partitions 1 and 3 in one fetcher and partition 2 in the other, each on its own log
dir. Control requests to broker 1 are intercepted and kept from it (the case sends its own),
and so are broker 1's fetch and OffsetForLeaderEpoch requests to broker 2: each fetcher's
request waits until the case releases it. A move is performed as:

* ``ElectLeader(p)``: the controller writes p's next leader epoch, and broker 2 (the leader)
  learns it (a LeaderAndIsr);
* ``LeaderAndIsr(p)``: broker 1 receives a LeaderAndIsr for p at the store's leader epoch
  (follow broker 2), its log on p's dir;
* ``StopReplica(p)``: broker 1 receives a StopReplica for p (the replica kept on disk);
* ``LeaderAndIsrAgain(p)``: the last LeaderAndIsr for p delivered again (a duplicate: the twin
  has no step, and nothing may change, a failed partition staying failed);
* ``StorageError(p)``: p's log dir fails (EIO from then on) while the fetch out for p is
  answered with a record the leader was just given: the follower's append fails in the fetcher
  (p fails, KIP-461), and the answer is the twin's ``FetchOk`` for the other partitions it names;
* ``FetchResponse(f)``: fetcher f's outstanding request reaches broker 2 and its answer comes
  back: ``FetchOk`` for each partition it names at the leader's epoch, ``FetchFenced`` for each
  at an older one (a fence at the partition's current epoch fails it; a stale one is ignored).

What a fetcher does on its own is part of each move, as twin steps: a running fetcher with
partitions to fetch and no request out sends one naming every partition it fetches
(``FetchRequest`` of each); an idle fetcher shuts down (``ShutdownIdle``; per partition, as the
projection shows it, a partition in no running fetcher). The model's ``inflight`` is the
fetcher's outstanding request. A partition whose dir failed stays failed: Kafka takes the dir
offline and answers a LeaderAndIsr for its partitions KAFKA_STORAGE_ERROR, so the twin's
LeaderAndIsr (and StopReplica) of such a partition are not moves (spec/README.md,
FetcherFailure, "Tests from the model"). A fetcher's request names every partition it fetches,
so ``FetchResponse`` is a move only where the fetcher fetches one partition, or its request
names only partitions the twin has in flight.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import NamedTuple

from logwright.broker import BrokerConfig
from logwright.broker.fetcher import kafka_fetcher_id
from logwright.cluster import Cluster
from logwright.conformance.fetcher_failure import FetcherFailureProjection
from logwright.conformance.generated import (
    BugReport,
    Case,
    CaseRun,
    Coverage,
    ModelDivergence,
    Move,
    covering_cases,
    run_case,
    shortest_violation,
)
from logwright.controller import MetadataDelta, PartitionState
from logwright.identity import TopicPartition, Uuid, broker_node_id, controller_node_id
from logwright.model.core import Action, Invariant, Spec, State
from logwright.model.fetcher_failure import (
    NO_FETCH,
    NOT_FAILED,
    NOT_HOSTED,
    FetcherFailureConfig,
    FetcherFailureTwin,
    FFState,
)
from logwright.model.fetcher_failure.bugs import BUGS, EXPECTED_VIOLATION
from logwright.protocol.messages import (
    FetchRequest,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrType,
    OffsetForLeaderEpochRequest,
    StopReplicaPartition,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from logwright.world import Fault

MODULE = "FetcherFailure"

FOLLOWER = 1
LEADER = 2
TOPIC = "ff"
NUM_PARTITIONS = 3
NUM_FETCHERS = 2
MAX_LEADER_EPOCH = 2

SETTLE_MS = 1_000
"""How long the world runs after each move: a fetch the leader holds (nothing new to send)
is answered within replica.fetch.wait.max.ms (500 ms)."""


def twin_config(bug: str = "none") -> FetcherFailureConfig:
    """The constants of spec/FetcherFailure.cfg (and of each bug's .cfg), with ``bug``."""
    return FetcherFailureConfig(num_partitions=NUM_PARTITIONS, num_fetchers=NUM_FETCHERS,
                                max_leader_epoch=MAX_LEADER_EPOCH, bug=bug,
                                invariants=("TypeOK", "FailureContained"))


class GenState(NamedTuple):
    """A generator state: the twin's, and the partitions whose log dir failed."""

    ff: FFState
    dead: frozenset[int]


class Generator(Spec):
    """The twin with the partitions whose dir failed remembered (their LeaderAndIsr and
    StopReplica are no moves); its states are :class:`GenState`."""

    name = MODULE

    def __init__(self, bug: str = "none") -> None:
        self.twin = FetcherFailureTwin(twin_config(bug))

    def init_states(self) -> Iterable[State]:
        return [GenState(s, frozenset()) for s in self.twin.init_states()
                if isinstance(s, FFState)]

    def actions(self) -> Sequence[Action]:
        """None: the generator steps by moves (:meth:`step`), not by the checker."""
        return []

    def invariants(self) -> Sequence[Invariant]:
        return [(name, _on_ff(holds)) for name, holds in self.twin.invariants()]

    def describe(self, s: State) -> str:
        assert isinstance(s, GenState)
        dead = f"\nlog dir failed: partitions {sorted(s.dead)}" if s.dead else ""
        return self.twin.describe(s.ff) + dead

    # -- moves ------------------------------------------------------------------------------

    def moves_of(self, state: State) -> Iterator[Move]:
        """Every move worth trying (module docstring)."""
        assert isinstance(state, GenState)
        s = state.ff
        for p in self.twin.partitions:
            i = p - 1
            yield Move("ElectLeader", (p,))
            if p not in state.dead:
                yield Move("LeaderAndIsr", (p,))
                yield Move("StopReplica", (p,))
                if s.knownEpoch[i] != NOT_HOSTED:
                    yield Move("LeaderAndIsrAgain", (p,))
                if s.fetching[i] and s.inflight[i] == s.leaderEpoch[i] == s.knownEpoch[i]:
                    yield Move("StorageError", (p,))
        for f in self.twin.fetchers:
            members = [p for p in self.twin.partitions if self.twin.FetcherOf(p) == f]
            out = [p for p in members if s.inflight[p - 1] != NO_FETCH]
            fetching = [p for p in members if s.fetching[p - 1]]
            if out and len(fetching) <= 1:
                yield Move("FetchResponse", (f,))

    def step(self, state: State, move: Move) -> State | None:
        """The move's twin steps, then what the fetchers do on their own; None if the move's
        own action is not enabled."""
        assert isinstance(state, GenState)
        twin, s, dead = self.twin, state.ff, state.dead
        a = move.args[0]
        assert isinstance(a, int)
        t: FFState | None
        if move.action == "ElectLeader":
            t = twin.ElectLeader(s, a)
        elif move.action == "LeaderAndIsr":
            t = twin.LeaderAndIsr(s, a)
        elif move.action == "StopReplica":
            t = twin.StopReplica(s, a)
        elif move.action == "LeaderAndIsrAgain":
            return None  # a duplicate of the last one: the twin has no step, nothing changes
        elif move.action == "StorageError":
            # The answer to the fetch out for p brings records the follower cannot append.
            t = twin.StorageError(s, a)
            dead = dead | {a}
            t = self._answer(t, twin.FetcherOf(a)) if t is not None else None
        elif move.action == "FetchResponse":
            t = self._answer(s, a)
        else:
            raise ValueError(f"no FetcherFailure move {move}")
        if t is None:
            return None
        return GenState(self._on_their_own(t), dead)

    def _answer(self, s: FFState, f: int) -> FFState | None:
        """Fetcher ``f``'s request answered: ``FetchOk`` or ``FetchFenced`` of each partition it
        names (whichever the twin enables)."""
        twin = self.twin
        t: FFState | None = s
        for p in twin.partitions:
            if t is not None and twin.FetcherOf(p) == f and t.inflight[p - 1] != NO_FETCH:
                t = twin.FetchOk(t, p) or twin.FetchFenced(t, p)
        return t

    def _on_their_own(self, s: FFState) -> FFState:
        """A running fetcher with nothing out sends a request for every partition it
        fetches."""
        twin = self.twin
        for f in twin.fetchers:
            members = [p for p in twin.partitions if twin.FetcherOf(p) == f]
            if any(s.inflight[p - 1] != NO_FETCH for p in members):
                continue
            for p in members:
                t = twin.FetchRequest(s, p)
                s = t if t is not None else s
        return s

    def view(self, state: State) -> tuple[tuple[int, int, bool, int, bool], ...]:
        """Per partition what the projection shows: leader epoch, known epoch, fetching,
        failed epoch, and whether a running fetcher holds it."""
        assert isinstance(state, GenState)
        s = state.ff
        return tuple((s.leaderEpoch[p - 1], s.knownEpoch[p - 1], s.fetching[p - 1],
                      s.failedEpoch[p - 1],
                      s.fetching[p - 1] and s.alive[self.twin.FetcherOf(p) - 1])
                     for p in self.twin.partitions)


def _int(x: object) -> int:
    assert isinstance(x, int)
    return x


def _on_ff(holds: Callable[[State], bool]) -> Callable[[State], bool]:
    def check(s: State) -> bool:
        assert isinstance(s, GenState)
        return holds(s.ff)
    return check


GOALS = ("ElectLeader", "LeaderAndIsr", "StopReplica", "StorageError", "FetchOk",
         "FetchFenced: fails the partition", "FetchFenced: stale, ignored",
         "LeaderAndIsr un-fails a fenced partition", "StorageError beside a fetching partition",
         "ElectLeader of a failed partition", "LeaderAndIsr of a stopped partition",
         *(f"FetchResponse of fetcher {f}" for f in range(1, NUM_FETCHERS + 1)),
         "LeaderAndIsr again: nothing changes", "LeaderAndIsr again: the failure stays")
"""Every action, a fence of each kind, a fenced partition un-failed by a newer epoch, a
storage error in a fetcher that fetches another partition, an election after a failure, a
replica stopped and added back; each fetcher's answer; a LeaderAndIsr delivered again (a
duplicate), to a healthy and to a failed partition: nothing changes."""


class _Goals:
    def __init__(self, gen: Generator) -> None:
        self.gen = gen

    def __call__(self, state: State, move: Move, result: State | None) -> list[str]:
        assert isinstance(state, GenState)
        if move.action == "LeaderAndIsrAgain":
            failed = state.ff.failedEpoch[_int(move.args[0]) - 1] != NOT_FAILED
            return ["LeaderAndIsr again: the failure stays" if failed
                    else "LeaderAndIsr again: nothing changes"]
        if result is None:
            return []
        assert isinstance(result, GenState)
        s, t, twin = state.ff, result.ff, self.gen.twin
        a = move.args[0]
        assert isinstance(a, int)
        i = a - 1
        goals = [move.action] if move.action != "FetchResponse" else []
        if move.action == "FetchResponse":
            goals.append(f"FetchResponse of fetcher {a}")
            for p in twin.partitions:
                j = p - 1
                if twin.FetcherOf(p) != a or s.inflight[j] == NO_FETCH:
                    continue
                if s.inflight[j] == s.leaderEpoch[j]:
                    goals.append("FetchOk")
                elif t.failedEpoch[j] != NOT_FAILED and s.failedEpoch[j] == NOT_FAILED:
                    goals.append("FetchFenced: fails the partition")
                else:
                    goals.append("FetchFenced: stale, ignored")
        if move.action == "LeaderAndIsr" and s.failedEpoch[i] != NOT_FAILED:
            goals.append("LeaderAndIsr un-fails a fenced partition")
        if move.action == "LeaderAndIsr" and s.knownEpoch[i] == NOT_HOSTED and any(s.leaderEpoch):
            goals.append("LeaderAndIsr of a stopped partition")
        if move.action == "StorageError" and any(
                s.fetching[p - 1] for p in twin.partitions
                if p != a and twin.FetcherOf(p) == twin.FetcherOf(a)):
            goals.append("StorageError beside a fetching partition")
        if move.action == "ElectLeader" and s.failedEpoch[i] != NOT_FAILED:
            goals.append("ElectLeader of a failed partition")
        return goals


def covering_paths(seed: int) -> Coverage:
    """A covering set of the correct twin: the shortest path to every goal of :data:`GOALS`."""
    gen = Generator()
    return covering_cases(MODULE, gen, gen.moves_of, gen.step, _Goals(gen), GOALS, seed)


def bug_cases() -> list[BugReport]:
    """Every bug switch's shortest violation of an invariant in moves (StaleFenceStalls breaks
    a liveness property only: it has none)."""
    correct = Generator()
    out = []
    for bug in BUGS:
        if EXPECTED_VIOLATION[bug] not in correct.twin.config.invariants:
            out.append(BugReport(bug, None, f"breaks {EXPECTED_VIOLATION[bug]}, a liveness "
                                            "property: no invariant violation to drive"))
            continue
        buggy = Generator(bug)
        out.append(shortest_violation(MODULE, bug, buggy, buggy.step, correct.step,
                                      buggy.moves_of))
    return out


def generated_cases(seed: int) -> Iterator[Case]:
    """The covering set, then every bug's violation."""
    yield from covering_paths(seed).cases
    for report in bug_cases():
        if report.case is not None:
            yield report.case


# ---- the implementation's side --------------------------------------------------------------

_CONTROL = (LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest)
_FETCHES = (FetchRequest, OffsetForLeaderEpochRequest)


def choose_partitions(topic: str = TOPIC, count: int = 16) -> list[int]:
    """Partitions of ``topic`` standing for the twin's 1, 2, 3: Kafka's fetcher assignment
    puts the first and third in one fetcher, the second in the other."""
    ids = {p: kafka_fetcher_id(TopicPartition(topic, p), NUM_FETCHERS) for p in range(count)}
    first = next(p for p in range(count))
    second = next(p for p in range(count) if ids[p] != ids[first])
    third = next(p for p in range(count) if p != first and ids[p] == ids[first])
    return [first, second, third]


class FetcherDriver:
    """A simulated two-broker cluster driven by FetcherFailure moves (module docstring)."""

    def __init__(self, seed: int) -> None:
        config = BrokerConfig(num_replica_fetchers=NUM_FETCHERS)
        self.cluster = Cluster.simulated(brokers=2, log_dirs_per_broker=NUM_PARTITIONS,
                                         seed=seed, broker_config=config)
        self.world = self.cluster.simulated_world
        follower, leader = broker_node_id(FOLLOWER), broker_node_id(LEADER)
        self.requests: list[object] = []  # broker 1's fetch requests, waiting
        self.world.network.intercept(
            lambda src, dst, m: dst == follower and isinstance(m, _CONTROL),
            lambda src, dst, m: None)
        self.world.network.intercept(
            lambda src, dst, m: src == follower and dst == leader and isinstance(m, _FETCHES),
            lambda src, dst, m: self.requests.append(m))
        # A new incarnation that has heard from no controller.
        self.cluster.crash_broker(FOLLOWER, power_loss=False)
        self.cluster.restart_broker(FOLLOWER)
        chosen = choose_partitions()
        count = max(chosen) + 1
        self.topic_id: Uuid = self.cluster.controller.create_topic(
            TOPIC, count, 2, None, assignment=[[LEADER, FOLLOWER]] * count)
        self.tps = [TopicPartition(TOPIC, p) for p in chosen]
        # The twin's fetcher f is Kafka's fetcher of the twin's partition f.
        self.fetcher_ids = {f: kafka_fetcher_id(self.tps[f - 1], NUM_FETCHERS)
                            for f in range(1, NUM_FETCHERS + 1)}
        if not self.world.run_until(self._leader_ready, 10_000):
            raise ModelDivergence("broker 2 never led the partitions")
        self.base = {tp: self._stored(tp).leader_epoch for tp in self.tps}
        self.dirs = list(self.cluster.log_dirs[FOLLOWER])
        self.projection = FetcherFailureProjection(self.cluster, follow=lambda: self.tps)
        self.projection.attach()
        self.correlation = 1 << 40
        self.last: dict[int, tuple[int, LeaderAndIsrRequest]] = {}

    def _stored(self, tp: TopicPartition) -> PartitionState:
        state = self.cluster.store.partition(tp)
        assert state is not None
        return state

    def _leader_ready(self) -> bool:
        parts = self.cluster.broker(LEADER).replica_manager.partitions
        return all(tp in parts and parts[tp].is_leader for tp in self.tps)

    def state(self) -> tuple[tuple[int, int, bool, int, bool], ...]:
        """Per twin partition what the projection shows of broker 1's replica (leader epochs
        counted from the partition's at creation)."""
        self.projection.check("a move")
        out = []
        for tp in self.tps:
            s = self.projection.state_of(FOLLOWER, tp)
            base = self.base[tp]
            if s is None:
                out.append((0, NOT_HOSTED, False, NOT_FAILED, False))
                continue
            out.append((s.leaderEpoch[0] - base, _less(s.knownEpoch[0], base), s.fetching[0],
                        _less(s.failedEpoch[0], base), s.alive[0]))
        return tuple(out)

    def apply(self, move: Move) -> object:
        """Perform ``move`` (module docstring); the state after it."""
        a = move.args[0]
        assert isinstance(a, int)
        if move.action == "FetchResponse":
            self._release(a)
        else:
            tp = self.tps[a - 1]
            if move.action == "ElectLeader":
                self._elect_leader(tp)
            elif move.action == "LeaderAndIsr":
                self.last[a] = self._leader_and_isr(FOLLOWER, tp, self.dirs[a - 1])
            elif move.action == "LeaderAndIsrAgain":
                self._again(a)
            elif move.action == "StopReplica":
                self._stop_replica(tp)
            elif move.action == "StorageError":
                self._storage_error(a)
            else:
                raise ValueError(f"no FetcherFailure move {move}")
        self.world.run_for(SETTLE_MS)
        return self.state()

    def _controller(self) -> tuple[int, int]:
        c = self.cluster.controller
        return c.controller_id, c.epoch

    def _again(self, p: int) -> None:
        """The last LeaderAndIsr broker 1 received for ``p``, delivered again."""
        sent = self.last.get(p)
        if sent is None:
            raise ModelDivergence(f"partition {p} was never sent a LeaderAndIsr")
        controller, request = sent
        self.cluster.broker(FOLLOWER).receive(controller_node_id(controller), request)

    def _leader_and_isr(self, broker: int, tp: TopicPartition,
                        log_dir: str = "any") -> tuple[int, LeaderAndIsrRequest]:
        cid, epoch = self._controller()
        state = self.cluster.store.partition(tp)
        assert state is not None
        registration = self.cluster.store.broker(broker)
        assert registration is not None
        self.correlation += 1
        wire = LeaderAndIsrPartitionState(
            tp=tp, topic_id=self.topic_id, controller_epoch=epoch, leader=LEADER,
            leader_epoch=state.leader_epoch, isr=state.isr, partition_epoch=state.partition_epoch,
            replicas=state.replicas, log_dir=log_dir)
        request = LeaderAndIsrRequest(self.correlation, cid, epoch, registration.broker_epoch,
                                      LeaderAndIsrType.INCREMENTAL, (wire,), (LEADER,))
        self.cluster.broker(broker).receive(controller_node_id(cid), request)
        return cid, request

    def _elect_leader(self, tp: TopicPartition) -> None:
        controller = self.cluster.controller
        state = self.cluster.store.partition(tp)
        assert state is not None
        nxt = replace(state, leader_epoch=state.leader_epoch + 1,
                      partition_epoch=state.partition_epoch + 1)
        controller.store.write(controller.epoch, MetadataDelta(partitions=[nxt]))
        self._leader_and_isr(LEADER, tp)

    def _stop_replica(self, tp: TopicPartition) -> None:
        cid, epoch = self._controller()
        state = self.cluster.store.partition(tp)
        registration = self.cluster.store.broker(FOLLOWER)
        assert state is not None and registration is not None
        self.correlation += 1
        request = StopReplicaRequest(
            self.correlation, cid, epoch, registration.broker_epoch,
            (StopReplicaPartition(tp, state.leader_epoch, False, self.topic_id),))
        self.cluster.broker(FOLLOWER).receive(controller_node_id(cid), request)

    def _storage_error(self, p: int) -> None:
        """p's dir fails; the leader has a record for p, and the fetch out for p brings it: the
        follower's append fails (a KafkaStorageError in the fetcher, KIP-461's case)."""
        broker = self.cluster.broker(FOLLOWER)
        tp = self.tps[p - 1]
        self.cluster.produce(tp.topic, tp.partition, [b"r"], acks=1)
        self.world.new_fs(broker.node_id).inject_fault(self.dirs[p - 1], Fault.EIO)
        f = next(f for f, i in self.fetcher_ids.items()
                 if i == kafka_fetcher_id(tp, NUM_FETCHERS))
        self._release(f)

    def _release(self, f: int) -> None:
        """Fetcher ``f``'s waiting request reaches the leader (its answer comes back)."""
        want = self.fetcher_ids[f]
        kept = []
        leader = self.cluster.broker(LEADER)
        for m in self.requests:
            tps = _request_tps(m)
            if tps and kafka_fetcher_id(tps[0], NUM_FETCHERS) == want:
                leader.receive(broker_node_id(FOLLOWER), m)
            else:
                kept.append(m)
        self.requests = kept

    def close(self) -> None:
        """Shut the cluster down."""
        self.cluster.close()


def _request_tps(m: object) -> list[TopicPartition]:
    if isinstance(m, FetchRequest):
        return [p.tp for p in m.partitions]
    if isinstance(m, OffsetForLeaderEpochRequest):
        return [p.tp for p in m.partitions]
    return []


def _less(epoch: int, base: int) -> int:
    return epoch if epoch < 0 else epoch - base


def run(case: Case, seed: int) -> CaseRun:
    """Drive ``case`` through a fresh :class:`FetcherDriver`; raises
    :class:`~logwright.conformance.generated.ModelDivergence` where it and the model part."""
    gen = Generator()
    driver = FetcherDriver(seed)
    try:
        return run_case(case, driver, gen, gen.step, gen.view)
    finally:
        driver.close()


__all__ = ["GOALS", "MODULE", "FetcherDriver", "GenState", "Generator", "bug_cases",
           "choose_partitions", "covering_paths", "generated_cases", "run", "twin_config"]
