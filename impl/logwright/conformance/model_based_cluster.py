"""Tests generated from the LogStartOffset model with two replicas, driven through a simulated
two-broker cluster.

What it upholds: each generated path of the two-replica twin (the bug .cfg's constants: leader
1, follower 2, offsets up to 2), driven through a real :class:`~logwright.cluster.Cluster`, leaves
the partition where the twin says after every move: per replica its LEO, HW and log start
offset, the ISR, the leader and the committed offset, read through
:class:`~logwright.conformance.log_start_offset.ClusterProjection` (which also checks the twin's
invariants after every event). The counterexamples of the two bugs that need a follower,
``HWIgnoresIsr`` and ``FollowerRaisesStartBeforeHW``, are driven with the code as it is: at the
move where the bug acts the cluster must be where the correct twin is.

The twin is read through the labels of its actions (``Append``, ``AdvanceHW``,
``ExpandIsr(2)``, ``ShrinkIsr(2)``, ``DeleteRecords(o)``), the fields of its states named
above, and its ``FollowerFetch`` (a whole fetch: ``ServeFetch`` then ``ApplyFetch`` of
everything served, what one fetch answered and applied at once is in the code).

The follower's fetch and OffsetForLeaderEpoch requests to the leader are intercepted on the
simulated network and wait until a move releases them. A move is performed as (and stands for
the twin's steps):

* ``Append``: a produce of one record with acks=1 (``Append``; the leader then advances its
  HW as far as the twin allows, ``AdvanceHW``: to its end when the ISR is itself alone);
* ``Fetch``: the follower's waiting requests reach the leader until one fetch has been answered
  and applied (the leader's handling of the fetch: ``ExpandIsr(2)`` if the twin enables it, the
  HW advanced as far as the twin allows, ``AdvanceHW``; then the twin's ``FollowerFetch`` of
  the follower: ``ServeFetch(2)`` and ``ApplyFetch`` of what was served);
* ``ShrinkIsr``: the follower, behind the leader's end, stays silent past
  replica.lag.time.max.ms, the leader drops it from the ISR (``ShrinkIsr(2)``) and advances its
  HW over the ISR left (``AdvanceHW``). A follower at the leader's end stays in sync however
  long it is silent (Kafka's rule): the twin's ShrinkIsr there is no move;
* ``DeleteRecords``: the leader's DeleteRecords to its HW (``DeleteRecords(o)``, o the HW).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from logwright.cluster import Cluster
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
from logwright.conformance.log_start_offset import ClusterProjection
from logwright.identity import TopicPartition, broker_node_id
from logwright.model.core import Spec, State
from logwright.model.log_start_offset import (
    LogStartOffsetConfig,
    LogStartOffsetState,
    LogStartOffsetTwin,
)
from logwright.protocol.messages import FetchRequest, OffsetForLeaderEpochRequest

MODULE = "LogStartOffset"
LEADER = 1
FOLLOWER = 2
TP = TopicPartition("lso", 0)
BUGS = ("HWIgnoresIsr", "FollowerRaisesStartBeforeHW")
"""The bugs that need a follower (the one-replica model holds with them on)."""

MOVES = ("Append", "Fetch", "ShrinkIsr", "DeleteRecords")

SETTLE_MS = 1_000
"""How long the world runs after a move: the leader holds a follower's fetch with nothing new
for up to replica.fetch.wait.max.ms (500 ms); the ISR change goes through the controller."""

SILENT_MS = 120_000
"""How long the follower may stay silent for ``ShrinkIsr`` before the case gives up (the
leader drops a follower behind its end after replica.lag.time.max.ms, 30 s)."""

View = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], frozenset[int], int, int]


def twin(bug: str = "none") -> LogStartOffsetTwin:
    """The two-replica twin with the constants of the bugs' .cfg files."""
    return LogStartOffsetTwin(LogStartOffsetConfig(replicas=(LEADER, FOLLOWER), leader=LEADER,
                                                   max_offset=2, segment_size=2, bug=bug))


def view(s: State) -> View:
    """What is compared: per replica LEO, HW and log start offset; ISR, leader, committed."""
    assert isinstance(s, LogStartOffsetState)
    return (tuple(s.leo), tuple(s.hw), tuple(s.logStart),
            frozenset(s.isr), int(s.leader), int(s.committed))


class Generator:
    """The moves of the module docstring as twin steps, found by their actions' labels."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.actions = {a.name: a for a in spec.actions()}

    def _one(self, label: str, s: State) -> State | None:
        action = self.actions.get(label)
        if action is None:
            return None
        return next(iter(action.fn(s)), None)

    def _advance_hw(self, s: State) -> State:
        action = self.actions["AdvanceHW"]
        best = max(action.fn(s), key=lambda t: view(t)[1][0], default=None)
        return best if best is not None and view(best)[1][0] > view(s)[1][0] else s

    def step(self, s: State, move: Move) -> State | None:
        """The twin's successor under ``move`` (None: not enabled)."""
        if move.action == "Append":
            t = self._one("Append", s)
            return self._advance_hw(t) if t is not None else None
        if move.action == "Fetch":
            t = self._one(f"ExpandIsr({FOLLOWER})", s) or s
            assert isinstance(self.spec, LogStartOffsetTwin)
            u = self._advance_hw(t)
            assert isinstance(u, LogStartOffsetState)
            return self.spec.FollowerFetch(u, FOLLOWER)
        if move.action == "ShrinkIsr":
            v = view(s)
            if FOLLOWER not in v[3] or v[0][0] <= v[0][1]:
                return None  # Kafka keeps a follower at the leader's end in sync
            t = self._one(f"ShrinkIsr({FOLLOWER})", s)
            return self._advance_hw(t) if t is not None else None
        if move.action == "DeleteRecords":
            hw = view(s)[1][0]
            if hw <= view(s)[2][0]:
                return None  # nothing to delete: no change
            return self._one(f"DeleteRecords({hw})", s)
        raise ValueError(f"no move {move}; known: {', '.join(MOVES)}")

    def moves_of(self, s: State) -> Iterable[Move]:
        """Every move."""
        return [Move(m) for m in MOVES]


GOALS = (*MOVES, "Fetch expands the ISR", "Fetch advances the HW",
         "Fetch raises the follower's start offset", "Fetch with the follower out of the ISR",
         "DeleteRecords with the follower behind", "Append with the follower out of the ISR")


class _Goals:
    def __call__(self, s: State, move: Move, t: State | None) -> list[str]:
        if t is None:
            return []
        vs, vt = view(s), view(t)
        goals = [move.action]
        if move.action == "Fetch":
            if FOLLOWER not in vs[3] and FOLLOWER in vt[3]:
                goals.append("Fetch expands the ISR")
            if vt[1][0] > vs[1][0]:
                goals.append("Fetch advances the HW")
            if vt[2][1] > vs[2][1]:
                goals.append("Fetch raises the follower's start offset")
            if FOLLOWER not in vt[3]:
                goals.append("Fetch with the follower out of the ISR")
        if move.action == "DeleteRecords" and vs[0][1] < vt[2][0]:
            goals.append("DeleteRecords with the follower behind")
        if move.action == "Append" and FOLLOWER not in vs[3]:
            goals.append("Append with the follower out of the ISR")
        return goals


def covering_paths(seed: int) -> Coverage:
    """A covering set of the correct two-replica twin."""
    spec = twin()
    gen = Generator(spec)
    return covering_cases(MODULE, spec, gen.moves_of, gen.step, _Goals(), GOALS, seed)


def bug_cases() -> list[BugReport]:
    """Each two-replica bug's shortest violation in moves."""
    correct = Generator(twin())
    out = []
    for bug in BUGS:
        buggy = Generator(twin(bug))
        out.append(shortest_violation(MODULE, bug, buggy.spec, buggy.step, correct.step,
                                      buggy.moves_of))
    return out


def generated_cases(seed: int) -> Iterator[Case]:
    """The covering set, then the two bugs' violations."""
    yield from covering_paths(seed).cases
    for report in bug_cases():
        if report.case is not None:
            yield report.case


# ---- the implementation's side --------------------------------------------------------------

class ReplicationDriver:
    """A simulated two-broker cluster driven by the moves (module docstring)."""

    def __init__(self, seed: int) -> None:
        self.cluster = Cluster.simulated(brokers=2, log_dirs_per_broker=1, seed=seed)
        self.world = self.cluster.simulated_world
        follower, leader = broker_node_id(FOLLOWER), broker_node_id(LEADER)
        self.waiting: list[object] = []
        self.world.network.intercept(
            lambda src, dst, m: (src == follower and dst == leader
                                 and isinstance(m, (FetchRequest, OffsetForLeaderEpochRequest))),
            lambda src, dst, m: self.waiting.append(m))
        self.cluster.controller.create_topic(TP.topic, 1, 2, None,
                                             assignment=[[LEADER, FOLLOWER]])
        if not self.world.run_until(self._ready, 10_000):
            raise ModelDivergence("the partition never had its leader and a fetching follower")
        self.projection = ClusterProjection(self.cluster, follow=lambda: [TP])
        self.projection.attach()

    def _ready(self) -> bool:
        leader = self.cluster.broker(LEADER).replica_manager.partitions.get(TP)
        follower = self.cluster.broker(FOLLOWER).replica_manager.partitions.get(TP)
        return (leader is not None and leader.is_leader and follower is not None
                and bool(self.waiting))

    def _isr(self) -> tuple[int, ...]:
        stored = self.cluster.store.partition(TP)
        return stored.isr if stored is not None else ()

    def state(self) -> View:
        """The partition's abstract state's view."""
        self.projection.check("a move")
        s = self.projection.watches[TP].checker.last
        assert s is not None
        return view(s)

    def apply(self, move: Move) -> View:
        """Perform ``move``; the view after it."""
        if move.action == "Append":
            self.cluster.produce(TP.topic, TP.partition, [b"r"], acks=1)
        elif move.action == "Fetch":
            self._fetch()
        elif move.action == "ShrinkIsr":
            if not self.world.run_until(lambda: FOLLOWER not in self._isr(), SILENT_MS):
                raise ModelDivergence("the leader never dropped the silent follower")
        elif move.action == "DeleteRecords":
            rm = self.cluster.broker(LEADER).replica_manager
            part = rm.partitions[TP]
            rm.delete_records(TP, part.high_watermark)
        else:
            raise ValueError(f"no move {move}")
        self.world.run_for(SETTLE_MS)
        return self.state()

    def _fetch(self) -> None:
        """Release the follower's requests, one at a time, until a fetch was answered."""
        leader = self.cluster.broker(LEADER)
        for _ in range(4):
            if not self.world.run_until(lambda: bool(self.waiting), 5_000):
                raise ModelDivergence("the follower sent no request")
            # The newest: the follower has given up on older ones (timed out; lost).
            request = self.waiting[-1]
            self.waiting.clear()
            leader.receive(broker_node_id(FOLLOWER), request)
            self.world.run_for(SETTLE_MS)
            if isinstance(request, FetchRequest):
                return
        raise ModelDivergence("the follower never fetched")

    def close(self) -> None:
        """Shut the cluster down."""
        self.cluster.close()


def run(case: Case, seed: int) -> CaseRun:
    """Drive ``case`` through a fresh :class:`ReplicationDriver`."""
    gen = Generator(twin())
    driver = ReplicationDriver(seed)
    try:
        return run_case(case, driver, gen.spec, gen.step, view)
    finally:
        driver.close()


__all__ = ["BUGS", "GOALS", "MODULE", "MOVES", "Generator", "ReplicationDriver", "bug_cases",
           "covering_paths", "generated_cases", "run", "twin", "view"]
