"""StrayCleanup (spec/StrayCleanup.tla) in Z3, over unbounded time, epochs, sequence numbers,
broker epochs and topic ids.

The same machine as the TLA+ module and the Python twin, seen from one broker ``B`` and the
module's one partition name. Each action has the TLA+ name (``...Other`` for the controller's
steps about the other brokers, which only advance its sequence number and its replica set).

Abstractions, and why they are exact for NoNewDataDeleted on ``B``:

* One broker. Brokers do not interact: a broker's logs change only through the requests
  addressed to it and its own steps, so NoNewDataDeleted (a conjunction over brokers) holds if it
  holds for an arbitrary broker ``B``. The other brokers are seen through the controller only:
  whether one of them is assigned (``otherAssigned``; the Unassign and Create guards read it) and
  the sequence numbers their requests use.
* Two tracked logs. ``B`` has one log per topic id, unboundedly many; the encoding tracks the
  logs of two arbitrary distinct ids ``F`` and ``G`` (free constants). No step on one log reads
  another's, except the set-asides of INCREMENTAL and FULL LeaderAndIsr, which the tracked logs
  undergo exactly; NoNewDataDeleted is a conjunction over logs.
* The network: the requests ever sent to ``B``, numbered in send order ``1..nB``: arrays indexed
  by that number give each one's version (``netE``, ``netS``), kind (1 LAI, 2 STOP, 3 FULL),
  broker epoch and topic id (a FULL: the id it lists for the partition, 0 none). The controller
  sends ``B`` at most one request per version, and versions grow with sends, so the numbering is
  the version order.

Proof: induction (k = 1) with the strengthening invariants of :func:`strengthening` (the heart:
every request to ``B`` at or after the version that assigned ``B`` its replica hosts that
replica). Each bug switch: BMC finds the shortest violating behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import z3
from logwright.model.core import ProofResult
from logwright.model.stray_cleanup.bugs import BUG_TABLE

from .common import (
    ActionDef,
    TransitionSystem,
    TwinView,
    limits,
    prove_inductive,
    refute_bmc,
)

INVARIANTS = ("NoNewDataDeleted",)
NONE, LIVE, STRAY = 0, 1, 2
"""A log's state (TLA+ "none", "live", "stray")."""
K_LAI, K_STOP, K_FULL = 1, 2, 3
"""A request's kind in ``netKind``."""

TRACKED = ("F", "G")
"""The two tracked topic ids (free constants): their logs are ``state_F``, ``lastWrite_F``..."""

CONSTANTS = ("F", "G", "RetentionPeriod", "StrayDeletionDelay")
INT_VARS = (
    "now", "controllerEpoch", "seq", "topicId", "assignedAtE", "assignedAtS", "brokerEpoch",
    "seenEpoch", "appliedE", "appliedS", "nB",
    *[f"{field}_{x}" for x in TRACKED for field in ("state", "lastWrite", "strayAt")],
)
BOOL_VARS = ("faulty", "assigned", "otherAssigned", "online", "sawFull", "dirOnline",
             *[f"lost_{x}" for x in TRACKED])
ARRAYS = ("netE", "netS", "netKind", "netBE", "netTopic")
"""Arrays indexed by send number 1..nB: the requests sent to ``B``."""

V = Mapping[str, Any]
Step = tuple[Any, dict[str, Any]]


class _WithArrays(TransitionSystem):
    """A TransitionSystem whose state also has integer arrays indexed by integers."""

    @property
    def var_names(self) -> list[str]:
        return [*super().var_names, *ARRAYS]

    def state(self, suffix: str) -> dict[str, Any]:
        s = super().state(suffix)
        s.update({n: z3.Array(f"{n}_{suffix}", z3.IntSort(), z3.IntSort()) for n in ARRAYS})
        return s

    def step(self, action: ActionDef, s: V, t: V, params: Mapping[str, Any]) -> Any:
        guard, updates = action.fn(s, params)
        arrays = {n: updates.pop(n) for n in list(updates) if n in ARRAYS}
        frame = [t[n] == arrays.get(n, s[n]) for n in ARRAYS]
        return z3.And(super().step(ActionDef(action.name, lambda _s, _p: (guard, updates)),
                                   s, t, params), *frame)


def v_lt(a: tuple[Any, Any], b: tuple[Any, Any]) -> Any:
    """Version order: controller epoch first, then seq."""
    return z3.Or(a[0] < b[0], z3.And(a[0] == b[0], a[1] < b[1]))


def system(bug: str = "none") -> TransitionSystem:
    """The transition system with ``bug`` switched on (``"none"``: the correct model)."""
    BUG_TABLE.check(bug)
    true, false = z3.BoolVal(True), z3.BoolVal(False)

    def applied(s: V) -> tuple[Any, Any]:
        return s["appliedE"], s["appliedS"]

    def current(s: V, t: Any) -> Any:
        """Current(B, p, t): assigned by a decision B applied."""
        return z3.And(s["assigned"], t == s["topicId"],
                      z3.Not(v_lt(applied(s), (s["assignedAtE"], s["assignedAtS"]))))

    def lost_by(s: V, x: str, ordered: Any) -> Any:
        """LostBy for tracked log x: whether removing it now loses owed data."""
        young = s["now"] - s[f"lastWrite_{x}"] < s["RetentionPeriod"]
        return z3.And(s[f"state_{x}"] != NONE,
                      z3.Or(current(s, s[x]), z3.And(z3.Not(ordered), young)))

    def log(state: Any, last_write: Any, stray_at: Any, x: str) -> dict[str, Any]:
        return {f"state_{x}": state, f"lastWrite_{x}": last_write, f"strayAt_{x}": stray_at}

    def hosted(s: V, x: str) -> dict[str, Any]:
        """HostedLog: a stray revived, a missing log created now."""
        missing = s[f"state_{x}"] == NONE
        return log(z3.IntVal(LIVE), z3.If(missing, s["now"], s[f"lastWrite_{x}"]),
                   z3.IntVal(0), x)

    def strayed(s: V, x: str) -> dict[str, Any]:
        return log(z3.IntVal(STRAY), s[f"lastWrite_{x}"], s["now"], x)

    def pick(cond: Any, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        return {n: z3.If(cond, a[n], b[n]) for n in a}

    def same(s: V, x: str) -> dict[str, Any]:
        return log(s[f"state_{x}"], s[f"lastWrite_{x}"], s[f"strayAt_{x}"], x)

    def host_row(s: V, t: Any) -> dict[str, Any]:
        """HostRow: t hosted, other ids' live logs set aside."""
        out: dict[str, Any] = {}
        for x in TRACKED:
            live = s[f"state_{x}"] == LIVE
            out.update(pick(s[x] == t, hosted(s, x),
                            pick(live, strayed(s, x), same(s, x))))
        return out

    def full_row(s: V, listed: Any) -> dict[str, Any]:
        """FullRow: the request lists topic id ``listed`` for the partition (0: none)."""
        out: dict[str, Any] = {}
        for x in TRACKED:
            live = s[f"state_{x}"] == LIVE
            is_listed = s[x] == listed
            if bug == "StraySetInverted":
                out.update(pick(is_listed, pick(live, strayed(s, x), hosted(s, x)), same(s, x)))
            else:
                out.update(pick(is_listed, hosted(s, x),
                                pick(live, strayed(s, x), same(s, x))))
        return out

    def when(cond: Any, then: dict[str, Any], s: V) -> dict[str, Any]:
        return {n: z3.If(cond, v, s[n]) for n, v in then.items()}

    def send(s: V, cond: Any, kind: int, e: Any, q: Any, be: Any,
             topic: Any) -> dict[str, Any]:
        """Append a request to B's list of sent requests if ``cond``."""
        i = s["nB"] + 1
        return {"nB": z3.If(cond, i, s["nB"]),
                "netE": z3.If(cond, z3.Store(s["netE"], i, e), s["netE"]),
                "netS": z3.If(cond, z3.Store(s["netS"], i, q), s["netS"]),
                "netKind": z3.If(cond, z3.Store(s["netKind"], i, kind), s["netKind"]),
                "netBE": z3.If(cond, z3.Store(s["netBE"], i, be), s["netBE"]),
                "netTopic": z3.If(cond, z3.Store(s["netTopic"], i, topic), s["netTopic"])}

    def view(s: V) -> Any:
        return z3.If(s["assigned"], s["topicId"], 0)

    def init(s: V) -> Any:
        logs = [z3.And(s[f"state_{x}"] == z3.If(s[x] == 1, LIVE, NONE),
                       s[f"lastWrite_{x}"] == 0, s[f"strayAt_{x}"] == 0,
                       z3.Not(s[f"lost_{x}"])) for x in TRACKED]
        return z3.And(
            s["now"] == 0, s["controllerEpoch"] == 1, s["seq"] == 0, s["topicId"] == 1,
            s["assigned"], s["assignedAtE"] == 1, s["assignedAtS"] == 0, s["online"],
            s["brokerEpoch"] == 1, s["seenEpoch"] == 1, s["appliedE"] == 1,
            s["appliedS"] == 0, s["sawFull"], s["dirOnline"], s["nB"] == 0, *logs)

    def tick(s: V, p: V) -> Step:
        return true, {"now": s["now"] + 1}

    def append(x: str, s: V, p: V) -> Step:
        guard = z3.And(s["online"], s["dirOnline"], current(s, s[x]), s[f"state_{x}"] == LIVE)
        return guard, {f"lastWrite_{x}": s["now"]}

    def next_version(s: V) -> tuple[Any, Any]:
        return s["controllerEpoch"], s["seq"] + 1

    def assign(s: V, p: V) -> Step:
        e, q = next_version(s)
        guard = z3.And(s["otherAssigned"], z3.Not(s["assigned"]))
        return guard, {"assigned": true, "assignedAtE": e, "assignedAtS": q, "seq": q,
                       **send(s, s["online"], K_LAI, e, q, s["brokerEpoch"], s["topicId"])}

    def unassign(s: V, p: V) -> Step:
        e, q = next_version(s)
        guard = z3.And(s["assigned"], s["otherAssigned"])
        return guard, {"assigned": false, "assignedAtE": 0, "assignedAtS": 0, "seq": q,
                       **send(s, s["online"], K_STOP, e, q, s["brokerEpoch"], s["topicId"])}

    def assign_other(s: V, p: V) -> Step:
        return z3.And(s["assigned"], z3.Not(s["otherAssigned"])), {
            "otherAssigned": true, "seq": s["seq"] + 1}

    def unassign_other(s: V, p: V) -> Step:
        return z3.And(s["assigned"], s["otherAssigned"]), {
            "otherAssigned": false, "seq": s["seq"] + 1}

    def delete_topic(s: V, p: V) -> Step:
        e, q = next_version(s)
        told = z3.And(s["assigned"], s["online"])
        return z3.Or(s["assigned"], s["otherAssigned"]), {
            "assigned": false, "otherAssigned": false, "assignedAtE": 0, "assignedAtS": 0,
            "seq": q, **send(s, told, K_STOP, e, q, s["brokerEpoch"], s["topicId"])}

    def create_topic(s: V, p: V) -> Step:
        e, q = next_version(s)
        in_b, in_other = p["inB"] == 1, p["inOther"] == 1
        guard = z3.And(z3.Not(s["assigned"]), z3.Not(s["otherAssigned"]),
                       z3.Or(in_b, in_other), p["inB"] >= 0, p["inB"] <= 1,
                       p["inOther"] >= 0, p["inOther"] <= 1)
        new = s["topicId"] + 1
        return guard, {
            "topicId": new, "assigned": in_b, "otherAssigned": in_other,
            "assignedAtE": z3.If(in_b, e, 0), "assignedAtS": z3.If(in_b, q, 0), "seq": q,
            **send(s, z3.And(in_b, s["online"]), K_LAI, e, q, s["brokerEpoch"], new)}

    def stop_broker(s: V, p: V) -> Step:
        return z3.And(s["faulty"], s["online"]), {
            "online": false, "seenEpoch": 0, "appliedE": 0, "appliedS": 0, "sawFull": false}

    def start_broker(s: V, p: V) -> Step:
        e, q = next_version(s)
        be = s["brokerEpoch"] + 1
        return z3.Not(s["online"]), {
            "online": true, "brokerEpoch": be, "seq": q,
            **send(s, true, K_FULL, e, q, be, view(s))}

    def start_other(s: V, p: V) -> Step:
        return true, {"seq": s["seq"] + 1}

    def failover(s: V, p: V) -> Step:
        e = s["controllerEpoch"] + 1
        return true, {"controllerEpoch": e, "seq": 1,
                      **send(s, s["online"], K_FULL, e, z3.IntVal(1), s["brokerEpoch"],
                             view(s))}

    def fail_dir(s: V, p: V) -> Step:
        return z3.And(s["faulty"], s["dirOnline"]), {"dirOnline": false}

    def repair_dir(s: V, p: V) -> Step:
        return z3.Not(s["dirOnline"]), {"dirOnline": true}

    def deliver(s: V, p: V) -> Step:
        i = p["i"]
        e, q = z3.Select(s["netE"], i), z3.Select(s["netS"], i)
        kind, topic = z3.Select(s["netKind"], i), z3.Select(s["netTopic"], i)
        stale = e < s["seenEpoch"]
        stale_bug = z3.And(stale, true if bug == "StaleEpochStrayDeletion" else false)
        accepted = z3.If(stale, z3.And(stale_bug, kind == K_FULL), true)
        guard = z3.And(i >= 1, i <= s["nB"], s["online"],
                       z3.Select(s["netBE"], i) == s["brokerEpoch"], accepted)
        fresh = z3.Or(z3.Not(v_lt((e, q), applied(s))), stale_bug)
        dir_ok = s["dirOnline"]
        is_lai, is_stop, is_full = kind == K_LAI, kind == K_STOP, kind == K_FULL
        newer = v_lt(applied(s), (e, q))
        non_new = true if bug == "NonNewReplicaWithDirOffline" else false
        # what each kind does, as conditions on the tracked logs
        lai_host = z3.And(is_lai, fresh, dir_ok)
        stop_del = z3.And(is_stop, fresh, dir_ok)
        full_dec = z3.And(is_full, fresh, dir_ok)
        full_made = z3.And(is_full, fresh, z3.Not(dir_ok), non_new, topic != 0)
        # (an INCREMENTAL request is always isNew: the bug never creates from one)
        host, full = host_row(s, topic), full_row(s, topic)
        updates: dict[str, Any] = {
            "seenEpoch": z3.If(stale, s["seenEpoch"], e),
            "sawFull": z3.Or(s["sawFull"], z3.And(is_full, dir_ok)),
        }
        set_applied = z3.Or(lai_host, stop_del, z3.And(full_dec, newer), full_made)
        updates["appliedE"] = z3.If(set_applied, e, s["appliedE"])
        updates["appliedS"] = z3.If(set_applied, q, s["appliedS"])
        for x in TRACKED:
            live = s[f"state_{x}"] == LIVE
            if bug == "StopReplicaIgnoresTopicId":
                gone = z3.And(stop_del, live)
            else:
                gone = z3.And(stop_del, live, s[x] == topic)
            made = z3.And(full_made, s[x] == topic)
            deleted = log(z3.IntVal(NONE), z3.IntVal(0), z3.IntVal(0), x)
            created = log(z3.IntVal(LIVE), s["now"], z3.IntVal(0), x)
            row = pick(lai_host, {n: host[n] for n in same(s, x)},
                       pick(gone, deleted,
                            pick(full_dec, {n: full[n] for n in same(s, x)},
                                 pick(made, created, same(s, x)))))
            updates.update(row)
            updates[f"lost_{x}"] = z3.Or(
                s[f"lost_{x}"],
                z3.And(gone, lost_by(s, x, s[x] == topic)),
                z3.And(made, lost_by(s, x, false)))
        return guard, updates

    def delete_stray(x: str, s: V, p: V) -> Step:
        old_enough = s["now"] - s[f"lastWrite_{x}"] >= s["RetentionPeriod"]
        guard = z3.And(s["online"], s["dirOnline"], s["sawFull"], s[f"state_{x}"] == STRAY,
                       s["now"] >= s[f"strayAt_{x}"] + s["StrayDeletionDelay"],
                       true if bug == "NoAgeGuard" else old_enough)
        return guard, {**log(z3.IntVal(NONE), z3.IntVal(0), z3.IntVal(0), x),
                       f"lost_{x}": z3.Or(s[f"lost_{x}"], lost_by(s, x, false))}

    def truncate(x: str, s: V, p: V) -> Step:
        """Truncate: the live log x keeps only what was written up to ``w``, before its newest
        write."""
        w = p["w"]
        guard = z3.And(s["online"], s["dirOnline"], s[f"state_{x}"] == LIVE, w >= 0,
                       w < s[f"lastWrite_{x}"])
        return guard, {f"lastWrite_{x}": w}

    def no_new_data_deleted(s: V) -> Any:
        return z3.And(*[z3.Not(s[f"lost_{x}"]) for x in TRACKED])

    actions = [
        ActionDef("Tick", tick),
        *[ActionDef(f"Append[{x}]", partial(append, x)) for x in TRACKED],
        ActionDef("Assign", assign),
        ActionDef("AssignOther", assign_other),
        ActionDef("Unassign", unassign),
        ActionDef("UnassignOther", unassign_other),
        ActionDef("DeleteTopic", delete_topic),
        ActionDef("CreateTopic", create_topic, ("inB", "inOther")),
        ActionDef("StopBroker", stop_broker),
        ActionDef("StartBroker", start_broker),
        ActionDef("StartOther", start_other),
        ActionDef("ControllerFailover", failover),
        ActionDef("FailDir", fail_dir),
        ActionDef("RepairDir", repair_dir),
        ActionDef("Deliver", deliver, ("i",)),
        *[ActionDef(f"DeleteStray[{x}]", partial(delete_stray, x)) for x in TRACKED],
        *[ActionDef(f"Truncate[{x}]", partial(truncate, x), ("w",)) for x in TRACKED],
    ]
    return _WithArrays(
        name=f"StrayCleanup_{bug}",
        int_vars=INT_VARS,
        bool_vars=BOOL_VARS,
        init=init,
        actions=actions,
        invariants=[("NoNewDataDeleted", no_new_data_deleted)],
        constants=CONSTANTS,
        assumptions=lambda s: z3.And(s["F"] >= 1, s["G"] >= 1, s["F"] != s["G"],
                                     s["RetentionPeriod"] >= 0, s["StrayDeletionDelay"] >= 0),
    )


def strengthening() -> list[tuple[str, Any]]:
    """The strengthening invariants that make NoNewDataDeleted inductive (stated, not found).

    * Typing: log states are none/live/stray; a log of an id not created yet is absent; times
      are between 0 and now; epochs and versions are non-negative; every request sent to ``B``,
      and so the version ``B`` applied last, is at most the controller's
      ``(controllerEpoch, seq)``.
    * ``AssignmentVersioned``: ``B``'s replica, when assigned, was assigned at a version after
      ``(0, 0)`` and at most the controller's; an unassigned one has the version ``(0, 0)``.
    * ``LaterRequestsHost`` (the heart): every request sent to ``B`` at or after the version that
      assigned ``B`` its replica hosts exactly that replica (an INCREMENTAL LeaderAndIsr of its
      topic id, or a FULL request listing it): the controller sends ``B`` nothing else about the
      partition while the assignment holds.
    * ``CurrentIsLive``: a replica ``B`` hosts by a decision it applied is live. With
      LaterRequestsHost, no request newer than what ``B`` applied can delete or set it aside.
    """
    def typing(s: V) -> Any:
        i = z3.Int("i")
        per_log = [z3.And(s[f"state_{x}"] >= NONE, s[f"state_{x}"] <= STRAY,
                          z3.Implies(s[x] > s["topicId"], s[f"state_{x}"] == NONE),
                          s[f"lastWrite_{x}"] <= s["now"], s[f"strayAt_{x}"] <= s["now"],
                          s[f"lastWrite_{x}"] >= 0)
                   for x in TRACKED]
        ce = (s["controllerEpoch"], s["seq"])
        sent = z3.ForAll([i], z3.Implies(z3.And(i >= 1, i <= s["nB"]), z3.And(
            z3.Not(v_lt(ce, (z3.Select(s["netE"], i), z3.Select(s["netS"], i)))),
            z3.Select(s["netE"], i) >= 1, z3.Select(s["netS"], i) >= 1,
            z3.Select(s["netTopic"], i) >= 0, z3.Select(s["netTopic"], i) <= s["topicId"])))
        return z3.And(*per_log, s["controllerEpoch"] >= 1, s["seq"] >= 0, s["topicId"] >= 1,
                      s["now"] >= 0, s["nB"] >= 0, s["appliedE"] >= 0, s["appliedS"] >= 0,
                      s["seenEpoch"] >= 0, sent,
                      z3.Not(v_lt(ce, (s["appliedE"], s["appliedS"]))))

    def assignment(s: V) -> Any:
        at = (s["assignedAtE"], s["assignedAtS"])
        return z3.If(s["assigned"],
                     z3.And(v_lt((z3.IntVal(0), z3.IntVal(0)), at),
                            z3.Not(v_lt((s["controllerEpoch"], s["seq"]), at))),
                     z3.And(at[0] == 0, at[1] == 0))

    def later_requests_host(s: V) -> Any:
        i = z3.Int("i")
        at = (s["assignedAtE"], s["assignedAtS"])
        version = (z3.Select(s["netE"], i), z3.Select(s["netS"], i))
        kind = z3.Select(s["netKind"], i)
        return z3.ForAll([i], z3.Implies(
            z3.And(i >= 1, i <= s["nB"], s["assigned"], z3.Not(v_lt(version, at))),
            z3.And(z3.Or(kind == K_LAI, kind == K_FULL),
                   z3.Select(s["netTopic"], i) == s["topicId"])))

    def current_is_live(s: V) -> Any:
        at = (s["assignedAtE"], s["assignedAtS"])
        current = z3.And(s["assigned"], z3.Not(v_lt((s["appliedE"], s["appliedS"]), at)))
        return z3.And(*[z3.Implies(z3.And(current, s[x] == s["topicId"]),
                                   s[f"state_{x}"] == LIVE) for x in TRACKED])

    return [("Typing", typing), ("AssignmentVersioned", assignment),
            ("LaterRequestsHost", later_requests_host), ("CurrentIsLive", current_is_live)]


_STATE_NAMES = {str(NONE): "none", str(LIVE): "live", str(STRAY): "stray"}
_KIND_NAMES = {str(K_LAI): "LAI", str(K_STOP): "STOP", str(K_FULL): "FULL"}


def _array_value(text: str, index: int) -> str:
    """The value of a Z3 array model at ``index``, read from its rendering
    ``Store(Store(K(Int, d), i1, v1), i2, v2)``: the outermost Store at that index, else ``d``."""
    import re

    flat = re.sub(r"\s+", "", text)
    value = {int(i): v for i, v in re.findall(r",(-?\d+),(-?\d+)\)", flat)}
    if index in value:
        return value[index]
    default = re.search(r"K\(Int,(-?\d+)\)", flat)
    return default[1] if default else "?"


def describe(v: Mapping[str, str]) -> str:
    """One state of a counterexample, in the words of the TLA+ module."""
    parts = [f"now={v['now']} controllerEpoch={v['controllerEpoch']} seq={v['seq']} "
             f"topicId={v['topicId']} assigned={v['assigned']} "
             f"(at ({v['assignedAtE']},{v['assignedAtS']})); broker B "
             f"{'online' if v['online'] == 'True' else 'offline'} "
             f"brokerEpoch={v['brokerEpoch']} seenEpoch={v['seenEpoch']} "
             f"applied=({v['appliedE']},{v['appliedS']}) sawFull={v['sawFull']} "
             f"dir={'online' if v['dirOnline'] == 'True' else 'OFFLINE'}"]
    for x in TRACKED:
        state = _STATE_NAMES.get(v[f"state_{x}"], v[f"state_{x}"])
        if state != "none":
            parts.append(f"log id {v[x]}: {state} lastWrite={v[f'lastWrite_{x}']}"
                         + (f" strayAt={v[f'strayAt_{x}']}" if state == "stray" else ""))
    try:
        sent = int(v["nB"])
    except ValueError:
        sent = 0
    for i in range(1, sent + 1):
        kind = _KIND_NAMES.get(_array_value(v["netKind"], i), "?")
        parts.append(f"sent #{i}: {kind} ({_array_value(v['netE'], i)},"
                     f"{_array_value(v['netS'], i)}) to epoch {_array_value(v['netBE'], i)} "
                     f"id {_array_value(v['netTopic'], i)}")
    for x in TRACKED:
        if v[f"lost_{x}"] == "True":
            parts.append(f"LOST data of id {v[x]} (retention {v['RetentionPeriod']})")
    return "; ".join(parts)


def prove(bug: str = "none", *, rlimit: int | None = None) -> list[ProofResult]:
    """Prove NoNewDataDeleted unbounded (``bug="none"``), or refute it with a BMC trace; every z3
    check within ``rlimit`` (None: the defaults of ``common``)."""
    ts = system(bug)
    if bug == "none":
        return [prove_inductive(ts, name, strengthening(), **limits(rlimit))
                for name in INVARIANTS]
    return [refute_bmc(ts, name, max_steps=10, describe=describe, **limits(rlimit))
            for name in INVARIANTS]


def twin_views(spec: Any) -> list[TwinView]:
    """How this encoding sees the Python twin: one view per broker ``B`` and per choice of the
    two tracked topic ids F < G. The requests to ``B`` are numbered in version order (the send
    order); array entries past ``nB`` read 0 on both sides. The exact pairs: every action on
    ``B`` or on the controller; the controller's steps about the other broker are AssignOther /
    UnassignOther (exact with two brokers) and StartOther (not paired: Z3 does not track whether
    the other broker is down). Steps of the other broker alone leave the view unchanged.
    """
    from logwright.model.stray_cleanup.twin import FULL, LAI, SCState, msg_order

    k = spec.config
    assert len(k.brokers) == 2 and len(k.partitions) == 1, "two brokers, one partition"
    (p,) = k.partitions
    code = {"none": NONE, "live": LIVE, "stray": STRAY}
    kinds = {LAI: K_LAI, "STOP": K_STOP, FULL: K_FULL}
    slots = k.max_controller_epoch * (k.max_seq + 1)
    indices = list(range(1, slots + 1))
    ids = range(1, k.max_topic_id + 1)

    def normalize(v: dict[str, Any]) -> dict[str, Any]:
        for x in TRACKED:
            if v[f"state_{x}"] == NONE:  # the twin's NoLog; no action reads an absent log's times
                v[f"lastWrite_{x}"], v[f"strayAt_{x}"] = 0, 0
        n = v["nB"]
        for name in ARRAYS:
            v[name] = tuple(x if i <= n else 0 for i, x in zip(indices, v[name], strict=True))
        return v

    def view(b: int, f: int, g: int) -> TwinView:
        tracked = {"F": f, "G": g}
        i = k.brokers.index(b)
        other = next(o for o in k.brokers if o != b)

        def abstract(s: Any) -> dict[str, Any]:
            assert isinstance(s, SCState)
            at = s.assignedAt[0][i]
            out: dict[str, Any] = {
                "F": f, "G": g, "RetentionPeriod": k.retention_period,
                "StrayDeletionDelay": k.stray_deletion_delay, "now": s.now,
                "controllerEpoch": s.controllerEpoch, "seq": s.seq, "topicId": s.topicId[0],
                "assignedAtE": at[0], "assignedAtS": at[1], "brokerEpoch": s.brokerEpoch[i],
                "seenEpoch": s.seenEpoch[i], "appliedE": s.appliedVersion[i][0][0],
                "appliedS": s.appliedVersion[i][0][1], "faulty": b in k.faulty_brokers,
                "assigned": b in s.replicas[0], "otherAssigned": other in s.replicas[0],
                "online": s.online[i], "sawFull": s.sawFull[i], "dirOnline": s.dirOnline[i]}
            for x, u in tracked.items():
                log = s.disk[i][0][u - 1]
                out[f"state_{x}"], out[f"lastWrite_{x}"] = code[log.state], log.lastWrite
                out[f"strayAt_{x}"] = log.strayAt
                out[f"lost_{x}"] = any(d[0] == b and d[2] == u for d in s.lost)
            sent = sorted((m for m in s.network if m.to == b), key=lambda m: (m.epoch, m.seq))
            assert len(sent) <= slots
            out["nB"] = len(sent)

            def column(fn: Any) -> tuple[int, ...]:
                vals = [fn(m) for m in sent]
                return tuple(vals + [0] * (slots - len(vals)))
            out["netE"] = column(lambda m: m.epoch)
            out["netS"] = column(lambda m: m.seq)
            out["netKind"] = column(lambda m: kinds[m.kind])
            out["netBE"] = column(lambda m: m.brokerEpoch)
            out["netTopic"] = column(
                lambda m: (next((t for q, t in m.hosted if q == p), 0) if m.kind == FULL
                           else m.topic))
            return out

        def some(*results: Any) -> list[Any]:
            return [r for r in results if r is not None]

        exact = [
            ("Tick", lambda s: some(spec.Tick(s))),
            ("Assign", lambda s: some(spec.Assign(s, p, b))),
            ("AssignOther", lambda s: some(spec.Assign(s, p, other))),
            ("Unassign", lambda s: some(spec.Unassign(s, p, b))),
            ("UnassignOther", lambda s: some(spec.Unassign(s, p, other))),
            ("DeleteTopic", lambda s: some(spec.DeleteTopic(s, p))),
            ("CreateTopic", lambda s: some(*[spec.CreateTopic(s, p, S)
                                             for S in spec._subsets])),
            ("StopBroker", lambda s: some(spec.StopBroker(s, b))),
            ("StartBroker", lambda s: some(spec.StartBroker(s, b))),
            ("ControllerFailover", lambda s: some(spec.ControllerFailover(s))),
            ("FailDir", lambda s: some(spec.FailDir(s, b))),
            ("RepairDir", lambda s: some(spec.RepairDir(s, b))),
            ("Deliver", lambda s: some(*[spec.Deliver(s, m)
                                         for m in sorted(s.network, key=msg_order)
                                         if m.to == b])),
        ]
        for x, u in tracked.items():
            exact.append((f"Append[{x}]", lambda s, u=u: some(spec.Append(s, b, p))
                          if s.topicId[0] == u else []))
            exact.append((f"DeleteStray[{x}]", lambda s, u=u: some(spec.DeleteStray(s, b, p, u))))
            exact.append((f"Truncate[{x}]", lambda s, u=u: some(
                *[spec.Truncate(s, b, p, u, w) for w in range(k.max_time + 1)])))

        def bounds(t: Mapping[str, Any]) -> Any:
            return z3.And(t["now"] <= k.max_time, t["controllerEpoch"] <= k.max_controller_epoch,
                          t["seq"] <= k.max_seq, t["topicId"] <= k.max_topic_id,
                          t["brokerEpoch"] <= k.max_broker_epoch)

        return TwinView(f"StrayCleanup, B={b} F={f} G={g}", abstract, exact, bounds, indices,
                        normalize)

    # F < G: the encoding is symmetric in its two tracked ids, so (G, F) would check the same
    return [view(b, f, g) for b in k.brokers for f in ids for g in ids if f < g]
