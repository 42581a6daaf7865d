"""The packed encoding of the FetcherFailure twin: its state as one mixed-radix
integer and each action as a vectorized step over a whole frontier (the checker's batched fast
path, :mod:`logwright.model.packed`).

What it upholds: the same states, counts and shortest traces as the readable twin
(:class:`~logwright.model.fetcher_failure.twin.FetcherFailureTwin`); tests compare the two engines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from logwright.model.core import State
from logwright.model.fetcher_failure.twin import (
    NO_FETCH,
    NOT_FAILED,
    NOT_HOSTED,
    FetcherFailureConfig,
    FetcherFailureTwin,
    FFState,
)
from logwright.model.packed import Branch, Codes, Mask, PackedSpec


class FetcherFailureSpec(FetcherFailureTwin, PackedSpec):
    """The FetcherFailure twin with the checker's batched fast path.

    Each variable of each partition (fetcher) is
    one digit of a mixed-radix code, the epochs that may be -1 stored plus one.
    """

    def __init__(self, config: FetcherFailureConfig | None = None) -> None:
        super().__init__(config)
        epochs = self.config.max_leader_epoch + 1
        fields: list[tuple[str, int]] = []
        for i in range(self.config.num_partitions):
            fields += [(f"leaderEpoch{i}", epochs), (f"knownEpoch{i}", epochs + 1),
                       (f"fetching{i}", 2), (f"failedEpoch{i}", epochs + 1),
                       (f"inflight{i}", epochs + 1)]
        fields += [(f"alive{j}", 2) for j in range(self.config.num_fetchers)]
        self.use_layout(fields)

    # -- the packed fast path ----------------------------------------------------------------


    _SHIFTED = ("knownEpoch", "failedEpoch", "inflight")
    """Variables whose -1 is stored as digit 0."""

    def encode(self, s: State) -> int:
        """The mixed-radix code of a state."""
        assert isinstance(s, FFState)
        values: dict[str, int] = {}
        for i in range(self.config.num_partitions):
            values.update({f"leaderEpoch{i}": s.leaderEpoch[i],
                           f"knownEpoch{i}": s.knownEpoch[i] + 1,
                           f"fetching{i}": int(s.fetching[i]),
                           f"failedEpoch{i}": s.failedEpoch[i] + 1,
                           f"inflight{i}": s.inflight[i] + 1})
        values.update({f"alive{j}": int(a) for j, a in enumerate(s.alive)})
        return self.layout.pack(values)

    def decode(self, code: int) -> State:
        """The state of a code."""
        v = self.layout.unpack(code)
        n = range(self.config.num_partitions)
        return FFState(tuple(v[f"leaderEpoch{i}"] for i in n),
                       tuple(v[f"knownEpoch{i}"] - 1 for i in n),
                       tuple(bool(v[f"fetching{i}"]) for i in n),
                       tuple(v[f"failedEpoch{i}"] - 1 for i in n),
                       tuple(v[f"inflight{i}"] - 1 for i in n),
                       tuple(bool(v[f"alive{j}"]) for j in range(self.config.num_fetchers)))

    def _columns(self, codes: Codes) -> dict[str, Codes]:
        """Each variable's value (not digit) in each code."""
        out = {name: self.layout.column(codes, name) for name in self.layout.names}
        for name in out:
            if name.rstrip("0123456789") in self._SHIFTED:
                out[name] = out[name] - 1
        return out

    def packed_successors(self, frontier: Codes) -> Iterable[Branch]:
        """Vectorized twins of the actions, in the order of :meth:`actions`, one branch per
        partition (fetcher) in the order the generic actions enumerate them."""
        import numpy as np

        w, c, bug = self.layout.weight, self._columns(frontier), self.config.bug

        def branch(action: int, b: int, mask: Mask, delta: Codes) -> Branch:
            idx = np.flatnonzero(mask)
            return Branch(action, b, idx, frontier[idx] + delta[idx])

        parts = list(enumerate(self.partitions))
        for i in range(len(parts)):  # ElectLeader
            le = c[f"leaderEpoch{i}"]
            yield branch(0, i, le < self.config.max_leader_epoch,
                         np.full(frontier.size, w[f"leaderEpoch{i}"], dtype=np.int64))
        for i, p in parts:  # LeaderAndIsr
            le, known, failed = c[f"leaderEpoch{i}"], c[f"knownEpoch{i}"], c[f"failedEpoch{i}"]
            f = self.FetcherOf(p) - 1
            delta = (le - known) * w[f"knownEpoch{i}"]
            joins = ((NOT_FAILED - failed) * w[f"failedEpoch{i}"]
                     + (1 - c[f"fetching{i}"]) * w[f"fetching{i}"]
                     + (1 - c[f"alive{f}"]) * w[f"alive{f}"])
            if bug == "NoUnfailOnNewEpoch":
                joins = np.where(failed != NOT_FAILED, 0, joins)
            yield branch(1, i, known < le, delta + joins)
        for i, p in parts:  # FetchRequest
            f = self.FetcherOf(p) - 1
            inflight = c[f"inflight{i}"]
            mask = (c[f"fetching{i}"] == 1) & (c[f"alive{f}"] == 1) & (inflight == NO_FETCH)
            yield branch(2, i, mask, (c[f"knownEpoch{i}"] - inflight) * w[f"inflight{i}"])
        for i in range(len(parts)):  # FetchOk
            inflight = c[f"inflight{i}"]
            mask = (inflight != NO_FETCH) & (inflight == c[f"leaderEpoch{i}"])
            yield branch(3, i, mask, (NO_FETCH - inflight) * w[f"inflight{i}"])
        for i in range(len(parts)):  # FetchFenced
            inflight, fetching = c[f"inflight{i}"], c[f"fetching{i}"]
            mask = (inflight != NO_FETCH) & (inflight < c[f"leaderEpoch{i}"])
            current = (np.ones(frontier.size, dtype=bool) if bug == "FenceWithStaleEpochFails"
                       else inflight == c[f"knownEpoch{i}"])
            fails = (fetching == 1) & current
            if bug == "StaleFenceStalls":
                mask = mask & fails  # a stale fence is never handled
            delta = ((NO_FETCH - inflight) * w[f"inflight{i}"]
                     + np.where(fails, (inflight - c[f"failedEpoch{i}"]) * w[f"failedEpoch{i}"]
                                - w[f"fetching{i}"], 0))
            yield branch(4, i, mask, delta)
        for i, p in parts:  # StorageError
            f = self.FetcherOf(p) - 1
            mask = (c[f"fetching{i}"] == 1) & (c[f"alive{f}"] == 1)
            delta = ((c[f"knownEpoch{i}"] - c[f"failedEpoch{i}"]) * w[f"failedEpoch{i}"]
                     - w[f"fetching{i}"])
            if bug == "FailWholeFetcher":
                delta = delta - w[f"alive{f}"]
            yield branch(5, i, mask, delta)
        for i in range(len(parts)):  # StopReplica
            known = c[f"knownEpoch{i}"]
            delta = ((NOT_HOSTED - known) * w[f"knownEpoch{i}"]
                     - c[f"fetching{i}"] * w[f"fetching{i}"]
                     + (NOT_FAILED - c[f"failedEpoch{i}"]) * w[f"failedEpoch{i}"])
            yield branch(6, i, known != NOT_HOSTED, delta)
        for j, f in enumerate(self.fetchers):  # ShutdownIdle
            mask = c[f"alive{j}"] == 1
            for i, p in parts:
                if self.FetcherOf(p) == f:
                    mask = mask & (c[f"fetching{i}"] == 0)
            yield branch(7, j, mask, np.full(frontier.size, -w[f"alive{j}"], dtype=np.int64))

    def packed_invariants(self, codes: Codes) -> Sequence[tuple[str, Mask]]:
        """The invariants on each code (TypeOK: the encoding keeps every value in its type)."""
        import numpy as np

        c = self._columns(codes)
        contained: Mask = np.ones(codes.size, dtype=bool)
        for i, p in enumerate(self.partitions):
            known, failed = c[f"knownEpoch{i}"], c[f"failedEpoch{i}"]
            fetching, alive = c[f"fetching{i}"] == 1, c[f"alive{self.FetcherOf(p) - 1}"] == 1
            is_failed = failed != NOT_FAILED
            contained &= ~((known != NOT_HOSTED) & ~is_failed & ~fetching)
            contained &= ~(fetching & ~alive)
            contained &= ~(is_failed & (fetching | (failed != known)))
        table = {"TypeOK": np.ones(codes.size, dtype=bool), "FailureContained": contained}
        return [(name, table[name]) for name in self.config.invariants]


