"""The packed encoding of the LogStartOffset twin: its state as one mixed-radix
integer and each action as a vectorized step over a whole frontier (the checker's batched fast
path, :mod:`logwright.model.packed`).

What it upholds: the same states, counts and shortest traces as the readable twin
(:class:`~logwright.model.log_start_offset.twin.LogStartOffsetTwin`); tests compare the two engines.
The leader is a variable, so each per-replica field is read as a (replica, state) matrix and the
leader's value picked from it per state.
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
from logwright.model.packed import Branch, Codes, Mask, PackedSpec

PER_REPLICA = ("leo", "hw", "logStart", "segStart", "ckptStart", "flushed")
RESPONSE = ("respLeo", "respHw", "respStart")
"""A response in flight to replica i: the flag ``resp<i>`` and these three (0 when none)."""


class LogStartOffsetSpec(LogStartOffsetTwin, PackedSpec):
    """The LogStartOffset twin with the checker's batched fast path."""

    def __init__(self, config: LogStartOffsetConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        radix = cfg.max_offset + 1
        fields: list[tuple[str, int]] = []
        for i in range(len(cfg.replicas)):
            fields += [(f"{name}{i}", radix) for name in PER_REPLICA] + [(f"isr{i}", 2)]
            fields += [(f"resp{i}", 2)] + [(f"{name}{i}", radix) for name in RESPONSE]
            fields += [(f"down{i}", 2)]
        fields += [("leader", len(cfg.replicas)), ("epochStart", radix), ("committed", radix),
                   ("acked", radix), ("pending", radix), ("isrFloor", radix)]
        self.use_layout(fields)

    # -- the packed fast path ------------------------------------------------------------------

    def encode(self, s: State) -> int:
        """The mixed-radix code of a state."""
        assert isinstance(s, LogStartOffsetState)
        values: dict[str, int] = {"leader": self.replicas.index(s.leader),
                                  "epochStart": s.epochStart, "committed": s.committed,
                                  "acked": s.acked, "pending": s.pending,
                                  "isrFloor": s.isrFloor}
        for i, r in enumerate(self.replicas):
            for name in PER_REPLICA:
                values[f"{name}{i}"] = getattr(s, name)[i]
            values[f"isr{i}"] = int(r in s.isr)
            values[f"down{i}"] = int(r in s.down)
            m = self.response_of(s, r)
            values[f"resp{i}"] = int(m is not None)
            for j, name in enumerate(RESPONSE):
                values[f"{name}{i}"] = m[j + 1] if m is not None else 0
        return self.layout.pack(values)

    def decode(self, code: int) -> State:
        """The state of a code."""
        v = self.layout.unpack(code)
        n = range(len(self.replicas))
        per = {name: tuple(v[f"{name}{i}"] for i in n) for name in PER_REPLICA}
        return S(per["leo"], per["hw"], per["logStart"], per["segStart"], per["ckptStart"],
                 per["flushed"], frozenset(self.replicas[i] for i in n if v[f"isr{i}"]),
                 self.replicas[v["leader"]], v["epochStart"], v["committed"], v["acked"],
                 frozenset((self.replicas[i], v[f"respLeo{i}"], v[f"respHw{i}"],
                            v[f"respStart{i}"]) for i in n if v[f"resp{i}"]),
                 frozenset(self.replicas[i] for i in n if v[f"down{i}"]), v["pending"],
                 v["isrFloor"])

    def _columns(self, codes: Codes) -> dict[str, Codes]:
        return {name: self.layout.column(codes, name) for name in self.layout.names}

    def packed_successors(self, frontier: Codes) -> Iterable[Branch]:
        """Vectorized twins of the actions, in the order of :meth:`actions`."""
        import numpy as np

        w = self.layout.weight
        c = self._columns(frontier)
        seg_size, max_offset = self.config.segment_size, self.config.max_offset
        lazy = self.bug == "StartOffsetCheckpointLazy"
        n = len(self.replicas)
        size = frontier.size
        everyone = np.arange(size, dtype=np.int64)
        ld = c["leader"]
        offsets = range(max_offset + 1)

        def of_leader(name: str) -> Codes:
            return np.stack([c[f"{name}{i}"] for i in range(n)])[ld, everyone]

        def set_leader(name: str, new: Codes) -> Codes:
            delta = np.zeros(size, dtype=np.int64)
            for i in range(n):
                delta += np.where(ld == i, (new - c[f"{name}{i}"]) * w[f"{name}{i}"], 0)
            return delta

        leo_l, hw_l, ls_l = of_leader("leo"), of_leader("hw"), of_leader("logStart")
        up = {i: c[f"down{i}"] == 0 for i in range(n)}
        durable = {i: np.maximum(c[f"ckptStart{i}"], c[f"segStart{i}"]) for i in range(n)}
        pending, floor = c["pending"], c["isrFloor"]
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
        yield branch(leo_l < max_offset, set_leader("leo", leo_l + 1))
        action += 1
        def clear(i: int) -> Codes:
            """The delta that removes the response in flight to replica i (0 when none)."""
            return -(c[f"resp{i}"] * w[f"resp{i}"]
                     + sum(c[f"{name}{i}"] * w[f"{name}{i}"] for name in RESPONSE))

        # ServeFetch(r)
        for i in range(n):
            yield branch((ld != i) & up[i] & (c[f"resp{i}"] == 0),
                         w[f"resp{i}"] + leo_l * w[f"respLeo{i}"] + hw_l * w[f"respHw{i}"]
                         + ls_l * w[f"respStart{i}"])
            action += 1
        # ApplyFetch(r): one branch per new LEO o, ascending
        for i in range(n):
            leo, hw, ls = c[f"leo{i}"], c[f"hw{i}"], c[f"logStart{i}"]
            fl = c[f"flushed{i}"]
            m_leo, m_hw, m_st = c[f"respLeo{i}"], c[f"respHw{i}"], c[f"respStart{i}"]
            ready = (ld != i) & up[i] & (c[f"resp{i}"] == 1)
            oor = leo < m_st
            gone = clear(i)
            # Out of range: leo, logStart, segStart, flushed become the served start offset.
            oor_hw = hw if self.bug == "FollowerRaisesStartBeforeHW" else m_st
            d_oor = ((m_st - leo) * w[f"leo{i}"] + (oor_hw - hw) * w[f"hw{i}"]
                     + (m_st - ls) * w[f"logStart{i}"]
                     + (m_st - c[f"segStart{i}"]) * w[f"segStart{i}"]
                     + ckpt_delta(i, np.ones_like(oor), m_st) + (m_st - fl) * w[f"flushed{i}"]
                     + gone)
            for o in offsets:
                new_hw = np.maximum(ls, np.minimum(m_hw, o))
                new_start = np.maximum(ls, np.minimum(m_st, new_hw))
                d_in = ((o - leo) * w[f"leo{i}"] + (new_hw - hw) * w[f"hw{i}"]
                        + (new_start - ls) * w[f"logStart{i}"] + gone)
                ok = ready & np.where(oor, m_st == o, (leo <= o) & (o <= m_leo))
                yield branch(ok, np.where(oor, d_oor, d_in), o)
            action += 1
        # DropResponse(r)
        for i in range(n):
            yield branch(c[f"resp{i}"] == 1, clear(i))
            action += 1
        # TruncateFollower(r): one branch per offset o truncated to, ascending
        for i in range(n):
            leo, hw, fl = c[f"leo{i}"], c[f"hw{i}"], c[f"flushed{i}"]
            in_isr = c[f"isr{i}"] == 1
            for o in offsets:
                yield branch((ld != i) & up[i] & (hw <= o) & (o < leo) & (o <= leo_l)
                             & ~(in_isr & (o < c["committed"])),
                             (o - leo) * w[f"leo{i}"] + (np.minimum(fl, o) - fl) * w[f"flushed{i}"],
                             o)
            action += 1
        # AdvanceHW: one branch per new HW h, ascending
        if self.bug == "HWIgnoresIsr":
            limit = leo_l
        else:
            big = max_offset + 1
            limit = np.min(np.stack([np.where(c[f"isr{i}"] == 1, c[f"leo{i}"], big)
                                     for i in range(n)]), axis=0)
        for h in offsets:
            yield branch((hw_l < h) & (h <= limit),
                         set_leader("hw", np.full(size, h, dtype=np.int64))
                         + (np.maximum(c["committed"], h) - c["committed"]) * w["committed"], h)
        action += 1
        # ShrinkIsr(r), ExpandIsr(r), ElectLeader(r)
        for i in range(n):
            yield branch((c[f"isr{i}"] == 1) & (ld != i),
                         np.full(size, -w[f"isr{i}"], dtype=np.int64))
            action += 1
        for i in range(n):
            yield branch((c[f"isr{i}"] == 0) & up[i] & (c[f"leo{i}"] >= hw_l)
                         & (c[f"leo{i}"] >= c["epochStart"]) & (durable[i] >= floor),
                         np.full(size, w[f"isr{i}"], dtype=np.int64))
            action += 1
        for i in range(n):
            yield branch((c[f"isr{i}"] == 1) & (ld != i),
                         (i - ld) * w["leader"]
                         + (c[f"leo{i}"] - c["epochStart"]) * w["epochStart"] + clear(i)
                         - pending * w["pending"] + (durable[i] - floor) * w["isrFloor"])
            action += 1
        # DeleteRecords(o)
        for o in offsets:
            new_o = np.full(size, o, dtype=np.int64)
            ckpt = np.zeros(size, dtype=np.int64)
            if not lazy:
                ckpt = set_leader("ckptStart", new_o)
            yield branch((pending == 0) & (ls_l < o) & (o <= hw_l),
                         set_leader("logStart", new_o) + ckpt + o * w["pending"])
            action += 1
        # AcknowledgeDeleteRecords: the least (durable, or with the bugs in-memory) start offset
        # over the replicas that are up
        big = max_offset + 1
        in_memory = self.bug == "AckBeforeDurable" or self.bug == "StartOffsetCheckpointLazy"
        lw = np.min(np.stack([np.where(up[i], c[f"logStart{i}"] if in_memory else durable[i],
                                       big) for i in range(n)]), axis=0)
        yield branch((pending != 0) & (lw >= pending),
                     (np.maximum(c["acked"], lw) - c["acked"]) * w["acked"]
                     + (np.maximum(floor, lw) - floor) * w["isrFloor"]
                     - pending * w["pending"])
        action += 1
        # ExpireDeleteRecords
        yield branch(pending != 0, -pending * w["pending"])
        action += 1
        # DeleteOldestSegment(r)
        for i in range(n):
            ls, nxt = c[f"logStart{i}"], c[f"segStart{i}"] + seg_size
            limit = c[f"leo{i}"] if self.bug == "RetentionIgnoresHW" else c[f"hw{i}"]
            new_start = np.maximum(ls, nxt)
            yield branch(up[i] & (nxt <= limit),
                         seg_size * w[f"segStart{i}"] + (new_start - ls) * w[f"logStart{i}"]
                         + ckpt_delta(i, new_start != ls, new_start))
            action += 1
        # CheckpointStartOffset(r)
        for i in range(n):
            ck, ls = c[f"ckptStart{i}"], c[f"logStart{i}"]
            yield branch(up[i] & (ck != ls), (ls - ck) * w[f"ckptStart{i}"])
            action += 1
        # Flush(r): one branch per new flushed offset f, ascending
        for i in range(n):
            fl = c[f"flushed{i}"]
            for f in offsets:
                yield branch(up[i] & (fl < f) & (f <= c[f"leo{i}"]), (f - fl) * w[f"flushed{i}"],
                             f)
            action += 1
        # CrashRestart(r), then GoDown(r), then Restart(r): one branch per (records kept e,
        # restored HW h), as TLA+ enumerates
        def recover(i: int) -> Iterable[tuple[int, Mask, Codes]]:
            """Recover(r)'s (branch number, enabled, delta) per (e, h)."""
            leo, hw, fl = c[f"leo{i}"], c[f"hw{i}"], c[f"flushed{i}"]
            start = durable[i]
            in_isr = c[f"isr{i}"] == 1
            for e in offsets:
                new_leo = np.maximum(e, start)
                ok_e = (fl <= e) & (e <= leo) & ~(in_isr & (e < c["committed"]))
                seg = np.where(e < start, start, c[f"segStart{i}"])
                base = ((new_leo - leo) * w[f"leo{i}"] + (start - c[f"logStart{i}"])
                        * w[f"logStart{i}"] + (seg - c[f"segStart{i}"]) * w[f"segStart{i}"]
                        + (new_leo - fl) * w[f"flushed{i}"] - hw * w[f"hw{i}"]
                        + np.where(ld == i, (new_leo - c["epochStart"]) * w["epochStart"], 0))
                top = np.minimum(hw, new_leo)
                for h in offsets:
                    yield (e * (max_offset + 1) + h, ok_e & (start <= h) & (h <= top),
                           base + h * w[f"hw{i}"])

        for i in range(n):
            lost = np.where(ld == i, -pending * w["pending"]
                            + (durable[i] - floor) * w["isrFloor"], 0) + clear(i)
            for b, ok, delta in recover(i):
                yield branch(up[i] & ok, delta + lost, b)
            action += 1
        for i in range(n):
            yield branch((ld != i) & up[i],
                         w[f"down{i}"] - c[f"isr{i}"] * w[f"isr{i}"] + clear(i))
            action += 1
        for i in range(n):
            for b, ok, delta in recover(i):
                yield branch(~up[i] & ok, delta - w[f"down{i}"], b)
            action += 1

    def packed_invariants(self, codes: Codes) -> Sequence[tuple[str, Mask]]:
        """The invariants on each code (TypeOK: the encoding keeps values in range by itself,
        but for the leader's membership of the ISR)."""
        import numpy as np

        c = self._columns(codes)
        n = range(len(self.replicas))
        everyone = np.arange(codes.size, dtype=np.int64)
        isr = np.stack([c[f"isr{i}"] for i in n])
        down = np.stack([c[f"down{i}"] for i in n])
        type_ok = (isr[c["leader"], everyone] == 1) & (down[c["leader"], everyone] == 0)
        for i in n:
            type_ok &= (c[f"isr{i}"] == 0) | (c[f"down{i}"] == 0)
        no_new: Mask = np.ones(codes.size, dtype=bool)
        never: Mask = np.ones(codes.size, dtype=bool)
        on_isr: Mask = np.ones(codes.size, dtype=bool)
        for i in n:
            ls, hw, leo = c[f"logStart{i}"], c[f"hw{i}"], c[f"leo{i}"]
            no_new &= (c[f"segStart{i}"] <= c["committed"]) & (ls <= c["committed"])
            never &= (ls <= hw) & (hw <= leo) & ((c[f"isr{i}"] == 0) | (c["acked"] <= ls))
            on_isr &= (c[f"isr{i}"] == 0) | (leo >= c["committed"])
        return [("TypeOK", type_ok), ("NoNewDataDeleted", no_new),
                ("NeverServeBelowLogStart", never), ("CommittedDataOnIsr", on_isr)]
