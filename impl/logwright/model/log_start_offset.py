"""The Python twin of spec/LogStartOffset.tla: log start offsets of one partition's replicas.

What it upholds: NoNewDataDeleted (nothing at or above the partition's high watermark is
deleted, logically or physically, HAZARDS 1) and NeverServeBelowLogStart (0 <= logStart <= HW <=
LEO on every replica, and an acknowledged DeleteRecords stays done across crashes, HAZARDS 8 and
12). Each TLA+ action has a method of the same name and parameters; read the TLA+ module for why
each action is shaped as it is, the comments here only point out where Python differs in form.

A state is a :class:`LogStartOffsetState`: per-replica tuples indexed by the replica's position in
the sorted ``replicas`` (TLA+'s functions over ``Replicas``), the ISR as a frozenset of ids.
The spec also offers the checker's batched fast path (:class:`~logwright.model.packed.PackedSpec`):
each action has a vectorized twin in :meth:`LogStartOffsetSpec.packed_successors`, and tests check
that both find the same states.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from logwright.model.cfg import parse_cfg
from logwright.model.core import Action, Invariant, State
from logwright.model.packed import Branch, Codes, Layout, Mask, PackedSpec

BUGS = ("RetentionIgnoresHW", "FollowerRaisesStartBeforeHW", "StartOffsetCheckpointLazy")
"""The bug switches of the module (``Bug`` in the .cfg), besides ``"none"``."""

EXPECTED_VIOLATION = {
    "RetentionIgnoresHW": "NoNewDataDeleted",
    "FollowerRaisesStartBeforeHW": "NeverServeBelowLogStart",
    "StartOffsetCheckpointLazy": "NeverServeBelowLogStart",
}
"""The invariant each bug switch must violate (the first one TLC checks that fails)."""


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
        if self.bug != "none" and self.bug not in BUGS:
            raise ValueError(f"unknown bug {self.bug!r}; known: none, {', '.join(BUGS)}")

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


class LogStartOffsetSpec(PackedSpec):
    """The executable twin of the LogStartOffset TLA+ module."""

    name = "LogStartOffset"

    def __init__(self, config: LogStartOffsetConfig | None = None) -> None:
        self.config = config if config is not None else LogStartOffsetConfig()
        cfg = self.config
        self.replicas = cfg.replicas
        self.L = cfg.replicas.index(cfg.leader)  # position of the leader
        self.followers = [i for i in range(len(cfg.replicas)) if i != self.L]
        self.bug = cfg.bug
        radix = cfg.max_offset + 1
        fields: list[tuple[str, int]] = []
        for i in range(len(cfg.replicas)):
            fields += [(f"leo{i}", radix), (f"hw{i}", radix), (f"logStart{i}", radix),
                       (f"segStart{i}", radix), (f"ckptStart{i}", radix), (f"isr{i}", 2)]
        fields += [("committed", radix), ("acked", radix)]
        self.layout = Layout(fields)

    @classmethod
    def from_cfg(cls, path: str | Path) -> LogStartOffsetSpec:
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

    # -- the packed fast path ------------------------------------------------------------------

    def encode(self, s: State) -> int:
        """The mixed-radix code of a state."""
        assert isinstance(s, LogStartOffsetState)
        values: dict[str, int] = {"committed": s.committed, "acked": s.acked}
        for i, r in enumerate(self.replicas):
            values.update({f"leo{i}": s.leo[i], f"hw{i}": s.hw[i], f"logStart{i}": s.logStart[i],
                           f"segStart{i}": s.segStart[i], f"ckptStart{i}": s.ckptStart[i],
                           f"isr{i}": int(r in s.isr)})
        return self.layout.pack(values)

    def decode(self, code: int) -> State:
        """The state of a code."""
        v = self.layout.unpack(code)
        n = range(len(self.replicas))
        return S(tuple(v[f"leo{i}"] for i in n), tuple(v[f"hw{i}"] for i in n),
                 tuple(v[f"logStart{i}"] for i in n), tuple(v[f"segStart{i}"] for i in n),
                 tuple(v[f"ckptStart{i}"] for i in n),
                 frozenset(self.replicas[i] for i in n if v[f"isr{i}"]), v["committed"],
                 v["acked"])

    def _columns(self, codes: Codes) -> dict[str, Codes]:
        return {name: self.layout.column(codes, name) for name in self.layout.names}

    def packed_successors(self, frontier: Codes) -> Iterable[Branch]:
        """Vectorized twins of the actions, in the order of :meth:`actions`."""
        import numpy as np

        w = self.layout.weight
        c = self._columns(frontier)
        L, seg_size = self.L, self.config.segment_size
        lazy = self.bug == "StartOffsetCheckpointLazy"
        n = len(self.replicas)
        everyone = np.arange(frontier.size, dtype=np.int64)
        action = 0

        def branch(mask: Mask | None, delta: Codes, b: int = 0) -> Branch:
            if mask is None:
                return Branch(action, b, everyone, frontier + delta)
            idx = np.flatnonzero(mask)
            return Branch(action, b, idx, frontier[idx] + delta[idx])

        def ckpt_delta(i: int, raised: Mask, new_start: Codes) -> Codes:
            if lazy:
                return np.zeros_like(new_start)
            return np.where(raised, new_start - c[f"ckptStart{i}"], 0) * w[f"ckptStart{i}"]

        # Append
        yield branch(c[f"leo{L}"] < self.config.max_offset,
                     np.full(frontier.size, w[f"leo{L}"], dtype=np.int64))
        action += 1
        # FollowerFetch(r)
        for i in range(n):
            if i != L:
                leo, hw, ls = c[f"leo{i}"], c[f"hw{i}"], c[f"logStart{i}"]
                oor = leo < c[f"logStart{L}"]
                new = c[f"logStart{L}"]
                new_hw = np.maximum(hw, np.minimum(c[f"hw{L}"], c[f"leo{L}"]))
                new_start = np.maximum(ls, np.minimum(c[f"logStart{L}"], new_hw))
                # Out of range: leo, logStart, segStart all become the leader's start offset.
                oor_hw = hw if self.bug == "FollowerRaisesStartBeforeHW" else new
                d_oor = ((new - leo) * w[f"leo{i}"] + (oor_hw - hw) * w[f"hw{i}"]
                         + (new - ls) * w[f"logStart{i}"]
                         + (new - c[f"segStart{i}"]) * w[f"segStart{i}"]
                         + ckpt_delta(i, np.ones_like(oor), new))
                d_in = ((c[f"leo{L}"] - leo) * w[f"leo{i}"] + (new_hw - hw) * w[f"hw{i}"]
                        + (new_start - ls) * w[f"logStart{i}"]
                        + ckpt_delta(i, new_start != ls, new_start))
                yield branch(None, np.where(oor, d_oor, d_in))
            action += 1
        # AdvanceHW
        big = self.config.max_offset + 1
        least = np.min(np.stack([np.where(c[f"isr{i}"] == 1, c[f"leo{i}"], big)
                                 for i in range(n)]), axis=0)
        yield branch(least > c[f"hw{L}"],
                     (least - c[f"hw{L}"]) * w[f"hw{L}"]
                     + (np.maximum(c["committed"], least) - c["committed"]) * w["committed"])
        action += 1
        # ShrinkIsr(r), ExpandIsr(r)
        for i in range(n):
            if i != L:
                yield branch((c[f"isr{i}"] == 1) & (c[f"leo{i}"] < c[f"leo{L}"]),
                             np.full(frontier.size, -w[f"isr{i}"], dtype=np.int64))
            action += 1
        for i in range(n):
            if i != L:
                yield branch((c[f"isr{i}"] == 0) & (c[f"leo{i}"] >= c[f"hw{L}"]),
                             np.full(frontier.size, w[f"isr{i}"], dtype=np.int64))
            action += 1
        # DeleteRecords(o)
        for o in range(self.config.max_offset + 1):
            ls = c[f"logStart{L}"]
            new_o = np.full(frontier.size, o, dtype=np.int64)
            yield branch((ls < o) & (o <= c[f"hw{L}"]),
                         (o - ls) * w[f"logStart{L}"]
                         + ckpt_delta(L, np.ones(frontier.size, dtype=bool), new_o))
            action += 1
        # AcknowledgeDeleteRecords
        lw = np.min(np.stack([c[f"logStart{i}"] for i in range(n)]), axis=0)
        yield branch(lw > c["acked"], (lw - c["acked"]) * w["acked"])
        action += 1
        # DeleteOldestSegment(r)
        for i in range(n):
            ls, nxt = c[f"logStart{i}"], c[f"segStart{i}"] + seg_size
            limit = c[f"leo{i}"] if self.bug == "RetentionIgnoresHW" else c[f"hw{i}"]
            new_start = np.maximum(ls, nxt)
            yield branch(nxt <= limit,
                         seg_size * w[f"segStart{i}"] + (new_start - ls) * w[f"logStart{i}"]
                         + ckpt_delta(i, new_start != ls, new_start))
            action += 1
        # CheckpointStartOffset(r)
        for i in range(n):
            ck, ls = c[f"ckptStart{i}"], c[f"logStart{i}"]
            yield branch(ck != ls, (ls - ck) * w[f"ckptStart{i}"])
            action += 1
        # CrashRestart(r): one branch per restored HW h, ascending as TLA+ enumerates start..hw
        for i in range(n):
            start = np.maximum(c[f"ckptStart{i}"], c[f"segStart{i}"])
            hw = c[f"hw{i}"]
            base = (start - c[f"logStart{i}"]) * w[f"logStart{i}"] - hw * w[f"hw{i}"]
            for h in range(self.config.max_offset + 1):
                yield branch((start <= h) & (h <= hw), base + h * w[f"hw{i}"], h)
            action += 1

    def packed_invariants(self, codes: Codes) -> Sequence[tuple[str, Mask]]:
        """The invariants on each code (TypeOK: the encoding keeps values in range by itself)."""
        import numpy as np

        c = self._columns(codes)
        n = range(len(self.replicas))
        type_ok = c[f"isr{self.L}"] == 1
        no_new: Mask = np.ones(codes.size, dtype=bool)
        never: Mask = np.ones(codes.size, dtype=bool)
        for i in n:
            ls, hw, leo = c[f"logStart{i}"], c[f"hw{i}"], c[f"leo{i}"]
            no_new &= (c[f"segStart{i}"] <= c["committed"]) & (ls <= c["committed"])
            never &= (ls <= hw) & (hw <= leo) & (c["acked"] <= ls)
        return [("TypeOK", type_ok), ("NoNewDataDeleted", no_new),
                ("NeverServeBelowLogStart", never)]

