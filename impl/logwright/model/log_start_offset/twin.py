"""The Python twin of spec/LogStartOffset.tla: log start offsets of one partition's replicas.

What it upholds: NoNewDataDeleted (nothing at or above the partition's high watermark is
deleted, logically or physically, hazard 1) and NeverServeBelowLogStart (0 <= logStart <= HW <=
LEO on every replica, and an acknowledged DeleteRecords stays done across crashes, hazard 8 and
12). Each TLA+ action has a method of the same name and parameters; read the TLA+ module for why
each action is shaped as it is, the comments here only point out where Python differs in form.

A state is a :class:`LogStartOffsetState`: per-replica tuples indexed by the replica's position in
the sorted ``replicas`` (TLA+'s functions over ``Replicas``), the ISR as a frozenset of ids.
Its packed numpy encoding (the checker's batched fast path) is
:mod:`logwright.model.log_start_offset.packed`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, Self

from logwright.model.cfg import parse_cfg
from logwright.model.core import Action, Invariant, Spec, State
from logwright.model.log_start_offset.bugs import BUG_TABLE


@dataclass(frozen=True)
class LogStartOffsetConfig:
    """The module's CONSTANTS."""

    replicas: tuple[int, ...] = (1, 2, 3)
    leader: int = 1
    max_offset: int = 4
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
    isr: frozenset[int]
    committed: int
    acked: int


S = LogStartOffsetState


def _set(t: tuple[int, ...], i: int, v: int) -> tuple[int, ...]:
    return (*t[:i], v, *t[i + 1:])


class LogStartOffsetTwin(Spec):
    """The executable twin of the LogStartOffset TLA+ module."""

    name = "LogStartOffset"

    def __init__(self, config: LogStartOffsetConfig | None = None) -> None:
        self.config = config if config is not None else LogStartOffsetConfig()
        cfg = self.config
        self.replicas = cfg.replicas
        self.L = cfg.replicas.index(cfg.leader)  # position of the leader
        self.followers = [i for i in range(len(cfg.replicas)) if i != self.L]
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

    def LowWatermark(self, s: S) -> int:
        """The least log start offset over all replicas."""
        return min(s.logStart)

    # -- Init and the actions, in Next's order -------------------------------------------------

    def init_states(self) -> Iterable[State]:
        """Init: every replica empty at offset 0, every replica in the ISR."""
        zeros = (0,) * len(self.replicas)
        return [S(zeros, zeros, zeros, zeros, zeros, frozenset(self.replicas), 0, 0)]

    def Append(self, s: S) -> S | None:
        """A producer appends one record to the leader."""
        L = self.L
        if s.leo[L] >= self.config.max_offset:
            return None
        return s._replace(leo=_set(s.leo, L, s.leo[L] + 1))

    def FollowerFetch(self, s: S, r: int) -> S | None:
        """Follower r (a replica id) fetches from the leader."""
        i, L = self.replicas.index(r), self.L
        if i == L:
            return None
        if s.leo[i] < s.logStart[L]:
            new = s.logStart[L]
            hw = s.hw if self.bug == "FollowerRaisesStartBeforeHW" else _set(s.hw, i, new)
            return s._replace(leo=_set(s.leo, i, new), hw=hw, logStart=_set(s.logStart, i, new),
                              segStart=_set(s.segStart, i, new),
                              ckptStart=self._ckpt_after_raise(s, i, new))
        new_hw = max(s.hw[i], min(s.hw[L], s.leo[L]))
        new_start = max(s.logStart[i], min(s.logStart[L], new_hw))
        ckpt = s.ckptStart if new_start == s.logStart[i] else self._ckpt_after_raise(s, i,
                                                                                     new_start)
        return s._replace(leo=_set(s.leo, i, s.leo[L]), hw=_set(s.hw, i, new_hw),
                          logStart=_set(s.logStart, i, new_start), ckptStart=ckpt)

    def AdvanceHW(self, s: S) -> S | None:
        """The leader advances its HW to the least LEO in the ISR."""
        L = self.L
        new_hw = min(s.leo[self.replicas.index(r)] for r in s.isr)
        if new_hw <= s.hw[L]:
            return None
        return s._replace(hw=_set(s.hw, L, new_hw), committed=max(s.committed, new_hw))

    def ShrinkIsr(self, s: S, r: int) -> S | None:
        """The leader drops follower r, lagging behind its LEO, from the ISR."""
        i = self.replicas.index(r)
        if i == self.L or r not in s.isr or s.leo[i] >= s.leo[self.L]:
            return None
        return s._replace(isr=s.isr - {r})

    def ExpandIsr(self, s: S, r: int) -> S | None:
        """The leader adds back follower r, caught up to its HW."""
        i = self.replicas.index(r)
        if i == self.L or r in s.isr or s.leo[i] < s.hw[self.L]:
            return None
        return s._replace(isr=s.isr | {r})

    def DeleteRecords(self, s: S, o: int) -> S | None:
        """DeleteRecords(o) on the leader: its start offset rises to o, at most its HW."""
        L = self.L
        if not s.logStart[L] < o <= s.hw[L]:
            return None
        return s._replace(logStart=_set(s.logStart, L, o),
                          ckptStart=self._ckpt_after_raise(s, L, o))

    def AcknowledgeDeleteRecords(self, s: S) -> S | None:
        """A DeleteRecords response reports a low watermark higher than any before."""
        lw = self.LowWatermark(s)
        if lw <= s.acked:
            return None
        return s._replace(acked=lw)

    def DeleteOldestSegment(self, s: S, r: int) -> S | None:
        """Retention on replica r deletes its first segment, wholly below the HW (bug: LEO)."""
        i = self.replicas.index(r)
        nxt = s.segStart[i] + self.config.segment_size
        limit = s.leo[i] if self.bug == "RetentionIgnoresHW" else s.hw[i]
        if nxt > limit:
            return None
        new_start = max(s.logStart[i], nxt)
        ckpt = s.ckptStart if new_start == s.logStart[i] else self._ckpt_after_raise(s, i,
                                                                                     new_start)
        return s._replace(segStart=_set(s.segStart, i, nxt),
                          logStart=_set(s.logStart, i, new_start), ckptStart=ckpt)

    def CheckpointStartOffset(self, s: S, r: int) -> S | None:
        """The periodic checkpoint of replica r's start offset, when behind."""
        i = self.replicas.index(r)
        if s.ckptStart[i] == s.logStart[i]:
            return None
        return s._replace(ckptStart=_set(s.ckptStart, i, s.logStart[i]))

    def CrashRestart(self, s: S, r: int, h: int) -> S | None:
        """Replica r crashes and restarts with its durable state and HW h from a checkpoint.

        TLA+ chooses h inside the action (``\\E h \\in start..hw[r]``); here it is a parameter.
        """
        i = self.replicas.index(r)
        start = max(s.ckptStart[i], s.segStart[i])
        if not start <= h <= s.hw[i]:
            return None
        return s._replace(logStart=_set(s.logStart, i, start), hw=_set(s.hw, i, h))

    def _crash_restart(self, r: int, s: S, h: int) -> S | None:
        return self.CrashRestart(s, r, h)

    def _named_actions(self) -> list[tuple[str, Callable[[S, int], S | None], range | list[int]]]:
        """(label, method with its parameters but the last bound, values of the last one)."""
        one = [0]
        rs = list(self.replicas)
        offsets = range(self.config.max_offset + 1)

        def plain(m: Callable[[S], S | None]) -> Callable[[S, int], S | None]:
            return lambda s, _: m(s)

        out: list[tuple[str, Callable[[S, int], S | None], range | list[int]]] = [
            ("Append", plain(self.Append), one)]
        out += [(f"FollowerFetch({r})", plain(partial(self.FollowerFetch, r=r)), one)
                for r in rs]
        out += [("AdvanceHW", plain(self.AdvanceHW), one)]
        out += [(f"ShrinkIsr({r})", plain(partial(self.ShrinkIsr, r=r)), one) for r in rs]
        out += [(f"ExpandIsr({r})", plain(partial(self.ExpandIsr, r=r)), one) for r in rs]
        out += [(f"DeleteRecords({o})", plain(partial(self.DeleteRecords, o=o)), one)
                for o in offsets]
        out += [("AcknowledgeDeleteRecords", plain(self.AcknowledgeDeleteRecords), one)]
        out += [(f"DeleteOldestSegment({r})", plain(partial(self.DeleteOldestSegment, r=r)), one)
                for r in rs]
        out += [(f"CheckpointStartOffset({r})", plain(partial(self.CheckpointStartOffset, r=r)),
                 one) for r in rs]
        out += [(f"CrashRestart({r})", partial(self._crash_restart, r), offsets) for r in rs]
        return out

    def actions(self) -> Sequence[Action]:
        """Next's disjuncts, one per action and parameter value, labelled as TLC labels them."""

        def successors(fn: Callable[[S, int], S | None], values: range | list[int],
                       s: State) -> Iterator[State]:
            assert isinstance(s, LogStartOffsetState)
            for v in values:
                t = fn(s, v)
                if t is not None:
                    yield t

        return [Action(label, partial(successors, fn, values))
                for label, fn, values in self._named_actions()]

    # -- invariants ----------------------------------------------------------------------------

    def TypeOK(self, s: State) -> bool:
        """Every variable within its type."""
        assert isinstance(s, LogStartOffsetState)
        n, offsets = len(self.replicas), range(self.config.max_offset + 1)
        per_replica = (s.leo, s.hw, s.logStart, s.segStart, s.ckptStart)
        return (all(len(f) == n and all(v in offsets for v in f) for f in per_replica)
                and s.isr <= set(self.replicas) and self.config.leader in s.isr
                and s.committed in offsets and s.acked in offsets)

    def NoNewDataDeleted(self, s: State) -> bool:
        """Nothing at or above the partition's HW is deleted (start offset or segments)."""
        assert isinstance(s, LogStartOffsetState)
        return all(seg <= s.committed and ls <= s.committed
                   for seg, ls in zip(s.segStart, s.logStart, strict=True))

    def NeverServeBelowLogStart(self, s: State) -> bool:
        """0 <= logStart <= HW <= LEO everywhere, and no start offset below an acknowledged one."""
        assert isinstance(s, LogStartOffsetState)
        return all(0 <= ls <= hw <= leo and s.acked <= ls
                   for ls, hw, leo in zip(s.logStart, s.hw, s.leo, strict=True))

    def invariants(self) -> Sequence[Invariant]:
        """In the .cfg's order: TypeOK, NoNewDataDeleted, NeverServeBelowLogStart."""
        return [("TypeOK", self.TypeOK), ("NoNewDataDeleted", self.NoNewDataDeleted),
                ("NeverServeBelowLogStart", self.NeverServeBelowLogStart)]

    def describe(self, s: State) -> str:
        """One line per replica: its log as [segStart | logStart, HW, LEO) and its checkpoint."""
        assert isinstance(s, LogStartOffsetState)
        isr = ",".join(str(r) for r in sorted(s.isr))
        lines = [f"ISR {{{isr}}}  partition HW (committed) {s.committed}  "
                 f"acknowledged low watermark {s.acked}"]
        for i, r in enumerate(self.replicas):
            role = "leader  " if i == self.L else "follower"
            lines.append(f"replica {r} {role}: first segment {s.segStart[i]}, log start "
                         f"{s.logStart[i]} (checkpoint {s.ckptStart[i]}), HW {s.hw[i]}, "
                         f"LEO {s.leo[i]}")
        return "\n".join(lines)


