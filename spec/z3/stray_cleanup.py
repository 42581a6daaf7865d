"""StrayCleanup (spec/StrayCleanup.tla) in Z3, over unbounded time, epochs and topic ids.

The same machine as the TLA+ module and the Python twin, for one broker and one partition name
(the .cfg's), with no bound on the clock (no MaxTime), controller epochs (failovers), topic ids
(re-creations), the retention period or the stray deletion delay (both free constants >= 0).
Each action has the TLA+ name.

Abstractions, and why they are exact for NoNewDataDeleted:

* Two tracked logs. The disk holds one log per topic id, unboundedly many; the encoding tracks
  the logs of two arbitrary distinct topic ids ``F`` and ``G`` (free constants). In the correct
  model no action on one log reads another log, and NoNewDataDeleted is a conjunction over
  deleted logs, so proving it for two arbitrary ids proves it for all; the second id is there for
  TopicNameOnlyMatch, whose deletion of one stray takes the other log of the same name with it.
* The network is exact: ``netValid[e]`` says the deposed controller of epoch ``e`` still has its
  full request in flight, ``netTopic[e]`` the topic id it lists for the partition (0: none). A
  failover at epoch e writes entry e; z3 arrays indexed by epoch keep it unbounded.

Proof: induction (k = 1) with the strengthening invariants stated below (Spacer is not asked:
the network invariant quantifies over epochs, which Spacer's array support does not find by
itself). Each bug switch: BMC finds the shortest violating behaviour.
"""

from __future__ import annotations

import re
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

TRACKED = ("F", "G")
"""The two tracked topic ids (free constants): their logs are ``state_F``, ``lastWrite_F``..."""

CONSTANTS = ("F", "G", "RetentionPeriod", "StrayDeletionDelay")
INT_VARS = (
    "now", "controllerEpoch", "topicId", "brokerControllerEpoch",
    *[f"{field}_{x}" for x in TRACKED for field in ("state", "lastWrite", "strayAt")],
    # ghost lastStrayDeletion, per tracked log: deleted by the last step, and the facts then
    *[f"goneAge_{x}" for x in TRACKED],
)
BOOL_VARS = ("assigned", "online", "sawFullRequest",
             *[f"gone_{x}" for x in TRACKED], *[f"goneAssigned_{x}" for x in TRACKED])
ARRAY_VARS = {"netValid": z3.BoolSort(), "netTopic": z3.IntSort()}
"""Arrays indexed by controller epoch: the deposed controllers' full requests in flight."""

V = Mapping[str, Any]
Step = tuple[Any, dict[str, Any]]


class _WithArrays(TransitionSystem):
    """A TransitionSystem whose state also has z3 arrays indexed by integers (the network)."""

    @property
    def var_names(self) -> list[str]:
        return [*super().var_names, *ARRAY_VARS]

    def state(self, suffix: str) -> dict[str, Any]:
        s = super().state(suffix)
        s.update({n: z3.Array(f"{n}_{suffix}", z3.IntSort(), sort)
                  for n, sort in ARRAY_VARS.items()})
        return s

    def step(self, action: ActionDef, s: V, t: V, params: Mapping[str, Any]) -> Any:
        guard, updates = action.fn(s, params)
        arrays = {n: updates.pop(n) for n in list(updates) if n in ARRAY_VARS}
        frame = [t[n] == arrays.get(n, s[n]) for n in ARRAY_VARS]
        return z3.And(super().step(ActionDef(action.name, lambda _s, _p: (guard, updates)),
                                   s, t, params), *frame)


def system(bug: str = "none") -> TransitionSystem:
    """The transition system with ``bug`` switched on (``"none"``: the correct model)."""
    BUG_TABLE.check(bug)
    true, false = z3.BoolVal(True), z3.BoolVal(False)

    def clear_ghost() -> dict[str, Any]:
        return {f"gone_{x}": false for x in TRACKED}

    def is_assigned(s: V, t: Any) -> Any:
        """Assigned(b, p, t)."""
        return z3.And(s["assigned"], t == s["topicId"])

    def hosted_log(s: V, x: str) -> dict[str, Any]:
        """HostedLog: a stray restored, a missing log created now."""
        missing = s[f"state_{x}"] == NONE
        return {f"state_{x}": z3.IntVal(LIVE),
                f"lastWrite_{x}": z3.If(missing, s["now"], s[f"lastWrite_{x}"]),
                f"strayAt_{x}": z3.IntVal(0)}

    def after_full(s: V, listed: Any) -> dict[str, Any]:
        """AfterFull: the request lists topic id ``listed`` for the partition (0: not at all)."""
        out: dict[str, Any] = {}
        for x in TRACKED:
            host = hosted_log(s, x)
            is_listed = s[x] == listed
            live = s[f"state_{x}"] == LIVE
            out[f"state_{x}"] = z3.If(is_listed, LIVE, z3.If(live, STRAY, s[f"state_{x}"]))
            out[f"lastWrite_{x}"] = z3.If(is_listed, host[f"lastWrite_{x}"], s[f"lastWrite_{x}"])
            out[f"strayAt_{x}"] = z3.If(is_listed, 0, z3.If(live, s["now"], s[f"strayAt_{x}"]))
        return out

    def view(s: V) -> Any:
        """View(b) for the partition: its topic id if assigned, else 0."""
        return z3.If(s["assigned"], s["topicId"], 0)

    def when(cond: Any, then: dict[str, Any], s: V) -> dict[str, Any]:
        """IF cond THEN the updates ``then`` ELSE unchanged."""
        return {n: z3.If(cond, v, s[n]) for n, v in then.items()}

    def init(s: V) -> Any:
        logs = [z3.And(s[f"state_{x}"] == z3.If(s[x] == 1, LIVE, NONE),
                       s[f"lastWrite_{x}"] == 0, s[f"strayAt_{x}"] == 0) for x in TRACKED]
        return z3.And(
            s["now"] == 0, s["controllerEpoch"] == 1, s["topicId"] == 1,
            s["brokerControllerEpoch"] == 1, s["assigned"], s["online"], s["sawFullRequest"],
            *logs, *[z3.Not(s[f"gone_{x}"]) for x in TRACKED],
            s["netValid"] == z3.K(z3.IntSort(), false), s["netTopic"] == z3.K(z3.IntSort(), 0))

    def tick(s: V, p: V) -> Step:
        return true, {"now": s["now"] + 1, **clear_ghost()}

    def append(x: str, s: V, p: V) -> Step:
        guard = z3.And(s["online"], s["sawFullRequest"], is_assigned(s, s[x]),
                       s[f"state_{x}"] == LIVE)
        return guard, {f"lastWrite_{x}": s["now"], **clear_ghost()}

    def assign(s: V, p: V) -> Step:
        updates: dict[str, Any] = {"assigned": true, **clear_ghost()}
        for x in TRACKED:
            updates.update(when(z3.And(s["online"], s[x] == s["topicId"]), hosted_log(s, x), s))
        updates["brokerControllerEpoch"] = z3.If(s["online"], s["controllerEpoch"],
                                                 s["brokerControllerEpoch"])
        return z3.Not(s["assigned"]), updates

    def unassign(s: V, p: V) -> Step:
        updates: dict[str, Any] = {"assigned": false, **clear_ghost()}
        for x in TRACKED:
            updates[f"state_{x}"] = z3.If(z3.And(s["online"], s[x] == s["topicId"]), NONE,
                                          s[f"state_{x}"])
        updates["brokerControllerEpoch"] = z3.If(s["online"], s["controllerEpoch"],
                                                 s["brokerControllerEpoch"])
        return s["assigned"], updates

    def recreate_topic(s: V, p: V) -> Step:
        in_s = p["inS"] == 1  # whether the broker is in S, the new topic's replicas
        old, new = s["topicId"], s["topicId"] + 1
        told = z3.And(s["online"], z3.Or(s["assigned"], in_s))
        updates: dict[str, Any] = {"topicId": new, "assigned": in_s, **clear_ghost()}
        for x in TRACKED:
            delete = z3.And(told, s["assigned"], s[x] == old)
            create = z3.And(told, in_s, s[x] == new)
            updates[f"state_{x}"] = z3.If(delete, NONE, z3.If(create, LIVE, s[f"state_{x}"]))
            updates[f"lastWrite_{x}"] = z3.If(create, s["now"], s[f"lastWrite_{x}"])
            updates[f"strayAt_{x}"] = z3.If(create, 0, s[f"strayAt_{x}"])
        updates["brokerControllerEpoch"] = z3.If(told, s["controllerEpoch"],
                                                 s["brokerControllerEpoch"])
        return z3.Or(p["inS"] == 0, p["inS"] == 1), updates

    def stop_broker(s: V, p: V) -> Step:
        return s["online"], {"online": false, "sawFullRequest": false, **clear_ghost()}

    def start_broker(s: V, p: V) -> Step:
        return z3.Not(s["online"]), {"online": true,
                                     "brokerControllerEpoch": s["controllerEpoch"],
                                     **clear_ghost()}

    def send_full(s: V, p: V) -> Step:
        guard = z3.And(s["online"], z3.Or(z3.Not(s["sawFullRequest"]),
                                          s["brokerControllerEpoch"] < s["controllerEpoch"]))
        return guard, {**after_full(s, view(s)), "sawFullRequest": true,
                       "brokerControllerEpoch": s["controllerEpoch"], **clear_ghost()}

    def failover(s: V, p: V) -> Step:
        e = s["controllerEpoch"]
        return true, {"controllerEpoch": e + 1,
                      "netValid": z3.Store(s["netValid"], e, true),
                      "netTopic": z3.Store(s["netTopic"], e, view(s)), **clear_ghost()}

    def deliver(s: V, p: V) -> Step:
        e = p["epoch"]
        accepted = (true if bug == "StaleEpochStrayDeletion"
                    else e >= s["brokerControllerEpoch"])
        applied = {**after_full(s, z3.Select(s["netTopic"], e)), "sawFullRequest": true,
                   "brokerControllerEpoch": z3.If(e > s["brokerControllerEpoch"], e,
                                                  s["brokerControllerEpoch"])}
        return z3.And(z3.Select(s["netValid"], e), s["online"]), {
            **when(accepted, applied, s), "netValid": z3.Store(s["netValid"], e, false),
            **clear_ghost()}

    def delete_stray(x: str, s: V, p: V) -> Step:
        old_enough = s["now"] - s[f"lastWrite_{x}"] >= s["RetentionPeriod"]
        guard = z3.And(s["online"], s["sawFullRequest"], s[f"state_{x}"] == STRAY,
                       s["now"] >= s[f"strayAt_{x}"] + s["StrayDeletionDelay"],
                       true if bug == "NoAgeGuard" else old_enough)
        updates: dict[str, Any] = {}
        for y in TRACKED:
            if y == x:
                gone = true
            elif bug == "TopicNameOnlyMatch":
                gone = s[f"state_{y}"] != NONE
            else:
                gone = false
            updates[f"gone_{y}"] = gone
            updates[f"goneAssigned_{y}"] = is_assigned(s, s[y])
            updates[f"goneAge_{y}"] = s["now"] - s[f"lastWrite_{y}"]
            updates[f"state_{y}"] = z3.If(gone, NONE, s[f"state_{y}"])
        return guard, updates

    def no_new_data_deleted(s: V) -> Any:
        return z3.And(*[z3.Implies(s[f"gone_{x}"], z3.And(
            z3.Not(s[f"goneAssigned_{x}"]), s[f"goneAge_{x}"] >= s["RetentionPeriod"]))
            for x in TRACKED])

    actions = [
        ActionDef("Tick", tick),
        *[ActionDef(f"Append[{x}]", partial(append, x)) for x in TRACKED],
        ActionDef("Assign", assign),
        ActionDef("Unassign", unassign),
        ActionDef("RecreateTopic", recreate_topic, ("inS",)),
        ActionDef("StopBroker", stop_broker),
        ActionDef("StartBroker", start_broker),
        ActionDef("SendFullLeaderAndIsr", send_full),
        ActionDef("ControllerFailover", failover),
        ActionDef("DeliverDelayedLeaderAndIsr", deliver, ("epoch",)),
        *[ActionDef(f"DeleteStray[{x}]", partial(delete_stray, x)) for x in TRACKED],
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

    * Typing: log states are none/live/stray, epochs >= 1, the broker's controller epoch at most
      the current one; no log of a topic id not created yet; write and stray times not after now.
    * ``sawFullRequest`` implies ``online`` (a stop forgets it).
    * Consistency of an online broker that applied a full request: its live log is exactly the
      one the controller assigns it, so none of its strays is assigned.
    * The network: every request in flight is from a deposed controller (epoch < current), and
      an online broker's every request in flight that it would accept (epoch >= its controller
      epoch) lists what the controller assigns it now: nothing changed for the broker since it
      last heard from a controller, because every change reaches an online broker at once and a
      starting broker learns the current epoch.
    """
    def typing(s: V) -> Any:
        per_log = [z3.And(s[f"state_{x}"] >= NONE, s[f"state_{x}"] <= STRAY,
                          z3.Implies(s[x] > s["topicId"], s[f"state_{x}"] == NONE),
                          s[f"lastWrite_{x}"] <= s["now"], s[f"strayAt_{x}"] <= s["now"],
                          s[f"lastWrite_{x}"] >= 0)
                   for x in TRACKED]
        return z3.And(*per_log, s["controllerEpoch"] >= 1, s["brokerControllerEpoch"] >= 1,
                      s["brokerControllerEpoch"] <= s["controllerEpoch"], s["topicId"] >= 1,
                      s["now"] >= 0)

    def memory(s: V) -> Any:
        return z3.Implies(s["sawFullRequest"], s["online"])

    def consistent(s: V) -> Any:
        return z3.Implies(s["sawFullRequest"], z3.And(*[
            (s[f"state_{x}"] == LIVE) == z3.And(s["assigned"], s[x] == s["topicId"])
            for x in TRACKED]))

    def network(s: V) -> Any:
        e = z3.Int("e")
        view = z3.If(s["assigned"], s["topicId"], 0)
        return z3.ForAll([e], z3.Implies(z3.Select(s["netValid"], e), z3.And(
            e < s["controllerEpoch"],
            z3.Implies(z3.And(s["online"], e >= s["brokerControllerEpoch"]),
                       z3.Select(s["netTopic"], e) == view))))

    return [("Typing", typing), ("FullRequestNeedsOnline", memory),
            ("StraysAreUnassigned", consistent), ("DelayedRequestsAreCurrent", network)]


_STATE_NAMES = {str(NONE): "none", str(LIVE): "live", str(STRAY): "stray"}


def _array_entries(text: str) -> dict[str, str]:
    """Z3's rendering of an array model (Store(Store(K(Int, d), i, v), ...)) as {index: value}."""
    return dict(re.findall(r",\s*(-?\d+),\s*(\w+|-?\d+)\)", text))


def describe(v: Mapping[str, str]) -> str:
    """One state of a counterexample, in the words of the TLA+ module."""
    parts = [f"now={v['now']} controllerEpoch={v['controllerEpoch']} topicId={v['topicId']} "
             f"assigned={v['assigned']}; broker {'online' if v['online'] == 'True' else 'offline'}"
             f" sawFullRequest={v['sawFullRequest']} "
             f"brokerControllerEpoch={v['brokerControllerEpoch']}"]
    for x in TRACKED:
        state = _STATE_NAMES.get(v[f"state_{x}"], v[f"state_{x}"])
        if state != "none":
            parts.append(f"log id {v[x]}: {state} lastWrite={v[f'lastWrite_{x}']}"
                         + (f" strayAt={v[f'strayAt_{x}']}" if state == "stray" else ""))
    valid = _array_entries(v["netValid"])
    listed = _array_entries(v["netTopic"])
    for epoch, flag in sorted(valid.items(), key=lambda kv: int(kv[0])):
        if flag == "True":
            lists = listed.get(epoch, "0")
            parts.append(f"in flight: full request of controller epoch {epoch} listing "
                         + (f"id {lists}" if lists != "0" else "nothing"))
    for x in TRACKED:
        if v[f"gone_{x}"] == "True":
            parts.append(f"DELETED stray id {v[x]} aged {v[f'goneAge_{x}']} (retention "
                         f"{v['RetentionPeriod']})"
                         + (", assigned by the controller" if v[f"goneAssigned_{x}"] == "True"
                            else ""))
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
    """How this encoding sees the Python twin (one broker, one partition): one view per choice
    of the two tracked topic ids F < G among the twin's; the network as the arrays, read at
    epochs 1..MaxControllerEpoch (a delivered request's ``netTopic`` entry is stale in Z3 and
    absent in the twin, so both read 0 where ``netValid`` is false; the ghost's fields of a log
    not deleted by the last step, and the times of an absent log, likewise: no action reads
    them). Every action is an exact pair; RecreateTopic's
    ``inS`` is the twin's S, empty or the broker.
    """
    from logwright.model.stray_cleanup.twin import SCState

    k = spec.config
    assert len(k.brokers) == 1 and len(k.partitions) == 1, "the encoding has one of each"
    b, p = k.brokers[0], k.partitions[0]
    code = {"none": NONE, "live": LIVE, "stray": STRAY}
    epochs = list(range(1, k.max_controller_epoch + 1))
    ids = range(1, k.max_topic_id + 1)

    def normalize(v: dict[str, Any]) -> dict[str, Any]:
        for x in TRACKED:
            if not v[f"gone_{x}"]:
                v[f"goneAssigned_{x}"], v[f"goneAge_{x}"] = False, 0
            if v[f"state_{x}"] == NONE:  # the twin's NoLog; no action reads an absent log's times
                v[f"lastWrite_{x}"], v[f"strayAt_{x}"] = 0, 0
        v["netTopic"] = tuple(t if ok else 0 for t, ok in zip(v["netTopic"], v["netValid"],
                                                               strict=True))
        return v

    def view(f: int, g: int) -> TwinView:
        tracked = {"F": f, "G": g}

        def abstract(s: Any) -> dict[str, Any]:
            assert isinstance(s, SCState)
            out: dict[str, Any] = {
                "F": f, "G": g, "RetentionPeriod": k.retention_period,
                "StrayDeletionDelay": k.stray_deletion_delay, "now": s.now,
                "controllerEpoch": s.controllerEpoch, "topicId": s.topicId[0],
                "brokerControllerEpoch": s.brokerControllerEpoch[0],
                "assigned": b in s.replicas[0], "online": s.online[0],
                "sawFullRequest": s.sawFullRequest[0]}
            for x, u in tracked.items():
                log = s.disk[0][0][u - 1]
                out[f"state_{x}"], out[f"lastWrite_{x}"] = code[log.state], log.lastWrite
                out[f"strayAt_{x}"] = log.strayAt
                gone = [d for d in s.lastStrayDeletion if d[2] == u]
                out[f"gone_{x}"] = bool(gone)
                out[f"goneAssigned_{x}"] = gone[0][3] if gone else False
                out[f"goneAge_{x}"] = gone[0][4] if gone else 0
            valid = {m.epoch: m for m in s.network if m.broker == b}
            out["netValid"] = tuple(e in valid for e in epochs)
            out["netTopic"] = tuple(next((t for q, t in valid[e].hosted if q == p), 0)
                                    if e in valid else 0 for e in epochs)
            return out

        def some(*results: Any) -> list[Any]:
            return [r for r in results if r is not None]

        exact = [
            ("Tick", lambda s: some(spec.Tick(s))),
            ("Assign", lambda s: some(spec.Assign(s, p, b))),
            ("Unassign", lambda s: some(spec.Unassign(s, p, b))),
            ("RecreateTopic", lambda s: some(spec.RecreateTopic(s, p, frozenset()),
                                             spec.RecreateTopic(s, p, frozenset({b})))),
            ("StopBroker", lambda s: some(spec.StopBroker(s, b))),
            ("StartBroker", lambda s: some(spec.StartBroker(s, b))),
            ("SendFullLeaderAndIsr", lambda s: some(spec.SendFullLeaderAndIsr(s, b))),
            ("ControllerFailover", lambda s: some(spec.ControllerFailover(s))),
            ("DeliverDelayedLeaderAndIsr",
             lambda s: some(*[spec.DeliverDelayedLeaderAndIsr(s, m) for m in sorted(s.network)])),
        ]
        for x, u in tracked.items():
            exact.append((f"Append[{x}]", lambda s, u=u: some(spec.Append(s, b, p))
                          if s.topicId[0] == u else []))
            exact.append((f"DeleteStray[{x}]", lambda s, u=u: some(spec.DeleteStray(s, b, p, u))))

        def bounds(t: Mapping[str, Any]) -> Any:
            return z3.And(t["now"] <= k.max_time, t["controllerEpoch"] <= k.max_controller_epoch,
                          t["topicId"] <= k.max_topic_id)

        return TwinView(f"StrayCleanup, F={f} G={g}", abstract, exact, bounds, epochs, normalize)

    # F < G: the encoding is symmetric in its two tracked ids, so (G, F) would check the same
    return [view(f, g) for f in ids for g in ids if f < g]
