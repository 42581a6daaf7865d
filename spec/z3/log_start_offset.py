"""LogStartOffset (spec/LogStartOffset.tla) in Z3, over unbounded offsets.

The same machine as the TLA+ module and the Python twin, with three replicas (the leader 1 and
followers 2 and 3, as in LogStartOffset.cfg), every offset an unbounded integer (no MaxOffset:
the leader appends forever) and the segment size any positive integer. Each action has the
TLA+ name; variables are ``<name><replica id>`` (``logStart2`` is ``logStart[2]`` in TLA+).

Two proofs of each invariant, both unbounded:

* induction (k = 1) on the invariant joined with the strengthening stated in
  :func:`strengthening` (each replica's offsets ordered segStart <= logStart <= HW <= LEO, the
  checkpoint equal to the start offset, followers behind the leader, every HW at most the
  partition's, the acknowledged low watermark at most every start offset): a handful of SMT
  checks, well under a second;
* Spacer (``spacer=True``), which finds a strengthening by itself (reported in the detail) but
  takes tens of seconds for NeverServeBelowLogStart, so ``make verify`` runs it and the tests run
  it on NoNewDataDeleted only.

With a bug switched on, ``prove(bug)`` searches by BMC for the shortest behaviour violating the
invariant the bug breaks, which comes back ``holds=False`` with readable steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import z3
from logwright.model.core import ProofResult
from logwright.model.log_start_offset.bugs import BUG_TABLE, EXPECTED_VIOLATION

from .common import (
    ActionDef,
    TransitionSystem,
    limits,
    max_of,
    min_of,
    prove_inductive,
    prove_or_refute,
    refute_bmc,
)

REPLICAS = (1, 2, 3)
"""Replica ids, as in spec/LogStartOffset.cfg; 1 is the leader."""
L = 1
INVARIANTS = ("NoNewDataDeleted", "NeverServeBelowLogStart")
PER_REPLICA = ("leo", "hw", "logStart", "segStart", "ckptStart")


def _v(name: str, i: int) -> str:
    return f"{name}{i}"


def system(bug: str = "none") -> TransitionSystem:
    """The transition system with ``bug`` switched on (``"none"``: the correct model)."""
    BUG_TABLE.check(bug)
    lazy = bug == "StartOffsetCheckpointLazy"
    followers = [i for i in REPLICAS if i != L]

    def ckpt_after_raise(s: Mapping[str, Any], i: int, new: Any) -> dict[str, Any]:
        return {} if lazy else {_v("ckptStart", i): new}

    def init(s: Mapping[str, Any]) -> Any:
        zeros = [s[_v(n, i)] == 0 for n in PER_REPLICA for i in REPLICAS]
        return z3.And(*zeros, *[s[_v("isr", i)] for i in followers],
                      s["committed"] == 0, s["acked"] == 0)

    def append(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        return z3.BoolVal(True), {_v("leo", L): s[_v("leo", L)] + 1}

    def follower_fetch(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            leo, hw, ls = s[_v("leo", i)], s[_v("hw", i)], s[_v("logStart", i)]
            oor = leo < s[_v("logStart", L)]
            new = s[_v("logStart", L)]
            new_hw = max_of([hw, min_of([s[_v("hw", L)], s[_v("leo", L)]])])
            new_start = max_of([ls, min_of([s[_v("logStart", L)], new_hw])])
            oor_hw = hw if bug == "FollowerRaisesStartBeforeHW" else new
            upd: dict[str, Any] = {
                _v("leo", i): z3.If(oor, new, s[_v("leo", L)]),
                _v("hw", i): z3.If(oor, oor_hw, new_hw),
                _v("logStart", i): z3.If(oor, new, new_start),
                _v("segStart", i): z3.If(oor, new, s[_v("segStart", i)]),
            }
            if not lazy:
                ck = s[_v("ckptStart", i)]
                upd[_v("ckptStart", i)] = z3.If(oor, new, z3.If(new_start == ls, ck, new_start))
            return z3.BoolVal(True), upd
        return ActionDef(f"FollowerFetch({i})", fn)

    def advance_hw(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        # A follower outside the ISR counts as the leader's LEO, which never lowers the minimum.
        least = min_of([s[_v("leo", L)]] + [z3.If(s[_v("isr", i)], s[_v("leo", i)],
                                                  s[_v("leo", L)]) for i in followers])
        return least > s[_v("hw", L)], {_v("hw", L): least,
                                        "committed": max_of([s["committed"], least])}

    def shrink_isr(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            return (z3.And(s[_v("isr", i)], s[_v("leo", i)] < s[_v("leo", L)]),
                    {_v("isr", i): z3.BoolVal(False)})
        return ActionDef(f"ShrinkIsr({i})", fn)

    def expand_isr(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            return (z3.And(z3.Not(s[_v("isr", i)]), s[_v("leo", i)] >= s[_v("hw", L)]),
                    {_v("isr", i): z3.BoolVal(True)})
        return ActionDef(f"ExpandIsr({i})", fn)

    def delete_records(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        o = p["o"]
        return (z3.And(s[_v("logStart", L)] < o, o <= s[_v("hw", L)]),
                {_v("logStart", L): o, **ckpt_after_raise(s, L, o)})

    def acknowledge(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        lw = min_of([s[_v("logStart", i)] for i in REPLICAS])
        return lw > s["acked"], {"acked": lw}

    def delete_oldest_segment(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            ls = s[_v("logStart", i)]
            nxt = s[_v("segStart", i)] + s["SegmentSize"]
            limit = s[_v("leo", i)] if bug == "RetentionIgnoresHW" else s[_v("hw", i)]
            new_start = max_of([ls, nxt])
            upd = {_v("segStart", i): nxt, _v("logStart", i): new_start}
            if not lazy:
                upd[_v("ckptStart", i)] = z3.If(new_start == ls, s[_v("ckptStart", i)],
                                                new_start)
            return nxt <= limit, upd
        return ActionDef(f"DeleteOldestSegment({i})", fn)

    def checkpoint(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            return (s[_v("ckptStart", i)] != s[_v("logStart", i)],
                    {_v("ckptStart", i): s[_v("logStart", i)]})
        return ActionDef(f"CheckpointStartOffset({i})", fn)

    def crash_restart(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            start = max_of([s[_v("ckptStart", i)], s[_v("segStart", i)]])
            h = p["h"]
            return (z3.And(start <= h, h <= s[_v("hw", i)]),
                    {_v("logStart", i): start, _v("hw", i): h})
        return ActionDef(f"CrashRestart({i})", fn, ("h",))

    actions = [ActionDef("Append", append)]
    actions += [follower_fetch(i) for i in followers]
    actions += [ActionDef("AdvanceHW", advance_hw)]
    actions += [shrink_isr(i) for i in followers] + [expand_isr(i) for i in followers]
    actions += [ActionDef("DeleteRecords", delete_records, ("o",)),
                ActionDef("AcknowledgeDeleteRecords", acknowledge)]
    actions += [delete_oldest_segment(i) for i in REPLICAS]
    actions += [checkpoint(i) for i in REPLICAS]
    actions += [crash_restart(i) for i in REPLICAS]

    def no_new_data_deleted(s: Mapping[str, Any]) -> Any:
        return z3.And(*[z3.And(s[_v("segStart", i)] <= s["committed"],
                               s[_v("logStart", i)] <= s["committed"]) for i in REPLICAS])

    def never_serve_below_log_start(s: Mapping[str, Any]) -> Any:
        return z3.And(*[z3.And(s[_v("logStart", i)] >= 0,
                               s[_v("logStart", i)] <= s[_v("hw", i)],
                               s[_v("hw", i)] <= s[_v("leo", i)],
                               s["acked"] <= s[_v("logStart", i)]) for i in REPLICAS])

    return TransitionSystem(
        name="LogStartOffset",
        int_vars=[_v(n, i) for n in PER_REPLICA for i in REPLICAS] + ["committed", "acked"],
        bool_vars=[_v("isr", i) for i in followers],
        init=init,
        actions=actions,
        invariants=[("NoNewDataDeleted", no_new_data_deleted),
                    ("NeverServeBelowLogStart", never_serve_below_log_start)],
        constants=["SegmentSize"],
        assumptions=lambda s: s["SegmentSize"] >= 1,
    )


def describe(values: Mapping[str, str]) -> str:
    """One state in the words of the TLA+ module: each replica's log and the ghosts."""
    parts = []
    for i in REPLICAS:
        role = "leader" if i == L else f"follower{'' if values[_v('isr', i)] == 'True' else '*'}"
        parts.append(f"r{i} {role}: seg {values[_v('segStart', i)]}, start "
                     f"{values[_v('logStart', i)]} (ckpt {values[_v('ckptStart', i)]}), HW "
                     f"{values[_v('hw', i)]}, LEO {values[_v('leo', i)]}")
    return "; ".join(parts) + (f"; committed {values['committed']}, acked {values['acked']}, "
                               f"segment size {values['SegmentSize']}")


def strengthening() -> list[tuple[str, Any]]:
    """The stated strengthening invariants that make both invariants inductive (correct model)."""
    followers = [i for i in REPLICAS if i != L]

    def ordered(s: Mapping[str, Any]) -> Any:
        return z3.And(*[z3.And(s[_v("segStart", i)] >= 0,
                               s[_v("segStart", i)] <= s[_v("logStart", i)],
                               s[_v("logStart", i)] <= s[_v("hw", i)],
                               s[_v("hw", i)] <= s[_v("leo", i)]) for i in REPLICAS])

    def checkpointed(s: Mapping[str, Any]) -> Any:
        return z3.And(*[s[_v("ckptStart", i)] == s[_v("logStart", i)] for i in REPLICAS])

    def followers_behind(s: Mapping[str, Any]) -> Any:
        return z3.And(*[s[_v("leo", i)] <= s[_v("leo", L)] for i in followers])

    def hw_committed(s: Mapping[str, Any]) -> Any:
        return z3.And(*[s[_v("hw", i)] <= s["committed"] for i in REPLICAS])

    def acked_below_starts(s: Mapping[str, Any]) -> Any:
        return z3.And(*[s["acked"] <= s[_v("logStart", i)] for i in REPLICAS])

    return [("OffsetsOrdered", ordered), ("StartOffsetCheckpointed", checkpointed),
            ("FollowersBehindLeader", followers_behind), ("HWAtMostCommitted", hw_committed),
            ("AckedAtMostEveryStart", acked_below_starts)]


def prove(bug: str = "none", *, spacer: bool = False,
          spacer_invariants: tuple[str, ...] = INVARIANTS,
          rlimit: int | None = None) -> list[ProofResult]:
    """Each invariant proved over unbounded offsets (``bug="none"``), or, with a bug, searched for
    a shortest counterexample. A follower outside the ISR is marked ``*`` in the steps. Every z3
    check runs within ``rlimit`` (None: the defaults of ``common``)."""
    ts = system(bug)
    if bug != "none":
        # Only the invariant the bug breaks is searched: a bounded search of the others would
        # prove nothing, and the counterexample is what a bug switch must produce.
        return [refute_bmc(ts, EXPECTED_VIOLATION[bug], describe=describe, **limits(rlimit))]
    results = [prove_inductive(ts, inv, strengthening(), **limits(rlimit)) for inv in INVARIANTS]
    if spacer:
        results += [prove_or_refute(ts, inv, describe=describe, **limits(rlimit))
                    for inv in spacer_invariants]
    return results
