"""The packed encoding of the LogStartOffset twin: its state as one mixed-radix
integer and each action as a vectorized step over a whole frontier (the checker's batched fast
path, :mod:`logwright.model.packed`).

What it upholds: the same states, counts and shortest traces as the readable twin
(:class:`~logwright.model.log_start_offset.twin.LogStartOffsetTwin`); tests compare the two engines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from logwright.model.core import State
from logwright.model.log_start_offset.twin import (
    LogStartOffsetConfig,
    LogStartOffsetState,
    LogStartOffsetTwin,
    S,
)
from logwright.model.packed import Branch, Codes, Layout, Mask, PackedSpec


class LogStartOffsetSpec(LogStartOffsetTwin, PackedSpec):
    """The LogStartOffset twin with the checker's batched fast path."""

    def __init__(self, config: LogStartOffsetConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        radix = cfg.max_offset + 1
        fields: list[tuple[str, int]] = []
        for i in range(len(cfg.replicas)):
            fields += [(f"leo{i}", radix), (f"hw{i}", radix), (f"logStart{i}", radix),
                       (f"segStart{i}", radix), (f"ckptStart{i}", radix), (f"isr{i}", 2)]
        fields += [("committed", radix), ("acked", radix)]
        self.layout = Layout(fields)

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

