"""The packed encoding of the ReplicaMove twin: its state as one mixed-radix
integer and each action as a vectorized step over a whole frontier (the checker's batched fast
path, :mod:`logwright.model.packed`).

What it upholds: the same states, counts and shortest traces as the readable twin
(:class:`~logwright.model.replica_move.twin.ReplicaMoveTwin`); tests compare the two engines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from logwright.model.core import State
from logwright.model.packed import Branch, Codes, Mask, PackedSpec
from logwright.model.replica_move.twin import (
    _CURRENT,
    _NAMES,
    DELETE,
    FUT,
    FUTURE,
    GONE,
    LIVE,
    LOGS,
    NO_LOG,
    SRC,
    ReplicaMoveConfig,
    ReplicaMoveTwin,
    RMState,
    _rm,
)


class ReplicaMoveSpec(ReplicaMoveTwin, PackedSpec):
    """The ReplicaMove twin with the checker's batched fast path."""

    def __init__(self, config: ReplicaMoveConfig | None = None) -> None:
        super().__init__(config)
        records = self.config.max_records + 1
        fields = [("up", 2), ("current", len(_CURRENT)), ("locked", 2)]
        for i in range(len(LOGS)):
            fields += [(f"vol{i}", records), (f"dur{i}", records), (f"name{i}", len(_NAMES)),
                       (f"durName{i}", len(_NAMES))]
        # skew in -MaxRecords..MaxRecords, stored as skew + MaxRecords
        fields += [("acked", records), ("lateAppend", 2), ("agree", records),
                   ("skew", 2 * records - 1), ("misplaced", 2), ("start0", records),
                   ("start1", records), ("offline0", 2), ("offline1", 2), ("newer", len(LOGS)),
                   ("starting", 2)]
        self.use_layout(fields)

    # -- the packed fast path ----------------------------------------------------------------


    def encode(self, s: State) -> int:
        """The mixed-radix code of a state."""
        s = _rm(s)
        v = {"up": int(s.up), "current": _CURRENT.index(s.current), "locked": int(s.locked),
             "acked": s.acked, "lateAppend": int(s.lateAppend), "agree": s.agree,
             "skew": s.skew + self.config.max_records, "misplaced": int(s.misplaced),
             "start0": s.start[0], "start1": s.start[1], "offline0": int(s.offline[0]),
             "offline1": int(s.offline[1]), "newer": LOGS.index(s.newer),
             "starting": int(s.starting)}
        for i in range(len(LOGS)):
            v |= {f"vol{i}": s.vol[i], f"dur{i}": s.dur[i],
                  f"name{i}": _NAMES.index(s.name[i]), f"durName{i}": _NAMES.index(s.durName[i])}
        return self.layout.pack(v)

    def decode(self, code: int) -> State:
        """The state of a code."""
        v = self.layout.unpack(code)
        return RMState(up=bool(v["up"]), current=_CURRENT[v["current"]],
                       locked=bool(v["locked"]), vol=(v["vol0"], v["vol1"]),
                       dur=(v["dur0"], v["dur1"]), name=(_NAMES[v["name0"]], _NAMES[v["name1"]]),
                       durName=(_NAMES[v["durName0"]], _NAMES[v["durName1"]]),
                       acked=v["acked"], lateAppend=bool(v["lateAppend"]), agree=v["agree"],
                       skew=v["skew"] - self.config.max_records,
                       misplaced=bool(v["misplaced"]), start=(v["start0"], v["start1"]),
                       offline=(bool(v["offline0"]), bool(v["offline1"])),
                       newer=LOGS[v["newer"]], starting=bool(v["starting"]))

    def _authoritative(self, c: dict[str, Codes], online: tuple[Mask, Mask] | None = None
                       ) -> Codes:
        """AuthIn(durName, the logs ``online`` marks; None: every one) as a digit of
        ``current``, on each code."""
        import numpy as np

        fut, src, none = (_CURRENT.index(x) for x in (FUT, SRC, NO_LOG))
        live = _NAMES.index(LIVE)
        on = online if online is not None else (np.ones(len(c["up"]), dtype=bool),) * 2
        live_src = on[0] & (c["durName0"] == live)
        live_fut = on[1] & (c["durName1"] == live)
        lone: Codes | int = none
        if self.config.bug == "SeedRenameOrder":  # the seed's start-up promotes a lone future
            lone = np.where(on[1] & (c["durName1"] == _NAMES.index(FUTURE)), fut, none)
        newer_fut = c["newer"] == LOGS.index(FUT)
        first = np.where(newer_fut, live_fut, live_src)
        second = np.where(newer_fut, live_src, live_fut)
        a: Codes = np.where(first, np.where(newer_fut, fut, src),
                            np.where(second, np.where(newer_fut, src, fut), lone))
        return a

    def packed_successors(self, frontier: Codes) -> Iterable[Branch]:
        """Vectorized twins of the actions, in the order of :meth:`actions`; the per-log actions
        have one branch per log, ``src`` first."""
        import numpy as np

        bug, w = self.config.bug, self.layout.weight
        c = {name: self.layout.column(frontier, name) for name in self.layout.names}
        src, fut, none = (_CURRENT.index(x) for x in (SRC, FUT, NO_LOG))
        live, future, delete, gone = (_NAMES.index(x) for x in (LIVE, FUTURE, DELETE, GONE))
        up, locked, current = c["up"] == 1, c["locked"] == 1, c["current"]
        offline = (c["offline0"] == 1, c["offline1"] == 1)
        serving_src = up & (current == src)
        vol, dur = (c["vol0"], c["vol1"]), (c["dur0"], c["dur1"])
        name, dur_name = (c["name0"], c["name1"]), (c["durName0"], c["durName1"])
        a = self._authoritative(c)

        def branch(action: int, b: int, mask: Mask, delta: Codes | int) -> Branch:
            idx = np.flatnonzero(mask)
            d = delta[idx] if isinstance(delta, np.ndarray) else delta
            return Branch(action, b, idx, frontier[idx] + d)

        # Append: to vol[current] (the generic twin indexes "none" as fut, never reached up)
        to_src = current == src
        room = np.where(to_src, vol[0], vol[1]) < self.config.max_records
        unlocked = np.ones_like(up) if bug == "AppendDuringSwap" else ~locked
        late = (c["lateAppend"] == 1) | (current != a)
        yield branch(0, 0, up & (current != none) & unlocked & room,
                     np.where(to_src, w["vol0"], w["vol1"])
                     + (late - c["lateAppend"]) * w["lateAppend"])
        # Copy: from source offset vol[fut] + skew
        agree, misplaced, m = c["agree"], c["misplaced"], self.config.max_records
        skew = c["skew"] - m
        same = (skew == 0) & (agree == vol[1])
        reads = vol[1] + skew
        yield branch(1, 0, serving_src & ~offline[1] & (name[1] == future) & (vol[1] < m)
                     & (reads >= 0) & (reads < dur[0]),
                     w["vol1"] + same * w["agree"]
                     + ((skew != 0) & (misplaced == 0)) * w["misplaced"])
        # Flush(l), FsyncDir(l)
        for i in range(len(LOGS)):  # any longer prefix made durable, in the twin's order
            for d in range(1, m + 1):
                yield branch(2, i * m + d - 1, up & ~offline[i] & (dur[i] + d <= vol[i]),
                             d * w[f"dur{i}"])
        for i in range(len(LOGS)):
            yield branch(3, i, up & ~offline[i] & (dur_name[i] != name[i]),
                         (name[i] - dur_name[i]) * w[f"durName{i}"])
        # BeginSwap
        yield branch(4, 0, serving_src & ~locked & (name[1] == future) & ~offline[1]
                     & (c["newer"] == LOGS.index(FUT)) & (vol[1] == dur[0]), w["locked"])
        # RenameFutureLive
        start = (c["start0"], c["start1"])
        mask = up & locked & (name[1] == future) & (start[1] == start[0])
        if bug != "SwapBeforeCopyDone":
            mask &= vol[1] == vol[0]
        if bug != "SwapBeforeFlush" and bug != "SeedRenameOrder":
            mask &= dur[1] == vol[1]
        if bug == "SeedRenameOrder":
            mask &= dur_name[0] == delete
        yield branch(5, 0, mask, (live - future) * w["name1"])
        # RenameSourceDelete
        if bug == "SeedRenameOrder":
            ready = (name[1] == future) & (vol[1] == vol[0])
        else:
            ready = dur_name[1] == live
        yield branch(6, 0, up & locked & (name[0] == live) & ready, (delete - live) * w["name0"])
        # EndSwap
        yield branch(7, 0, up & locked & (dur_name[0] == delete) & (dur_name[1] == live),
                     (fut - current) * w["current"] - w["locked"])
        # DeleteSource
        yield branch(8, 0, up & ~locked & ~offline[0] & (dur_name[0] == delete),
                     (gone - name[0]) * w["name0"] + (gone - dur_name[0]) * w["durName0"]
                     - vol[0] * w["vol0"] - dur[0] * w["dur0"] - agree * w["agree"]
                     - start[0] * w["start0"])
        # Crash: only fsynced records and fsynced dir names survive
        crash = (-w["up"] + (none - current) * w["current"] - c["locked"] * w["locked"]
                 + (np.minimum(agree, np.minimum(dur[0], dur[1])) - agree) * w["agree"]
                 - skew * w["skew"] - c["starting"] * w["starting"])
        for i in range(len(LOGS)):
            crash = (crash + (dur[i] - vol[i]) * w[f"vol{i}"]
                     + (dur_name[i] - name[i]) * w[f"name{i}"])
        yield branch(9, 0, up, crash)
        # Recover, from the names on the online dirs: R1-R3 renames, fsynced by later FsyncDirs
        online = (~offline[0], ~offline[1])
        a_on = self._authoritative(c, online)
        recover: Codes = w["up"] + w["starting"] + 0 * skew
        if bug == "CopierResumesFromHW":
            resume = np.where(dur_name[1] == future, c["acked"] - dur[1], 0)
            recover = recover + (resume - skew) * w["skew"]
        else:
            recover = recover - skew * w["skew"]
        for i, log in enumerate(LOGS):
            stale_future = ((dur_name[i] == future) & (a_on != none)
                            & (c["newer"] != LOGS.index(log)))
            n = np.where(offline[i], dur_name[i],
                         np.where(a_on == _CURRENT.index(log), live,
                                  np.where((dur_name[i] == live) | stale_future, delete,
                                           dur_name[i])))
            recover = recover + (n - name[i]) * w[f"name{i}"]
        yield branch(10, 0, ~up, recover)
        # AdvanceHW: to the fsynced end of the log appends go to
        hw = np.where(current == src, dur[0], dur[1])
        yield branch(11, 0, up & (current != none) & (c["acked"] < hw),
                     (hw - c["acked"]) * w["acked"])
        # TruncateSource: the source's last record, the future log following
        k = vol[0] - 1
        truncate = -w["vol0"] + (np.minimum(agree, k) - agree) * w["agree"]
        truncate = (truncate + (np.minimum(vol[1], k) - vol[1]) * w["vol1"]
                    + (np.minimum(dur[0], k) - dur[0]) * w["dur0"]
                    + (np.minimum(dur[1], k) - dur[1]) * w["dur1"])
        yield branch(12, 0, up & ~locked & (current == src) & (vol[0] > c["acked"]), truncate)
        # RaiseStart, FollowStart
        yield branch(13, 0, up & ~locked & (current == src) & (start[0] < c["acked"]),
                     w["start0"])
        yield branch(14, 0, serving_src & ~offline[1] & (name[1] == future)
                     & (start[1] < start[0]), (start[0] - start[1]) * w["start1"])
        # FailDir(l): a swap under way abandoned; a log on the failed dir no longer served; in
        # the twin's order, per log: the source serving on (where it may), then stopped
        cut_swap = locked & ((name[1] == live) | (name[0] != live))
        for i, log in enumerate(LOGS):
            if log not in self.config.fail_dirs:
                continue
            cut = (current == _CURRENT.index(log)) | cut_swap
            fail = w[f"offline{i}"] - c["locked"] * w["locked"]
            yield branch(15, 2 * i, ~offline[i] & ~cut, fail)
            yield branch(15, 2 * i + 1, ~offline[i] & (cut | locked),
                         fail + (none - current) * w["current"])
        # Repair(l), while the broker is down
        for i in range(len(LOGS)):
            yield branch(16, i, ~up & offline[i], -w[f"offline{i}"])
        # Serve: once recovery's renames on the online dirs are durable; R6 re-stamps
        durable = ((offline[0] | (dur_name[0] == name[0]))
                   & (offline[1] | (dur_name[1] == name[1])))
        newer_of_a = np.where(a_on == fut, LOGS.index(FUT), LOGS.index(SRC))
        restamp = (a_on != none) & (offline[0] | offline[1])
        if bug == "NoRestampOnOfflineDir":
            restamp = np.zeros_like(restamp)
        yield branch(17, 0, up & (c["starting"] == 1) & durable,
                     -w["starting"] + (a_on - current) * w["current"]
                     + restamp * (newer_of_a - c["newer"]) * w["newer"])
        # RestartMove: a fresh, empty future log replaces the -delete one
        yield branch(18, 0, serving_src & ~locked & ~offline[1] & (dur_name[1] == delete),
                     (future - name[1]) * w["name1"] + (future - dur_name[1]) * w["durName1"]
                     - vol[1] * w["vol1"] - dur[1] * w["dur1"] - start[1] * w["start1"]
                     - agree * w["agree"] + (LOGS.index(FUT) - c["newer"]) * w["newer"])

    def packed_invariants(self, codes: Codes) -> Sequence[tuple[str, Mask]]:
        """The invariants on each code (TypeOK: the digits keep every other value in its type)."""
        import numpy as np

        c = {name: self.layout.column(codes, name) for name in self.layout.names}
        type_ok = (c["dur0"] <= c["vol0"]) & (c["dur1"] <= c["vol1"])
        a = self._authoritative(c)
        src, none = _CURRENT.index(SRC), _CURRENT.index(NO_LOG)
        durable = np.where(a == src, c["dur0"], c["dur1"]) >= c["acked"]
        appends_follow = ((c["up"] == 0) | (c["locked"] == 1) | (c["current"] == a)
                          | (c["current"] == none))
        served = ((c["up"] == 0) | (c["starting"] == 1) | (c["offline0"] == 1)
                  | (c["offline1"] == 1) | (c["current"] != none))
        fut = _CURRENT.index(FUT)
        same_records = (a != fut) | (c["current"] != src) | (c["agree"] >= c["acked"])
        gone = _NAMES.index(GONE)
        starts = (a != fut) | (c["durName0"] == gone) | (c["start1"] >= c["start0"])
        swap_ok = ((a != none) & durable & same_records & appends_follow & served
                   & (c["lateAppend"] == 0) & (c["misplaced"] == 0) & starts)
        table = {"TypeOK": type_ok, "AtomicMoveSwap": swap_ok}
        return [(name, table[name]) for name in self.config.invariants]


