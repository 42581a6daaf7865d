"""The Python twin of spec/FetcherFailure.tla: failed partitions in replica fetchers (KIP-461).

What it upholds: FailureContained. A failure (a storage error, or a fence at the partition's
current leader epoch) stays with its partition: every hosted partition that is not failed is in
its fetcher's partition states and that fetcher runs; a failed partition is not fetched; and a
failed partition failed at the leader epoch the broker now knows, so a newer leader epoch always
un-fails it and a stale fence never fails it (hazards 5 and 6). And, as a liveness property
(HealthyPartitionsFetch, checked by :mod:`logwright.model.liveness`), a partition that stays
healthy keeps completing fetches under weak fairness of each partition's fetch actions.

Each TLA+ action operator has a method of the same name that returns the successor state, or None
when the action is disabled; :meth:`FetcherFailureSpec.actions` enumerates their parameters as
``Next`` does. A state is a :class:`FFState`, one field per TLA+ variable in the module's order,
each a tuple indexed by partition (``p - 1``) or fetcher (``f - 1``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Self, TypeVar

from mypy_extensions import mypyc_attr

from logwright.model.cfg import parse_cfg
from logwright.model.core import Action, Invariant, InvariantPart, Spec, State
from logwright.model.fetcher_failure.bugs import BUG_TABLE
from logwright.model.liveness import Progress

T = TypeVar("T")

NOT_HOSTED = -1
"""``knownEpoch`` of a partition with no replica on this broker."""
NOT_FAILED = -1
"""``failedEpoch`` of a partition that is not in the failed set."""
NO_FETCH = -1
"""``inflight`` of a partition with no fetch request outstanding."""
assert NOT_HOSTED == NOT_FAILED == NO_FETCH == -1, "TypeOK bounds them as the integer below 0"

class FFState(NamedTuple):
    """One state of FetcherFailure: the TLA+ variables, in the module's order."""

    leaderEpoch: tuple[int, ...]
    knownEpoch: tuple[int, ...]
    fetching: tuple[bool, ...]
    failedEpoch: tuple[int, ...]
    inflight: tuple[int, ...]
    alive: tuple[bool, ...]


_PartitionAction = Callable[[FFState, int], FFState | None]
_Successors = Callable[[State], Iterator[State]]


@dataclass(frozen=True)
class FetcherFailureConfig:
    """The constants of FetcherFailure.tla, as a .cfg file assigns them."""

    num_partitions: int = 3
    num_fetchers: int = 2
    max_leader_epoch: int = 2
    bug: str = "none"
    invariants: tuple[str, ...] = ("TypeOK", "FailureContained")
    properties: tuple[str, ...] = ()
    """The temporal properties the .cfg lists (TLC checks them under ``Spec``'s fairness; the
    Python checker's :func:`logwright.model.liveness.check_liveness` on the twin)."""

    def __post_init__(self) -> None:
        BUG_TABLE.check(self.bug)
        if self.num_partitions < 1 or self.num_fetchers < 1 or self.max_leader_epoch < 0:
            raise ValueError("need a partition, a fetcher and a non-negative leader epoch bound")

    @classmethod
    def from_cfg(cls, path: str | Path) -> FetcherFailureConfig:
        """The constants of a FetcherFailure .cfg file (the one TLC reads)."""
        cfg = parse_cfg(path)
        k = cfg["constants"]
        return cls(
            num_partitions=int(k["NumPartitions"]),
            num_fetchers=int(k["NumFetchers"]),
            max_leader_epoch=int(k["MaxLeaderEpoch"]),
            bug=str(k["Bug"]),
            invariants=tuple(cfg["invariants"]),
            properties=tuple(cfg["properties"]),
        )


# Subclassed by Python classes the compiled build leaves as Python (the packed specs, the
# tests' twins): mypyc (the compiled build) refuses those without this; a no-op in Python.
@mypyc_attr(allow_interpreted_subclasses=True)
class FetcherFailureTwin(Spec):
    """Fetcher threads, their partitions, failures and the failed set of KIP-461.
    """

    name = "FetcherFailure"

    def __init__(self, config: FetcherFailureConfig | None = None) -> None:
        self.config = config or FetcherFailureConfig()
        self.partitions = range(1, self.config.num_partitions + 1)
        self.fetchers = range(1, self.config.num_fetchers + 1)

    @classmethod
    def from_cfg(cls, path: str | Path) -> Self:
        """The spec a FetcherFailure .cfg file describes."""
        return cls(FetcherFailureConfig.from_cfg(path))

    def FetcherOf(self, p: int) -> int:
        """The fetcher partition ``p`` is assigned to (fixed, as Kafka's hash is)."""
        return (p - 1) % self.config.num_fetchers + 1

    # -- Init ------------------------------------------------------------------------------

    def init_states(self) -> Iterable[State]:
        n, f = self.config.num_partitions, self.config.num_fetchers
        return [FFState((0,) * n, (NOT_HOSTED,) * n, (False,) * n, (NOT_FAILED,) * n,
                        (NO_FETCH,) * n, (False,) * f)]

    # -- actions, one method per TLA+ operator ---------------------------------------------

    def ElectLeader(self, s: FFState, p: int) -> FFState | None:
        """The controller elects a new leader for ``p``: its leader epoch goes up."""
        i = p - 1
        if s.leaderEpoch[i] >= self.config.max_leader_epoch:
            return None
        return s._replace(leaderEpoch=_set(s.leaderEpoch, i, s.leaderEpoch[i] + 1))

    def LeaderAndIsr(self, s: FFState, p: int) -> FFState | None:
        """A newer leader epoch for ``p``: un-fail it and add it to its (re)started fetcher."""
        i = p - 1
        if s.knownEpoch[i] >= s.leaderEpoch[i]:
            return None
        known = _set(s.knownEpoch, i, s.leaderEpoch[i])
        if self.config.bug == "NoUnfailOnNewEpoch" and s.failedEpoch[i] != NOT_FAILED:
            return s._replace(knownEpoch=known)
        return s._replace(knownEpoch=known,
                          failedEpoch=_set(s.failedEpoch, i, NOT_FAILED),
                          fetching=_set(s.fetching, i, True),
                          alive=_set(s.alive, self.FetcherOf(p) - 1, True))

    def FetchRequest(self, s: FFState, p: int) -> FFState | None:
        """``p``'s fetcher sends a fetch for ``p`` at its current leader epoch."""
        i = p - 1
        if not (s.fetching[i] and s.alive[self.FetcherOf(p) - 1] and s.inflight[i] == NO_FETCH):
            return None
        return s._replace(inflight=_set(s.inflight, i, s.knownEpoch[i]))

    def FetchOk(self, s: FFState, p: int) -> FFState | None:
        """The leader answers ``p``'s fetch with records (appended, or discarded if p left)."""
        i = p - 1
        if s.inflight[i] == NO_FETCH or s.inflight[i] != s.leaderEpoch[i]:
            return None
        return s._replace(inflight=_set(s.inflight, i, NO_FETCH))

    def FetchFenced(self, s: FFState, p: int) -> FFState | None:
        """FENCED_LEADER_EPOCH for ``p``: fail it only if the request's epoch is still current."""
        i = p - 1
        request_epoch = s.inflight[i]
        if request_epoch == NO_FETCH or request_epoch >= s.leaderEpoch[i]:
            return None
        current = request_epoch == s.knownEpoch[i]
        if self.config.bug == "StaleFenceStalls" and not (s.fetching[i] and current):
            return None  # the stale fence is dropped and the fetch stays outstanding
        t = s._replace(inflight=_set(s.inflight, i, NO_FETCH))
        if s.fetching[i] and (current or self.config.bug == "FenceWithStaleEpochFails"):
            return t._replace(failedEpoch=_set(s.failedEpoch, i, request_epoch),
                              fetching=_set(s.fetching, i, False))
        return t  # a stale fence: the fetcher simply fetches again at its newer epoch

    def StorageError(self, s: FFState, p: int) -> FFState | None:
        """``p``'s log dir fails under its fetcher: ``p`` alone fails, at its current epoch."""
        i, f = p - 1, self.FetcherOf(p) - 1
        if not (s.fetching[i] and s.alive[f]):
            return None
        t = s._replace(failedEpoch=_set(s.failedEpoch, i, s.knownEpoch[i]),
                       fetching=_set(s.fetching, i, False))
        if self.config.bug == "FailWholeFetcher":
            return t._replace(alive=_set(s.alive, f, False))
        return t

    def StopReplica(self, s: FFState, p: int) -> FFState | None:
        """``p``'s replica is removed: from the broker, its fetcher and the failed set."""
        i = p - 1
        if s.knownEpoch[i] == NOT_HOSTED:
            return None
        return s._replace(knownEpoch=_set(s.knownEpoch, i, NOT_HOSTED),
                          fetching=_set(s.fetching, i, False),
                          failedEpoch=_set(s.failedEpoch, i, NOT_FAILED))

    def ShutdownIdle(self, s: FFState, f: int) -> FFState | None:
        """A running fetcher with no partition left shuts down."""
        if not s.alive[f - 1]:
            return None
        if any(s.fetching[p - 1] for p in self.partitions if self.FetcherOf(p) == f):
            return None
        return s._replace(alive=_set(s.alive, f - 1, False))

    # -- Next --------------------------------------------------------------------------------

    def actions(self) -> Sequence[Action]:
        per_partition = (self.ElectLeader, self.LeaderAndIsr, self.FetchRequest, self.FetchOk,
                         self.FetchFenced, self.StorageError, self.StopReplica)
        out = [Action(fn.__name__, self._over_partitions(fn)) for fn in per_partition]
        out.append(Action("ShutdownIdle", self._shutdown_idle))
        return out

    def _over_partitions(self, fn: _PartitionAction) -> _Successors:
        def successors(s: State) -> Iterator[State]:
            assert isinstance(s, FFState)
            for p in self.partitions:
                t = fn(s, p)
                if t is not None:
                    yield t
        return successors

    def _shutdown_idle(self, s: State) -> Iterator[State]:
        assert isinstance(s, FFState)
        for f in self.fetchers:
            t = self.ShutdownIdle(s, f)
            if t is not None:
                yield t

    # -- invariants --------------------------------------------------------------------------

    def TypeOK(self, s: State) -> bool:
        """Every variable within its type (the TLA+ ``TypeOK``): each of
        :meth:`invariant_parts`' parts, one per variable."""
        assert isinstance(s, FFState)
        return all(ok(s) for _, ok in self._type_ok_parts)

    def _make_type_ok_parts(self) -> list[InvariantPart]:
        # Each epoch in 0..MaxLeaderEpoch, or (all but leaderEpoch) the "none" value -1, which
        # is the integer just below that range: for integers, bounds say it (the checker calls
        # this after every step, so a test per element is avoided). An epoch is an integer (a
        # boolean too, as in Python); a float is not, even 2.0.
        k, n = self.config, self.config.num_partitions
        top = k.max_leader_epoch

        def epochs(field: int, low: int) -> Callable[[Any], bool]:
            def ok(s: Any) -> bool:
                v = s[field]
                return (len(v) == n and {int, bool}.issuperset(map(type, v))
                        and min(v, default=0) >= low and max(v, default=0) <= top)
            return ok

        def flags(field: int, size: int) -> Callable[[Any], bool]:
            def ok(s: Any) -> bool:
                v = s[field]
                return len(v) == size and {bool}.issuperset(map(type, v))
            return ok

        index = FFState._fields.index
        parts: list[InvariantPart] = []
        for name in FFState._fields:
            i = index(name)
            ok = (epochs(i, 0) if name == "leaderEpoch" else flags(i, n) if name == "fetching"
                  else flags(i, k.num_fetchers) if name == "alive" else epochs(i, -1))
            parts.append((frozenset({name}), ok))
        return parts

    def FailureContained(self, s: State) -> bool:
        """A failure stays with its partition (see the module docstring)."""
        assert isinstance(s, FFState)
        for p in self.partitions:
            i = p - 1
            failed = s.failedEpoch[i] != NOT_FAILED
            if s.knownEpoch[i] != NOT_HOSTED and not failed and not s.fetching[i]:
                return False  # a healthy partition is no longer fetched
            if s.fetching[i] and not s.alive[self.FetcherOf(p) - 1]:
                return False  # a partition stranded in a dead fetcher
            if failed and (s.fetching[i] or s.failedEpoch[i] != s.knownEpoch[i]):
                return False  # a failed partition fetched, or failed at an older epoch
        return True

    def invariants(self) -> Sequence[Invariant]:
        table = {"TypeOK": self.TypeOK, "FailureContained": self.FailureContained}
        return [(name, table[name]) for name in self.config.invariants]

    def invariant_reads(self) -> Mapping[str, frozenset[str]]:
        """FailureContained reads neither ``leaderEpoch`` nor ``inflight``; TypeOK reads
        every variable."""
        return _READS

    def invariant_parts(self) -> Mapping[str, Sequence[InvariantPart]]:
        """TypeOK, one part per variable."""
        return {"TypeOK": self._type_ok_parts}

    # -- liveness (TLC checks it under Spec's fairness; logwright.model.liveness on the twin) --

    def Healthy(self, s: State, p: int) -> bool:
        """``p`` is hosted here and not failed."""
        assert isinstance(s, FFState)
        return s.knownEpoch[p - 1] != NOT_HOSTED and s.failedEpoch[p - 1] == NOT_FAILED

    def FetcherStep(self, s: State, p: int) -> list[State]:
        """What ``p``'s fetcher does for ``p`` (the disjunction Fairness is weakly fair to)."""
        assert isinstance(s, FFState)
        out = (self.FetchRequest(s, p), self.FetchOk(s, p), self.FetchFenced(s, p))
        return [t for t in out if t is not None]

    def HealthyPartitionsFetch(self) -> list[Progress]:
        """``\\A p : <>[]Healthy(p) => []<><<FetchOk(p)>>_vars`` under ``WF_vars(FetcherStep(p))``
        for every p: one :class:`Progress` instance per partition."""
        fairness = [(f"WF_vars(FetcherStep({q}))", self._fetcher_step(q))
                    for q in self.partitions]
        return [Progress("HealthyPartitionsFetch", f"p={p}", self._healthy(p),
                         self._fetch_ok(p), fairness) for p in self.partitions]

    def temporal_properties(self) -> list[Progress]:
        """The instances of every property the .cfg lists, in its order."""
        table = {"HealthyPartitionsFetch": self.HealthyPartitionsFetch}
        return [q for name in self.config.properties for q in table[name]()]

    def _healthy(self, p: int) -> Callable[[State], bool]:
        return lambda s: self.Healthy(s, p)

    def _fetcher_step(self, p: int) -> Callable[[State], list[State]]:
        return lambda s: self.FetcherStep(s, p)

    def _fetch_ok(self, p: int) -> Callable[[State], list[State]]:
        def steps(s: State) -> list[State]:
            assert isinstance(s, FFState)
            t = self.FetchOk(s, p)
            return [] if t is None else [t]
        return steps

    def describe(self, s: State) -> str:
        assert isinstance(s, FFState)
        lines = []
        for f in self.fetchers:
            members = [p for p in self.partitions if self.FetcherOf(p) == f]
            fetched = [p for p in members if s.fetching[p - 1]]
            lines.append(f"fetcher {f}: {'running' if s.alive[f - 1] else 'stopped'}, "
                         f"fetching partitions {fetched or 'none'}")
        for p in self.partitions:
            i = p - 1
            known = "not hosted" if s.knownEpoch[i] == NOT_HOSTED else str(s.knownEpoch[i])
            parts = [f"partition {p}: leaderEpoch={s.leaderEpoch[i]} knownEpoch={known}"]
            if s.failedEpoch[i] != NOT_FAILED:
                parts.append(f"FAILED at epoch {s.failedEpoch[i]}")
            if s.inflight[i] != NO_FETCH:
                parts.append(f"fetch in flight at epoch {s.inflight[i]}")
            lines.append(", ".join(parts))
        return "\n".join(lines)


def _set(t: tuple[T, ...], i: int, v: T) -> tuple[T, ...]:
    """``[t EXCEPT ![i] = v]`` on a tuple."""
    return (*t[:i], v, *t[i + 1:])


_READS = {"FailureContained": frozenset({"knownEpoch", "failedEpoch", "fetching", "alive"})}
