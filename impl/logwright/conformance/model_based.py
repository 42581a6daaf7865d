"""Tests generated from the LogStartOffset model, driven through one real log.

What it upholds: the same action sequence taken by the model and by the implementation ends,
step by step, in the same abstract state. Paths are generated from the LogStartOffset twin with
one replica (the projection one log maps to, :class:`~logwright.conformance.log_start_offset.
LogProjection`), and each is driven through a real :class:`~logwright.logmanager.LogManager`
over a :class:`~logwright.world.SimFileSystem`; after every move the log's abstract state must
equal the twin's.

A *move* is one operation of the implementation and the model step(s) it stands for, its
parameters taken from the current state (the *parameter class*: to the LEO or part of the way,
a crash that keeps or loses unflushed data...), so that one move means the same thing on both
sides. :data:`MOVES` lists them. Two sets of cases are generated:

* :func:`covering_paths`: a breadth-first search over the correct one-replica twin (seeded
  order, deterministic) that keeps, for every coverage goal, the shortest path reaching it:
  every move at least once, and every crash move after every kind of move (a crash point);
  paths that are prefixes of others are dropped;
* :func:`bug_cases`: each bug switch of the module checked with one replica; each one the
  checker finds a violation for is expressible there, and its counterexample, mapped to moves,
  is a case. The implementation is correct, so it must not follow the counterexample: at the
  step where the bug acts (the first step at which the correct twin, given the same move,
  goes elsewhere or refuses) the implementation must be where the correct twin is, and the
  invariant the bug breaks must hold on every state it reaches.

:func:`run_case` drives one case and raises :class:`ModelDivergence` naming the move and both
states when the implementation and the model part. The projection's refinement checker also
checks each change as a twin step, so a case checks the move's step and the invariants twice.
"""

from __future__ import annotations

import posixpath
import random
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from logwright.conformance.log_start_offset import LogProjection
from logwright.errors import LogwrightError
from logwright.identity import TopicPartition
from logwright.logmanager import LogManager, LogManagerConfig
from logwright.model.checker import check
from logwright.model.core import INITIAL
from logwright.model.log_start_offset import (
    BUGS,
    LogStartOffsetConfig,
    LogStartOffsetState,
    LogStartOffsetTwin,
)
from logwright.records import build_simple_batch
from logwright.storage.checkpoint import REPLICATION_OFFSET_CHECKPOINT
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.world import SimFileSystem, SimScheduler, VirtualClock

S = LogStartOffsetState

LAZY = "StartOffsetCheckpointLazy"
"""The twin's switch for Kafka's periodic start offset checkpoint."""

GEN_MAX_OFFSET = 3
"""MaxOffset of the generating twin: enough for every move to act after others."""

REPLICA = 1
"""The one replica of the projection (leader and only member of the ISR)."""

CRASH_MOVES = ("Crash(kill, HW kept)", "Crash(kill, HW lost)",
               "Crash(power loss, HW kept)", "Crash(power loss, HW lost)")
"""The crash moves: the process killed (the page cache survives: every record is kept) or a
power loss (only what was flushed is kept), with the HW checkpoint written just before the
crash or missing (the HW restarts at the start offset)."""

MOVES = ("Append", "AdvanceHW(to LEO)", "AdvanceHW(partial)", "DeleteRecords(to HW)",
         "DeleteRecords(partial)", "AcknowledgeDeleteRecords", "Retention(start offset)",
         "Retention(size)", "CheckpointStartOffset", "Flush", *CRASH_MOVES)
"""Every move, by name: the model action and its parameter class."""


class ModelDivergence(LogwrightError):
    """The implementation and the model, given the same move, reached different states (or the
    implementation reached the state a bug's counterexample reaches)."""


def one_replica_twin(bug: str = "none", max_offset: int = GEN_MAX_OFFSET) -> LogStartOffsetTwin:
    """The LogStartOffset twin with one replica (leader and ISR), segments of one offset (a
    segment of the driven log holds one record, see :class:`LogDriver`)."""
    return LogStartOffsetTwin(LogStartOffsetConfig(
        replicas=(REPLICA,), leader=REPLICA, max_offset=max_offset, segment_size=1, bug=bug))


def _crash(twin: LogStartOffsetTwin, s: S, move: str) -> S | None:
    lose = "power loss" in move
    if lose and s.flushed[0] >= s.leo[0]:
        return None  # nothing unflushed to lose: the same as a kill
    e = s.flushed[0] if lose else s.leo[0]
    start = max(s.ckptStart[0], s.segStart[0])
    kept = min(s.hw[0], max(e, start))
    if "HW kept" in move:
        h = kept
    else:
        if start >= kept:
            return None  # the HW at the start offset anyway: the same as "HW kept"
        h = start
    t = twin.CrashRestart(s, REPLICA, e, h)
    if t is None:
        return None
    # Start-up rewrites the dir's checkpoints once the logs are loaded: the start offset it
    # loaded is checkpointed (a step only the lazy checkpoint's twin ever has enabled here).
    return twin.CheckpointStartOffset(t, REPLICA) or t


def model_step(twin: LogStartOffsetTwin, s: S, move: str) -> S | None:
    """The twin's successor of ``s`` under ``move`` (None: the move is not enabled there), with
    the request waiting in the purgatory (``pending``) hidden, as the projection of the
    implementation has none (the leader's ISR floor is carried by the projection's search, as
    the twin's steps set it)."""
    t = _model_step(twin, s, move)
    return None if t is None else t._replace(pending=0)


def _model_step(twin: LogStartOffsetTwin, s: S, move: str) -> S | None:
    leo, hw, start, seg = s.leo[0], s.hw[0], s.logStart[0], s.segStart[0]
    if move == "Append":
        return twin.Append(s)
    if move == "AdvanceHW(to LEO)":
        return twin.AdvanceHW(s, leo)
    if move == "AdvanceHW(partial)":
        return twin.AdvanceHW(s, hw + 1) if hw + 1 < leo else None
    # A DeleteRecords is accepted with its outcome hidden, and an acknowledgement answers a
    # hidden request for the low watermark it reports, when that is new.
    if move == "DeleteRecords(to HW)":
        return twin.DeleteRecords(s, hw)
    if move == "DeleteRecords(partial)":
        return twin.DeleteRecords(s, start + 1) if start + 1 < hw else None
    if move == "AcknowledgeDeleteRecords":
        lw = twin.AckLowWatermark(s)
        return twin.AcknowledgeDeleteRecords(s._replace(pending=lw)) if lw > s.acked else None
    if move.startswith("Retention"):
        # Each of the driven log's segments holds one record; the active one (appends go to
        # it) is the last record's, [LEO - 1, LEO), or an empty one at the LEO once every
        # record's segment went. A retention pass first deletes every segment wholly below the
        # start offset that is not the active one, and only when there is none, by size, the
        # oldest segment (the active one included: it is rolled first).
        below_start = min(start, leo - 1) - seg
        if move == "Retention(start offset)":
            if below_start <= 0:
                return None
            t: S | None = s
            for _ in range(below_start):
                t = twin.DeleteOldestSegment(t, REPLICA) if t is not None else None
            return t
        return twin.DeleteOldestSegment(s, REPLICA) if below_start <= 0 else None
    if move == "CheckpointStartOffset":
        return twin.CheckpointStartOffset(s, REPLICA)
    if move == "Flush":
        return twin.Flush(s, REPLICA, leo)
    if move in CRASH_MOVES:
        return _crash(twin, s, move)
    raise ValueError(f"unknown move {move!r}; known: {', '.join(MOVES)}")


# ---- the implementation side ----------------------------------------------------------------

DIR = "/data/d1"
TP = TopicPartition("mbt", 0)


def driver_config() -> LogManagerConfig:
    """One record per segment (a segment.bytes that one single-record batch fits, two do
    not), no time or size retention unless a move asks for it, and no periodic task ever due
    (time never passes: every checkpoint, flush and retention pass is a move)."""
    return LogManagerConfig(
        log=LogConfig(segment_bytes=100, index_interval_bytes=4096, retention_ms=-1,
                      retention_bytes=-1),
        initial_task_delay_ms=1 << 40, file_delete_delay_ms=0)


class LogDriver:
    """One real log in a simulated world, moved by :data:`MOVES`, and its abstraction.

    ``acked`` is the low watermark last reported to a client (a DeleteRecords response): the
    implementation sends it and keeps nothing of it, so the driver keeps it for the projection.
    With ``periodic_start_offset_checkpoint`` a raised start offset is written to the dir's
    checkpoint only by the periodic checkpoint (the ``CheckpointStartOffset`` move), Kafka's
    behaviour, and the projection's twin is the one with the ``StartOffsetCheckpointLazy``
    switch (the same behaviour in the model).
    """

    def __init__(self, seed: int, *, periodic_start_offset_checkpoint: bool = False) -> None:
        self.rng = random.Random(seed)
        self.clock = VirtualClock(1_000_000)
        self.fs = SimFileSystem(self.clock)
        self.config = driver_config()
        bug = "none"
        if periodic_start_offset_checkpoint:  # Kafka's behaviour: the twin's lazy checkpoint
            self.config = replace(self.config, durable_log_start_offset=False)
            bug = LAZY
        self.projection = LogProjection(TP, bug=bug)
        self.acked = 0
        self.appended = 0
        self._start()
        self.lm.create_log(TP, log_dir=DIR)
        self.projection.observe(self.log, context="created")

    def _start(self) -> None:
        self.sched = SimScheduler(self.clock, seed=self.rng.randrange(1 << 30))
        self.lm = LogManager(self.fs, (DIR,), self.clock, self.sched, self.config,
                             rng=random.Random(self.rng.randrange(1 << 30)))
        self.lm.startup()

    @property
    def log(self) -> PartitionLog:
        """The live log (its dir never fails here)."""
        log = self.lm.get_log(TP)
        assert log is not None and not log.offline, "the driven log is always online"
        return log

    @property
    def state(self) -> S:
        """The log's abstract state, as the projection last observed it."""
        s = self.projection.checker.last
        assert isinstance(s, LogStartOffsetState)
        return s

    def apply(self, move: str) -> S:
        """Run ``move`` on the real log and return the abstract state after it."""
        log = self.log
        if move in CRASH_MOVES:
            self._crash(move)
            return self.state
        if move == "Append":
            value = b"v%d" % self.appended
            self.appended += 1
            log.append_as_leader(build_simple_batch([value], self.clock.now_ms()))
        elif move.startswith("AdvanceHW"):
            target = log.log_end_offset if move == "AdvanceHW(to LEO)" \
                else log.high_watermark + 1
            log.update_high_watermark(min(target, log.log_end_offset))
        elif move.startswith("DeleteRecords"):
            target = log.high_watermark if move == "DeleteRecords(to HW)" \
                else log.log_start_offset + 1
            log.increment_log_start_offset(target)
        elif move == "AcknowledgeDeleteRecords":
            self.acked = max(self.acked, log.log_start_offset)
        elif move.startswith("Retention"):
            self._retention(log, move)
        elif move == "CheckpointStartOffset":
            self.lm.checkpoint_all()
        elif move == "Flush":
            log.flush()
        else:
            raise ValueError(f"unknown move {move!r}")
        self.projection.observe(self.log, acked=self.acked, context=move)
        return self.state

    def _retention(self, log: PartitionLog, move: str) -> None:
        segs = log.segments
        assert all(s.next_offset - s.base_offset <= 1 for s in segs[:-1]), \
            "one record per segment"
        if move == "Retention(size)":
            # A size limit that the oldest segment alone breaches.
            limit = log.size_bytes - segs[0].size_bytes
            log.update_config(self.config.log.with_(retention_bytes=limit))
        try:
            log.delete_old_segments()
        finally:
            log.update_config(self.config.log)

    def _crash(self, move: str) -> None:
        ckpt = posixpath.join(DIR, REPLICATION_OFFSET_CHECKPOINT)
        if "HW kept" in move:
            self.lm.checkpoint_high_watermarks()
        elif self.fs.exists(ckpt):
            self.fs.remove(ckpt)
            self.fs.fsync_dir(DIR)
        if "power loss" in move:
            self.fs.crash(None)
        else:
            self.fs.kill_process()
        self._start()
        self.projection.restarted(self.log, acked=self.acked, context=move)


# ---- cases ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """One generated test: moves and the twin's state after each (``states[0]`` initial).

    For a bug's counterexample, ``bug`` names it, ``bug_step`` is the index in ``moves`` of the
    move where the bug acts, and ``invariant`` the invariant the counterexample breaks.
    """

    name: str
    moves: tuple[str, ...]
    states: tuple[S, ...]
    model: str = "none"
    """The twin's bug switch the case's states are the twin's under (``StartOffsetCheckpointLazy``:
    a path of Kafka's periodic checkpoint, driven through a log that checkpoints so)."""
    bug: str = "none"
    bug_step: int | None = None
    invariant: str | None = None
    goals: tuple[str, ...] = field(default=(), compare=False)

    @property
    def id(self) -> str:
        """A readable test id: the bug, if any, and the moves."""
        path = "-".join(m.replace(" ", "") for m in self.moves)
        if self.bug != "none":
            return f"{self.bug}:{path}"
        return f"{self.model}:{path}" if self.model != "none" else path


def coverage_goals(prev: str | None, move: str) -> list[str]:
    """The goals a transition by ``move`` after ``prev`` (None: from the initial state)
    reaches: the move itself, and for a crash, the crash point."""
    goals = [move]
    if move in CRASH_MOVES:
        goals.append(f"Crash after {prev or 'start'}")
    return goals


def all_goals() -> list[str]:
    """Every goal the generator aims at (some are unreachable in the correct model; the
    report of :func:`covering_paths` says which)."""
    return [*MOVES, *(f"Crash after {p}" for p in ("start", *MOVES))]


_Node = tuple[S, str | None]
"""A search node: a state and the move that reached it (None: initial)."""


@dataclass
class Coverage:
    """The generated covering set and what it reached."""

    cases: list[Case]
    reached: dict[str, str]
    """goal -> the id of the case that reaches it."""
    unreachable: list[str]
    states: int


def covering_paths(seed: int, max_offset: int = GEN_MAX_OFFSET, model: str = "none"
                   ) -> Coverage:
    """The shortest path to every reachable coverage goal of the one-replica twin (``model``:
    its bug switch; states violating an invariant are neither goals nor expanded).

    Breadth first over (state, last move) pairs, the moves tried in an order shuffled by
    ``seed`` (a different seed may pick a different path of the same length for a goal); the
    same seed gives the same cases. A path that is a prefix of another is dropped: the longer
    one reaches its goals too.
    """
    twin = one_replica_twin(model, max_offset)
    invariants = [holds for _, holds in twin.invariants()]
    order = list(MOVES)
    random.Random(seed).shuffle(order)
    init = next(iter(twin.init_states()))
    assert isinstance(init, LogStartOffsetState)
    parents: dict[_Node, tuple[_Node | None, str | None]] = {(init, None): (None, None)}
    frontier: deque[_Node] = deque([(init, None)])
    found: dict[str, tuple[_Node, str, S]] = {}  # goal -> the transition reaching it first
    wanted = set(all_goals())
    while frontier and wanted - set(found):
        node = frontier.popleft()
        s, prev = node
        for move in order:
            t = model_step(twin, s, move)
            if t is None or not all(holds(t) for holds in invariants):
                continue
            for goal in coverage_goals(prev, move):
                found.setdefault(goal, (node, move, t))
            nxt: _Node = (t, move)
            if nxt not in parents:
                parents[nxt] = (node, move)
                frontier.append(nxt)
    paths: dict[str, tuple[tuple[str, ...], tuple[S, ...]]] = {}
    for goal, (node, move, t) in found.items():
        moves, states = _path(parents, node)
        paths[goal] = ((*moves, move), (*states, t))
    by_moves = {m: st for m, st in paths.values()}
    kept = sorted((k for k in by_moves
                   if not any(o != k and o[:len(k)] == k for o in by_moves)),
                  key=lambda k: (len(k), k))
    cases = [Case("covering", k, by_moves[k], model,
                  goals=tuple(g for g, (m, _) in paths.items() if k[:len(m)] == m))
             for k in kept]
    reached = {g: next(c.id for c in cases if g in c.goals) for g in found}
    unreachable = [g for g in all_goals() if g not in found]
    return Coverage(cases, reached, unreachable, len({n[0] for n in parents}))


def _path(parents: dict[_Node, tuple[_Node | None, str | None]],
          leaf: _Node) -> tuple[list[str], list[S]]:
    moves: list[str] = []
    states: list[S] = []
    cur: _Node | None = leaf
    while cur is not None:
        parent, move = parents[cur]
        states.append(cur[0])
        if move is not None:
            moves.append(move)
        cur = parent
    return moves[::-1], states[::-1]


@dataclass(frozen=True)
class BugReport:
    """A bug switch with one replica: its counterexample as a case, or why there is none."""

    bug: str
    case: Case | None
    reason: str


def bug_cases(max_offset: int = GEN_MAX_OFFSET) -> list[BugReport]:
    """Every bug switch of LogStartOffset, checked with one replica: its shortest
    counterexample as moves, or the reason it has no case (not expressible with one replica:
    the one-replica model holds with the bug on)."""
    correct = one_replica_twin(max_offset=max_offset)
    out = []
    for bug in BUGS:
        buggy = one_replica_twin(bug, max_offset)
        result = check(buggy, packed=False)
        if result.violation is None:
            out.append(BugReport(bug, None, "not expressible with one replica: the one-replica "
                                 f"model holds with it ({result.distinct} states)"))
            continue
        steps = result.violation.steps
        assert steps[0][0] == INITIAL
        first = steps[0][1]
        assert isinstance(first, LogStartOffsetState)
        states: list[S] = [first]
        moves: list[str] = []
        for label, t in steps[1:]:
            assert isinstance(t, LogStartOffsetState)
            t = t._replace(pending=0)  # as the moves hide it
            s = states[-1]
            move = next((m for m in MOVES if model_step(buggy, s, m) == t), None)
            if move is None:
                raise ModelDivergence(f"{bug}: the counterexample's step {label} is no move")
            moves.append(move)
            states.append(t)
        bug_step = next(i for i, m in enumerate(moves)
                        if model_step(correct, states[i], m) != states[i + 1])
        out.append(BugReport(bug, Case("bug", tuple(moves), tuple(states), bug=bug,
                                       bug_step=bug_step,
                                       invariant=result.violation.invariant),
                             f"counterexample of {len(moves)} moves, the bug acting at move "
                             f"{bug_step + 1} ({moves[bug_step]})"))
    return out


@dataclass
class CaseRun:
    """What driving a case did: the implementation's abstract state after each move."""

    case: Case
    states: list[S]


def run_case(case: Case, seed: int, *,
             periodic_start_offset_checkpoint: bool | None = None) -> CaseRun:
    """Drive ``case`` through the real log; raises :class:`ModelDivergence` where the
    implementation and the (correct) model part, or where it follows a bug's counterexample.

    A covering case: after each move, the implementation's abstract state equals the twin's.
    A bug case: equal up to the move where the bug acts; there it equals the correct twin's
    successor (the state before, when the correct twin refuses the move) and not the
    counterexample's; after it, every later move keeps every invariant of the correct twin,
    the one the counterexample breaks included.

    The log checkpoints its start offset periodically only (Kafka's behaviour) when the case's
    twin is the lazy checkpoint's, or when ``periodic_start_offset_checkpoint`` says so.
    """
    correct = one_replica_twin(case.model, 1 << 62)
    periodic = (case.model == LAZY if periodic_start_offset_checkpoint is None
                else periodic_start_offset_checkpoint)
    driver = LogDriver(seed, periodic_start_offset_checkpoint=periodic)
    seen = [driver.state]
    if driver.state != case.states[0]:
        raise ModelDivergence(_diff(correct, "the initial state", case.states[0], driver.state))
    for i, move in enumerate(case.moves):
        before = driver.state
        after = driver.apply(move)
        seen.append(after)
        where = f"move {i + 1} ({move}) of {case.id}"
        if case.bug_step is None or i < case.bug_step:
            if after != case.states[i + 1]:
                raise ModelDivergence(_diff(correct, where, case.states[i + 1], after))
            continue
        if i == case.bug_step:
            if after == case.states[i + 1]:
                raise ModelDivergence(f"{where}: the implementation followed the {case.bug} "
                                      f"counterexample:\n{correct.describe(after)}")
            expected = model_step(correct, before, move)
            expected = before if expected is None else expected
            if after != expected:
                raise ModelDivergence(_diff(correct, f"{where} (where {case.bug} acts)",
                                            expected, after))
        for name, holds in correct.invariants():
            if name != "TypeOK" and not holds(after):
                raise ModelDivergence(f"{where}: {name} is violated:\n{correct.describe(after)}")
    if case.bug_step is not None and seen[-1] == case.states[-1]:
        raise ModelDivergence(f"{case.id}: the implementation ends in the violating state")
    return CaseRun(case, seen)


def _diff(twin: LogStartOffsetTwin, where: str, model: S, impl: S) -> str:
    return (f"{where}: the model and the implementation disagree\nmodel:\n"
            f"{_indent(twin.describe(model))}\nimplementation:\n{_indent(twin.describe(impl))}")


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def generated_cases(seed: int) -> Iterator[Case]:
    """Every generated case: the covering set, the covering set of Kafka's periodic start
    offset checkpoint (the twin's ``StartOffsetCheckpointLazy``, up to its violations), then
    each expressible bug's counterexample."""
    yield from covering_paths(seed).cases
    yield from covering_paths(seed, model=LAZY).cases
    for report in bug_cases():
        if report.case is not None:
            yield report.case


__all__ = [
    "CRASH_MOVES",
    "LAZY",
    "MOVES",
    "BugReport",
    "Case",
    "CaseRun",
    "Coverage",
    "LogDriver",
    "ModelDivergence",
    "all_goals",
    "bug_cases",
    "covering_paths",
    "generated_cases",
    "model_step",
    "one_replica_twin",
    "run_case",
]
