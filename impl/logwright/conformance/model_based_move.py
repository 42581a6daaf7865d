"""Tests generated from the ReplicaMove model, driven through a real log manager and dir-move
fetcher over the simulated file system.

What it upholds: each generated path of the ReplicaMove twin (the .cfg's constants: three
records, the future log's dir may fail), driven through the code, leaves the move where the
twin says after every move: every variable of the twin (dir names as the broker sees them and
as a crash would leave them, records written and fsynced, records by identity, start offsets,
the acknowledged prefix, the lock, the log appends go to), read by the ReplicaMove abstraction
(:func:`~logwright.conformance.replica_move.abstract_move`). A bug's counterexample is driven
to the move where the bug acts; from there the code takes its own steps, each of which must be
a step of the correct twin that keeps AtomicMoveSwap, and never the counterexample's.

The code under test is the log manager's (future log creation, the swap's S2 to S5, start-up
recovery R1 to R6, the delayed deletion) and the dir-move fetcher's (the copy, its following of
the source's truncation and start offset, the swap's S1 and S6). A move is performed as (and
stands for the twin's steps):

* ``Append``: one record appended to the log appends go to (``Append``);
* ``Flush(src)``, ``Flush(fut)``: that log fsynced (``Flush`` of all it holds);
* ``AdvanceHW``: the live log's high watermark raised to its fsynced end, as the disk has it
  (``AdvanceHW``);
* ``Copy``: the fetcher's step: it follows the source (below), then copies with a budget of
  one byte (at least one batch: one record) below the source's recovery point, from the future
  log's own end (``Copy``);
* ``RaiseStart``: the source's start offset raised by one (a DeleteRecords), made durable
  (``RaiseStart``); ``FollowStart``: the fetcher's following of the source: the future log's
  start offset raised to the source's (``FollowStart``), skipping, when that is above the future
  log's end, the records in between, which the twin copies as deleted alike (``Copy`` each);
* ``TruncateSource``: the source truncated by one record (a follower after a leader change),
  then the fetcher's following, which truncates the future log as far (``TruncateSource``);
* ``BeginSwap``: the fetcher's swap starts and takes the append lock (S1); the swap runs in a
  thread of its own, suspended after every file-system operation that changes the abstract
  state, so each of its steps is a move: ``Flush(src)``, ``Copy``, ``Flush(fut)``,
  ``RenameFutureLive``, ``FsyncDir(fut)``, ``RenameSourceDelete``, ``FsyncDir(src)``,
  ``EndSwap``, in the code's order (the alphabet offers, under the lock, only the protocol's
  next step: the twin allows some reorderings the code does not take), and ``AdvanceHW``
  between two of them (the twin allows it; the broker's single-threaded driver does not
  interleave it, so this is more than the broker does);
* ``CrashRestart``: power lost right there (mid-swap included), then start-up
  (``Crash``, ``Recover``, the ``FsyncDir`` of each dir recovery renamed in, ``Serve``);
  ``CrashRestart(failed)``: the same with the future log's dir failed meanwhile (start-up finds
  it offline: ``FailDir(fut)`` while down), ``CrashRestart(repaired)`` with it back
  (``Repair(fut)``);
* ``FailDir(fut)``: an I/O error takes the future log's dir offline outside the swap; the
  dir-move fetcher fails the move and drops its future log, as the broker's replica manager has
  it do (``FailDir``);
* ``RestartMove``: the move asked again once start-up dropped a future log of an older
  generation (``RestartMove``);
* ``DeleteSource``: the delayed deletion of the ``-delete`` dir, past file.delete.delay.ms.

Not driven here: a dir failure in the middle of the swap (the ReplicaMove projection checks it
in the fuzzer, and tests/test_jbod_swap.py after every operation), and an append during the
swap: the broker runs the swap as one step of its single-threaded driver and asserts that no
append reaches a swapping partition, so no driver can offer it (the bug ``AppendDuringSwap`` is
the mutant "append on the source after the swap began", caught by the cluster tests).
"""

from __future__ import annotations

import posixpath
import random
import threading
from collections.abc import Callable, Iterable, Iterator

from logwright.broker.dir_move import DirMoveFetcher
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
from logwright.conformance.refinement import RefinementChecker
from logwright.conformance.replica_move import (
    MoveView,
    ReplicaMoveRefinement,
    abstract_move,
    durable_end,
)
from logwright.identity import TopicPartition, Uuid
from logwright.logmanager import LogManager, LogManagerConfig
from logwright.model.core import State
from logwright.model.replica_move import ReplicaMoveConfig, ReplicaMoveSpec
from logwright.model.replica_move.bugs import BUGS
from logwright.model.replica_move.twin import (
    DELETE,
    FUT,
    FUTURE,
    GONE,
    LIVE,
    NO_LOG,
    SRC,
    RMState,
)
from logwright.records import build_simple_batch
from logwright.storage.log import PartitionLog
from logwright.world import Fault
from logwright.world.clock import VirtualClock
from logwright.world.scheduler import SimScheduler
from logwright.world.simfs import SimFileSystem, SimulatedCrash
from logwright.world.trace import TraceRecorder

MODULE = "ReplicaMove"
TP = TopicPartition("mv", 0)
D1, D2 = "/data/d1", "/data/d2"
MAX_RECORDS = 3
"""The .cfg files' MaxRecords."""

SWAP_ORDER = ("Flush(src)", "Copy", "Flush(fut)", "RenameFutureLive", "FsyncDir(fut)",
              "RenameSourceDelete", "FsyncDir(src)", "EndSwap")
"""The swap's steps under the lock, in the code's order (each taken while enabled)."""

OUTSIDE = ("Append", "Flush(src)", "Flush(fut)", "AdvanceHW", "Copy", "RaiseStart",
           "FollowStart", "TruncateSource", "BeginSwap", "DeleteSource", "FailDir(fut)",
           "RestartMove")
"""The moves offered outside the swap (with the crashes everywhere)."""

CRASHES = ("CrashRestart", "CrashRestart(failed)", "CrashRestart(repaired)")
"""Power lost, then start-up: with the dirs as they are, with the future log's dir failed
meanwhile, with it repaired."""

MOVES = tuple(dict.fromkeys((*OUTSIDE, *SWAP_ORDER, *CRASHES)))


def twin(bug: str = "none") -> ReplicaMoveSpec:
    """The twin with the .cfg files' constants."""
    return ReplicaMoveSpec(ReplicaMoveConfig(max_records=MAX_RECORDS, bug=bug,
                                             fail_dirs=frozenset({FUT})))


def _log_arg(label: str) -> tuple[str, str | None]:
    if "(" in label:
        name, arg = label[:-1].split("(")
        return name, arg
    return label, None


class Generator:
    """The moves of the module docstring as twin steps."""

    def __init__(self, spec: ReplicaMoveSpec) -> None:
        self.spec = spec

    def _twin_step(self, s: RMState, label: str) -> RMState | None:
        name, arg = _log_arg(label)
        if name == "Flush":
            assert arg is not None
            i = 0 if arg == SRC else 1
            whole = [t for t in self.spec.Flush(s, arg) if isinstance(t, RMState)
                     and t.dur[i] == s.vol[i]]
            return whole[0] if whole else None
        if name == "FailDir":
            assert arg is not None
            return next(iter(self.spec.FailDir(s, arg)), None)
        fn: Callable[..., RMState | None] = getattr(self.spec, name)
        return fn(s, arg) if arg is not None else fn(s)

    def step(self, s: State, move: Move) -> State | None:
        """The twin's successor under ``move`` (None: not enabled)."""
        assert isinstance(s, RMState)
        if move.action in CRASHES:
            t = self.spec.Crash(s)
            if t is not None and move.action == "CrashRestart(failed)":
                t = next(iter(self.spec.FailDir(t, FUT)), None)
            elif t is not None and move.action == "CrashRestart(repaired)":
                t = self.spec.Repair(t, FUT)
            t = self.spec.Recover(t) if t is not None else None
            if t is None:
                return None
            for log, i in ((SRC, 0), (FUT, 1)):
                if not t.offline[i] and t.durName[i] != t.name[i]:
                    u = self.spec.FsyncDir(t, log)
                    assert u is not None
                    t = u
            return self.spec.Serve(t)
        if move.action not in MOVES:
            raise ValueError(f"no move {move}; known: {', '.join(MOVES)}")
        if s.locked or move.action not in ("Copy", "FollowStart", "TruncateSource"):
            return self._twin_step(s, move.action)
        if move.action == "TruncateSource":
            t = self.spec.TruncateSource(s)
            return self._follow(t) if t is not None else None
        followed = self._follow(s)
        if move.action == "FollowStart":
            return followed if followed != s else None
        t = self.spec.Copy(followed)
        return t if t is not None else (followed if followed != s else None)

    def _follow(self, s: RMState) -> RMState:
        """The fetcher's following of the source's start offset (before each copy): the future
        log's start offset raised to the source's (``FollowStart``); when that is above the
        future log's end, the records in between are skipped (deleted in both logs, alike: as
        many ``Copy`` steps) and the future log starts afresh there, durably (``Flush(fut)``)."""
        t = self.spec.FollowStart(s) if s.name[1] == FUTURE else None
        if t is None:
            return s
        while t.vol[1] < t.start[0]:
            u = self.spec.Copy(t)
            if u is None:  # a buggy twin's copier reading elsewhere
                return s
            t = u
        if t.vol[1] > s.vol[1]:
            # The future log starts afresh at the source's start offset, durably (its new,
            # empty segment fsynced): ``Flush(fut)`` of all it holds.
            t = self._twin_step(t, "Flush(fut)") or t
        return t

    def moves_of(self, s: State) -> Iterable[Move]:
        """Outside the swap every move but the swap's own steps; under the lock the protocol's
        next step in the code's order; a crash anywhere."""
        assert isinstance(s, RMState)
        if s.locked:
            nxt = next((label for label in SWAP_ORDER
                        if self._twin_step(s, label) is not None), None)
            return [*((Move(nxt),) if nxt is not None else ()), Move("AdvanceHW"),
                    *(Move(c) for c in CRASHES)]
        return [Move(m) for m in (*OUTSIDE, *CRASHES) if self._drivable(s, m)]

    @staticmethod
    def _drivable(s: RMState, move: str) -> bool:
        """Whether the driver performs ``move`` from ``s`` as the twin's step (module
        docstring): the swap is begun only with the start offsets equal (else the fetcher first
        follows)."""
        if move == "BeginSwap":
            return s.start[0] == s.start[1]
        if move in ("Copy", "Flush(fut)"):
            return s.name[1] == FUTURE
        return True


GOALS = (*MOVES,
         *(f"CrashRestart at {n}/{d}{' locked' if locked else ''}" for n, d, locked in (
             ((LIVE, FUTURE), (LIVE, FUTURE), False),
             ((LIVE, FUTURE), (LIVE, FUTURE), True),
             ((LIVE, LIVE), (LIVE, FUTURE), True),
             ((LIVE, LIVE), (LIVE, LIVE), True),
             ((DELETE, LIVE), (LIVE, LIVE), True),
             ((DELETE, LIVE), (DELETE, LIVE), True),
             ((DELETE, LIVE), (DELETE, LIVE), False),
             ((GONE, LIVE), (GONE, LIVE), False))),
         "AdvanceHW under the lock",
         "TruncateSource reaching the future log",
         "CrashRestart(failed) after the commit point",
         "CrashRestart(repaired) drops a future log of an older generation",
         "CrashRestart with unflushed source records",
         "CrashRestart with unflushed copied records",
         "CrashRestart with both start offsets raised")
"""Every move, and a crash after every step of the swap with an acknowledged record at stake
(the dir names as the broker sees them / as a crash would leave them, the lock), with records
not yet fsynced, and with both logs' start offsets raised (they must survive it)."""


def _show(n: tuple[str, str]) -> str:
    return f"({n[0]}, {n[1]})"


class _Goals:
    def __call__(self, s: State, move: Move, t: State | None) -> list[str]:
        assert isinstance(s, RMState)
        if t is None:
            return []
        assert isinstance(t, RMState)
        goals = [move.action]
        if move.action == "AdvanceHW" and s.locked:
            goals.append("AdvanceHW under the lock")
        if move.action == "TruncateSource" and t.vol[1] < s.vol[1]:
            goals.append("TruncateSource reaching the future log")
        if move.action == "CrashRestart(failed)" and s.durName[1] == LIVE and s.acked > 0:
            goals.append("CrashRestart(failed) after the commit point")
        if move.action == "CrashRestart(repaired)" and t.durName[1] == DELETE and t.up:
            goals.append("CrashRestart(repaired) drops a future log of an older generation")
        crash_point = f"CrashRestart at {s.name}/{s.durName}{' locked' if s.locked else ''}"
        if move.action == "CrashRestart" and s.acked > 0 and crash_point in GOALS:
            goals.append(crash_point)
            if s.dur[0] < s.vol[0]:
                goals.append("CrashRestart with unflushed source records")
            if s.dur[1] < s.vol[1] and s.name[1] == FUTURE:
                goals.append("CrashRestart with unflushed copied records")
            if s.start[0] > 0 and s.start[1] == s.start[0] and s.name[1] == FUTURE:
                goals.append("CrashRestart with both start offsets raised")
        return goals


def covering_paths(seed: int) -> Coverage:
    """A covering set of the correct twin under the driver's alphabet."""
    spec = twin()
    gen = Generator(spec)
    return covering_cases(MODULE, spec, gen.moves_of, gen.step, _Goals(), GOALS, seed)


NOT_DRIVEN = {
    "AppendDuringSwap": "an append during the swap is what no driver can offer: the broker runs "
                        "the swap as one step of its single-threaded driver (and asserts it); "
                        "the mutant 'append on the source after the swap began' is caught by "
                        "the cluster tests",
}
"""The bugs whose counterexample these moves cannot drive, and why."""


def bug_cases() -> list[BugReport]:
    """Each bug's shortest violation in the driver's moves, or why there is none."""
    correct = Generator(twin())
    out = []
    for bug in BUGS:
        if bug in NOT_DRIVEN:
            out.append(BugReport(bug, None, NOT_DRIVEN[bug]))
            continue
        buggy = Generator(twin(bug))
        out.append(shortest_violation(MODULE, bug, buggy.spec, buggy.step, correct.step,
                                      _BuggyMoves(buggy)))
    return out


class _BuggyMoves:
    """A buggy twin's alphabet: under the lock, every swap step it enables (the bug is an
    order the code does not take), else the driver's."""

    def __init__(self, gen: Generator) -> None:
        self.gen = gen

    def __call__(self, s: State) -> Iterable[Move]:
        assert isinstance(s, RMState)
        if not s.locked:
            return self.gen.moves_of(s)
        return [*(Move(label) for label in SWAP_ORDER
                  if self.gen._twin_step(s, label) is not None), Move("AdvanceHW"),
                *(Move(c) for c in CRASHES)]


def generated_cases(seed: int) -> Iterator[Case]:
    """The covering set, then the bugs' violations."""
    yield from covering_paths(seed).cases
    for report in bug_cases():
        if report.case is not None:
            yield report.case


# ---- the implementation's side ----------------------------------------------------------------

TOPIC_ID = Uuid.from_random(random.Random(113))


class _Lock(set[TopicPartition]):
    """The fetcher's ``swapping`` set, telling the driver when S1 takes the lock."""

    def __init__(self, on_lock: Callable[[], None]) -> None:
        super().__init__()
        self.on_lock = on_lock

    def add(self, tp: TopicPartition) -> None:
        super().add(tp)
        self.on_lock()


class _Suspended:
    """One call of the code run in a thread of its own, suspended after every file-system
    operation (and the lock's taking) that changes the abstract state: the driver resumes it
    step by step. Only one of the two threads runs at any time, so the run is as
    deterministic as a single thread's."""

    def __init__(self, fs: SimFileSystem, observe: Callable[[], RMState],
                 call: Callable[[], None]) -> None:
        self.fs = fs
        self.observe = observe
        self.last = observe()
        self.done = False
        self.error: BaseException | None = None
        self._crash = False
        self._inside = False
        self._go = threading.Semaphore(0)
        self._paused = threading.Semaphore(0)
        fs.after_op = self.checkpoint
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[], None]) -> None:
        self._go.acquire()
        try:
            call()
        except SimulatedCrash:
            pass
        except BaseException as exc:  # reported to the driver's thread
            self.error = exc
        finally:
            self.done = True
            self.fs.after_op = None
            self._paused.release()

    def checkpoint(self) -> None:
        """Suspend here if the abstract state changed (called in the code's thread)."""
        if self._inside or self.done:
            return
        if self._crash:
            raise SimulatedCrash("the driver's crash")
        self._inside = True
        try:
            s = self.observe()
        finally:
            self._inside = False
        if s == self.last:
            return
        self.last = s
        self._paused.release()
        self._go.acquire()
        if self._crash:
            raise SimulatedCrash("the driver's crash")

    def resume(self) -> None:
        """Let the code run to its next visible step (or its end)."""
        assert not self.done
        self._go.release()
        self._paused.acquire()
        if self.error is not None:
            raise ModelDivergence(f"the code raised {type(self.error).__name__}: "
                                  f"{self.error}") from self.error

    def crash(self) -> None:
        """Power lost where the code is suspended: it unwinds as from a crash there."""
        if self.done:
            return
        self._crash = True
        self._go.release()
        self._paused.acquire()
        self._thread.join()


class MoveDriver:
    """A log manager with two dirs and a dir-move fetcher, moving ``TP`` from D1 to D2, driven
    by the moves (module docstring)."""

    def __init__(self, seed: int, trace: TraceRecorder | None = None) -> None:
        self.seed = seed
        self.trace = trace
        """With a recorder, the moves' ReplicaMove events are recorded (traces/SCHEMA.md)."""
        self.clock = VirtualClock(1_000_000)
        self.fs = SimFileSystem(self.clock)
        self.config = LogManagerConfig()
        self.view = MoveView()
        self.values = 0
        self.restarts = 0
        self.swap: _Suspended | None = None
        self.swapped = False
        self._start()
        self.src = self.lm.create_log(TP, TOPIC_ID, D1)
        self.src.flush()
        self.lm.create_future_log(TP, D2)

    def _start(self) -> None:
        self.restarts += 1
        self.lm = LogManager(self.fs, (D1, D2), self.clock,
                             SimScheduler(self.clock, seed=self.seed + self.restarts),
                             self.config, random.Random(self.seed + self.restarts))
        if self.trace is not None:
            self.lm.trace, self.lm.trace_replica = self.trace, 1
        self.lm.startup()
        self.fetcher = DirMoveFetcher(
            1, self.lm, self.clock, SimScheduler(self.clock, seed=self.seed),
            rate_bytes_per_s=2**63 - 1, max_bytes=1, backoff_ms=100,
            leader_epoch=lambda tp: 0, on_swapped=self._swapped,
            on_start_offset=lambda tp: None, on_storage_error=lambda: None)
        self.fetcher.swapping = _Lock(self._locked)

    def _locked(self) -> None:
        if self.swap is not None:
            self.swap.checkpoint()

    def _swapped(self, tp: TopicPartition, log: PartitionLog) -> None:
        self.swapped = True

    def _fut(self) -> PartitionLog:
        fut = self.lm.get_future_log(TP)
        if fut is None:
            raise ModelDivergence("no future log where the model has one")
        return fut

    def _current(self) -> PartitionLog:
        live = self.lm.get_log(TP)
        if live is None:
            raise ModelDivergence("no live log where the model serves one")
        return live

    def state(self) -> RMState:
        """The move's abstract state now."""
        live = self.lm.get_log(TP)
        if live is None or live.offline or posixpath.dirname(live.dir_path) in \
                self.lm.offline_dirs:
            current = NO_LOG  # offline on this broker
        else:
            current = FUT if self.swapped else SRC
        return abstract_move(self.fs, self.lm, TP, self.src, D1, D2, self.view,
                             locked=TP in self.fetcher.swapping, current=current)

    def apply(self, move: Move) -> RMState:
        """Perform ``move``; the abstract state after it."""
        action = move.action
        if self.swap is not None and not self.swap.done and action in SWAP_ORDER:
            self.swap.resume()  # the swap's next step, whichever of them the move names
            if self.swap.done:
                self.swap = None
            return self.state()
        if action == "Append":
            self.values += 1
            self._current().append_as_leader(
                build_simple_batch([b"v%d" % self.values], 1_000_000), leader_epoch=0)
        elif action in ("Flush(src)", "Flush(fut)"):
            (self.src if action == "Flush(src)" else self._fut()).flush()
        elif action == "AdvanceHW":
            # What the log holds durably (read from the disk: under the lock, the swap may be
            # suspended between an fsync and the log's noting it).
            log = self._current()
            log.update_high_watermark(max(log.high_watermark,
                                          durable_end(self.fs, log) or 0))
        elif action == "Copy":
            fut = self._fut()
            self.fetcher._follow(self.src, fut)
            self.fetcher.copy(self.src, fut, 1, self.src.recovery_point)
        elif action == "RaiseStart":
            self.src.increment_log_start_offset(self.src.log_start_offset + 1)
        elif action == "FollowStart":
            self.fetcher._follow(self.src, self._fut())
        elif action == "TruncateSource":
            self.src.truncate_to(self.src.log_end_offset - 1)
            self.fetcher._follow(self.src, self._fut())
        elif action == "BeginSwap":
            src, fut = self.src, self._fut()
            self.swap = _Suspended(self.fs, self.state,
                                   lambda: self.fetcher.swap(TP, src, fut))
            self.swap.resume()
        elif action == "DeleteSource":
            self.clock.advance(self.config.file_delete_delay_ms + 1)
            self.lm.run_delayed_deletes()
        elif action == "FailDir(fut)":
            # What the broker does when an I/O error takes the dir offline: the dir-move fetcher
            # fails the move and drops its future log (replica manager, _stop_moves_on).
            self.fs.inject_fault(D2, Fault.EIO)
            self.lm.fail_dir(D2, "injected EIO")
            if self.lm.get_future_log(TP) is not None:
                self.fetcher.fail(TP, "storage error: log dir offline", drop_future=True)
        elif action == "RestartMove":
            self.lm.create_future_log(TP, D2)
            self.fetcher.add(TP)
        elif action in CRASHES:
            self._crash_restart(action)
        else:
            raise ValueError(f"no move {move}")
        after = self.state()
        if self.swap is not None:
            self.swap.last = after  # a move between two of the swap's steps
        return after

    def _crash_restart(self, action: str) -> None:
        if self.swap is not None:
            self.swap.crash()
            self.swap = None
        self.fs.after_op = None
        self.fs.crash()
        if action == "CrashRestart(failed)":
            self.fs.inject_fault(D2, Fault.EIO)
        elif action == "CrashRestart(repaired)":
            self.fs.clear_fault(D2)
        self._start()
        live = self.lm.get_log(TP)
        if live is not None and posixpath.dirname(live.dir_path) == D1:
            self.src = live
            self.swapped = False
        elif live is not None:
            self.swapped = True
        if self.lm.get_future_log(TP) is not None:
            self.fetcher.add(TP)  # as a LeaderAndIsr would: the move resumes (R3)

    def close(self) -> None:
        """Stop a swap still suspended."""
        if self.swap is not None:
            self.swap.crash()
            self.swap = None


def run(case: Case, seed: int) -> CaseRun:
    """Drive ``case`` through a fresh :class:`MoveDriver` (a bug's counterexample: by
    :func:`run_bug_case`)."""
    if case.bug_step is not None:
        return run_bug_case(case, seed)
    gen = Generator(twin())
    driver = MoveDriver(seed)
    try:
        return run_case(case, driver, gen.spec, gen.step)
    finally:
        driver.close()


def run_bug_case(case: Case, seed: int) -> CaseRun:
    """Drive a bug's counterexample: up to the move where the bug acts the code must be where
    the counterexample is; from there it takes its own steps (under the lock, the swap's next
    step whatever the move names), each a step of the correct twin (at most four) on which
    AtomicMoveSwap holds, never the counterexample's state; a crash and restart at the end
    must recover as the correct twin does."""
    assert case.bug_step is not None
    spec = twin()
    gen = Generator(spec)
    driver = MoveDriver(seed)
    try:
        prefix = Case(case.module, case.moves[:case.bug_step],
                      case.states[:case.bug_step + 1])
        seen = run_case(prefix, driver, spec, gen.step).states
        checker = RefinementChecker(ReplicaMoveRefinement(spec), max_steps=4)
        checker.rebase(seen[-1], f"{case.id}: before the move where the bug acts")
        for i, move in enumerate(case.moves[case.bug_step:], start=case.bug_step):
            if move.action not in CRASHES and driver.swap is None \
                    and gen.step(seen[-1], move) is None:
                seen.append(seen[-1])  # the correct code refuses it: nothing changes
                continue
            after = driver.apply(move)
            where = f"move {i + 1} ({move}) of {case.id}"
            if after == case.states[i + 1] and after != seen[-1]:
                raise ModelDivergence(f"{where}: the implementation followed the {case.bug} "
                                      f"counterexample:\n{spec.describe(after)}")
            if move.action in CRASHES:
                expected = gen.step(seen[-1], move)
                if after != expected:
                    raise ModelDivergence(f"{where}: the restart is not the model's:\n"
                                          f"{spec.describe(after)}")
                checker.rebase(after, where)
            else:
                checker.check(after, where)
            seen.append(after)
        final = driver.apply(Move("CrashRestart"))
        if final != gen.step(seen[-1], Move("CrashRestart")):
            raise ModelDivergence(f"{case.id}: the final restart is not the model's:\n"
                                  f"{spec.describe(final)}")
        if not spec.AtomicMoveSwap(final):
            raise ModelDivergence(f"{case.id}: AtomicMoveSwap fails after the final restart")
        return CaseRun(case, [*seen, final])
    finally:
        driver.close()


__all__ = ["BUGS", "GOALS", "MODULE", "MOVES", "NOT_DRIVEN", "Generator", "MoveDriver", "bug_cases",
           "covering_paths", "generated_cases", "run", "run_bug_case", "twin"]
