"""LogStartOffset (spec/LogStartOffset.tla) in Z3, over unbounded offsets.

The same machine as the TLA+ module and the Python twin, with two replicas (1 and 2, as in
LogStartOffset.cfg; the leader is a variable, 1 at first), every offset an unbounded integer (no
MaxOffset: the leader appends forever) and the segment size any positive integer. Each action
has the TLA+ name; variables are ``<name><replica id>`` (``logStart2`` is ``logStart[2]`` in
TLA+), and ``leader`` is the leading replica's id.

Two proofs of each invariant, both unbounded:

* induction (k = 1) on the invariant joined with the strengthening stated in
  :func:`strengthening` (the leader a replica of the ISR and up, no in-sync replica down, each
  replica's offsets ordered segStart <= logStart <= HW <= LEO and flushed <= LEO, the
  checkpoint at most the start offset, every HW at most the partition's, the acknowledged low
  watermark at most every in-sync replica's durable start offset and at most the leader's ISR
  floor, itself at most the leader's durable start offset, the partition's HW at most the
  leader's HW or its epoch's start offset, a waiting DeleteRecords' offset at most the leader's
  start offset, and the three invariants themselves): a handful of SMT checks;
* Spacer (``spacer=True``), which finds a strengthening by itself (reported in the detail); the
  tests run it on NoNewDataDeleted only.

With a bug switched on, ``prove(bug)`` searches by BMC for the shortest behaviour violating the
invariant the bug breaks, which comes back ``holds=False`` with readable steps.

:func:`twin_views` is how the relation is compared with the Python twin's on the twin's
reachable states (tests/test_model_z3_twin.py).
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
    TwinView,
    limits,
    max_of,
    min_of,
    prove_inductive,
    prove_or_refute,
    refute_bmc,
)

REPLICAS = (1, 2)
"""Replica ids, as in spec/LogStartOffset.cfg; 1 leads at first."""
FIRST_LEADER = 1
INVARIANTS = ("NoNewDataDeleted", "NeverServeBelowLogStart", "CommittedDataOnIsr")
PER_REPLICA = ("leo", "hw", "logStart", "segStart", "ckptStart", "flushed")
RESPONSE = ("respLeo", "respHw", "respStart")
"""The fetch response in flight to replica i: the Boolean ``resp<i>`` and these (0 when none)."""


def _v(name: str, i: int) -> str:
    return f"{name}{i}"


def _of_leader(s: Mapping[str, Any], name: str) -> Any:
    """``name[leader]``: the leader's value of a per-replica variable."""
    term = s[_v(name, REPLICAS[-1])]
    for i in reversed(REPLICAS[:-1]):
        term = z3.If(s["leader"] == i, s[_v(name, i)], term)
    return term


def _at_leader(s: Mapping[str, Any], name: str, new: Any) -> dict[str, Any]:
    """``[name EXCEPT ![leader] = new]`` as one update per replica."""
    return {_v(name, i): z3.If(s["leader"] == i, new, s[_v(name, i)]) for i in REPLICAS}


def _durable(s: Mapping[str, Any], i: int) -> Any:
    """DurableStart(i): max(checkpoint, first segment's base)."""
    return max_of([s[_v("ckptStart", i)], s[_v("segStart", i)]])


def system(bug: str = "none") -> TransitionSystem:
    """The transition system with ``bug`` switched on (``"none"``: the correct model)."""
    BUG_TABLE.check(bug)
    lazy = bug == "StartOffsetCheckpointLazy"
    # The bugs that acknowledge a DeleteRecords on the in-memory low watermark.
    in_memory = bug == "AckBeforeDurable" or bug == "StartOffsetCheckpointLazy"

    def ckpt_after_raise(i: int, new: Any) -> dict[str, Any]:
        return {} if lazy else {_v("ckptStart", i): new}

    def init(s: Mapping[str, Any]) -> Any:
        zeros = [s[_v(n, i)] == 0 for n in (*PER_REPLICA, *RESPONSE) for i in REPLICAS]
        return z3.And(*zeros, *[s[_v("isr", i)] for i in REPLICAS],
                      *[z3.Not(s[_v("resp", i)]) for i in REPLICAS],
                      *[z3.Not(s[_v("down", i)]) for i in REPLICAS], s["leader"] == FIRST_LEADER,
                      s["epochStart"] == 0, s["committed"] == 0, s["acked"] == 0,
                      s["pending"] == 0, s["isrFloor"] == 0)

    def append(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        return z3.BoolVal(True), _at_leader(s, "leo", _of_leader(s, "leo") + 1)

    def no_response(i: int) -> dict[str, Any]:
        return {_v("resp", i): z3.BoolVal(False),
                **{_v(n, i): z3.IntVal(0) for n in RESPONSE}}

    def serve_fetch(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            return (z3.And(s["leader"] != i, z3.Not(s[_v("down", i)]), z3.Not(s[_v("resp", i)])),
                    {_v("resp", i): z3.BoolVal(True),
                     _v("respLeo", i): _of_leader(s, "leo"), _v("respHw", i): _of_leader(s, "hw"),
                     _v("respStart", i): _of_leader(s, "logStart")})
        return ActionDef(f"ServeFetch({i})", fn)

    def apply_fetch(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            o = p["o"]
            leo, hw, ls = s[_v("leo", i)], s[_v("hw", i)], s[_v("logStart", i)]
            m_leo, m_hw, m_st = (s[_v(n, i)] for n in RESPONSE)
            oor = leo < m_st
            new_hw = max_of([ls, min_of([m_hw, o])])
            new_start = max_of([ls, min_of([m_st, new_hw])])
            oor_hw = hw if bug == "FollowerRaisesStartBeforeHW" else m_st
            upd: dict[str, Any] = {
                _v("leo", i): o,
                _v("hw", i): z3.If(oor, oor_hw, new_hw),
                _v("logStart", i): z3.If(oor, m_st, new_start),
                _v("segStart", i): z3.If(oor, m_st, s[_v("segStart", i)]),
                _v("flushed", i): z3.If(oor, m_st, s[_v("flushed", i)]),
                **no_response(i),
            }
            if not lazy:  # the full truncation's raise is checkpointed; the other in memory
                upd[_v("ckptStart", i)] = z3.If(oor, m_st, s[_v("ckptStart", i)])
            guard = z3.And(s["leader"] != i, z3.Not(s[_v("down", i)]), s[_v("resp", i)],
                           z3.If(oor, o == m_st, z3.And(leo <= o, o <= m_leo)))
            return guard, upd
        return ActionDef(f"ApplyFetch({i})", fn, ("o",))

    def drop_response(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            return s[_v("resp", i)], no_response(i)
        return ActionDef(f"DropResponse({i})", fn)

    def truncate_follower(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            o = p["o"]
            leo = s[_v("leo", i)]
            guard = z3.And(s["leader"] != i, z3.Not(s[_v("down", i)]), s[_v("hw", i)] <= o,
                           o < leo,
                           o <= _of_leader(s, "leo"),
                           z3.Implies(s[_v("isr", i)], o >= s["committed"]))
            return guard, {_v("leo", i): o, _v("flushed", i): min_of([s[_v("flushed", i)], o])}
        return ActionDef(f"TruncateFollower({i})", fn, ("o",))

    def advance_hw(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        h = p["h"]
        leo_l = _of_leader(s, "leo")
        if bug == "HWIgnoresIsr":
            limit = leo_l
        else:  # a replica outside the ISR counts as the leader's LEO: never below the minimum
            limit = min_of([z3.If(s[_v("isr", i)], s[_v("leo", i)], leo_l) for i in REPLICAS])
        return (z3.And(_of_leader(s, "hw") < h, h <= limit),
                {**_at_leader(s, "hw", h), "committed": max_of([s["committed"], h])})

    def shrink_isr(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            return (z3.And(s[_v("isr", i)], s["leader"] != i),
                    {_v("isr", i): z3.BoolVal(False)})
        return ActionDef(f"ShrinkIsr({i})", fn)

    def expand_isr(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            return (z3.And(z3.Not(s[_v("isr", i)]), z3.Not(s[_v("down", i)]),
                           s[_v("leo", i)] >= _of_leader(s, "hw"),
                           s[_v("leo", i)] >= s["epochStart"], _durable(s, i) >= s["isrFloor"]),
                    {_v("isr", i): z3.BoolVal(True)})
        return ActionDef(f"ExpandIsr({i})", fn)

    def elect_leader(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            return (z3.And(s[_v("isr", i)], s["leader"] != i),
                    {"leader": z3.IntVal(i), "epochStart": s[_v("leo", i)], **no_response(i),
                     "pending": z3.IntVal(0), "isrFloor": _durable(s, i)})
        return ActionDef(f"ElectLeader({i})", fn)

    def delete_records(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        o = p["o"]
        upd = _at_leader(s, "logStart", o)
        if not lazy:
            upd.update(_at_leader(s, "ckptStart", o))
        upd["pending"] = o
        return z3.And(s["pending"] == 0, _of_leader(s, "logStart") < o,
                      o <= _of_leader(s, "hw")), upd

    def acknowledge(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        # The least (durable; with the bugs, in-memory) start offset over the replicas that
        # are up: a replica down counts as the leader's value (never below the least).
        def start(i: int) -> Any:
            return s[_v("logStart", i)] if in_memory else _durable(s, i)
        lead = start(REPLICAS[-1])
        for j in reversed(REPLICAS[:-1]):
            lead = z3.If(s["leader"] == j, start(j), lead)
        lw = min_of([z3.If(s[_v("down", i)], lead, start(i)) for i in REPLICAS])
        return (z3.And(s["pending"] != 0, lw >= s["pending"]),
                {"acked": max_of([s["acked"], lw]), "pending": z3.IntVal(0),
                 "isrFloor": max_of([s["isrFloor"], lw])})

    def expire(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        return s["pending"] != 0, {"pending": z3.IntVal(0)}

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
            return z3.And(z3.Not(s[_v("down", i)]), nxt <= limit), upd
        return ActionDef(f"DeleteOldestSegment({i})", fn)

    def checkpoint(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            return (z3.And(z3.Not(s[_v("down", i)]), s[_v("ckptStart", i)] != s[_v("logStart", i)]),
                    {_v("ckptStart", i): s[_v("logStart", i)]})
        return ActionDef(f"CheckpointStartOffset({i})", fn)

    def flush(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            f = p["f"]
            return (z3.And(z3.Not(s[_v("down", i)]), s[_v("flushed", i)] < f,
                           f <= s[_v("leo", i)]),
                    {_v("flushed", i): f})
        return ActionDef(f"Flush({i})", fn, ("f",))

    def recover(i: int, s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        start = _durable(s, i)
        e, h = p["e"], p["h"]
        new_leo = max_of([e, start])
        guard = z3.And(s[_v("flushed", i)] <= e, e <= s[_v("leo", i)],
                       z3.Implies(s[_v("isr", i)], e >= s["committed"]),
                       start <= h, h <= s[_v("hw", i)], h <= new_leo)
        return guard, {
            _v("leo", i): new_leo, _v("hw", i): h, _v("logStart", i): start,
            _v("segStart", i): z3.If(e < start, start, s[_v("segStart", i)]),
            _v("flushed", i): new_leo,
            "epochStart": z3.If(s["leader"] == i, new_leo, s["epochStart"])}

    def crash_restart(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            guard, upd = recover(i, s, p)
            return z3.And(z3.Not(s[_v("down", i)]), guard), {
                **upd, **no_response(i),
                "pending": z3.If(s["leader"] == i, 0, s["pending"]),
                "isrFloor": z3.If(s["leader"] == i, _durable(s, i), s["isrFloor"])}
        return ActionDef(f"CrashRestart({i})", fn, ("e", "h"))

    def go_down(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            return (z3.And(s["leader"] != i, z3.Not(s[_v("down", i)])),
                    {_v("down", i): z3.BoolVal(True), _v("isr", i): z3.BoolVal(False),
                     **no_response(i)})
        return ActionDef(f"GoDown({i})", fn)

    def restart(i: int) -> ActionDef:
        def fn(s: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
            guard, upd = recover(i, s, p)
            return z3.And(s[_v("down", i)], guard), {**upd, _v("down", i): z3.BoolVal(False)}
        return ActionDef(f"Restart({i})", fn, ("e", "h"))

    actions = [ActionDef("Append", append)]
    actions += [serve_fetch(i) for i in REPLICAS] + [apply_fetch(i) for i in REPLICAS]
    actions += [drop_response(i) for i in REPLICAS] + [truncate_follower(i) for i in REPLICAS]
    actions += [ActionDef("AdvanceHW", advance_hw, ("h",))]
    actions += [shrink_isr(i) for i in REPLICAS] + [expand_isr(i) for i in REPLICAS]
    actions += [elect_leader(i) for i in REPLICAS]
    actions += [ActionDef("DeleteRecords", delete_records, ("o",)),
                ActionDef("AcknowledgeDeleteRecords", acknowledge),
                ActionDef("ExpireDeleteRecords", expire)]
    actions += [delete_oldest_segment(i) for i in REPLICAS]
    actions += [checkpoint(i) for i in REPLICAS]
    actions += [flush(i) for i in REPLICAS]
    actions += [crash_restart(i) for i in REPLICAS]
    actions += [go_down(i) for i in REPLICAS] + [restart(i) for i in REPLICAS]

    def no_new_data_deleted(s: Mapping[str, Any]) -> Any:
        return z3.And(*[z3.And(s[_v("segStart", i)] <= s["committed"],
                               s[_v("logStart", i)] <= s["committed"]) for i in REPLICAS])

    def never_serve_below_log_start(s: Mapping[str, Any]) -> Any:
        return z3.And(*[z3.And(s[_v("logStart", i)] >= 0,
                               s[_v("logStart", i)] <= s[_v("hw", i)],
                               s[_v("hw", i)] <= s[_v("leo", i)],
                               z3.Implies(s[_v("isr", i)], s["acked"] <= s[_v("logStart", i)]))
                        for i in REPLICAS])

    def committed_data_on_isr(s: Mapping[str, Any]) -> Any:
        return z3.And(*[z3.Implies(s[_v("isr", i)], s[_v("leo", i)] >= s["committed"])
                        for i in REPLICAS])

    return TransitionSystem(
        name="LogStartOffset",
        int_vars=[_v(n, i) for n in (*PER_REPLICA, *RESPONSE) for i in REPLICAS]
        + ["leader", "epochStart", "committed", "acked", "pending", "isrFloor"],
        bool_vars=[_v("isr", i) for i in REPLICAS] + [_v("resp", i) for i in REPLICAS]
        + [_v("down", i) for i in REPLICAS],
        init=init,
        actions=actions,
        invariants=[("NoNewDataDeleted", no_new_data_deleted),
                    ("NeverServeBelowLogStart", never_serve_below_log_start),
                    ("CommittedDataOnIsr", committed_data_on_isr)],
        constants=["SegmentSize"],
        assumptions=lambda s: s["SegmentSize"] >= 1,
    )



def twin_views(spec: Any) -> list[TwinView]:
    """How this encoding sees the Python twin (replicas 1 and 2): the same variables, each
    replica's values as ``<name><id>``, the ISR as one Boolean per replica and SegmentSize the
    twin's. Every action is an exact pair; the ones with a parameter (AdvanceHW's ``h``,
    DeleteRecords' ``o``, Flush's ``f``, CrashRestart's ``e`` and ``h``) against the twin's
    steps for every value of it. Z3 has no MaxOffset, so its successors are bounded by the
    twin's (only Append can pass it; every other offset is bounded by one already there).
    """
    from logwright.model.log_start_offset.twin import LogStartOffsetState

    k = spec.config
    assert k.replicas == REPLICAS, f"the encoding has replicas {REPLICAS}, not {k.replicas}"
    offsets = range(k.max_offset + 1)

    def abstract(s: Any) -> dict[str, int | bool]:
        assert isinstance(s, LogStartOffsetState)
        out: dict[str, int | bool] = {"SegmentSize": k.segment_size, "leader": s.leader,
                                      "epochStart": s.epochStart, "committed": s.committed,
                                      "acked": s.acked, "pending": s.pending,
                                      "isrFloor": s.isrFloor}
        for n in PER_REPLICA:
            for j, i in enumerate(REPLICAS):
                out[_v(n, i)] = getattr(s, n)[j]
        for i in REPLICAS:
            out[_v("isr", i)] = i in s.isr
            out[_v("down", i)] = i in s.down
            m = spec.response_of(s, i)
            out[_v("resp", i)] = m is not None
            for pos, n in enumerate(RESPONSE):
                out[_v(n, i)] = m[pos + 1] if m is not None else 0
        return out

    def some(*results: Any) -> list[Any]:
        return [r for r in results if r is not None]

    def bounds(t: Mapping[str, Any]) -> Any:
        return z3.And(*[t[_v("leo", i)] <= k.max_offset for i in REPLICAS])

    exact: list[tuple[str, Any]] = [("Append", lambda s: some(spec.Append(s)))]
    exact += [(f"ServeFetch({i})", lambda s, i=i: some(spec.ServeFetch(s, i)))
              for i in REPLICAS]
    exact += [(f"ApplyFetch({i})", lambda s, i=i: some(*[spec.ApplyFetch(s, i, o)
                                                        for o in offsets]))
              for i in REPLICAS]
    exact += [(f"DropResponse({i})", lambda s, i=i: some(spec.DropResponse(s, i)))
              for i in REPLICAS]
    exact += [(f"TruncateFollower({i})", lambda s, i=i: some(*[spec.TruncateFollower(s, i, o)
                                                              for o in offsets]))
              for i in REPLICAS]
    exact += [("AdvanceHW", lambda s: some(*[spec.AdvanceHW(s, h) for h in offsets]))]
    exact += [(f"ShrinkIsr({i})", lambda s, i=i: some(spec.ShrinkIsr(s, i))) for i in REPLICAS]
    exact += [(f"ExpandIsr({i})", lambda s, i=i: some(spec.ExpandIsr(s, i))) for i in REPLICAS]
    exact += [(f"ElectLeader({i})", lambda s, i=i: some(spec.ElectLeader(s, i)))
              for i in REPLICAS]
    exact += [("DeleteRecords", lambda s: some(*[spec.DeleteRecords(s, o) for o in offsets])),
              ("AcknowledgeDeleteRecords", lambda s: some(spec.AcknowledgeDeleteRecords(s))),
              ("ExpireDeleteRecords", lambda s: some(spec.ExpireDeleteRecords(s)))]
    exact += [(f"DeleteOldestSegment({i})", lambda s, i=i: some(spec.DeleteOldestSegment(s, i)))
              for i in REPLICAS]
    exact += [(f"CheckpointStartOffset({i})",
               lambda s, i=i: some(spec.CheckpointStartOffset(s, i))) for i in REPLICAS]
    exact += [(f"Flush({i})", lambda s, i=i: some(*[spec.Flush(s, i, f) for f in offsets]))
              for i in REPLICAS]
    exact += [(f"CrashRestart({i})", lambda s, i=i: some(*[spec.CrashRestart(s, i, e, h)
                                                          for e in offsets for h in offsets]))
              for i in REPLICAS]
    exact += [(f"GoDown({i})", lambda s, i=i: some(spec.GoDown(s, i))) for i in REPLICAS]
    exact += [(f"Restart({i})", lambda s, i=i: some(*[spec.Restart(s, i, e, h)
                                                     for e in offsets for h in offsets]))
              for i in REPLICAS]
    return [TwinView("LogStartOffset", abstract, exact, bounds)]


def describe(values: Mapping[str, str]) -> str:
    """One state in the words of the TLA+ module: each replica's log and the ghosts."""
    parts = []
    for i in REPLICAS:
        leads = values["leader"] == str(i)
        role = ("leader" if leads else "down" if values.get(_v("down", i)) == "True" else
                f"follower{'' if values[_v('isr', i)] == 'True' else '*'}")
        parts.append(f"r{i} {role}: seg {values[_v('segStart', i)]}, start "
                     f"{values[_v('logStart', i)]} (ckpt {values[_v('ckptStart', i)]}), HW "
                     f"{values[_v('hw', i)]}, LEO {values[_v('leo', i)]} (flushed "
                     f"{values[_v('flushed', i)]})"
                     + (f" <- response LEO {values[_v('respLeo', i)]}, HW "
                        f"{values[_v('respHw', i)]}, start {values[_v('respStart', i)]}"
                        if values.get(_v("resp", i)) == "True" else ""))
    return "; ".join(parts) + (f"; epoch start {values['epochStart']}, committed "
                               f"{values['committed']}, acked {values['acked']}, "
                               f"pending {values['pending']}, ISR floor {values['isrFloor']}, "
                               f"segment size {values['SegmentSize']}")


def strengthening() -> list[tuple[str, Any]]:
    """The stated strengthening invariants that make the invariants inductive (correct model)."""

    def leader_in_isr(s: Mapping[str, Any]) -> Any:
        return z3.Or(*[z3.And(s["leader"] == i, s[_v("isr", i)], z3.Not(s[_v("down", i)]))
                       for i in REPLICAS])

    def isr_up(s: Mapping[str, Any]) -> Any:
        return z3.And(*[z3.Not(z3.And(s[_v("isr", i)], s[_v("down", i)])) for i in REPLICAS])

    def ordered(s: Mapping[str, Any]) -> Any:
        return z3.And(*[z3.And(s[_v("segStart", i)] >= 0,
                               s[_v("segStart", i)] <= s[_v("logStart", i)],
                               s[_v("logStart", i)] <= s[_v("hw", i)],
                               s[_v("hw", i)] <= s[_v("leo", i)],
                               s[_v("flushed", i)] <= s[_v("leo", i)]) for i in REPLICAS])

    def checkpoint_behind(s: Mapping[str, Any]) -> Any:
        return z3.And(*[s[_v("ckptStart", i)] <= s[_v("logStart", i)] for i in REPLICAS])

    def hw_committed(s: Mapping[str, Any]) -> Any:
        return z3.And(*[s[_v("hw", i)] <= s["committed"] for i in REPLICAS])

    def acked_durable_on_isr(s: Mapping[str, Any]) -> Any:
        return z3.And(*[z3.Implies(s[_v("isr", i)], s["acked"] <= _durable(s, i))
                        for i in REPLICAS])

    def committed_marked(s: Mapping[str, Any]) -> Any:
        return s["committed"] <= max_of([_of_leader(s, "hw"), s["epochStart"]])

    def pending_below_leader_start(s: Mapping[str, Any]) -> Any:
        return z3.And(s["pending"] >= 0, s["pending"] <= _of_leader(s, "logStart"))

    def floor_between(s: Mapping[str, Any]) -> Any:
        durable_l = _durable(s, REPLICAS[-1])
        for j in reversed(REPLICAS[:-1]):
            durable_l = z3.If(s["leader"] == j, _durable(s, j), durable_l)
        return z3.And(s["acked"] <= s["isrFloor"], s["isrFloor"] <= durable_l)

    def responses_served(s: Mapping[str, Any]) -> Any:
        # A response carries a leader's start offset and HW of some moment: ordered, and at
        # most the partition's HW, which never goes down.
        return z3.And(*[z3.Implies(s[_v("resp", i)],
                                   z3.And(s[_v("respStart", i)] >= 0,
                                          s[_v("respStart", i)] <= s[_v("respHw", i)],
                                          s[_v("respHw", i)] <= s["committed"]))
                        for i in REPLICAS])

    ts = system()
    return [("LeaderInIsrAndUp", leader_in_isr), ("InSyncReplicasUp", isr_up),
            ("OffsetsOrdered", ordered), ("CheckpointAtMostStartOffset", checkpoint_behind),
            ("HWAtMostCommitted", hw_committed),
            ("AckedDurableOnEveryInSyncReplica", acked_durable_on_isr),
            ("CommittedAtMostLeaderHWOrEpochStart", committed_marked),
            ("PendingAtMostLeaderStart", pending_below_leader_start),
            ("AckedAtMostFloorAtMostLeaderDurableStart", floor_between),
            ("ResponsesServedBelowCommitted", responses_served),
            *[(name, ts.invariant(name)) for name in INVARIANTS]]


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
