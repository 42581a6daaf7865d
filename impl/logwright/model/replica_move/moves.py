"""The Python twin of spec/ReplicaMoves.tla: two partitions moving at once between the same two
log dirs of one broker, each a ReplicaMove, sharing what a broker's partitions share.

What it upholds: AtomicMoveSwap for each partition, with the broker's life (one crash, one
start-up for both: ``up``, ``starting``), its dirs (a dir fails under both: ``offline``) and a
dir's fsync (one fsync makes both partitions' renames in that dir durable) shared, and one
copier that moves the partitions one at a time in alphabetical order (p2's copy waits until p1's
future log is live on disk, or p1's move has nothing left to copy).

A state is an :class:`RMPair` of two :class:`~logwright.model.replica_move.twin.RMState`; the
shared fields are kept equal in both. Each partition's own action is ReplicaMove's on its half,
the other half unchanged; the shared ones are both halves' at once, every combination whose
shared fields agree (as TLA+'s conjunction of the two instances' actions).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple, Self

from logwright.model.core import Action, Invariant, Spec, State
from logwright.model.replica_move.twin import (
    LIVE,
    LOGS,
    ReplicaMoveConfig,
    ReplicaMoveTwin,
    RMState,
)

_OWN = ("Append", "Copy", "BeginSwap", "RenameFutureLive", "RenameSourceDelete", "EndSwap",
        "DeleteSource", "AdvanceHW", "TruncateSource", "RaiseStart", "FollowStart",
        "RestartMove")
"""A partition's own actions of one successor or none (``Flush`` is per log, any prefix)."""


class RMPair(NamedTuple):
    """One state of ReplicaMoves: each partition's ReplicaMove state."""

    p1: RMState
    p2: RMState


def _shared(s: RMState) -> tuple[bool, tuple[bool, bool], bool]:
    return s.up, s.offline, s.starting


class ReplicaMovesTwin(Spec):
    """Two ReplicaMove instances on one broker: shared life, dirs and dir fsyncs, one copier."""

    name = "ReplicaMoves"

    def __init__(self, config: ReplicaMoveConfig | None = None) -> None:
        self.config = config or ReplicaMoveConfig(max_records=1)
        self.one = ReplicaMoveTwin(self.config)

    @classmethod
    def from_cfg(cls, path: str | Path) -> Self:
        """The spec a ReplicaMoves .cfg file describes (ReplicaMove's constants)."""
        return cls(ReplicaMoveConfig.from_cfg(path))

    def init_states(self) -> Iterable[State]:
        (s,) = [t for t in self.one.init_states() if isinstance(t, RMState)]
        return [RMPair(s, s)]

    # -- actions ------------------------------------------------------------------------------

    @staticmethod
    def p1_copy_done(s: RMPair) -> bool:
        """The copier is past p1: its future log is live on disk, or it has nothing to copy."""
        return s.p1.durName[1] == LIVE or s.p1.durName[0] != LIVE

    def own(self, s: RMPair, which: int) -> Iterator[RMPair]:
        """Every step of one partition's own actions, the other's state unchanged."""
        mine = s[which]
        steps: list[RMState] = []
        for method in _OWN:
            if method == "Copy" and which == 1 and not self.p1_copy_done(s):
                continue
            t = getattr(self.one, method)(mine)
            if t is not None:
                steps.append(t)
        for log in LOGS:
            steps.extend(self.one.Flush(mine, log))
        for t in steps:
            yield RMPair(t, s.p2) if which == 0 else RMPair(s.p1, t)

    def FsyncDir(self, s: RMPair, log: str) -> RMPair | None:
        """One fsync of the dir holding ``log``: both partitions' names there become
        durable."""
        a, b = self.one.FsyncDir(s.p1, log), self.one.FsyncDir(s.p2, log)
        if a is None and b is None:
            return None
        return RMPair(a or s.p1, b or s.p2)

    def joint(self, s: RMPair, first: Iterable[RMState | None],
              second: Iterable[RMState | None]) -> Iterator[RMPair]:
        """Both partitions' steps at once, every pair whose shared fields agree."""
        seconds = [t for t in second if t is not None]
        for a in first:
            if a is None:
                continue
            for b in seconds:
                if _shared(a) == _shared(b):
                    yield RMPair(a, b)

    def actions(self) -> Sequence[Action]:
        one = self.one

        def pair(s: State) -> RMPair:
            assert isinstance(s, RMPair)
            return s

        def shared(method: str) -> Action:
            fn = getattr(one, method)
            return Action(method, lambda s: self.joint(pair(s), [fn(pair(s).p1)],
                                                       [fn(pair(s).p2)]))

        def per_dir(method: str) -> Action:
            fn = getattr(one, method)

            def steps(s: State) -> Iterator[RMPair]:
                for log in LOGS:
                    p = pair(s)
                    yield from self.joint(p, _listed(fn(p.p1, log)), _listed(fn(p.p2, log)))
            return Action(method, steps)

        def fsyncs(s: State) -> Iterator[RMPair]:
            for log in LOGS:
                t = self.FsyncDir(pair(s), log)
                if t is not None:
                    yield t

        return [Action("Own1", lambda s: self.own(pair(s), 0)),
                Action("Own2", lambda s: self.own(pair(s), 1)),
                Action("FsyncDir", fsyncs),
                shared("Crash"), shared("Recover"), shared("Serve"),
                per_dir("FailDir"), per_dir("Repair")]

    # -- invariants ---------------------------------------------------------------------------

    def TypeOK(self, s: State) -> bool:
        """Each partition's ``TypeOK``, and the shared fields equal in both."""
        assert isinstance(s, RMPair)
        return (self.one.TypeOK(s.p1) and self.one.TypeOK(s.p2)
                and _shared(s.p1) == _shared(s.p2))

    def AtomicMoveSwap(self, s: State) -> bool:
        """AtomicMoveSwap for each partition."""
        assert isinstance(s, RMPair)
        return self.one.AtomicMoveSwap(s.p1) and self.one.AtomicMoveSwap(s.p2)

    def invariants(self) -> Sequence[Invariant]:
        table = {"TypeOK": self.TypeOK, "AtomicMoveSwap": self.AtomicMoveSwap}
        return [(name, table[name]) for name in self.config.invariants]

    def describe(self, s: State) -> str:
        assert isinstance(s, RMPair)
        return "\n".join(f"p{i + 1}: " + self.one.describe(p).replace("\n", "\n    ")
                         for i, p in enumerate(s))


def _listed(t: Iterable[RMState] | RMState | None) -> list[RMState]:
    """A twin action's result as a list: one state, none, or every one it yields."""
    if t is None:
        return []
    if isinstance(t, RMState):
        return [t]
    return list(t)


__all__ = ["RMPair", "ReplicaMovesTwin"]
