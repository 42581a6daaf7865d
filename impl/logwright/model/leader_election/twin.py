"""The Python twin of spec/LeaderElection.tla: leader election with eligible leader replicas.

What it upholds: AckedRecordsSurvive. A leader that is up holds every record acknowledged to an
acks=all producer that some replica which acknowledged it still holds intact; only an unclean
election (``UncleanEnabled``, reported: the ghost ``lossReported``) may give such a record up.
The means (KIP-966 as logwright implements it, docs/cluster.md): the HW advances only while the
ISR has MinIsr members; a replica leaving a smaller ISR joins the ELR (it holds every
acknowledged record); a replica that may have lost unflushed records (a power loss, a failed
dir) leaves the ISR and the ELR when its broker registers or reports the failure; an ELR member
leads only when no ISR member is alive; and with the ISR and the ELR empty a recovery election
waits for every replica's report and picks the log with the longest prefix agreeing with the
lineage the controller recorded (the latest leader's log below its epoch's start; the HW
advances in an epoch only once it is recorded). Also LeaderInIsr, IsrElrDisjoint and
ElrOnlyBelowMinIsr.

Each TLA+ action operator has a method of the same name that returns the successor state, or None
when the action is disabled; :meth:`LeaderElectionTwin.actions` enumerates their parameters as
``Next`` does. The TLA+ operators ``Election`` (the controller's election, a record) and
``Elected`` (applying it) are methods too. A state is a :class:`LEState`, one field per TLA+
variable in the module's order; per-replica functions are tuples indexed like
``config.replicas`` (sorted, the assignment order). There is no packed encoding: the logs, the
reports and the acknowledged records with their sets of acknowledgers have no small fixed shape,
and the generic engine explores the .cfg's 2,426,891 states in minutes (so the test suite
compares it with TLC on LeaderElection_small.cfg, two replicas, and ``logwright verify`` on the
full .cfg).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Self, TypeVar

from logwright.model.cfg import parse_cfg
from logwright.model.core import Action, Invariant, Spec, State
from logwright.model.leader_election.bugs import BUG_TABLE

T = TypeVar("T")

NO_LEADER = 0
"""``leader`` of a partition with no leader (TLA+ ``NoLeader``)."""
NO_REPORT: tuple[int, ...] = ()
"""``recoveryLogEnds[r]`` of a replica that has not reported (TLA+ ``NoReport == <<>>``)."""
UP, CLEAN, UNCLEAN = "up", "clean", "unclean"
"""``proc[r]``: the process runs, or is down after a clean shutdown or an unclean one."""

Log = tuple[int, ...]
"""A replica's log: the leader epoch of each record, by offset (offset o at index o - 1)."""
Lineage = tuple[int, Log]
"""``lineage``: the latest leader epoch the controller recorded, and the epochs of that
leader's records below the epoch's start offset."""
AckedRecord = tuple[int, frozenset[int]]
"""``acked[o]``: the record's epoch, and the replicas that acknowledged it."""


class LEState(NamedTuple):
    """One state of LeaderElection: the TLA+ variables, in the module's order."""

    leader: int
    isr: frozenset[int]
    elr: frozenset[int]
    leaderEpoch: int
    recoveryLogEnds: tuple[tuple[int, ...], ...]
    lineage: Lineage
    alive: tuple[bool, ...]
    proc: tuple[str, ...]
    log: tuple[Log, ...]
    flushed: tuple[int, ...]
    cacheEpoch: tuple[int, ...]
    hw: int
    epochStartOffset: int
    acked: tuple[AckedRecord, ...]
    lossReported: bool


class ElectionResult(NamedTuple):
    """The record the TLA+ ``Election`` returns: leader, ISR, ELR, how, the reports kept."""

    l: int  # noqa: E741 - the TLA+ record's field name
    i: frozenset[int]
    e: frozenset[int]
    how: str
    ends: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class LeaderElectionConfig:
    """The constants of LeaderElection.tla, as a .cfg file assigns them."""

    replicas: tuple[int, ...] = (1, 2, 3)
    min_isr: int = 2
    max_records: int = 1
    max_epoch: int = 2
    unclean_enabled: bool = False
    bug: str = "none"
    invariants: tuple[str, ...] = ("TypeOK", "AckedRecordsSurvive", "LeaderInIsr",
                                   "IsrElrDisjoint", "ElrOnlyBelowMinIsr")

    def __post_init__(self) -> None:
        BUG_TABLE.check(self.bug)
        if not self.replicas or NO_LEADER in self.replicas:
            raise ValueError("need replicas, none of them 0 (NoLeader)")
        if self.min_isr < 1 or self.max_records < 0 or self.max_epoch < 1:
            raise ValueError("MinIsr >= 1, MaxRecords >= 0 and MaxEpoch >= 1")

    @classmethod
    def from_cfg(cls, path: str | Path) -> LeaderElectionConfig:
        """The constants of a LeaderElection .cfg file (the one TLC reads)."""
        cfg = parse_cfg(path)
        k = cfg["constants"]
        return cls(
            replicas=tuple(sorted(int(r) for r in k["Replicas"])),
            min_isr=int(k["MinIsr"]),
            max_records=int(k["MaxRecords"]),
            max_epoch=int(k["MaxEpoch"]),
            unclean_enabled=bool(k["UncleanEnabled"]),
            bug=str(k["Bug"]),
            invariants=tuple(cfg["invariants"]),
        )


_ReplicaAction = Callable[[LEState, int], LEState | None]


class LeaderElectionTwin(Spec):
    """One partition's replicas, their logs and crashes, and the controller's elections."""

    name = "LeaderElection"

    def __init__(self, config: LeaderElectionConfig | None = None) -> None:
        self.config = config or LeaderElectionConfig()
        self.replicas = self.config.replicas
        self._index = {r: i for i, r in enumerate(self.replicas)}

    @classmethod
    def from_cfg(cls, path: str | Path) -> Self:
        """The spec a LeaderElection .cfg file describes."""
        return cls(LeaderElectionConfig.from_cfg(path))

    # -- helpers (the TLA+ operators) --------------------------------------------------------

    def ix(self, r: int) -> int:
        """The index of replica ``r`` in the per-replica tuples."""
        return self._index[r]

    def LineageEpochAt(self, s: LEState, o: int) -> int:
        """The epoch of the record at offset ``o`` in the log of the lineage's leader."""
        epoch, below = s.lineage
        return below[o - 1] if o <= len(below) else epoch

    def LineagePrefix(self, s: LEState, log: Log) -> int:
        """How many leading records of ``log`` agree with the lineage."""
        for o, epoch in enumerate(log, start=1):
            if epoch != self.LineageEpochAt(s, o):
                return o - 1
        return len(log)

    def ReportOf(self, s: LEState, r: int, c: int) -> tuple[int, int, int]:
        """What ``r`` reports when its leader epoch cache's latest epoch is ``c``: <<how many
        leading records of its log agree with the lineage, c (0 when its log is empty), r's end
        offset>>."""
        log = s.log[self.ix(r)]
        return (self.LineagePrefix(s, log), c if log else 0, len(log))

    def LogEnd(self, s: LEState, r: int) -> tuple[int, int, int]:
        """:meth:`ReportOf` with the latest epoch of r's leader epoch cache."""
        return self.ReportOf(s, r, s.cacheEpoch[self.ix(r)])

    def FollowLeaderEpoch(self, s: LEState, new: Log, c: int) -> int:
        """The latest epoch of a follower's cache after a fetch from the leader left its log as
        ``new`` and its cache's latest epoch as ``c``: the leader's epoch once ``new`` reaches
        the offset that epoch began at (``epochStartOffset``) and ``c`` is below it, else ``c``
        (the implementation's ``_follow_epoch``)."""
        if len(new) >= s.epochStartOffset and c < s.leaderEpoch:
            return s.leaderEpoch
        return c

    def CommonPrefix(self, s: LEState, r: int, q: int) -> int:
        """How many leading records the logs of ``r`` and ``q`` share."""
        a, b = s.log[self.ix(r)], s.log[self.ix(q)]
        n = min(len(a), len(b))
        for i in range(n):
            if a[i] != b[i]:
                return i
        return n

    def Holds(self, s: LEState, r: int, o: int) -> bool:
        """``r``'s log holds the record acknowledged at offset ``o``, intact."""
        log = s.log[self.ix(r)]
        return len(log) >= o and log[o - 1] == s.acked[o - 1][0]

    def Held(self, s: LEState, o: int) -> bool:
        """Some replica that acknowledged the record at offset ``o`` still holds it."""
        return any(self.Holds(s, r, o) for r in s.acked[o - 1][1])

    # -- Init ------------------------------------------------------------------------------

    def init_states(self) -> Iterable[State]:
        n = len(self.replicas)
        first = min(self.replicas)
        cache = tuple(1 if r == first else 0 for r in self.replicas)
        return [LEState(first, frozenset(self.replicas), frozenset(), 1,
                        (NO_REPORT,) * n, (1, ()), (True,) * n, (UP,) * n, ((),) * n,
                        (0,) * n, cache, 0, 0, (), False)]

    # -- the controller's election -----------------------------------------------------------

    def Election(self, ld0: int, isr0: frozenset[int], elr0: frozenset[int],
                 ends0: tuple[tuple[int, ...], ...], alv: tuple[bool, ...]) -> ElectionResult:
        """The controller's election after a step (the TLA+ ``Election``; see the module)."""
        k, bug = self.config, self.config.bug

        def alive(r: int) -> bool:
            return alv[self.ix(r)]

        live_isr = frozenset(r for r in isr0 if alive(r))
        isr1 = isr0 if bug == "LastIsrMemberKept" and not live_isr else live_isr
        if bug == "LastIsrMemberKept":
            elr1: frozenset[int] = frozenset()
        elif len(isr1) < k.min_isr:
            elr1 = elr0 | (isr0 - isr1)
        else:
            elr1 = elr0
        live_elr = [r for r in elr1 if alive(r)]
        live = [r for r in self.replicas if alive(r)]
        ready = all(alive(r) and ends0[self.ix(r)] != NO_REPORT for r in self.replicas)
        if ld0 in isr1 and alive(ld0):
            lead, i, e, how = ld0, isr1, elr1, "isr"
        elif live_isr:
            lead, i, e, how = min(live_isr), isr1, elr1, "isr"
        elif live_elr:
            lead, i, e, how = min(live_elr), frozenset({min(live_elr)}), elr1, "elr"
        elif bug == "ElectOutsideEligible" and live:
            lead, i, e, how = min(live), frozenset({min(live)}), frozenset(), "outside"
        elif not elr1 and ready:
            best = max(self.replicas, key=lambda r: (ends0[self.ix(r)], -self.ix(r)))
            lead, i, e, how = best, frozenset({best}), frozenset(), "recovery"
        elif k.unclean_enabled and live:
            lead, i, e, how = min(live), frozenset({min(live)}), frozenset(), "unclean"
        else:
            lead, i, e, how = NO_LEADER, isr1, elr1, "none"
        elr2 = frozenset() if len(i) >= k.min_isr else e - i
        ends = ((NO_REPORT,) * len(self.replicas) if i or elr2 else ends0)
        return ElectionResult(lead, i, elr2, how, ends)

    def Elected(self, s: LEState, e: ElectionResult, t: LEState) -> LEState:
        """``t`` (the step's other new values, its ``cacheEpoch`` the TLA+ ``cache0``) with the
        election ``e`` applied (the TLA+ ``Elected``): a leader that is up takes up a new epoch,
        or its epoch when it starts, recording it in its cache at its log end."""
        bump = (e.l, e.i) != (s.leader, s.isr) and e.l != NO_LEADER
        epoch = s.leaderEpoch + 1 if bump else s.leaderEpoch
        hw = (min(s.hw, len(t.log[self.ix(e.l)])) if e.l != s.leader and e.l != NO_LEADER
              else s.hw)
        up = e.l != NO_LEADER and t.proc[self.ix(e.l)] == UP
        takes_up = up and (e.l != s.leader or epoch != s.leaderEpoch
                           or s.proc[self.ix(e.l)] != UP)
        cache, start = t.cacheEpoch, s.epochStartOffset if up else 0
        if takes_up:
            cache = _set(cache, self.ix(e.l), epoch)
            start = len(t.log[self.ix(e.l)])
        return t._replace(leader=e.l, isr=e.i, elr=e.e, recoveryLogEnds=e.ends,
                          leaderEpoch=epoch, hw=hw, cacheEpoch=cache, epochStartOffset=start,
                          lossReported=s.lossReported or e.how == "unclean")

    # -- actions, one method per TLA+ operator ---------------------------------------------

    def _leader_up(self, s: LEState) -> bool:
        return s.leader != NO_LEADER and s.proc[self.ix(s.leader)] == UP

    def Produce(self, s: LEState) -> LEState | None:
        """The leader appends a record in its epoch."""
        if not self._leader_up(s):
            return None
        i = self.ix(s.leader)
        if len(s.log[i]) >= self.config.max_records:
            return None
        return s._replace(log=_set(s.log, i, (*s.log[i], s.leaderEpoch)),
                          cacheEpoch=_set(s.cacheEpoch, i, max(s.cacheEpoch[i], s.leaderEpoch)))

    def Replicate(self, s: LEState, r: int) -> LEState | None:
        """Follower ``r`` truncates where it diverges from the leader (its cache dropping the
        epochs that begin at or after the cut) and copies its next record (whose epoch its
        cache records unless it knows a later one); then, once its log reaches the leader's
        epoch start offset, its cache records the leader's epoch (:meth:`FollowLeaderEpoch`).
        A fetch that changes only the cache is a step too."""
        if s.leader == NO_LEADER or r == s.leader or not self._leader_up(s):
            return None
        i = self.ix(r)
        if s.proc[i] != UP:
            return None
        c = self.CommonPrefix(s, r, s.leader)
        lead = s.log[self.ix(s.leader)]
        grows = c < len(lead)
        new = s.log[i][:c] + ((lead[c],) if grows else ())
        cut = (s.log[i][c - 1] if c else 0) if c < len(s.log[i]) else s.cacheEpoch[i]
        cache = self.FollowLeaderEpoch(s, new, max(cut, lead[c]) if grows else cut)
        if new == s.log[i] and cache == s.cacheEpoch[i]:
            return None
        return s._replace(log=_set(s.log, i, new),
                          flushed=_set(s.flushed, i, min(s.flushed[i], c)),
                          cacheEpoch=_set(s.cacheEpoch, i, cache))

    def Flush(self, s: LEState, r: int) -> LEState | None:
        """``r`` fsyncs its log."""
        i = self.ix(r)
        if s.proc[i] != UP or s.flushed[i] >= len(s.log[i]):
            return None
        return s._replace(flushed=_set(s.flushed, i, len(s.log[i])))

    def AdvanceHW(self, s: LEState) -> LEState | None:
        """The leader advances its HW over the ISR (only with MinIsr members, and once the
        controller recorded its epoch's lineage): the records below it are acknowledged, each by
        the ISR."""
        if not self._leader_up(s) or s.lineage[0] != s.leaderEpoch:
            return None
        if self.config.bug != "NoStrictMinIsr" and len(s.isr) < self.config.min_isr:
            return None
        h = min(self.CommonPrefix(s, r, s.leader) for r in s.isr)
        if h <= s.hw:
            return None
        lead = s.log[self.ix(s.leader)]
        acked = list(s.acked)
        for o in range(s.hw + 1, h + 1):
            if o > len(acked):
                acked.append((lead[o - 1], s.isr))
            elif acked[o - 1][0] != lead[o - 1]:
                acked[o - 1] = (lead[o - 1], s.isr)
        return s._replace(hw=h, acked=tuple(acked))

    def RecordLineage(self, s: LEState) -> LEState | None:
        """The leader tells the controller its log as it took up its epoch: the controller
        records the epochs of its records below the epoch's start offset as the lineage."""
        if not self._leader_up(s) or s.lineage[0] == s.leaderEpoch:
            return None
        below = s.log[self.ix(s.leader)][:s.epochStartOffset]
        return s._replace(lineage=(s.leaderEpoch, below))

    def ShrinkIsr(self, s: LEState, r: int) -> LEState | None:
        """The leader drops a lagging follower; below MinIsr it joins the ELR."""
        if not self._leader_up(s) or r not in s.isr or r == s.leader:
            return None
        if s.log[self.ix(r)] == s.log[self.ix(s.leader)]:
            return None
        isr = s.isr - {r}
        elr = (frozenset() if self.config.bug == "LastIsrMemberKept"
               or len(isr) >= self.config.min_isr else s.elr | {r})
        return s._replace(isr=isr, elr=elr)

    def IsrExpand(self, s: LEState, r: int) -> LEState | None:
        """The leader takes back a follower whose fetch offset reaches its HW and its epoch's
        start offset and that reports the leader's epoch as its cache's latest (it recorded it:
        FollowLeaderEpoch); the follower's log is then a prefix of the leader's (it truncated
        its divergent records before the fetch counted)."""
        if not self._leader_up(s) or r in s.isr or s.proc[self.ix(r)] != UP:
            return None
        end = len(s.log[self.ix(r)])
        if (self.CommonPrefix(s, r, s.leader) != end or end < s.hw
                or end < s.epochStartOffset
                or s.cacheEpoch[self.ix(r)] < s.leaderEpoch):
            return None
        isr = s.isr | {r}
        elr = frozenset() if len(isr) >= self.config.min_isr else s.elr - {r}
        return s._replace(isr=isr, elr=elr)

    def CleanShutdown(self, s: LEState, r: int) -> LEState | None:
        """``r``'s broker shuts down cleanly: its log flushed and kept whole."""
        i = self.ix(r)
        if s.proc[i] != UP:
            return None
        return s._replace(proc=_set(s.proc, i, CLEAN),
                          flushed=_set(s.flushed, i, len(s.log[i])),
                          epochStartOffset=0 if r == s.leader else s.epochStartOffset)

    def PowerLoss(self, s: LEState, r: int) -> LEState | None:
        """``r``'s broker loses power: the unflushed tail of its log is lost. Its leader epoch
        cache file, fsynced at every change, is kept; the next start-up keeps the latest epoch
        that begins at or before the log's end: the cache's latest if nothing was lost, else the
        first lost record's epoch (an epoch :meth:`FollowLeaderEpoch` recorded began at the log's
        end then, below its records). ``cacheEpoch`` takes it here (not read while ``r`` is
        down)."""
        i = self.ix(r)
        if s.proc[i] != UP:
            return None
        f = s.flushed[i]
        loaded = s.log[i][f] if f < len(s.log[i]) else s.cacheEpoch[i]
        return s._replace(proc=_set(s.proc, i, UNCLEAN),
                          log=_set(s.log, i, s.log[i][:f]),
                          cacheEpoch=_set(s.cacheEpoch, i, loaded),
                          epochStartOffset=0 if r == s.leader else s.epochStartOffset)

    def DirFailure(self, s: LEState, r: int) -> LEState | None:
        """``r``'s log dir fails: its log is gone, the controller takes it out of the ISR and
        the ELR at once and elects."""
        i = self.ix(r)
        if s.proc[i] != UP:
            return None
        alive = _set(s.alive, i, False)
        t = s._replace(proc=_set(s.proc, i, UNCLEAN), log=_set(s.log, i, ()),
                       flushed=_set(s.flushed, i, 0), alive=alive,
                       cacheEpoch=_set(s.cacheEpoch, i, 0))
        keep = self.config.bug == "LastIsrMemberKept" and s.isr == {r}
        e = self.Election(NO_LEADER if s.leader == r and not keep else s.leader,
                          s.isr if keep else s.isr - {r}, s.elr - {r},
                          _set(s.recoveryLogEnds, i, NO_REPORT), alive)
        return self.Elected(s, e, t)

    def FenceBroker(self, s: LEState, r: int) -> LEState | None:
        """The controller fences ``r``'s broker: its session expired."""
        i = self.ix(r)
        if not s.alive[i] or s.proc[i] == UP:
            return None
        alive = _set(s.alive, i, False)
        e = self.Election(s.leader, s.isr, s.elr, s.recoveryLogEnds, alive)
        return self.Elected(s, e, s._replace(alive=alive))

    def Register(self, s: LEState, r: int) -> LEState | None:
        """``r``'s broker registers: loading its log drops the cache's epochs that begin past
        the log's end and keeps one that begins exactly there (``cacheEpoch`` as a clean
        shutdown, a power loss or a dir failure left it); after an unclean shutdown it leaves
        the ISR and the ELR
        (unclean-shutdown detection); it reports its log end if the partition has no eligible
        replica left; then the election."""
        i = self.ix(r)
        if s.proc[i] == UP:
            return None
        bug = self.config.bug
        alive = _set(s.alive, i, True)
        damaged = s.proc[i] == UNCLEAN and bug != "DamagedReplicaKeptInIsr"
        keep = bug == "LastIsrMemberKept" and s.isr == {r}
        isr0 = s.isr - {r} if damaged and not keep else s.isr
        elr0 = s.elr - {r} if damaged else s.elr
        ld0 = NO_LEADER if s.leader == r and r not in isr0 else s.leader
        ends0 = (_set(s.recoveryLogEnds, i, self.ReportOf(s, r, s.cacheEpoch[i]))
                 if not isr0 and not elr0 else s.recoveryLogEnds)
        e = self.Election(ld0, isr0, elr0, ends0, alive)
        return self.Elected(s, e, s._replace(proc=_set(s.proc, i, UP), alive=alive))

    def ReportLogEnd(self, s: LEState, r: int) -> LEState | None:
        """A live replica of a partition with no eligible replica reports its log end."""
        i = self.ix(r)
        if s.isr or s.elr or not s.alive[i] or s.proc[i] != UP:
            return None
        end = self.LogEnd(s, r)
        if s.recoveryLogEnds[i] == end:
            return None
        e = self.Election(s.leader, s.isr, s.elr, _set(s.recoveryLogEnds, i, end), s.alive)
        return self.Elected(s, e, s)

    # -- Next --------------------------------------------------------------------------------

    PER_REPLICA = ("Replicate", "Flush", "ShrinkIsr", "IsrExpand", "CleanShutdown", "PowerLoss",
                   "DirFailure", "FenceBroker", "Register", "ReportLogEnd")
    """The actions with a replica parameter (``\\E r \\in Replicas``)."""

    def actions(self) -> Sequence[Action]:
        out = [Action("Produce", self._plain(self.Produce))]
        for name in ("Replicate", "Flush"):
            out.append(Action(name, self._over_replicas(getattr(self, name))))
        out.append(Action("AdvanceHW", self._plain(self.AdvanceHW)))
        out.append(Action("RecordLineage", self._plain(self.RecordLineage)))
        for name in self.PER_REPLICA[2:]:
            out.append(Action(name, self._over_replicas(getattr(self, name))))
        return out

    @staticmethod
    def _plain(fn: Callable[[LEState], LEState | None]) -> Callable[[State], Iterator[State]]:
        def successors(s: State) -> Iterator[State]:
            assert isinstance(s, LEState)
            t = fn(s)
            if t is not None:
                yield t
        return successors

    def _over_replicas(self, fn: _ReplicaAction) -> Callable[[State], Iterator[State]]:
        def successors(s: State) -> Iterator[State]:
            assert isinstance(s, LEState)
            for r in self.replicas:
                t = fn(s, r)
                if t is not None:
                    yield t
        return successors

    def constraint(self, s: State) -> bool:
        """The TLA+ ``EpochBound``: a state above MaxEpoch is checked, not expanded."""
        assert isinstance(s, LEState)
        return s.leaderEpoch <= self.config.max_epoch

    # -- invariants --------------------------------------------------------------------------

    def TypeOK(self, s: State) -> bool:
        """Every variable within its type (the TLA+ ``TypeOK``)."""
        assert isinstance(s, LEState)
        k, reps = self.config, set(self.replicas)
        epochs = range(1, k.max_epoch + 1)
        return (
            (s.leader == NO_LEADER or s.leader in reps)
            and s.isr <= reps and s.elr <= reps and 1 <= s.leaderEpoch <= k.max_epoch + 1
            and all(e == NO_REPORT or (len(e) == 3 and 0 <= e[0] <= k.max_records
                                       and 0 <= e[1] <= k.max_epoch
                                       and 0 <= e[2] <= k.max_records)
                    for e in s.recoveryLogEnds)
            and 1 <= s.lineage[0] <= k.max_epoch + 1
            and len(s.lineage[1]) <= k.max_records and all(e in epochs for e in s.lineage[1])
            and all(isinstance(a, bool) for a in s.alive)
            and all(p in (UP, CLEAN, UNCLEAN) for p in s.proc)
            and all(len(log) <= k.max_records and all(e in epochs for e in log)
                    for log in s.log)
            and all(0 <= f <= len(log) for f, log in zip(s.flushed, s.log, strict=True))
            and all(0 <= c <= k.max_epoch + 1 for c in s.cacheEpoch)
            and 0 <= s.hw <= k.max_records and 0 <= s.epochStartOffset <= k.max_records
            and len(s.acked) <= k.max_records
            and all(e in epochs and by <= reps for e, by in s.acked)
            and isinstance(s.lossReported, bool)
        )

    def AckedRecordsSurvive(self, s: State) -> bool:
        """A leader that is up holds every acknowledged record one of its acknowledgers still
        holds intact, unless an unclean election gave records up."""
        assert isinstance(s, LEState)
        if s.lossReported or s.leader == NO_LEADER or s.proc[self.ix(s.leader)] != UP:
            return True
        return all(self.Holds(s, s.leader, o) or not self.Held(s, o)
                   for o in range(1, len(s.acked) + 1))

    def LeaderInIsr(self, s: State) -> bool:
        """A leader is an ISR member."""
        assert isinstance(s, LEState)
        return s.leader == NO_LEADER or s.leader in s.isr

    def IsrElrDisjoint(self, s: State) -> bool:
        """No replica is in both the ISR and the ELR."""
        assert isinstance(s, LEState)
        return not s.isr & s.elr

    def ElrOnlyBelowMinIsr(self, s: State) -> bool:
        """The ELR is empty once the ISR has MinIsr members."""
        assert isinstance(s, LEState)
        return not s.elr or len(s.isr) < self.config.min_isr

    def invariants(self) -> Sequence[Invariant]:
        table = {"TypeOK": self.TypeOK, "AckedRecordsSurvive": self.AckedRecordsSurvive,
                 "LeaderInIsr": self.LeaderInIsr, "IsrElrDisjoint": self.IsrElrDisjoint,
                 "ElrOnlyBelowMinIsr": self.ElrOnlyBelowMinIsr}
        return [(name, table[name]) for name in self.config.invariants]

    def describe(self, s: State) -> str:
        assert isinstance(s, LEState)
        lead = "none (offline)" if s.leader == NO_LEADER else str(s.leader)
        lines = [f"controller: leader {lead}, epoch {s.leaderEpoch}, ISR {sorted(s.isr)}, "
                 f"ELR {sorted(s.elr)}, HW {s.hw}, epoch start {s.epochStartOffset}, "
                 f"lineage: epoch {s.lineage[0]} from {list(s.lineage[1])}"
                 + (", LOSS REPORTED (unclean election)" if s.lossReported else "")]
        for r in self.replicas:
            i = self.ix(r)
            report = s.recoveryLogEnds[i]
            parts = [f"replica {r}: {s.proc[i]}",
                     "alive" if s.alive[i] else "not alive (controller)",
                     f"log {list(s.log[i])} flushed {s.flushed[i]}",
                     f"epoch cache {s.cacheEpoch[i]}"]
            if report != NO_REPORT:
                parts.append(f"reported (agreeing prefix, last epoch, end) {report}")
            lines.append(", ".join(parts))
        for o, (epoch, by) in enumerate(s.acked, start=1):
            holders = [r for r in sorted(by) if self.Holds(s, r, o)]
            lines.append(f"acked offset {o} (epoch {epoch}) by {sorted(by)}, held by "
                         f"{holders or 'none of them'}")
        return "\n".join(lines)


class LeaderElectionSpec(LeaderElectionTwin):
    """The twin as the registry :data:`logwright.model.SPECS` and ``logwright verify`` use it
    (the name the other modules give their packed twin; this one has no packed encoding)."""


def _set(t: tuple[T, ...], i: int, v: T) -> tuple[T, ...]:
    """``[t EXCEPT ![i] = v]`` on a tuple."""
    return (*t[:i], v, *t[i + 1:])
