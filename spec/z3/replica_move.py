"""ReplicaMove (spec/ReplicaMove.tla) in Z3, over unbounded record counts.

The same machine as the TLA+ module and the Python twin, with no bound on appends (no
MaxRecords), so on the records written, fsynced, copied and acknowledged. Each action has the
TLA+ name; ``Flush`` and ``FsyncDir`` are split per log (``Flush[src]``...), as TLA+'s
``\\E l \\in Logs``. No abstraction is needed: the TLA+ state is already a handful of scalars.

Records by identity need no arrays here: every log is a prefix of one sequence until a crash
drops an unflushed tail, so the ghost ``agree`` (how many leading records the two logs share)
and ``misplaced`` (a record copied to another offset) say everything identity can.

Proof: k = 1 induction of AtomicMoveSwap with the strengthening :func:`strengthening` states
(unbounded: no bound on records, appends or crashes). Each bug switch: BMC finds the shortest
violating behaviour.
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

INT_VARS = ("current", "acked", "agree", "skew",
            *[f"{v}_{log}" for v in ("vol", "dur", "name", "durName", "start") for log in LOGS])
BOOL_VARS = ("up", "locked", "lateAppend", "misplaced")

V = Mapping[str, Any]
Step = tuple[Any, dict[str, Any]]


def authoritative(s: V, prefix: str = "durName", bug: str = "none") -> Any:
    """R1 on the dir names ``<prefix>_src``/``<prefix>_fut``: FUT, SRC or NO_LOG (with the
    seed's start-up rule, bug SeedRenameOrder, a lone future dir is FUT too)."""
    lone = (z3.If(s[f"{prefix}_fut"] == FUTURE, FUT, NO_LOG) if bug == "SeedRenameOrder"
            else NO_LOG)
    return z3.If(s[f"{prefix}_fut"] == LIVE, FUT,
                 z3.If(s[f"{prefix}_src"] == LIVE, SRC, lone))


def _min(a: Any, b: Any) -> Any:
    return z3.If(a < b, a, b)


def system(bug: str = "none") -> TransitionSystem:
    """The transition system with ``bug`` switched on (``"none"``: the correct model)."""
    BUG_TABLE.check(bug)
    true, false = z3.BoolVal(True), z3.BoolVal(False)

    def init(s: V) -> Any:
        return z3.And(s["up"], s["current"] == SRC, z3.Not(s["locked"]),
                      *[s[f"{v}_{log}"] == 0 for v in ("vol", "dur") for log in LOGS],
                      s["name_src"] == LIVE, s["name_fut"] == FUTURE,
                      s["durName_src"] == LIVE, s["durName_fut"] == FUTURE,
                      s["acked"] == 0, z3.Not(s["lateAppend"]), s["agree"] == 0,
                      s["skew"] == 0, z3.Not(s["misplaced"]), s["start_src"] == 0,
                      s["start_fut"] == 0)

    def append(s: V, p: V) -> Step:
        allowed = true if bug == "AppendDuringSwap" else z3.Not(s["locked"])
        to_src = s["current"] == SRC
        return z3.And(s["up"], allowed), {
            "vol_src": z3.If(to_src, s["vol_src"] + 1, s["vol_src"]),
            "vol_fut": z3.If(to_src, s["vol_fut"], s["vol_fut"] + 1),
            "lateAppend": z3.Or(s["lateAppend"], s["current"] != authoritative(s, bug=bug))}

    def copy(s: V, p: V) -> Step:
        same = z3.And(s["skew"] == 0, s["agree"] == s["vol_fut"])
        reads = s["vol_fut"] + s["skew"]
        return z3.And(s["up"], s["name_fut"] == FUTURE, reads >= 0, reads < s["dur_src"]), {
            "vol_fut": s["vol_fut"] + 1,
            "agree": z3.If(same, s["agree"] + 1, s["agree"]),
            "misplaced": z3.Or(s["misplaced"], s["skew"] != 0)}

    def flush(log: str, s: V, p: V) -> Step:
        k = p["k"]  # any longer prefix made durable
        return z3.And(s["up"], s[f"dur_{log}"] < k, k <= s[f"vol_{log}"]), {f"dur_{log}": k}

    def fsync_dir(log: str, s: V, p: V) -> Step:
        return z3.And(s["up"], s[f"durName_{log}"] != s[f"name_{log}"]), {
            f"durName_{log}": s[f"name_{log}"]}

    def begin_swap(s: V, p: V) -> Step:
        return z3.And(s["up"], z3.Not(s["locked"]), s["current"] == SRC,
                      s["name_fut"] == FUTURE, s["vol_fut"] == s["dur_src"]), {"locked": true}

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
        return z3.And(s["up"], z3.Not(s["locked"]), s["durName_src"] == DELETE), {
            "name_src": GONE, "durName_src": GONE, "vol_src": 0, "dur_src": 0, "agree": 0,
            "start_src": 0}

    def crash(s: V, p: V) -> Step:
        return s["up"], {"up": false, "current": NO_LOG, "locked": false,
                         "vol_src": s["dur_src"], "vol_fut": s["dur_fut"],
                         "name_src": s["durName_src"], "name_fut": s["durName_fut"],
                         "agree": _min(s["agree"], _min(s["dur_src"], s["dur_fut"])),
                         "skew": 0}

    def recover(s: V, p: V) -> Step:
        a = authoritative(s, bug=bug)
        n = {log: z3.If(a == i, LIVE, z3.If(s[f"durName_{log}"] == LIVE, DELETE,
                                             s[f"durName_{log}"])) for log, i in LOGS.items()}
        return z3.And(z3.Not(s["up"]), a != NO_LOG), {
            "up": true, "current": a, **{f"name_{log}": v for log, v in n.items()},
            "skew": (z3.If(s["durName_fut"] == FUTURE, s["acked"] - s["dur_fut"], 0)
                     if bug == "CopierResumesFromHW" else 0)}

    def advance_hw(s: V, p: V) -> Step:
        hw = z3.If(s["current"] == SRC, s["dur_src"], s["dur_fut"])
        return z3.And(s["up"], s["acked"] < hw), {"acked": hw}

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
        return z3.And(s["up"], s["name_fut"] == FUTURE, s["start_fut"] < s["start_src"]), {
            "start_fut": s["start_src"]}

    def atomic_move_swap(s: V) -> Any:
        a = authoritative(s, bug=bug)
        return z3.And(
            a != NO_LOG,
            z3.If(a == FUT, s["dur_fut"], s["dur_src"]) >= s["acked"],
            z3.Implies(z3.And(a == FUT, s["current"] == SRC), s["agree"] >= s["acked"]),
            z3.Implies(z3.And(s["up"], z3.Not(s["locked"])), s["current"] == a),
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
    logs = "; ".join(
        f"{log}: name={_NAMES.get(v[f'name_{log}'])} (disk {_NAMES.get(v[f'durName_{log}'])}) "
        f"records={v[f'vol_{log}']} (fsynced {v[f'dur_{log}']})" for log in LOGS)
    return (f"{head}, appends to {_CURRENT.get(v['current'], v['current'])}, "
            f"acked={v['acked']}, in common {v['agree']}, skew {v['skew']}; {logs}"
            + ("; LATE APPEND" if v["lateAppend"] == "True" else "")
            + ("; MISPLACED RECORD" if v["misplaced"] == "True" else ""))


def strengthening() -> list[tuple[str, Any]]:
    """The invariants that make AtomicMoveSwap inductive (k = 1), each true of every reachable
    state of the correct model (TLC checks them too in tests/test_model_replica_move.py)."""

    def types(s: V) -> Any:
        logs = [z3.And(0 <= s[f"dur_{log}"], s[f"dur_{log}"] <= s[f"vol_{log}"]) for log in LOGS]
        return z3.And(*logs, s["acked"] >= 0, s["agree"] >= 0, s["skew"] == 0,
                      s["start_src"] >= 0, s["start_fut"] >= 0, s["start_src"] <= s["acked"],
                      z3.Or(s["current"] == SRC, s["current"] == FUT, s["current"] == NO_LOG))

    def up_and_lock(s: V) -> Any:
        down = z3.And(s["name_src"] == s["durName_src"], s["name_fut"] == s["durName_fut"])
        return z3.And(s["up"] == (s["current"] != NO_LOG), z3.Or(s["up"], down),
                      z3.Implies(s["locked"], z3.And(s["up"], s["current"] == SRC)))

    def names(s: V) -> Any:
        return z3.And(
            z3.Or(s["name_fut"] == FUTURE, s["name_fut"] == LIVE),
            z3.Or(s["durName_fut"] == FUTURE, s["durName_fut"] == LIVE),
            z3.Implies(s["durName_fut"] == LIVE, s["name_fut"] == LIVE),
            z3.Or(s["name_src"] == LIVE, s["name_src"] == DELETE, s["name_src"] == GONE),
            z3.Or(s["durName_src"] == LIVE, s["durName_src"] == DELETE,
                  s["durName_src"] == GONE),
            z3.Implies(s["name_src"] == LIVE, s["durName_src"] == LIVE),
            z3.Implies(s["durName_src"] == DELETE, s["name_src"] == DELETE),
            (s["name_src"] == GONE) == (s["durName_src"] == GONE),
            z3.Implies(s["name_src"] != LIVE, s["durName_fut"] == LIVE))

    def copying(s: V) -> Any:
        return z3.And(z3.Implies(s["name_fut"] == FUTURE, z3.And(
            s["agree"] == s["vol_fut"], s["vol_fut"] <= s["dur_src"],
            s["acked"] <= s["dur_src"], s["current"] != FUT,
            0 <= s["start_fut"], s["start_fut"] <= s["start_src"])),
            z3.Implies(z3.And(s["name_fut"] == LIVE, s["name_src"] != GONE),
                       s["start_fut"] == s["start_src"]))

    def swapped(s: V) -> Any:
        same = z3.And(s["vol_src"] == s["dur_src"], s["dur_src"] == s["vol_fut"],
                      s["vol_fut"] == s["dur_fut"], s["dur_fut"] == s["agree"],
                      s["acked"] <= s["agree"])
        return z3.And(z3.Implies(s["name_fut"] == LIVE, s["dur_fut"] >= s["acked"]),
                      z3.Implies(z3.And(s["locked"], s["name_fut"] == LIVE), same))

    def appends(s: V) -> Any:
        return z3.And(
            z3.Implies(s["current"] == FUT,
                       z3.And(s["durName_fut"] == LIVE, z3.Not(s["locked"]))),
            z3.Implies(z3.And(s["current"] == SRC, z3.Not(s["locked"])),
                       z3.And(s["name_fut"] == FUTURE, s["name_src"] == LIVE)))

    return [("Types", types), ("UpAndLock", up_and_lock), ("Names", names),
            ("Copying", copying), ("Swapped", swapped), ("Appends", appends)]


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
                                      "skew": s.skew, "misplaced": s.misplaced}
        for i, log in enumerate(LOGS):
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
        "Crash", "Recover", "AdvanceHW", "TruncateSource", "RaiseStart", "FollowStart")]
    return [TwinView("ReplicaMove", abstract, exact, bounds)]
