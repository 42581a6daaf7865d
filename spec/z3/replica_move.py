"""ReplicaMove (spec/ReplicaMove.tla) in Z3, over unbounded record counts.

The same machine as the TLA+ module and the Python twin, with no bound on appends (no
MaxRecords), so on the records written, fsynced, copied and acknowledged. Each action has the
TLA+ name; ``Flush`` and ``FsyncDir`` are split per log (``Flush[src]``...), as TLA+'s
``\\E l \\in Logs``. No abstraction is needed: the TLA+ state is already a handful of scalars.

Records by identity need no arrays here: every log is a prefix of one sequence until a crash
drops an unflushed tail, so the ghost ``agree`` (how many leading records the two logs share)
and ``misplaced`` (a record copied to another offset) say everything identity can.

Proof: k = 1 induction of AtomicMoveSwap with the strengthening :func:`strengthening` states
(unbounded: no bound on records, appends, crashes or dir failures), with the future log's dir
the one that may fail (``FailDirs = {"fut"}``, the .cfg TLC checks). Each bug switch: BMC finds
the shortest violating behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import z3
from logwright.model.core import ProofResult
from logwright.model.replica_move.bugs import BUG_TABLE

from .common import (
    ActionDef,
    TransitionSystem,
    TwinView,
    limits,
    prove_inductive,
    refute_bmc,
)

INVARIANTS = ("AtomicMoveSwap",)
SRC, FUT, NO_LOG = 0, 1, -1
"""Logs (TLA+ "src", "fut") and ``current`` while down ("none")."""
LIVE, FUTURE, DELETE, GONE = 0, 1, 2, 3
"""Dir names (TLA+ "live", "future", "delete", "none")."""
LOGS = {"src": SRC, "fut": FUT}

INT_VARS = ("current", "acked", "agree", "skew", "newer",
            *[f"{v}_{log}" for v in ("vol", "dur", "name", "durName", "start") for log in LOGS])
BOOL_VARS = ("up", "locked", "lateAppend", "misplaced", "starting",
             *[f"offline_{log}" for log in LOGS])

V = Mapping[str, Any]
Step = tuple[Any, dict[str, Any]]


def auth_in(s: V, online: Mapping[str, Any], prefix: str = "durName", bug: str = "none") -> Any:
    """R1 over the dirs ``online`` marks, on the dir names ``<prefix>_src``/``<prefix>_fut``: the
    live one of the higher generation (``newer``'s first), FUT, SRC or NO_LOG (with the seed's
    start-up rule, bug SeedRenameOrder, a lone future dir is FUT too)."""
    live = {log: z3.And(online[log], s[f"{prefix}_{log}"] == LIVE) for log in LOGS}
    lone = (z3.If(z3.And(online["fut"], s[f"{prefix}_fut"] == FUTURE), FUT, NO_LOG)
            if bug == "SeedRenameOrder" else NO_LOG)
    newer_fut = s["newer"] == FUT
    return z3.If(newer_fut,
                 z3.If(live["fut"], FUT, z3.If(live["src"], SRC, lone)),
                 z3.If(live["src"], SRC, z3.If(live["fut"], FUT, lone)))


def authoritative(s: V, prefix: str = "durName", bug: str = "none") -> Any:
    """R1 with every dir back: what the names on disk resolve to."""
    every = {log: z3.BoolVal(True) for log in LOGS}
    return auth_in(s, every, prefix, bug)


def _online(s: V) -> dict[str, Any]:
    return {log: z3.Not(s[f"offline_{log}"]) for log in LOGS}


def _min(a: Any, b: Any) -> Any:
    return z3.If(a < b, a, b)


def system(bug: str = "none", fail_dirs: tuple[str, ...] = ("fut",)) -> TransitionSystem:
    """The transition system with ``bug`` switched on (``"none"``: the correct model), the dirs
    of the logs ``fail_dirs`` names allowed to fail."""
    BUG_TABLE.check(bug)
    true, false = z3.BoolVal(True), z3.BoolVal(False)

    def init(s: V) -> Any:
        return z3.And(s["up"], s["current"] == SRC, z3.Not(s["locked"]),
                      *[s[f"{v}_{log}"] == 0 for v in ("vol", "dur") for log in LOGS],
                      s["name_src"] == LIVE, s["name_fut"] == FUTURE,
                      s["durName_src"] == LIVE, s["durName_fut"] == FUTURE,
                      s["acked"] == 0, z3.Not(s["lateAppend"]), s["agree"] == 0,
                      s["skew"] == 0, z3.Not(s["misplaced"]), s["start_src"] == 0,
                      s["start_fut"] == 0, s["newer"] == FUT, z3.Not(s["starting"]),
                      *[z3.Not(s[f"offline_{log}"]) for log in LOGS])

    def append(s: V, p: V) -> Step:
        allowed = true if bug == "AppendDuringSwap" else z3.Not(s["locked"])
        to_src = s["current"] == SRC
        return z3.And(s["up"], s["current"] != NO_LOG, allowed), {
            "vol_src": z3.If(to_src, s["vol_src"] + 1, s["vol_src"]),
            "vol_fut": z3.If(to_src, s["vol_fut"], s["vol_fut"] + 1),
            "lateAppend": z3.Or(s["lateAppend"], s["current"] != authoritative(s, bug=bug))}

    def copy(s: V, p: V) -> Step:
        same = z3.And(s["skew"] == 0, s["agree"] == s["vol_fut"])
        reads = s["vol_fut"] + s["skew"]
        return z3.And(s["up"], s["current"] == SRC, z3.Not(s["offline_fut"]),
                      s["name_fut"] == FUTURE, reads >= 0, reads < s["dur_src"]), {
            "vol_fut": s["vol_fut"] + 1,
            "agree": z3.If(same, s["agree"] + 1, s["agree"]),
            "misplaced": z3.Or(s["misplaced"], s["skew"] != 0)}

    def flush(log: str, s: V, p: V) -> Step:
        k = p["k"]  # any longer prefix made durable
        return z3.And(s["up"], z3.Not(s[f"offline_{log}"]), s[f"dur_{log}"] < k,
                      k <= s[f"vol_{log}"]), {f"dur_{log}": k}

    def fsync_dir(log: str, s: V, p: V) -> Step:
        return z3.And(s["up"], z3.Not(s[f"offline_{log}"]),
                      s[f"durName_{log}"] != s[f"name_{log}"]), {
            f"durName_{log}": s[f"name_{log}"]}

    def begin_swap(s: V, p: V) -> Step:
        return z3.And(s["up"], z3.Not(s["locked"]), s["current"] == SRC,
                      s["name_fut"] == FUTURE, z3.Not(s["offline_fut"]), s["newer"] == FUT,
                      s["vol_fut"] == s["dur_src"]), {"locked": true}

    def rename_future_live(s: V, p: V) -> Step:
        flushed = (true if bug == "SwapBeforeFlush" or bug == "SeedRenameOrder"
                   else s["dur_fut"] == s["vol_fut"])
        order = s["durName_src"] == DELETE if bug == "SeedRenameOrder" else true
        caught_up = true if bug == "SwapBeforeCopyDone" else s["vol_fut"] == s["vol_src"]
        return z3.And(s["up"], s["locked"], s["name_fut"] == FUTURE,
                      s["start_fut"] == s["start_src"], caught_up, flushed, order), {
            "name_fut": LIVE}

    def rename_source_delete(s: V, p: V) -> Step:
        if bug == "SeedRenameOrder":
            ready = z3.And(s["name_fut"] == FUTURE, s["vol_fut"] == s["vol_src"])
        else:
            ready = s["durName_fut"] == LIVE
        return z3.And(s["up"], s["locked"], s["name_src"] == LIVE, ready), {"name_src": DELETE}

    def end_swap(s: V, p: V) -> Step:
        return z3.And(s["up"], s["locked"], s["durName_fut"] == LIVE,
                      s["durName_src"] == DELETE), {"current": FUT, "locked": false}

    def delete_source(s: V, p: V) -> Step:
        return z3.And(s["up"], z3.Not(s["locked"]), z3.Not(s["offline_src"]),
                      s["durName_src"] == DELETE), {
            "name_src": GONE, "durName_src": GONE, "vol_src": 0, "dur_src": 0, "agree": 0,
            "start_src": 0}

    def crash(s: V, p: V) -> Step:
        return s["up"], {"up": false, "current": NO_LOG, "locked": false,
                         "vol_src": s["dur_src"], "vol_fut": s["dur_fut"],
                         "name_src": s["durName_src"], "name_fut": s["durName_fut"],
                         "agree": _min(s["agree"], _min(s["dur_src"], s["dur_fut"])),
                         "skew": 0, "starting": false}

    def recover(s: V, p: V) -> Step:
        a = auth_in(s, _online(s), bug=bug)

        def renamed(log: str, i: int) -> Any:
            d = s[f"durName_{log}"]
            stale = z3.Or(d == LIVE, z3.And(d == FUTURE, a != NO_LOG, s["newer"] != i))
            return z3.If(s[f"offline_{log}"], d, z3.If(a == i, LIVE, z3.If(stale, DELETE, d)))

        return z3.Not(s["up"]), {
            "up": true, "starting": true,
            **{f"name_{log}": renamed(log, i) for log, i in LOGS.items()},
            "skew": (z3.If(s["durName_fut"] == FUTURE, s["acked"] - s["dur_fut"], 0)
                     if bug == "CopierResumesFromHW" else 0)}

    def serve(s: V, p: V) -> Step:
        online = _online(s)
        a = auth_in(s, online, bug=bug)
        durable = [z3.Or(s[f"offline_{log}"], s[f"durName_{log}"] == s[f"name_{log}"])
                   for log in LOGS]
        restamp = (false if bug == "NoRestampOnOfflineDir"
                   else z3.And(a != NO_LOG, z3.Or(*[s[f"offline_{log}"] for log in LOGS])))
        return z3.And(s["up"], s["starting"], *durable), {
            "starting": false, "current": a, "newer": z3.If(restamp, a, s["newer"])}

    def fail_dir(log: str, s: V, p: V) -> Step:
        i = LOGS[log]
        cut = z3.Or(s["current"] == i,
                    z3.And(s["locked"], z3.Or(s["name_fut"] == LIVE, s["name_src"] != LIVE)))
        stop = z3.Or(cut, z3.And(s["locked"], p["stop"] == 1))  # the code's choice, or forced
        return z3.And(z3.Not(s[f"offline_{log}"]), z3.Or(p["stop"] == 0, p["stop"] == 1)), {
            f"offline_{log}": true, "locked": false,
            "current": z3.If(stop, NO_LOG, s["current"])}

    def repair(log: str, s: V, p: V) -> Step:
        return z3.And(z3.Not(s["up"]), s[f"offline_{log}"]), {f"offline_{log}": false}

    def restart_move(s: V, p: V) -> Step:
        return z3.And(s["up"], z3.Not(s["locked"]), s["current"] == SRC,
                      z3.Not(s["offline_fut"]), s["durName_fut"] == DELETE), {
            "name_fut": FUTURE, "durName_fut": FUTURE, "vol_fut": 0, "dur_fut": 0,
            "start_fut": 0, "agree": 0, "newer": FUT}

    def advance_hw(s: V, p: V) -> Step:
        hw = z3.If(s["current"] == SRC, s["dur_src"], s["dur_fut"])
        return z3.And(s["up"], s["current"] != NO_LOG, s["acked"] < hw), {"acked": hw}

    def truncate_source(s: V, p: V) -> Step:
        k = s["vol_src"] - 1
        return z3.And(s["up"], z3.Not(s["locked"]), s["current"] == SRC,
                      s["vol_src"] > s["acked"]), {
            "vol_src": k, "vol_fut": _min(s["vol_fut"], k), "dur_src": _min(s["dur_src"], k),
            "dur_fut": _min(s["dur_fut"], k), "agree": _min(s["agree"], k)}

    def raise_start(s: V, p: V) -> Step:
        return z3.And(s["up"], z3.Not(s["locked"]), s["current"] == SRC,
                      s["start_src"] < s["acked"]), {"start_src": s["start_src"] + 1}

    def follow_start(s: V, p: V) -> Step:
        return z3.And(s["up"], s["current"] == SRC, z3.Not(s["offline_fut"]),
                      s["name_fut"] == FUTURE, s["start_fut"] < s["start_src"]), {
            "start_fut": s["start_src"]}

    def atomic_move_swap(s: V) -> Any:
        a = authoritative(s, bug=bug)
        return z3.And(
            a != NO_LOG,
            z3.If(a == FUT, s["dur_fut"], s["dur_src"]) >= s["acked"],
            z3.Implies(z3.And(a == FUT, s["current"] == SRC), s["agree"] >= s["acked"]),
            z3.Implies(z3.And(s["up"], z3.Not(s["locked"]), s["current"] != NO_LOG),
                       s["current"] == a),
            z3.Implies(z3.And(s["up"], z3.Not(s["starting"]),
                              *[z3.Not(s[f"offline_{log}"]) for log in LOGS]),
                       s["current"] != NO_LOG),
            z3.Not(s["lateAppend"]), z3.Not(s["misplaced"]),
            z3.Implies(z3.And(a == FUT, s["durName_src"] != GONE),
                       s["start_fut"] >= s["start_src"]))

    actions = [
        ActionDef("Append", append),
        ActionDef("Copy", copy),
        *[ActionDef(f"Flush[{log}]", partial(flush, log), params=("k",)) for log in LOGS],
        *[ActionDef(f"FsyncDir[{log}]", partial(fsync_dir, log)) for log in LOGS],
        ActionDef("BeginSwap", begin_swap),
        ActionDef("RenameFutureLive", rename_future_live),
        ActionDef("RenameSourceDelete", rename_source_delete),
        ActionDef("EndSwap", end_swap),
        ActionDef("DeleteSource", delete_source),
        ActionDef("Crash", crash),
        ActionDef("Recover", recover),
        ActionDef("AdvanceHW", advance_hw),
        ActionDef("TruncateSource", truncate_source),
        ActionDef("RaiseStart", raise_start),
        ActionDef("FollowStart", follow_start),
        *[ActionDef(f"FailDir[{log}]", partial(fail_dir, log), params=("stop",)) for log in LOGS
          if log in fail_dirs],
        *[ActionDef(f"Repair[{log}]", partial(repair, log)) for log in LOGS],
        ActionDef("Serve", serve),
        ActionDef("RestartMove", restart_move),
    ]
    return TransitionSystem(
        name=f"ReplicaMove_{bug}",
        int_vars=INT_VARS,
        bool_vars=BOOL_VARS,
        init=init,
        actions=actions,
        invariants=[("AtomicMoveSwap", atomic_move_swap)],
    )


_NAMES = {str(LIVE): "live", str(FUTURE): "future", str(DELETE): "delete", str(GONE): "none"}
_CURRENT = {str(SRC): "src", str(FUT): "fut", str(NO_LOG): "none"}


def describe(v: Mapping[str, str]) -> str:
    """One state of a counterexample, in the words of the TLA+ module."""
    head = ("up" if v["up"] == "True" else "DOWN") + (" locked" if v["locked"] == "True" else "")
    head += " starting" if v["starting"] == "True" else ""
    logs = "; ".join(
        f"{log}: name={_NAMES.get(v[f'name_{log}'])} (disk {_NAMES.get(v[f'durName_{log}'])}) "
        f"records={v[f'vol_{log}']} (fsynced {v[f'dur_{log}']})"
        + (" OFFLINE" if v[f"offline_{log}"] == "True" else "") for log in LOGS)
    if v["newer"] == str(SRC):
        logs += "; src re-stamped to the newer generation"
    return (f"{head}, appends to {_CURRENT.get(v['current'], v['current'])}, "
            f"acked={v['acked']}, in common {v['agree']}, skew {v['skew']}; {logs}"
            + ("; LATE APPEND" if v["lateAppend"] == "True" else "")
            + ("; MISPLACED RECORD" if v["misplaced"] == "True" else ""))


def strengthening() -> list[tuple[str, Any]]:
    """The invariants that make AtomicMoveSwap inductive (k = 1), each true of every reachable
    state of the correct model with the future log's dir the one that may fail (TLC checks them
    too in tests/test_model_replica_move.py). While the source is re-stamped (R6, ``newer`` is
    src) the future log is stale and the source alone carries the invariant."""

    def types(s: V) -> Any:
        logs = [z3.And(s[f"dur_{log}"] >= 0, s[f"dur_{log}"] <= s[f"vol_{log}"]) for log in LOGS]
        return z3.And(*logs, s["acked"] >= 0, s["agree"] >= 0, s["skew"] == 0,
                      s["start_src"] >= 0, s["start_fut"] >= 0, s["start_src"] <= s["acked"],
                      z3.Or(s["current"] == SRC, s["current"] == FUT, s["current"] == NO_LOG),
                      z3.Or(s["newer"] == SRC, s["newer"] == FUT), z3.Not(s["offline_src"]))

    def up_and_lock(s: V) -> Any:
        down = z3.And(s["name_src"] == s["durName_src"], s["name_fut"] == s["durName_fut"])
        return z3.And(
            z3.Implies(z3.Not(s["up"]), z3.And(down, s["current"] == NO_LOG,
                                               z3.Not(s["starting"]))),
            z3.Implies(s["starting"], z3.And(
                s["up"], s["current"] == NO_LOG, z3.Not(s["locked"]),
                z3.Not(z3.And(s["name_src"] == LIVE, s["name_fut"] == LIVE,
                              z3.Not(s["offline_fut"]))))),
            z3.Implies(s["locked"], z3.And(s["up"], s["current"] == SRC, s["newer"] == FUT,
                                           z3.Not(s["offline_fut"]))),
            z3.Implies(z3.And(s["up"], z3.Not(s["starting"]), z3.Not(s["offline_fut"])),
                       s["current"] != NO_LOG))

    def restamped(s: V) -> Any:
        return z3.Implies(s["newer"] == SRC, z3.And(
            s["name_src"] == LIVE, s["durName_src"] == LIVE, z3.Not(s["locked"]),
            s["current"] != FUT, s["dur_src"] >= s["acked"]))

    def source_holds(s: V) -> Any:
        return z3.Implies(z3.Or(s["name_src"] == LIVE, s["durName_src"] == LIVE),
                          s["dur_src"] >= s["acked"])

    def names(s: V) -> Any:
        return z3.Implies(s["newer"] == FUT, z3.And(
            z3.Or(s["name_fut"] == FUTURE, s["name_fut"] == LIVE),
            z3.Or(s["durName_fut"] == FUTURE, s["durName_fut"] == LIVE),
            z3.Implies(s["durName_fut"] == LIVE, s["name_fut"] == LIVE),
            z3.Or(s["name_src"] == LIVE, s["name_src"] == DELETE, s["name_src"] == GONE),
            z3.Or(s["durName_src"] == LIVE, s["durName_src"] == DELETE,
                  s["durName_src"] == GONE),
            z3.Implies(s["name_src"] == LIVE, s["durName_src"] == LIVE),
            z3.Implies(s["durName_src"] == DELETE, s["name_src"] == DELETE),
            (s["name_src"] == GONE) == (s["durName_src"] == GONE),
            z3.Implies(s["name_src"] != LIVE, s["durName_fut"] == LIVE)))

    def copying(s: V) -> Any:
        return z3.Implies(s["newer"] == FUT, z3.And(
            z3.Implies(s["name_fut"] == FUTURE, z3.And(
                s["agree"] == s["vol_fut"], s["vol_fut"] <= s["dur_src"],
                s["acked"] <= s["dur_src"], s["current"] != FUT,
                s["start_fut"] >= 0, s["start_fut"] <= s["start_src"])),
            z3.Implies(z3.And(s["name_fut"] == LIVE, s["name_src"] != GONE),
                       s["start_fut"] == s["start_src"])))

    def swapped(s: V) -> Any:
        same = z3.And(s["vol_src"] == s["dur_src"], s["dur_src"] == s["vol_fut"],
                      s["vol_fut"] == s["dur_fut"], s["dur_fut"] == s["agree"],
                      s["acked"] <= s["agree"])
        return z3.Implies(s["newer"] == FUT, z3.And(
            z3.Implies(s["name_fut"] == LIVE, s["dur_fut"] >= s["acked"]),
            z3.Implies(z3.And(z3.Or(s["locked"], s["durName_fut"] == FUTURE),
                              s["name_fut"] == LIVE), same)))

    def appends(s: V) -> Any:
        return z3.And(
            z3.Implies(s["current"] == FUT,
                       z3.And(s["durName_fut"] == LIVE, z3.Not(s["locked"]),
                              s["durName_src"] != LIVE, s["name_src"] != LIVE)),
            z3.Implies(z3.And(s["current"] == SRC, z3.Not(s["locked"]), s["newer"] == FUT),
                       z3.And(s["name_fut"] == FUTURE, s["name_src"] == LIVE)))

    return [("Types", types), ("UpAndLock", up_and_lock), ("Restamped", restamped),
            ("SourceHolds", source_holds), ("Names", names), ("Copying", copying),
            ("Swapped", swapped), ("Appends", appends)]


def prove(bug: str = "none", *, rlimit: int | None = None) -> list[ProofResult]:
    """Prove AtomicMoveSwap unbounded (``bug="none"``) by induction with :func:`strengthening`,
    or refute it with a BMC trace; every z3 check within ``rlimit`` (None: the defaults of
    ``common``). Spacer finds a strengthening by itself too (31 lemmas), but needs about 50
    million of z3's resource count, some 45 s: too slow for the suite."""
    ts = system(bug)
    if bug != "none":
        return [refute_bmc(ts, name, max_steps=10, describe=describe, **limits(rlimit))
                for name in INVARIANTS]
    return [prove_inductive(ts, name, strengthening(), **limits(rlimit)) for name in INVARIANTS]


def twin_views(spec: Any) -> list[TwinView]:
    """How this encoding sees the Python twin: the same variables, names as numbers. Every
    action is an exact pair (``Flush``/``FsyncDir`` per log); Z3 has no MaxRecords, so its
    successors are bounded by the twin's."""
    from logwright.model.replica_move.twin import RMState

    code = {"src": SRC, "fut": FUT, "none": NO_LOG}
    name = {"live": LIVE, "future": FUTURE, "delete": DELETE, "none": GONE}
    k = spec.config

    def abstract(s: Any) -> dict[str, int | bool]:
        assert isinstance(s, RMState)
        out: dict[str, int | bool] = {"current": code[s.current], "acked": s.acked,
                                      "up": s.up, "locked": s.locked,
                                      "lateAppend": s.lateAppend, "agree": s.agree,
                                      "skew": s.skew, "misplaced": s.misplaced,
                                      "newer": code[s.newer], "starting": s.starting}
        for i, log in enumerate(LOGS):
            out[f"offline_{log}"] = s.offline[i]
            out[f"vol_{log}"], out[f"dur_{log}"] = s.vol[i], s.dur[i]
            out[f"name_{log}"], out[f"durName_{log}"] = name[s.name[i]], name[s.durName[i]]
            out[f"start_{log}"] = s.start[i]
        return out

    def one(method: Any, *args: str) -> Any:
        return lambda s: [t for t in [method(s, *args)] if t is not None]

    def bounds(t: Mapping[str, Any]) -> Any:
        return z3.And(*[t[f"vol_{log}"] <= k.max_records for log in LOGS])

    exact = [("Append", one(spec.Append)), ("Copy", one(spec.Copy))]
    exact += [(f"Flush[{log}]", lambda s, log=log: list(spec.Flush(s, log))) for log in LOGS]
    exact += [(f"FsyncDir[{log}]", one(spec.FsyncDir, log)) for log in LOGS]
    exact += [(n, one(getattr(spec, n))) for n in (
        "BeginSwap", "RenameFutureLive", "RenameSourceDelete", "EndSwap", "DeleteSource",
        "Crash", "Recover", "AdvanceHW", "TruncateSource", "RaiseStart", "FollowStart",
        "Serve", "RestartMove")]
    exact += [(f"FailDir[{log}]", lambda s, log=log: list(spec.FailDir(s, log))) for log in LOGS
              if log in k.fail_dirs]
    exact += [(f"Repair[{log}]", one(spec.Repair, log)) for log in LOGS]
    return [TwinView("ReplicaMove", abstract, exact, bounds)]
