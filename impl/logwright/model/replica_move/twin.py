"""The Python twin of spec/ReplicaMove.tla: a JBOD move's swap, crash-consistent by itself.

What it upholds: AtomicMoveSwap. At every instant, crash points included, the dir names on disk
resolve to exactly one authoritative log, which durably holds every acknowledged record; appends,
when allowed, go to that log; no append lands in a log after it stopped being authoritative; and
recovery, from the names on disk alone and without an operator, loses no acknowledged record
(KIP-113, docs/kafka-compatibility.md: Kafka refuses to start with two live dirs; logwright resolves
every crash point).

The swap and recovery protocol (spec/ReplicaMove.tla and spec/README.md say the same; the
implementation follows it step for step):

* G: every partition dir records a log generation at creation; a future log gets its source's
  generation + 1.
* C, ``Copy``: the copier appends, at the future log's own end offset, records the source has
  already fsynced.
* S1 ``BeginSwap``: once the future log has every fsynced source record, take the append lock;
  then fsync the source and copy the rest.
* S2 ``Flush(fut)``; S3 ``RenameFutureLive`` (only caught up and fsynced);
  S4 ``FsyncDir(fut)``: the commit point.
* S5 ``RenameSourceDelete`` (only once S4 is durable), then ``FsyncDir(src)``.
* S6 ``EndSwap``: appends go to the new log, the lock is released. S7 ``DeleteSource`` later.
* Recovery (``Recover``): the live dir of the highest generation is authoritative (R1); a live dir
  of a lower generation is renamed ``-delete`` (R2; the rename is made durable by a later
  ``FsyncDir``, and a crash in between runs recovery again); a ``-future`` dir beside the live
  one resumes its copy from its own end (R3) if it is of a higher generation, else it goes
  ``-delete`` and the move starts again (``RestartMove``); ``-delete`` dirs go later (R4); with
  no live dir there is nothing to recover without an operator (R5), a state the protocol never
  makes durable. Recovery sees only the online dirs; once its renames are durable the log is
  served (``Serve``), re-stamped above any copy an offline dir can hold when one is offline (R6).
* Dir failure (``FailDir``, of the dirs ``FailDirs`` names; ``Repair`` while the broker is
  down): a move with a log on the failed dir stops, a swap is abandoned (the partition goes
  offline on this broker once the future dir may be live), a log on it is no longer served.

Records by identity: the ghost ``agree`` counts the leading records the two logs share (an
append writes a new record; a copy copies the source's record at offset ``vol[fut] + skew``),
and ``misplaced`` records a copy to an offset the source did not hold that record at.

A state is an :class:`RMState`, one field per TLA+ variable in the module's order; the per-log
functions ``vol``, ``dur``, ``name``, ``durName`` are pairs indexed ``(src, fut)``.

Its packed numpy encoding (the checker's batched fast path) is
:mod:`logwright.model.replica_move.packed`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Self, TypeVar

from mypy_extensions import mypyc_attr

from logwright.model.cfg import parse_cfg
from logwright.model.core import Action, Invariant, Spec, State
from logwright.model.replica_move.bugs import BUG_TABLE


def _i(log: str) -> int:
    return 0 if log == SRC else 1


SRC, FUT, NO_LOG = "src", "fut", "none"
"""The source log (in D1), the future log (in D2), and ``current`` while the broker is down."""

LOGS = (SRC, FUT)
"""Index order of the per-log pairs."""

LIVE, FUTURE, DELETE, GONE = "live", "future", "delete", "none"
"""Dir names: ``<tp>``, ``<tp>.<id>-future``, ``<tp>.<id>-delete``, no dir."""

T = TypeVar("T")

PerLog = tuple[T, T]


class RMState(NamedTuple):
    """One state of ReplicaMove: the TLA+ variables, in the module's order."""

    up: bool
    current: str
    locked: bool
    vol: PerLog[int]
    dur: PerLog[int]
    name: PerLog[str]
    durName: PerLog[str]
    acked: int
    lateAppend: bool
    agree: int
    """Ghost: how many leading records the two logs hold in common, by identity."""
    skew: int
    """The copier reads source offset ``vol[fut] + skew`` (0: the future log's own end, R3)."""
    misplaced: bool
    """Ghost: the future log holds a record at an offset the source never had it at."""
    start: PerLog[int]
    """Each log's start offset (checkpointed with each raise: durable)."""
    offline: PerLog[bool]
    """Whether the dir holding each log has failed (until a restart finds it back)."""
    newer: str
    """The log of the higher generation (G; R6 re-stamps the log it serves)."""
    starting: bool
    """Start-up has renamed what R2/R3 rename; the log is not served yet."""


@dataclass(frozen=True)
class ReplicaMoveConfig:
    """The constants of ReplicaMove.tla, as a .cfg file assigns them."""

    max_records: int = 3
    bug: str = "none"
    invariants: tuple[str, ...] = ("TypeOK", "AtomicMoveSwap")
    fail_dirs: frozenset[str] = frozenset({FUT})
    """``FailDirs``: the logs whose dirs may fail. One: the protocol's guarantee; both: two
    failures one after the other can lose records (the limit spec/README.md describes)."""

    def __post_init__(self) -> None:
        BUG_TABLE.check(self.bug)
        if self.max_records < 0:
            raise ValueError("MaxRecords must not be negative")
        if not self.fail_dirs <= set(LOGS):
            raise ValueError(f"FailDirs must be a subset of {set(LOGS)}, not {set(self.fail_dirs)}")

    @classmethod
    def from_cfg(cls, path: str | Path) -> ReplicaMoveConfig:
        """The constants of a ReplicaMove .cfg file (the one TLC reads)."""
        cfg = parse_cfg(path)
        k = cfg["constants"]
        fail_dirs = k.get("FailDirs", frozenset({FUT}))
        if not isinstance(fail_dirs, frozenset):
            raise ValueError(f"FailDirs must be a set, not {fail_dirs!r}")
        return cls(max_records=int(k["MaxRecords"]), bug=str(k["Bug"]),
                   invariants=tuple(cfg["invariants"]),
                   fail_dirs=frozenset(str(x) for x in fail_dirs))


def Other(log: str) -> str:
    """The other log."""
    return FUT if log == SRC else SRC


def AuthIn(n: PerLog[str], newer: str, online: PerLog[bool], bug: str = "none") -> str:
    """R1 over the dirs ``online`` says are there: the log recovery picks from dir names ``n``,
    the live one of the highest generation (``newer``'s, if live); with the seed's start-up
    rule (bug ``SeedRenameOrder``) a lone future dir too."""
    for log in (newer, Other(newer)):
        if online[_i(log)] and n[_i(log)] == LIVE:
            return log
    if bug == "SeedRenameOrder" and online[1] and n[1] == FUTURE:
        return FUT
    return NO_LOG


def Authoritative(n: PerLog[str], newer: str = FUT, bug: str = "none") -> str:
    """R1 with every dir back: what the names on disk ``n`` resolve to."""
    return AuthIn(n, newer, (True, True), bug)


# Subclassed by Python classes the compiled build leaves as Python (the packed specs, the
# tests' twins): mypyc (the compiled build) refuses those without this; a no-op in Python.
@mypyc_attr(allow_interpreted_subclasses=True)
class ReplicaMoveTwin(Spec):
    """A source and a future log in two dirs: copier, appends, flushes, swap, crash, recovery."""

    name = "ReplicaMove"

    def __init__(self, config: ReplicaMoveConfig | None = None) -> None:
        self.config = config or ReplicaMoveConfig()

    @classmethod
    def from_cfg(cls, path: str | Path) -> Self:
        """The spec a ReplicaMove .cfg file describes."""
        return cls(ReplicaMoveConfig.from_cfg(path))

    # -- Init ------------------------------------------------------------------------------

    def init_states(self) -> Iterable[State]:
        names = (LIVE, FUTURE)
        return [RMState(up=True, current=SRC, locked=False, vol=(0, 0), dur=(0, 0), name=names,
                        durName=names, acked=0, lateAppend=False, agree=0, skew=0,
                        misplaced=False, start=(0, 0), offline=(False, False), newer=FUT,
                        starting=False)]

    # -- actions, one method per TLA+ operator ---------------------------------------------

    def Append(self, s: RMState) -> RMState | None:
        """A producer's append to the log appends go to; it waits while the swap holds the lock."""
        if not s.up or s.current == NO_LOG:
            return None
        if s.locked and self.config.bug != "AppendDuringSwap":
            return None
        c = _i(s.current)
        if s.vol[c] >= self.config.max_records:
            return None
        late = s.current != Authoritative(s.durName, s.newer, self.config.bug)
        return s._replace(vol=_set(s.vol, c, s.vol[c] + 1), lateAppend=s.lateAppend or late)

    def Copy(self, s: RMState) -> RMState | None:
        """C: the copier appends the source's fsynced record at offset ``vol[fut] + skew`` at
        the future log's end; a record copied from another offset is misplaced. It runs while
        the source is served and both dirs are online."""
        if not s.up or s.current != SRC or s.offline[1] or s.name[1] != FUTURE:
            return None
        if s.vol[1] >= self.config.max_records:
            return None
        if not 0 <= s.vol[1] + s.skew < s.dur[0]:
            return None
        same = s.skew == 0 and s.agree == s.vol[1]
        return s._replace(vol=(s.vol[0], s.vol[1] + 1), agree=s.agree + 1 if same else s.agree,
                          misplaced=s.misplaced or s.skew != 0)

    def Flush(self, s: RMState, log: str) -> Iterator[RMState]:
        """fsync of a log's segments, one after another: any longer prefix made durable."""
        i = _i(log)
        if not s.up or s.offline[i]:
            return
        for k in range(s.dur[i] + 1, s.vol[i] + 1):
            yield s._replace(dur=_set(s.dur, i, k))

    def FsyncDir(self, s: RMState, log: str) -> RMState | None:
        """fsync of the dir holding a log: its name survives a crash."""
        i = _i(log)
        if not s.up or s.offline[i] or s.durName[i] == s.name[i]:
            return None
        return s._replace(durName=_set(s.durName, i, s.name[i]))

    def BeginSwap(self, s: RMState) -> RMState | None:
        """S1: the future log, of the higher generation and on an online dir, has every fsynced
        source record; take the append lock."""
        if not s.up or s.locked or s.current != SRC or s.name[1] != FUTURE:
            return None
        if s.offline[1] or s.newer != FUT or s.vol[1] != s.dur[0]:
            return None
        return s._replace(locked=True)

    def RenameFutureLive(self, s: RMState) -> RMState | None:
        """S3: the future dir takes the live name, once it is a complete, fsynced copy (S2)."""
        bug = self.config.bug
        if not (s.up and s.locked and s.name[1] == FUTURE):
            return None
        if s.vol[1] != s.vol[0] and bug != "SwapBeforeCopyDone":
            return None
        if s.dur[1] != s.vol[1] and bug != "SwapBeforeFlush" and bug != "SeedRenameOrder":
            return None
        if s.start[1] != s.start[0]:
            return None
        if bug == "SeedRenameOrder" and s.durName[0] != DELETE:
            return None
        return s._replace(name=(s.name[0], LIVE))

    def RenameSourceDelete(self, s: RMState) -> RMState | None:
        """S5: the source dir is renamed -delete, once the commit (S4) is durable."""
        if not (s.up and s.locked and s.name[0] == LIVE):
            return None
        if self.config.bug == "SeedRenameOrder":
            ready = s.name[1] == FUTURE and s.vol[1] == s.vol[0]
        else:
            ready = s.durName[1] == LIVE
        if not ready:
            return None
        return s._replace(name=(DELETE, s.name[1]))

    def EndSwap(self, s: RMState) -> RMState | None:
        """S6: both renames durable; appends go to the new log."""
        if not (s.up and s.locked and s.durName == (DELETE, LIVE)):
            return None
        return s._replace(current=FUT, locked=False)

    def DeleteSource(self, s: RMState) -> RMState | None:
        """S7 / R4: the -delete dir is removed."""
        if not s.up or s.locked or s.offline[0] or s.durName[0] != DELETE:
            return None
        return s._replace(name=(GONE, s.name[1]), durName=(GONE, s.durName[1]),
                          vol=(0, s.vol[1]), dur=(0, s.dur[1]), agree=0, start=(0, s.start[1]))

    def Crash(self, s: RMState) -> RMState | None:
        """A crash at any step: only fsynced records and fsynced dir names survive."""
        if not s.up:
            return None
        return s._replace(up=False, current=NO_LOG, locked=False, vol=s.dur, name=s.durName,
                          agree=min(s.agree, s.dur[0], s.dur[1]), skew=0, starting=False)

    def Recover(self, s: RMState) -> RMState | None:
        """R1-R3 from the names on the online dirs: the authoritative log takes the live name; a
        lower-generation live dir is renamed -delete (R2), a -future dir below the live log too
        (else resumed, R3); with no live dir nothing is touched (R5). Renames are durable only
        at the next ``FsyncDir`` of their dir (a crash in between: recovery runs again)."""
        if s.up:
            return None
        a = AuthIn(s.durName, s.newer, _online(s), self.config.bug)

        def renamed(i: int, log: str) -> str:
            d = s.durName[i]
            if s.offline[i]:
                return d
            if log == a:
                return LIVE
            if d == LIVE or (d == FUTURE and a != NO_LOG and s.newer != log):
                return DELETE
            return d

        resume_hw = self.config.bug == "CopierResumesFromHW" and s.durName[1] == FUTURE
        return s._replace(up=True, starting=True, name=(renamed(0, SRC), renamed(1, FUT)),
                          skew=s.acked - s.dur[1] if resume_hw else 0)

    def Serve(self, s: RMState) -> RMState | None:
        """The end of start-up, once recovery's renames are durable: the recovered log is
        served (none: the partition stays offline here); with a dir offline it is re-stamped
        above any copy the offline dir can hold (R6)."""
        if not (s.up and s.starting):
            return None
        online = _online(s)
        if any(on and d != n for on, d, n in zip(online, s.durName, s.name, strict=True)):
            return None
        a = AuthIn(s.durName, s.newer, online, self.config.bug)
        restamp = a != NO_LOG and not all(online) and self.config.bug != "NoRestampOnOfflineDir"
        return s._replace(starting=False, current=a, newer=a if restamp else s.newer)

    def FailDir(self, s: RMState, log: str) -> Iterator[RMState]:
        """An I/O error takes the dir holding ``log`` offline (or start-up finds it so): a swap
        under way is abandoned, the source serving on only while the future dir cannot yet
        have its live name (or not: the code also stops it when the error hit the rename
        itself); a log on the failed dir is no longer served."""
        i = _i(log)
        if log not in self.config.fail_dirs or s.offline[i]:
            return
        failed = s._replace(offline=_set(s.offline, i, True), locked=False)
        cut = s.current == log or (s.locked and (s.name[1] == LIVE or s.name[0] != LIVE))
        if not cut:
            yield failed
        if cut or s.locked:
            yield failed._replace(current=NO_LOG)

    def Repair(self, s: RMState, log: str) -> RMState | None:
        """A failed dir is back when the broker next starts."""
        i = _i(log)
        if s.up or not s.offline[i]:
            return None
        return s._replace(offline=_set(s.offline, i, False))

    def RestartMove(self, s: RMState) -> RMState | None:
        """A future dir renamed -delete (below the live log) is removed and the move starts
        again with a fresh, empty future log of the next generation."""
        if not s.up or s.locked or s.current != SRC or s.offline[1] or s.durName[1] != DELETE:
            return None
        return s._replace(name=(s.name[0], FUTURE), durName=(s.durName[0], FUTURE),
                          vol=(s.vol[0], 0), dur=(s.dur[0], 0), start=(s.start[0], 0), agree=0,
                          newer=FUT)

    def AdvanceHW(self, s: RMState) -> RMState | None:
        """The HW advances to the fsynced end of the log appends go to: acknowledged."""
        if not s.up or s.current == NO_LOG or s.acked >= s.dur[_i(s.current)]:
            return None
        return s._replace(acked=s.dur[_i(s.current)])

    def TruncateSource(self, s: RMState) -> RMState | None:
        """The source, a follower, truncates its last record (above the HW) after a leader
        change (with a new leader epoch); the future log follows in the same step (with its dir
        offline, when the copier resumes, by the leader epoch protocol, before any copy)."""
        if not s.up or s.locked or s.current != SRC or s.vol[0] <= s.acked:
            return None
        k = s.vol[0] - 1
        return s._replace(vol=(k, min(s.vol[1], k)), dur=(min(s.dur[0], k), min(s.dur[1], k)),
                          agree=min(s.agree, k))

    def RaiseStart(self, s: RMState) -> RMState | None:
        """DeleteRecords (or retention) raises the source's start offset, at most to the HW;
        it waits, like appends, while the swap holds the lock."""
        if not s.up or s.locked or s.current != SRC or s.start[0] >= s.acked:
            return None
        return s._replace(start=(s.start[0] + 1, s.start[1]))

    def FollowStart(self, s: RMState) -> RMState | None:
        """The copier raises the future log's start offset to the source's."""
        if not s.up or s.current != SRC or s.offline[1] or s.name[1] != FUTURE:
            return None
        if s.start[1] >= s.start[0]:
            return None
        return s._replace(start=(s.start[0], s.start[0]))

    # -- Next --------------------------------------------------------------------------------

    def actions(self) -> Sequence[Action]:
        def one(method: str) -> Action:
            fn = getattr(self, method)
            return Action(method, lambda s: _some(fn(_rm(s))))

        def per_log(method: str) -> Action:
            fn = getattr(self, method)
            return Action(method, lambda s: _each(fn(_rm(s), log) for log in LOGS))

        def per_log_each(method: str) -> Action:
            fn = getattr(self, method)
            return Action(method, lambda s: (t for log in LOGS for t in fn(_rm(s), log)))

        def flushes() -> Action:
            return Action("Flush", lambda s: (t for log in LOGS for t in self.Flush(_rm(s), log)))

        return [one("Append"), one("Copy"), flushes(), per_log("FsyncDir"),
                one("BeginSwap"), one("RenameFutureLive"), one("RenameSourceDelete"),
                one("EndSwap"), one("DeleteSource"), one("Crash"), one("Recover"),
                one("AdvanceHW"), one("TruncateSource"), one("RaiseStart"), one("FollowStart"),
                per_log_each("FailDir"), per_log("Repair"), one("Serve"), one("RestartMove")]

    # -- invariants --------------------------------------------------------------------------

    def TypeOK(self, s: State) -> bool:
        """Every variable within its type (the TLA+ ``TypeOK``)."""
        s = _rm(s)
        records = range(0, self.config.max_records + 1)
        names = (LIVE, FUTURE, DELETE, GONE)
        return (
            s.current in (SRC, FUT, NO_LOG)
            and all(v in records for v in (*s.vol, *s.dur, s.acked, s.agree, *s.start))
            and -self.config.max_records <= s.skew <= self.config.max_records
            and all(d <= v for d, v in zip(s.dur, s.vol, strict=True))
            and all(n in names for n in (*s.name, *s.durName))
            and s.newer in LOGS
        )

    def AtomicMoveSwap(self, s: State) -> bool:
        """One authoritative log on disk, holding every acked record (by identity); no late
        append; no record copied to an offset the source never had it at."""
        s = _rm(s)
        a = Authoritative(s.durName, s.newer, self.config.bug)
        if a == NO_LOG or s.dur[_i(a)] < s.acked:
            return False
        if a == FUT and s.current == SRC and s.agree < s.acked:
            return False  # an acknowledged source record is not in the future log
        if s.up and not s.locked and s.current not in (NO_LOG, a):
            return False
        if s.up and not s.starting and not any(s.offline) and s.current == NO_LOG:
            return False  # serving with every dir online, yet the partition is not served
        if s.lateAppend or s.misplaced:
            return False
        # nothing below a start offset the source was raised to is served after the swap
        return not (a == FUT and s.durName[0] != GONE and s.start[1] < s.start[0])

    def invariants(self) -> Sequence[Invariant]:
        table = {"TypeOK": self.TypeOK, "AtomicMoveSwap": self.AtomicMoveSwap}
        return [(name, table[name]) for name in self.config.invariants]

    def describe(self, s: State) -> str:
        s = _rm(s)
        head = ("up" if s.up else "DOWN (crashed)") + (", append lock held" if s.locked else "")
        head += ", starting" if s.starting else ""
        lines = [f"broker {head}; appends go to {s.current}; acked={s.acked}; authoritative on "
                 f"disk: {Authoritative(s.durName, s.newer, self.config.bug)}; in common: "
                 f"{s.agree}" + ("; src re-stamped to the newer generation" if s.newer == SRC
                                 else "")
                 + (f"; copier skew {s.skew}" if s.skew else "")
                 + ("; LATE APPEND" if s.lateAppend else "")
                 + ("; MISPLACED RECORD" if s.misplaced else "")]
        for i, (log, d) in enumerate(zip(LOGS, ("D1", "D2"), strict=True)):
            lines.append(f"{log} in {d}: name={s.name[i]} (on disk {s.durName[i]}), "
                         f"records={s.vol[i]} (fsynced {s.dur[i]})"
                         + (f", start {s.start[i]}" if s.start[i] else "")
                         + (f"; {d} OFFLINE" if s.offline[i] else ""))
        return "\n".join(lines)


_CURRENT = (SRC, FUT, NO_LOG)
"""``current`` as a digit: its position here."""

_NAMES = (LIVE, FUTURE, DELETE, GONE)
"""A dir name as a digit: its position here."""


def _rm(s: State) -> RMState:
    assert isinstance(s, RMState)
    return s


def _online(s: RMState) -> PerLog[bool]:
    return (not s.offline[0], not s.offline[1])


def _set(t: PerLog[T], i: int, v: T) -> PerLog[T]:
    """``[t EXCEPT ![i] = v]`` on a pair."""
    return (v, t[1]) if i == 0 else (t[0], v)


def _some(s: RMState | None) -> Iterator[State]:
    if s is not None:
        yield s


def _each(states: Iterable[RMState | None]) -> Iterator[State]:
    for s in states:
        if s is not None:
            yield s
