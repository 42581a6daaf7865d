"""The Python twin of spec/LogStartOffset.tla: log start offsets and committed data of one
partition's replicas, across crashes and leader changes.

What it upholds: NoNewDataDeleted (nothing at or above the partition's high watermark is
deleted, logically or physically, hazard 1), NeverServeBelowLogStart (0 <= logStart <= HW <=
LEO on every replica, and no replica that can serve, the leader or an in-sync replica, has a
start offset below an acknowledged DeleteRecords, whatever crashed since, hazard 8 and 12) and
CommittedDataOnIsr (every in-sync replica holds every committed offset, so whoever is elected
next has them). A DeleteRecords waits in the leader's purgatory (``pending``) until the low
watermark over the leader and the replicas that are up (not ``down``) reaches its offset; the
correct model acknowledges it with the least DURABLE start offset of those replicas. The
TLA+ module's temporal properties (DurableStartMonotone, DeleteRecordsCompletes,
FollowerStartCatchesUp) are TLC's alone; :meth:`LogStartOffsetTwin.durable_start_monotone` is
the first one as a check of one step. Each TLA+ action has a method of the same name and
parameters; read the TLA+ module for why each action is shaped as it is, the comments here only
point out where Python differs in form.

A state is a :class:`LogStartOffsetState`: per-replica tuples indexed by the replica's position in
the sorted ``replicas`` (TLA+'s functions over ``Replicas``), the ISR as a frozenset of ids, the
leader as an id, and the fetch responses in flight (TLA+'s ``resp``) as one frozenset of
(replica, served LEO, served HW, served start offset). A fetch is two actions, ``ServeFetch``
and ``ApplyFetch``; :meth:`LogStartOffsetTwin.FollowerFetch` is both at once (not an action:
what a trace records as one fetch). Its packed numpy encoding (the checker's batched fast path) is
:mod:`logwright.model.log_start_offset.packed`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, Self

from mypy_extensions import mypyc_attr

from logwright.model.cfg import parse_cfg
from logwright.model.core import Action, Invariant, InvariantPart, Spec, State
from logwright.model.log_start_offset.bugs import BUG_TABLE

Response = tuple[int, int, int, int]
"""A fetch response in flight: (replica it goes to, served LEO, served HW, served start
offset)."""


@dataclass(frozen=True)
class LogStartOffsetConfig:
    """The module's CONSTANTS (``leader`` is the leader of the initial state)."""

    replicas: tuple[int, ...] = (1, 2)
    leader: int = 1
    max_offset: int = 3
    segment_size: int = 2
    bug: str = "none"

    def __post_init__(self) -> None:
        if tuple(sorted(set(self.replicas))) != self.replicas or not self.replicas:
            raise ValueError(f"replicas must be distinct ids in ascending order: {self.replicas}")
        if self.leader not in self.replicas:
            raise ValueError(f"leader {self.leader} is not among the replicas {self.replicas}")
        if self.max_offset < 0 or self.segment_size < 1:
            raise ValueError("need MaxOffset >= 0 and SegmentSize >= 1")
        BUG_TABLE.check(self.bug)

    @classmethod
    def from_cfg(cls, path: str | Path) -> LogStartOffsetConfig:
        """The constants of a TLC .cfg file (the same file TLC reads)."""
        c: dict[str, Any] = parse_cfg(path)["constants"]
        return cls(replicas=tuple(sorted(c["Replicas"])), leader=int(c["Leader"]),
                   max_offset=int(c["MaxOffset"]), segment_size=int(c["SegmentSize"]),
                   bug=str(c["Bug"]))


class LogStartOffsetState(NamedTuple):
    """The TLA+ variables; per-replica values indexed by the replica's position."""

    leo: tuple[int, ...]
    hw: tuple[int, ...]
    logStart: tuple[int, ...]
    segStart: tuple[int, ...]
    ckptStart: tuple[int, ...]
    flushed: tuple[int, ...]
    isr: frozenset[int]
    leader: int
    epochStart: int
    committed: int
    acked: int
    resp: frozenset[Response] = frozenset()
    """The fetch responses in flight, at most one per follower: (replica, the leader's LEO, HW
    and start offset when it served the fetch). TLA+'s ``resp[r]``, {} or one record, as one
    set of the replicas' records (empty, the default: none in flight)."""
    down: frozenset[int] = frozenset()
    """The replicas whose broker is down (never the leader; the default: none)."""
    pending: int = 0
    """The offset of the DeleteRecords waiting in the leader's purgatory, 0 when none (the
    default)."""
    isrFloor: int = 0
    """The leader's floor for ISR expansion: its durable start offset when its leadership began
    (or it restarted), raised to each low watermark it acknowledged (the default: 0)."""


S = LogStartOffsetState

Params = tuple[int, ...]


_READS = {
    "NoNewDataDeleted": frozenset({"segStart", "logStart", "committed"}),
    "NeverServeBelowLogStart": frozenset({"logStart", "hw", "leo", "acked", "isr"}),
    "CommittedDataOnIsr": frozenset({"leo", "committed", "isr"}),
}


def _set(t: tuple[int, ...], i: int, v: int) -> tuple[int, ...]:
    return (*t[:i], v, *t[i + 1:])


# Subclassed by Python classes the compiled build leaves as Python (the packed specs, the
# tests' twins): mypyc (the compiled build) refuses those without this; a no-op in Python.
@mypyc_attr(allow_interpreted_subclasses=True)
class LogStartOffsetTwin(Spec):
    """The executable twin of the LogStartOffset TLA+ module."""

    name = "LogStartOffset"

    def __init__(self, config: LogStartOffsetConfig | None = None) -> None:
        self.config = config if config is not None else LogStartOffsetConfig()
        cfg = self.config
        self.replicas = cfg.replicas
        self.bug = cfg.bug

    @classmethod
    def from_cfg(cls, path: str | Path) -> Self:
        """The spec with the constants of a TLC .cfg file."""
        return cls(LogStartOffsetConfig.from_cfg(path))

    # -- helpers (TLA+ operators) --------------------------------------------------------------

    def _ckpt_after_raise(self, s: S, i: int, new: int) -> tuple[int, ...]:
        """CkptAfterRaise: the checkpoint is written with the raise, unless the bug defers it."""
        if self.bug == "StartOffsetCheckpointLazy":
            return s.ckptStart
        return _set(s.ckptStart, i, new)

    def Counted(self, s: S) -> list[int]:
        """The positions of the replicas the low watermark counts: the leader and every replica
        that is up."""
        return [i for i, r in enumerate(self.replicas) if r not in s.down]

    def LowWatermark(self, s: S) -> int:
        """Kafka's low watermark: the least log start offset over the counted replicas."""
        return min(s.logStart[i] for i in self.Counted(s))

    @staticmethod
    def DurableStart(s: S, i: int) -> int:
        """The start offset replica position ``i`` restarts with: its checkpoint, or its first
        segment's base."""
        return max(s.ckptStart[i], s.segStart[i])

    def AckLowWatermark(self, s: S) -> int:
        """The low watermark a DeleteRecords is acknowledged with: the least durable start
        offset over the counted replicas (the bugs AckBeforeDurable and
        StartOffsetCheckpointLazy: Kafka's, in memory)."""
        if self.bug == "AckBeforeDurable" or self.bug == "StartOffsetCheckpointLazy":
            return self.LowWatermark(s)
        return min(self.DurableStart(s, i) for i in self.Counted(s))

    def HWLimit(self, s: S) -> int:
        """How far the leader may raise its HW: the least LEO in the ISR (bug: its own LEO)."""
        if self.bug == "HWIgnoresIsr":
            return s.leo[self.replicas.index(s.leader)]
        return min(s.leo[self.replicas.index(r)] for r in s.isr)

    # -- Init and the actions, in Next's order -------------------------------------------------

    def init_states(self) -> Iterable[State]:
        """Init: every replica empty at offset 0, every replica in the ISR."""
        zeros = (0,) * len(self.replicas)
        return [S(zeros, zeros, zeros, zeros, zeros, zeros, frozenset(self.replicas),
                  self.config.leader, 0, 0, 0)]

    def Append(self, s: S) -> S | None:
        """A producer appends one record to the leader."""
        L = self.replicas.index(s.leader)
        if s.leo[L] >= self.config.max_offset:
            return None
        return s._replace(leo=_set(s.leo, L, s.leo[L] + 1))

    @staticmethod
    def response_of(s: S, r: int) -> Response | None:
        """The response in flight to replica r (TLA+'s one element of ``resp[r]``), or None."""
        for m in s.resp:
            if m[0] == r:
                return m
        return None

    @staticmethod
    def _without_response(s: S, r: int) -> frozenset[Response]:
        return frozenset(m for m in s.resp if m[0] != r)

    def ServeFetch(self, s: S, r: int) -> S | None:
        """The leader serves follower r's fetch with its LEO, HW and start offset as they are
        now (one fetch in flight per follower)."""
        L = self.replicas.index(s.leader)
        if r == s.leader or r in s.down or self.response_of(s, r) is not None:
            return None
        return s._replace(resp=s.resp | {(r, s.leo[L], s.hw[L], s.logStart[L])})

    def ApplyFetch(self, s: S, r: int, o: int) -> S | None:
        """Follower r applies the response in flight to it, its LEO becoming o: below the
        served start offset, the full truncation (o is that offset; its segments are gone, so
        the new start offset is durable); otherwise o is any offset from its LEO up to the
        served LEO (TLA+ chooses o inside the action), its HW the served one clamped to
        [logStart, o] (it may go down), and its start offset raised in memory only
        (CheckpointStartOffset writes it)."""
        i = self.replicas.index(r)
        m = self.response_of(s, r)
        if r == s.leader or r in s.down or m is None:
            return None
        _, m_leo, m_hw, m_start = m
        resp = self._without_response(s, r)
        if s.leo[i] < m_start:
            if o != m_start:
                return None
            new = m_start
            hw = s.hw if self.bug == "FollowerRaisesStartBeforeHW" else _set(s.hw, i, new)
            return s._replace(leo=_set(s.leo, i, new), hw=hw, logStart=_set(s.logStart, i, new),
                              segStart=_set(s.segStart, i, new),
                              ckptStart=self._ckpt_after_raise(s, i, new),
                              flushed=_set(s.flushed, i, new), resp=resp)
        if not s.leo[i] <= o <= m_leo:
            return None
        new_hw = max(s.logStart[i], min(m_hw, o))
        new_start = max(s.logStart[i], min(m_start, new_hw))
        return s._replace(leo=_set(s.leo, i, o), hw=_set(s.hw, i, new_hw),
                          logStart=_set(s.logStart, i, new_start), resp=resp)

    def ApplyWholeFetch(self, s: S, r: int) -> S | None:
        """ApplyFetch of every record served (what the liveness's fairness asks of a fetch)."""
        m = self.response_of(s, r)
        if m is None:
            return None
        i = self.replicas.index(r)
        return self.ApplyFetch(s, r, m[3] if s.leo[i] < m[3] else m[1])

    def Stale(self, s: S, r: int) -> bool:
        """The response in flight to r cannot be applied: below its LEO."""
        m = self.response_of(s, r)
        i = self.replicas.index(r)
        return m is None or (m[3] <= s.leo[i] and m[1] < s.leo[i])

    def DropResponse(self, s: S, r: int) -> S | None:
        """The response in flight to r is lost, or dropped by r."""
        if self.response_of(s, r) is None:
            return None
        return s._replace(resp=self._without_response(s, r))

    def TruncateFollower(self, s: S, r: int, o: int) -> S | None:
        """Follower r truncates its log to o, where it diverges from the leader's: at least its
        HW (and the committed offset, in the ISR), at most the leader's LEO."""
        i, L = self.replicas.index(r), self.replicas.index(s.leader)
        if i == L or r in s.down or not s.hw[i] <= o < s.leo[i] or o > s.leo[L]:
            return None
        if r in s.isr and o < s.committed:
            return None
        return s._replace(leo=_set(s.leo, i, o), flushed=_set(s.flushed, i, min(s.flushed[i], o)))

    def FollowerFetch(self, s: S, r: int) -> S | None:
        """Not an action: a whole fetch at once, ServeFetch then ApplyFetch of every record
        served (with no other response in flight to r), then, unless the bug
        StartOffsetCheckpointLazy is on, CheckpointStartOffset of a raised start offset (the
        implementation writes it with the raise), as a trace records a follower's fetch. None
        when ServeFetch or ApplyFetch is not enabled."""
        served = self.ServeFetch(s._replace(resp=self._without_response(s, r)), r)
        if served is None:
            return None
        m = self.response_of(served, r)
        assert m is not None
        i = self.replicas.index(r)
        t = self.ApplyFetch(served, r, m[3] if s.leo[i] < m[3] else m[1])
        if t is None:
            return None
        if self.bug != "StartOffsetCheckpointLazy":
            t = self.CheckpointStartOffset(t, r) or t
        return t._replace(resp=s.resp)

    def AdvanceHW(self, s: S, h: int) -> S | None:
        """The leader raises its HW to h, at most the least LEO in the ISR (bug: its own LEO)."""
        L = self.replicas.index(s.leader)
        if not s.hw[L] < h <= self.HWLimit(s):
            return None
        return s._replace(hw=_set(s.hw, L, h), committed=max(s.committed, h))

    def ShrinkIsr(self, s: S, r: int) -> S | None:
        """The leader (or the controller) drops follower r from the ISR."""
        if r == s.leader or r not in s.isr:
            return None
        return s._replace(isr=s.isr - {r})

    def ExpandIsr(self, s: S, r: int) -> S | None:
        """The leader adds back follower r, up, caught up to its HW and its epoch's start
        offset, and (beyond Kafka) with its durable start offset at least the leader's
        isrFloor."""
        i, L = self.replicas.index(r), self.replicas.index(s.leader)
        if r in s.isr or r in s.down or s.leo[i] < s.hw[L] or s.leo[i] < s.epochStart:
            return None
        if self.DurableStart(s, i) < s.isrFloor:
            return None
        return s._replace(isr=s.isr | {r})

    def ElectLeader(self, s: S, r: int) -> S | None:
        """The controller makes in-sync replica r the leader (a clean election); a waiting
        DeleteRecords ends with NOT_LEADER_OR_FOLLOWER; its isrFloor starts at its durable start
        offset."""
        if r == s.leader or r not in s.isr:
            return None
        i = self.replicas.index(r)
        return s._replace(leader=r, epochStart=s.leo[i], resp=self._without_response(s, r),
                          pending=0, isrFloor=self.DurableStart(s, i))

    def DeleteRecords(self, s: S, o: int) -> S | None:
        """DeleteRecords(o) accepted by the leader (none waiting): its start offset rises to o,
        above it and at most its HW, and the request waits in the purgatory."""
        L = self.replicas.index(s.leader)
        if s.pending != 0 or not s.logStart[L] < o <= s.hw[L]:
            return None
        return s._replace(logStart=_set(s.logStart, L, o),
                          ckptStart=self._ckpt_after_raise(s, L, o), pending=o)

    def AcknowledgeDeleteRecords(self, s: S) -> S | None:
        """The waiting DeleteRecords is acknowledged with the low watermark, once that reaches
        its offset; the leader's isrFloor rises to it."""
        lw = self.AckLowWatermark(s)
        if s.pending == 0 or lw < s.pending:
            return None
        return s._replace(acked=max(s.acked, lw), pending=0, isrFloor=max(s.isrFloor, lw))

    def ExpireDeleteRecords(self, s: S) -> S | None:
        """The waiting DeleteRecords times out (REQUEST_TIMED_OUT): nothing acknowledged."""
        if s.pending == 0:
            return None
        return s._replace(pending=0)

    def DeleteOldestSegment(self, s: S, r: int) -> S | None:
        """Retention on replica r deletes its first segment, wholly below the HW (bug: LEO)."""
        i = self.replicas.index(r)
        nxt = s.segStart[i] + self.config.segment_size
        limit = s.leo[i] if self.bug == "RetentionIgnoresHW" else s.hw[i]
        if r in s.down or nxt > limit:
            return None
        new_start = max(s.logStart[i], nxt)
        ckpt = s.ckptStart if new_start == s.logStart[i] else self._ckpt_after_raise(s, i,
                                                                                     new_start)
        return s._replace(segStart=_set(s.segStart, i, nxt),
                          logStart=_set(s.logStart, i, new_start), ckptStart=ckpt)

    def CheckpointStartOffset(self, s: S, r: int) -> S | None:
        """Replica r writes its start offset to its checkpoint, when behind (a follower's raise,
        or the lazy bug's periodic checkpoint)."""
        i = self.replicas.index(r)
        if r in s.down or s.ckptStart[i] == s.logStart[i]:
            return None
        return s._replace(ckptStart=_set(s.ckptStart, i, s.logStart[i]))

    def Flush(self, s: S, r: int, f: int) -> S | None:
        """Replica r's records below f reach the disk (f above what was flushed, at most LEO)."""
        i = self.replicas.index(r)
        if r in s.down or not s.flushed[i] < f <= s.leo[i]:
            return None
        return s._replace(flushed=_set(s.flushed, i, f))

    def _recover(self, s: S, r: int, e: int, h: int) -> S | None:
        """Recover: replica r's durable state after a crash, records up to e kept and HW h
        loaded (None when e or h is out of its bounds)."""
        i = self.replicas.index(r)
        if not s.flushed[i] <= e <= s.leo[i] or (r in s.isr and e < s.committed):
            return None
        start = self.DurableStart(s, i)
        new_leo = max(e, start)
        if not start <= h <= min(s.hw[i], new_leo):
            return None
        seg = start if e < start else s.segStart[i]
        return s._replace(leo=_set(s.leo, i, new_leo), hw=_set(s.hw, i, h),
                          logStart=_set(s.logStart, i, start), segStart=_set(s.segStart, i, seg),
                          flushed=_set(s.flushed, i, new_leo),
                          epochStart=new_leo if r == s.leader else s.epochStart)

    def CrashRestart(self, s: S, r: int, e: int, h: int) -> S | None:
        """Replica r crashes and restarts at once with its durable state: its records up to e
        (at least what was flushed; an in-sync replica keeps every committed one), and HW h
        from a checkpoint, at most what remains. A leader's purgatory is lost, and its isrFloor
        starts again at its durable start offset.

        TLA+ chooses e and h inside the action (``\\E e ...: \\E h ...``); here they are
        parameters.
        """
        if r in s.down:
            return None
        t = self._recover(s, r, e, h)
        if t is None:
            return None
        leads = r == s.leader
        return t._replace(resp=self._without_response(s, r),
                          pending=0 if leads else s.pending,
                          isrFloor=(self.DurableStart(s, self.replicas.index(r)) if leads
                                    else s.isrFloor))

    def GoDown(self, s: S, r: int) -> S | None:
        """Follower r's broker goes down: out of the ISR and of the low watermark."""
        if r == s.leader or r in s.down:
            return None
        return s._replace(down=s.down | {r}, isr=s.isr - {r},
                          resp=self._without_response(s, r))

    def Restart(self, s: S, r: int, e: int, h: int) -> S | None:
        """Replica r's broker comes back with its durable state (records up to e, HW h),
        outside the ISR."""
        if r not in s.down:
            return None
        t = self._recover(s, r, e, h)
        return None if t is None else t._replace(down=s.down - {r})

    def _named_actions(self) -> list[tuple[str, Callable[..., S | None], list[Params]]]:
        """(label, method with the replica bound, the tuples of its other parameters in TLC's
        order of enumeration)."""
        one: list[Params] = [()]
        rs = list(self.replicas)
        offsets = range(self.config.max_offset + 1)
        by_offset: list[Params] = [(o,) for o in offsets]
        pairs: list[Params] = [(e, h) for e in offsets for h in offsets]
        out: list[tuple[str, Callable[..., S | None], list[Params]]] = [
            ("Append", self.Append, one)]
        out += [(f"ServeFetch({r})", partial(self.ServeFetch, r=r), one) for r in rs]
        out += [(f"ApplyFetch({r})", partial(self._apply_fetch, r), by_offset) for r in rs]
        out += [(f"DropResponse({r})", partial(self.DropResponse, r=r), one) for r in rs]
        out += [(f"TruncateFollower({r})", partial(self._truncate_follower, r), by_offset)
                for r in rs]
        out += [("AdvanceHW", self.AdvanceHW, by_offset)]
        out += [(f"ShrinkIsr({r})", partial(self.ShrinkIsr, r=r), one) for r in rs]
        out += [(f"ExpandIsr({r})", partial(self.ExpandIsr, r=r), one) for r in rs]
        out += [(f"ElectLeader({r})", partial(self.ElectLeader, r=r), one) for r in rs]
        out += [(f"DeleteRecords({o})", partial(self.DeleteRecords, o=o), one) for o in offsets]
        out += [("AcknowledgeDeleteRecords", self.AcknowledgeDeleteRecords, one)]
        out += [("ExpireDeleteRecords", self.ExpireDeleteRecords, one)]
        out += [(f"DeleteOldestSegment({r})", partial(self.DeleteOldestSegment, r=r), one)
                for r in rs]
        out += [(f"CheckpointStartOffset({r})", partial(self.CheckpointStartOffset, r=r), one)
                for r in rs]
        out += [(f"Flush({r})", partial(self._flush, r), by_offset) for r in rs]
        out += [(f"CrashRestart({r})", partial(self._crash_restart, r), pairs) for r in rs]
        out += [(f"GoDown({r})", partial(self.GoDown, r=r), one) for r in rs]
        out += [(f"Restart({r})", partial(self._restart, r), pairs) for r in rs]
        return out

    def _apply_fetch(self, r: int, s: S, o: int) -> S | None:
        return self.ApplyFetch(s, r, o)

    def _truncate_follower(self, r: int, s: S, o: int) -> S | None:
        return self.TruncateFollower(s, r, o)

    def _flush(self, r: int, s: S, f: int) -> S | None:
        return self.Flush(s, r, f)

    def _crash_restart(self, r: int, s: S, e: int, h: int) -> S | None:
        return self.CrashRestart(s, r, e, h)

    def _restart(self, r: int, s: S, e: int, h: int) -> S | None:
        return self.Restart(s, r, e, h)

    def actions(self) -> Sequence[Action]:
        """Next's disjuncts, one per action and replica, labelled as TLC labels them."""

        def successors(fn: Callable[..., S | None], values: list[Params],
                       s: State) -> Iterator[State]:
            assert isinstance(s, LogStartOffsetState)
            for v in values:
                t = fn(s, *v)
                if t is not None:
                    yield t

        return [Action(label, partial(successors, fn, values))
                for label, fn, values in self._named_actions()]

    # -- invariants ----------------------------------------------------------------------------

    def TypeOK(self, s: State) -> bool:
        """Every variable within its type: each of :meth:`invariant_parts`' parts (one per
        variable, and three that relate the leader, the ISR and the replicas down)."""
        assert isinstance(s, LogStartOffsetState)
        return all(ok(s) for _, ok in self._type_ok_parts)

    def _make_type_ok_parts(self) -> list[InvariantPart]:
        n, offsets = len(self.replicas), range(self.config.max_offset + 1)
        replicas = set(self.replicas)

        def per_replica(field: int) -> Callable[[Any], bool]:
            return lambda s: len(s[field]) == n and all(v in offsets for v in s[field])

        parts: list[tuple[tuple[str, ...], Callable[[Any], bool]]] = [
            ((name,), per_replica(S._fields.index(name)))
            for name in ("leo", "hw", "logStart", "segStart", "ckptStart", "flushed")]
        parts += [
            (("isr",), lambda s: s.isr <= replicas),
            (("leader",), lambda s: s.leader in self.replicas),
            (("leader", "isr"), lambda s: s.leader in s.isr),
            (("epochStart",), lambda s: s.epochStart in offsets),
            (("committed",), lambda s: s.committed in offsets),
            (("acked",), lambda s: s.acked in offsets),
            (("resp",), lambda s: all(m[0] in self.replicas and all(v in offsets for v in m[1:])
                                      for m in s.resp)
             and len({m[0] for m in s.resp}) == len(s.resp)),
            (("down",), lambda s: s.down <= replicas),
            (("leader", "down"), lambda s: s.leader not in s.down),
            (("isr", "down"), lambda s: not s.isr & s.down),
            (("pending",), lambda s: s.pending in offsets),
            (("isrFloor",), lambda s: s.isrFloor in offsets),
        ]
        return [(frozenset(reads), ok) for reads, ok in parts]

    def NoNewDataDeleted(self, s: State) -> bool:
        """Nothing at or above the partition's HW is deleted (start offset or segments)."""
        assert isinstance(s, LogStartOffsetState)
        return all(seg <= s.committed and ls <= s.committed
                   for seg, ls in zip(s.segStart, s.logStart, strict=True))

    def NeverServeBelowLogStart(self, s: State) -> bool:
        """0 <= logStart <= HW <= LEO everywhere, and no replica that can serve (the leader, or
        an in-sync replica, which may be elected) has a start offset below an acknowledged
        one."""
        assert isinstance(s, LogStartOffsetState)
        return (all(0 <= ls <= hw <= leo
                    for ls, hw, leo in zip(s.logStart, s.hw, s.leo, strict=True))
                and all(s.acked <= s.logStart[self.replicas.index(r)] for r in s.isr))

    def CommittedDataOnIsr(self, s: State) -> bool:
        """Every in-sync replica holds every committed offset: its log reaches the partition's
        HW (and, by NoNewDataDeleted, starts at or below it), so any leader elected next has
        every acknowledged record."""
        assert isinstance(s, LogStartOffsetState)
        return all(s.leo[self.replicas.index(r)] >= s.committed for r in s.isr)

    def durable_start_monotone(self, s: S, t: S) -> bool:
        """DurableStartMonotone on one step s -> t: no replica's durable start offset goes
        backwards."""
        return all(self.DurableStart(t, i) >= self.DurableStart(s, i)
                   for i in range(len(self.replicas)))

    def invariants(self) -> Sequence[Invariant]:
        """In the .cfg's order: TypeOK, NoNewDataDeleted, NeverServeBelowLogStart,
        CommittedDataOnIsr."""
        return [("TypeOK", self.TypeOK), ("NoNewDataDeleted", self.NoNewDataDeleted),
                ("NeverServeBelowLogStart", self.NeverServeBelowLogStart),
                ("CommittedDataOnIsr", self.CommittedDataOnIsr)]

    def invariant_reads(self) -> Mapping[str, frozenset[str]]:
        """What each invariant but TypeOK (every variable) reads."""
        return _READS

    def invariant_parts(self) -> Mapping[str, Sequence[InvariantPart]]:
        """TypeOK, one part per variable (and per relation between the leader, the ISR and
        the replicas down)."""
        return {"TypeOK": self._type_ok_parts}

    def describe(self, s: State) -> str:
        """One line per replica: its log as [segStart | logStart, HW, LEO), its checkpoint and
        what is flushed."""
        assert isinstance(s, LogStartOffsetState)
        isr = ",".join(str(r) for r in sorted(s.isr))
        lines = [f"leader {s.leader} (epoch start {s.epochStart})  ISR {{{isr}}}  partition HW "
                 f"(committed) {s.committed}  acknowledged low watermark {s.acked}"
                 + (f"  DeleteRecords({s.pending}) waiting" if s.pending else "")
                 + (f"  ISR floor {s.isrFloor}" if s.isrFloor else "")]
        for i, r in enumerate(self.replicas):
            role = ("leader  " if r == s.leader else
                    "down    " if r in s.down else "follower")
            lines.append(f"replica {r} {role}: first segment {s.segStart[i]}, log start "
                         f"{s.logStart[i]} (checkpoint {s.ckptStart[i]}), HW {s.hw[i]}, "
                         f"LEO {s.leo[i]} (flushed {s.flushed[i]})")
            m = self.response_of(s, r)
            if m is not None:
                lines.append(f"  response in flight to {r}: served LEO {m[1]}, HW {m[2]}, "
                             f"log start {m[3]}")
        return "\n".join(lines)
